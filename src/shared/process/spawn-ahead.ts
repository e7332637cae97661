/**
 * A child started ahead, for a long-lived uh (the resident uh, docs/resident.md) whose own memory
 * makes each start cost: node's spawn forks this whole process and waits until the child has
 * exec'd, which takes a time that grows with this process's resident memory (~0.9 ms at 44 MB,
 * ~1.7 ms at 84 MB, ~2.6 ms at 145 MB here; docs/benchmarks.md). So while uh is idle, a small perl
 * (`LAUNCHER`, no modules) is started with three pipes and a fourth for its request, in a session
 * of its own, and waits; the next `spawnGroup` hands it the child's program, argv, environment,
 * directory, umask and where each of stdin, stdout and stderr goes, and perl execs it: the same
 * pid, the same process group, the same descriptors as node's own spawn gives, without the fork.
 *
 * It is taken only where it cannot differ from a spawn: an absolute program that is an executable
 * file, an existing directory, no NUL in any string, output files created here first (an error
 * opening one is thrown here, as a spawn would). Anything else, a launcher that has exited, or a
 * host without perl, is a spawn as before. After one is taken, the next is started once uh has
 * been idle for `REFILL_MS`.
 */
import { spawn as nodeSpawn, type ChildProcess } from 'node:child_process';
import { accessSync, closeSync, constants, openSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Writable } from 'node:stream';

/** Where each standard stream goes: kept as the pipe to uh, `/dev/null`, or a file appended to. */
export type AheadStdio = 'pipe' | 'null' | { file: string };

export interface AheadRequest {
  argv: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  stdio: readonly [AheadStdio, AheadStdio, AheadStdio];
}

/**
 * Reads one request from fd 3 (NUL-separated: umask, directory, the three streams, the count of
 * environment entries, the entries, the argv), applies it and execs; EOF without one: exits 0.
 */
export const LAUNCHER = String.raw`
open(my $c, '<&=', 3) or exit 125;
binmode $c; local $/; my $msg = <$c>; close($c);
exit 0 if !defined $msg || $msg eq '';
my @f = split(/\0/, $msg, -1);
my ($mask, $cwd, @io) = splice(@f, 0, 5);
my $n = shift @f; my @env = splice(@f, 0, $n);
umask($mask);
chdir($cwd) or do { print STDERR "uh: cannot enter $cwd: $!\n"; exit 127 };
%ENV = (); for (@env) { my ($k, $v) = split(/=/, $_, 2); $ENV{$k} = $v; }
my @fh = (\*STDIN, \*STDOUT, \*STDERR);
for my $i (0 .. 2) {
  my $to = $io[$i];
  next if $to eq '|';
  my $ok = $to eq '' ? ($i == 0 ? open($fh[$i], '<', '/dev/null') : open($fh[$i], '>', '/dev/null')) : open($fh[$i], '>>', $to);
  $ok or do { print STDERR "uh: cannot open $to: $!\n"; exit 127 };
}
exec { $f[0] } @f;
print STDERR "uh: cannot run $f[0]: $!\n";
exit 127;
`;

/** Debian's perl-base (Essential): the launcher's interpreter, where the host has it. */
export const HOST_PERL = '/usr/bin/perl';

/** How long uh is to be idle after a launcher was taken before the next one starts. */
export const REFILL_MS = 20;

let perl: string | null = null;
let ready: ChildProcess | null = null;
let refill: NodeJS.Timeout | undefined;

/** Keep a launcher ready from now on (`perlPath` runs it); `stopSpawnAhead` ends that. */
export function startSpawnAhead(perlPath: string): void {
  perl = perlPath;
  ready ??= launcher(perlPath);
}

/** No launcher any more: the waiting one exits (EOF on its request pipe). */
export function stopSpawnAhead(): void {
  perl = null;
  clearTimeout(refill);
  const waiting = ready;
  ready = null;
  (waiting?.stdio[3] as Writable | null | undefined)?.end();
}

/** The pid of the launcher waiting now (what the next eligible spawn will be), or null. */
export function launcherPid(): number | null {
  return ready !== null && alive(ready) ? (ready.pid ?? null) : null;
}

function launcher(perlPath: string): ChildProcess {
  const child = nodeSpawn(perlPath, ['-e', LAUNCHER], {
    cwd: '/',
    env: {},
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    detached: true,
  });
  child.on('error', () => {}); // no perl after all: `alive` is false, the next spawn is node's
  // A launcher waiting keeps nothing alive: uh exits as if there were none.
  child.unref();
  for (const stream of child.stdio) {
    stream?.on('error', () => {});
    (stream as { unref?: () => void } | null)?.unref?.();
  }
  return child;
}

const alive = (child: ChildProcess) => child.pid !== undefined && child.exitCode === null && child.signalCode === null;

/** The waiting launcher, now running `request`; null where a spawn of node's is due instead. */
export function takeLauncher(request: AheadRequest): ChildProcess | null {
  const child = ready;
  if (child === null || perl === null || !alive(child)) {
    if (perl !== null && (child === null || !alive(child))) scheduleRefill();
    return null;
  }
  const message = encode(request);
  if (message === null) return null;
  ready = null;
  (child.stdio[3] as Writable).end(message);
  request.stdio.forEach((to, i) => {
    if (to !== 'pipe') child.stdio[i]?.destroy();
  });
  child.ref();
  for (const stream of child.stdio) (stream as { ref?: () => void } | null)?.ref?.();
  scheduleRefill();
  return child;
}

function scheduleRefill(): void {
  clearTimeout(refill);
  refill = setTimeout(() => {
    if (perl !== null && (ready === null || !alive(ready))) ready = launcher(perl);
  }, REFILL_MS);
  refill.unref();
}

/** The request as the launcher reads it, or null when it cannot be one (see the module's comment). */
function encode(request: AheadRequest): string | null {
  const [program] = request.argv;
  if (program === undefined || !program.startsWith('/') || !executableFile(program)) return null;
  if (!isDirectory(request.cwd)) return null;
  const env = Object.entries(request.env).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
  const io = request.stdio.map((to) => (to === 'pipe' ? '|' : to === 'null' ? '' : created(to.file)));
  const fields = [String(process.umask()), request.cwd, ...io, String(env.length), ...env];
  const all = [...fields, ...request.argv];
  return all.some((s) => s.includes('\0')) ? null : all.join('\0');
}

/** An output file as an absolute path, created (appended to) here first so an error is thrown here. */
function created(file: string): string {
  const path = resolve(file);
  closeSync(openSync(path, 'a'));
  return path;
}

function executableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
