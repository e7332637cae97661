/**
 * Run a short command (`<cli> --version`, `<cli> chat --help`) in its own process group and
 * capture the head of its stdout and stderr, for `check()` and feature detection. Bounded in
 * time (killed at `timeoutMs`) and memory (at most `maxBytes` kept per stream). Never throws.
 */
import { tmpdir } from 'node:os';
import type { SpawnGroup } from './spawn-group.js';

export interface CapturedOutput {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  spawnError?: { code: string; message: string };
  stdout: string;
  stderr: string;
}

export interface CaptureOptions {
  argv: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
  cwd?: string;
  timeoutMs?: number;
  maxBytes?: number;
  signal?: AbortSignal;
}

class Head {
  private chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly max: number) {}
  push(chunk: Buffer): void {
    if (this.size >= this.max) return;
    const part = chunk.subarray(0, this.max - this.size);
    this.chunks.push(Buffer.from(part));
    this.size += part.length;
  }
  text(): string {
    return Buffer.concat(this.chunks, this.size).toString('utf8');
  }
}

export async function captureOutput(spawn: SpawnGroup, options: CaptureOptions): Promise<CapturedOutput> {
  const max = options.maxBytes ?? 64 * 1024;
  const out = new Head(max);
  const err = new Head(max);
  try {
    const child = spawn({
      argv: options.argv,
      cwd: options.cwd ?? tmpdir(),
      env: options.env,
      stdin: 'ignore',
      stdout: 'pipe',
      // stderr is tapped; the bytes themselves are not worth a file.
      stderr: { file: '/dev/null', tap: (chunk) => err.push(chunk) },
      timeoutMs: options.timeoutMs ?? 15_000,
      killGraceMs: 500,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
    const result = await child.result;
    return {
      exitCode: result.exitCode,
      signal: result.signal,
      timedOut: result.timedOut,
      ...(result.spawnError ? { spawnError: result.spawnError } : {}),
      stdout: out.text(),
      stderr: err.text(),
    };
  } catch (error) {
    return {
      exitCode: null,
      signal: null,
      timedOut: false,
      spawnError: { code: 'ESPAWN', message: (error as Error).message },
      stdout: '',
      stderr: '',
    };
  }
}

/** The first `x.y.z` in a text (`pi 0.73.1`, `Hermes Agent v0.14.0 (2026.5.16)`), or null. */
export function parseSemver(text: string): string | null {
  const m = /(\d+)\.(\d+)\.(\d+)/.exec(text);
  return m ? `${m[1]}.${m[2]}.${m[3]}` : null;
}

/** -1, 0 or 1, comparing `x.y.z` strings numerically. */
export function compareSemver(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}
