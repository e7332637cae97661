/**
 * Disk use of a cache's sandboxes dir while missions run: `du` over it every `everyMs` (the next
 * sample starts that long after the previous one ended), the peak kept. A finished overlay base
 * (`.bases/<key>-<hex>/` with its base.json) is measured once and remembered: the proof before
 * every share refuses any change to it, so it does not grow; a base without base.json yet (being
 * checked out) and everything else is measured at every sample. A file outside the bases that is a
 * hard link to one inside (uh's index of an overlay sandbox) is counted once, as one `du` of the
 * whole dir counts it. The peak is of the samples, so a shorter-lived high between two of them is
 * missed: a lower bound on the true peak.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BASE_DIR = /^[0-9a-f]{24}-[0-9a-f]{8}$/;

/** Bytes `du` counts under `path` (its allocated blocks). */
export function du(path: string): number {
  return Number(execFileSync('du', ['-sk', path], { encoding: 'utf8' }).split('\t')[0]) * 1024;
}

async function duAsync(path: string, exclude: string[] = []): Promise<number> {
  try {
    const { stdout } = await run('du', ['-sk', ...exclude.map((e) => `--exclude=${e}`), path]);
    return Number(stdout.split('\t')[0]) * 1024;
  } catch {
    return 0; // removed while du walked it
  }
}

interface KnownBase {
  bytes: number;
  /** The inodes of its files. */
  inodes: Set<string>;
}

async function inodesOf(dir: string): Promise<Set<string>> {
  const { stdout } = await run('find', [dir, '-type', 'f', '-printf', '%i\n'], { maxBuffer: 64 * 2 ** 20 });
  return new Set(stdout.split('\n').filter(Boolean));
}

/** Bytes of the files outside `.bases` that are hard links to a file of a known base (counted there). */
async function linkedToBases(dir: string, known: Iterable<KnownBase>): Promise<number> {
  const bases = [...known];
  if (bases.length === 0) return 0;
  const args = [dir, '-path', join(dir, '.bases'), '-prune', '-o', '-type', 'f', '-links', '+1', '-printf', '%i %b\n'];
  const { stdout } = await run('find', args, { maxBuffer: 64 * 2 ** 20 }).catch((e: { stdout?: string }) => ({
    stdout: e.stdout ?? '',
  }));
  const seen = new Set<string>();
  let bytes = 0;
  for (const line of stdout.split('\n').filter(Boolean)) {
    const [ino, blocks] = line.split(' ') as [string, string];
    if (seen.has(ino) || !bases.some((b) => b.inodes.has(ino))) continue;
    seen.add(ino);
    bytes += Number(blocks) * 512;
  }
  return bytes;
}

/** One sample: everything but the finished bases, plus each finished base (measured once). */
async function sample(dir: string, bases: Map<string, KnownBase>): Promise<number> {
  if (!existsSync(dir)) return 0;
  const root = join(dir, '.bases');
  let total = 0;
  const names = existsSync(root) ? readdirSync(root) : [];
  for (const name of names.filter((n) => BASE_DIR.test(n))) {
    const known = bases.get(name);
    if (known !== undefined) total += known.bytes;
    else if (existsSync(join(root, name, 'base.json'))) {
      const base = { bytes: await duAsync(join(root, name)), inodes: await inodesOf(join(root, name)) };
      bases.set(name, base);
      total += base.bytes;
    } else total += await duAsync(join(root, name));
  }
  const other = (await duAsync(dir, ['.bases'])) - (await linkedToBases(dir, bases.values()));
  const rest = names.filter((n) => !BASE_DIR.test(n)).map((n) => duAsync(join(root, n)));
  return total + other + (await Promise.all(rest)).reduce((a, b) => a + b, 0);
}

/** Start sampling `dir`; `stop()` ends it and resolves with the peak (bytes) and how many samples were taken. */
export function sampleDisk(dir: string, everyMs = 250): { stop: () => Promise<{ peak: number; samples: number }> } {
  const bases = new Map<string, KnownBase>();
  let peak = 0;
  let count = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      peak = Math.max(peak, await sample(dir, bases));
      count += 1;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return { peak, samples: count };
    },
  };
}
