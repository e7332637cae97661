/**
 * A resident uh (`uh daemon start`) for tests: started with the environment `runCli` gives the
 * CLI it runs (so those runs are served), ready once `uh daemon status` answers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { runCli, UH_BIN } from './cli.js';
import { waitFor } from './process.js';

export interface TestResident {
  child: ChildProcess;
  /** What the daemon wrote on its own stderr so far. */
  stderr(): string;
  /** Settles with the daemon's exit code. */
  exited: Promise<number | null>;
}

export interface ResidentStatusJson {
  running: boolean;
  pid: number;
  served: number;
  refused: number;
  serving: string[] | null;
  last_refusal: string | null;
}

/** The environment `runCli(args, { env: { UH_CACHE_DIR: cacheDir, ...extra } })` runs with. */
export function cliEnv(cacheDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, UH_LOG_LEVEL: 'silent', UH_CACHE_DIR: cacheDir, ...extra };
}

export async function startResident(cacheDir: string, args: string[] = []): Promise<TestResident> {
  const child = spawn(process.execPath, [UH_BIN, 'daemon', 'start', ...args], {
    env: cliEnv(cacheDir),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const up = await waitFor(async () => child.exitCode !== null || (await residentStatus(cacheDir)).running, 15_000, 50);
  if (!up || child.exitCode !== null) throw new Error(`uh daemon start did not come up: ${stderr}`);
  return { child, stderr: () => stderr, exited };
}

export async function residentStatus(cacheDir: string): Promise<ResidentStatusJson> {
  const r = await runCli(['daemon', 'status', '--json'], { cwd: '/', env: { UH_CACHE_DIR: cacheDir } });
  return JSON.parse(r.stdout) as ResidentStatusJson;
}
