// Hands a `uh mission run` command line to the resident uh of this cache dir (`uh daemon start`,
// docs/resident.md), before bin/uh.js loads the bundle: the run then skips uh's start-up. Plain
// CommonJS with node's own modules only, for the same reason. The protocol is
// src/producers/cli/resident/protocol.ts.
//
// It hands over only to a socket in `<cache dir>/daemon/` that this user owns, in a directory
// this user owns that no one else may enter: a socket someone else made could otherwise answer
// for the run (its output and exit code). It resolves null whenever the run was not handed over
// (no resident uh, a refusal, no answer within HANDOVER_WAIT_MS): the caller then runs the command
// itself, as it would have without one. node:net loads only when a socket is there to talk to.
const { lstatSync, readFileSync } = require('node:fs');
const { join, resolve: resolvePath } = require('node:path');

const PROTOCOL_VERSION = 1;
const HANDOVER_WAIT_MS = 2000;
// The exit code of an operation whose state is unknown (src/shared/contracts/exit-codes.ts).
const EXIT_UNKNOWN = 5;

/**
 * A path that means something else in another process: /dev/stdin, /dev/stdout, /proc/self/…
 * (a mission piped in, a JUnit report to the terminal) would be the resident uh's own.
 */
const OWN_PROCESS_PATH = /^\/(?:dev|proc)\//;

/** True for the command lines a resident uh serves. */
function handedOver(args, env) {
  if (env.UH_RESIDENT === 'off' || args[0] !== 'mission' || args[1] !== 'run') return false;
  const ownPath = (a) => OWN_PROCESS_PATH.test(resolvePath(a.slice(a.indexOf('=') + 1)));
  return !args.some((a) => a === '--help' || a === '-h' || a === '--dry-run' || ownPath(a));
}

/** `<dir>/uh.sock` when it and `dir` are this user's and `dir` is closed to others; else null. */
function ownSocket(dir) {
  const uid = process.getuid();
  const socket = join(dir, 'uh.sock');
  let d;
  let s;
  try {
    d = lstatSync(dir);
    s = lstatSync(socket);
  } catch {
    return null;
  }
  if (!d.isDirectory() || d.uid !== uid || (d.mode & 0o077) !== 0) return null;
  return s.isSocket() && s.uid === uid ? socket : null;
}

// The environment goes as it is: only this user's processes can read the socket (ownSocket), and
// they can read this process's environment in /proc already. The resident uh compares it with its
// own and never writes a value anywhere (a refusal names the variables that differ).
function hello(args, env, bundle) {
  let build = '';
  try {
    build = readFileSync(`${bundle}.sha256`, 'utf8').trim().slice(0, 32);
  } catch {
    // no digest: the resident uh refuses, and the command runs here
  }
  return {
    kind: 'run',
    v: PROTOCOL_VERSION,
    argv: args,
    cwd: process.cwd(),
    umask: process.umask(),
    env,
    build,
    node: process.version,
  };
}

/**
 * Runs `args` in the resident uh of `cacheDir` if one takes it: resolves its exit code, or null
 * when it was not handed over.
 */
function handOver(cacheDir, args, env, bundle) {
  if (!handedOver(args, env)) return Promise.resolve(null);
  const socket = ownSocket(join(cacheDir, 'daemon'));
  if (socket === null) return Promise.resolve(null);
  return new Promise((resolve) => talk(socket, hello(args, env, bundle), env, resolve));
}

function talk(socket, first, env, resolve) {
  const conn = require('node:net').createConnection(socket);
  let accepted = null;
  let pending = '';
  const forward = (name) => conn.write(`${JSON.stringify({ kind: 'signal', name })}\n`);
  const onInt = () => forward('SIGINT');
  const onTerm = () => forward('SIGTERM');
  let settled = false;
  const finish = (code) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    resolve(code);
  };
  const timer = setTimeout(() => {
    conn.destroy();
    finish(null);
  }, HANDOVER_WAIT_MS);
  const onFrame = (f) => {
    if (f.kind === 'accepted' && accepted === null) {
      accepted = f.pid;
      clearTimeout(timer);
      process.on('SIGINT', onInt);
      process.on('SIGTERM', onTerm);
      conn.write(`${JSON.stringify({ kind: 'go' })}\n`);
    } else if (f.kind === 'refused' && accepted === null) {
      if (env.UH_DEBUG) process.stderr.write(`uh: the resident uh refused the run: ${f.reason}\n`);
      conn.destroy();
      finish(null);
    } else if (f.kind === 'out' && accepted !== null) process.stdout.write(Buffer.from(f.data, 'base64'));
    else if (f.kind === 'err' && accepted !== null) process.stderr.write(Buffer.from(f.data, 'base64'));
    else if (f.kind === 'exit' && accepted !== null) finish(f.code);
  };
  conn.on('connect', () => conn.write(`${JSON.stringify(first)}\n`));
  conn.on('data', (chunk) => {
    const lines = (pending + chunk.toString('utf8')).split('\n');
    pending = lines.pop();
    for (const line of lines) {
      if (line === '') continue;
      let parsed;
      try {
        parsed = JSON.parse(line);
      } catch {
        return void conn.destroy(); // not our protocol: handled as the connection's end below
      }
      onFrame(parsed);
    }
  });
  conn.on('error', () => {});
  conn.on('close', () => {
    if (accepted === null) return finish(null);
    if (!settled)
      process.stderr.write(
        `uh: the resident uh (pid ${accepted}) ended before the run did: its state is unknown\n` +
          'hint: uh mission status <operation> (uh mission recover settles it)\n',
      );
    finish(EXIT_UNKNOWN);
  });
}

module.exports = { handOver };
