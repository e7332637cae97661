/**
 * The resident uh's protocol (docs/resident.md): one JSON document per line over a unix socket in
 * `<cache dir>/daemon/`, a directory only its user can enter. The client (bin/resident-client.js,
 * plain JS so `uh` hands a run over before loading the bundle) opens with one hello; a run's
 * hello is answered `accepted` or `refused`; after the client's `go`, the run's output as `out`/`err` frames and its
 * `exit`. The client sends `signal` frames while the run goes on. The hello carries the client's
 * environment, which the resident uh compares with its own and never writes anywhere: a refusal
 * names the variables that differ, never a value.
 */
import { z } from 'zod';

export const PROTOCOL_VERSION = 1;
/** The socket's name in the daemon directory. */
export const SOCKET_NAME = 'uh.sock';
/** A hello longer than this is refused (a mission run's argv and environment are far shorter). */
export const MAX_HELLO_BYTES = 1024 * 1024;

/**
 * Variables a shell sets for each command or each directory, which say nothing about how uh
 * behaves: a run differing only in them is served.
 */
const UNCOMPARED = new Set(['_', 'PWD', 'OLDPWD', 'SHLVL']);

const Run = z.strictObject({
  kind: z.literal('run'),
  v: z.literal(PROTOCOL_VERSION),
  argv: z.array(z.string().max(64 * 1024)).max(256),
  cwd: z.string().min(1).max(4096),
  /** The client's umask: the files of the run are made with it. */
  umask: z.number().int().min(0).max(0o777),
  env: z.record(z.string().max(4096), z.string().max(256 * 1024)),
  build: z.string().max(128),
  node: z.string().max(32),
});
export type RunHello = z.infer<typeof Run>;

export const Hello = z.discriminatedUnion('kind', [
  Run,
  z.strictObject({ kind: z.literal('status'), v: z.literal(PROTOCOL_VERSION) }),
  z.strictObject({ kind: z.literal('stop'), v: z.literal(PROTOCOL_VERSION) }),
]);
export type Hello = z.infer<typeof Hello>;

/** What a client sends after `accepted`: `go` (it waited for the answer and is committed), then signals. */
export const DuringRun = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('go') }),
  z.strictObject({ kind: z.literal('signal'), name: z.enum(['SIGINT', 'SIGTERM']) }),
]);

type Env = Readonly<Record<string, string | undefined>>;

/** The names whose values differ between two environments (or that only one has), sorted. */
export function differingNames(a: Env, b: Env): string[] {
  const names = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...names].filter((n) => !UNCOMPARED.has(n) && a[n] !== b[n]).sort();
}

/** One line of JSON. */
export const frame = (value: unknown): string => `${JSON.stringify(value)}\n`;

/**
 * Splits a stream into lines: `push` takes a chunk and returns the complete lines in it; a line
 * longer than `max` bytes throws.
 */
export function lineSplitter(max: number): (chunk: Buffer) => string[] {
  let pending = '';
  return (chunk) => {
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    if (pending.length > max) throw new Error(`a line longer than ${max} bytes`);
    return lines.filter((l) => l !== '');
  };
}
