/**
 * Run once around the whole test run (vitest.config.ts `globalSetup`): the real uh cache
 * (`~/.cache/uh`, or `$XDG_CACHE_HOME/uh`) and this checkout's `.harness/` must look the same
 * after the run as before it. test/support/test-dirs.setup.ts keeps tests away from them; this
 * catches whatever slips past it (a child started with an environment of its own, a default
 * state dir resolved from the checkout), naming the entries that appeared or changed.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The directories no test may touch. */
export function guardedDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const caches = [join(homedir(), '.cache', 'uh')];
  if (env.XDG_CACHE_HOME) caches.push(join(env.XDG_CACHE_HOME, 'uh'));
  return [...caches, join(ROOT, '.harness')];
}

/** `path mtime` for a directory and its entries two levels down (a new or rewritten entry moves one). */
export function fingerprint(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const lines: string[] = [];
  const walk = (path: string, depth: number): void => {
    const st = statSync(path, { throwIfNoEntry: false });
    if (!st) return;
    lines.push(`${path} ${st.mtimeMs}`);
    if (depth < 2 && st.isDirectory()) for (const e of readdirSync(path)) walk(join(path, e), depth + 1);
  };
  walk(dir, 0);
  return lines;
}

/** What differs between two fingerprints of one directory (empty when nothing changed). */
export function changes(before: string[], after: string[]): string[] {
  const was = new Set(before);
  return after.filter((line) => !was.has(line)).map((line) => line.slice(0, line.lastIndexOf(' ')));
}

export default function setup(): () => void {
  const dirs = guardedDirs();
  const before = dirs.map(fingerprint);
  return () => {
    const touched = dirs.flatMap((dir, i) => changes(before[i] ?? [], fingerprint(dir)));
    if (touched.length === 0) return;
    // vitest reports an error thrown here but still exits 0: set the exit code ourselves.
    process.exitCode = 1;
    const why = "tests wrote to the real uh cache or this checkout's state dir (use test/support/temp.ts)";
    // ~/.cache/uh is the machine's: a test run of another checkout at the same time shows here too.
    console.error(`${why}, or another checkout's run did at the same time:\n  ${touched.join('\n  ')}`);
  };
}
