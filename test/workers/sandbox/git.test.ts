/**
 * uh's own git calls are bounded: a clone from a remote that accepts the connection and never
 * answers ends at its timeout, a cancel reaches it promptly, and either way the mirror lock is
 * free again. Real git against a silent TCP server on 127.0.0.1:0.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { existsSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitError, git } from '../../../src/workers/sandbox/git.js';
import { mirrorFor, resolveInMirror } from '../../../src/workers/sandbox/mirror-cache.js';
import { makeRepo } from '../../support/git-repo.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
let server: Server;
const sockets = new Set<Socket>();
let url = '';

beforeAll(async () => {
  server = createServer((socket) => {
    sockets.add(socket); // accept, read, never answer
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  url = `git://127.0.0.1:${address.port}/silent.git`;
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  dirs.forEach(removeDir);
});

async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function failure(promise: Promise<unknown>): Promise<GitError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof GitError) return error;
    // An unreachable remote reaches the user as exit 3 naming repository.url; the git failure is its cause.
    if (
      error instanceof Error &&
      error.cause instanceof GitError &&
      error.message.startsWith('repository.url: cannot reach')
    )
      return error.cause;
    throw error;
  }
  throw new Error('expected the git call to fail');
}

function cache(): string {
  const dir = tempDir('uh-git-');
  dirs.push(dir);
  return dir;
}

/** The lock dir holds a held token (file-lock.ts): someone is inside. */
const lockHeld = (lockDir: string) => existsSync(lockDir) && readdirSync(lockDir).some((n) => n.startsWith('held.'));

describe('git runner', () => {
  it('a clone from a silent remote times out within its bound and frees the mirror lock', async () => {
    const cacheDir = cache();
    const lockDir = mirrorFor(cacheDir, url).lockDir;
    const started = Date.now();
    const pending = failure(resolveInMirror(cacheDir, url, 'main', { timeoutMs: 1500 }));
    await until(() => sockets.size > 0 && lockHeld(lockDir), 'git to connect while holding the lock');
    const error = await pending;
    const elapsed = Date.now() - started;
    expect(error.failure).toBe('timeout');
    expect(error.command).toBe('clone');
    expect(error.repository).toBe(url);
    expect(error.message).toContain(`git clone timed out after 2 s in ${url}`);
    expect(elapsed).toBeLessThan(1500 + 2000 + 3000); // bound + kill grace + slack on a loaded host
    expect(readdirSync(lockDir)).toEqual(['free']);
  });

  it('an abort reaches a hanging clone promptly and frees the mirror lock', async () => {
    const cacheDir = cache();
    const lockDir = mirrorFor(cacheDir, url).lockDir;
    const controller = new AbortController();
    const connectedBefore = sockets.size;
    const pending = failure(resolveInMirror(cacheDir, url, 'main', { signal: controller.signal }));
    await until(() => sockets.size > connectedBefore && lockHeld(lockDir), 'git to connect while holding the lock');
    const aborted = Date.now();
    controller.abort({ kind: 'cancel', message: 'cancelled' });
    const error = await pending;
    expect(Date.now() - aborted).toBeLessThan(3000);
    expect(error.failure).toBe('aborted');
    expect(error.message).toContain(`git clone was aborted in ${url}`);
    expect(readdirSync(lockDir)).toEqual(['free']);
  });

  it('a failing command is a GitError naming the command, the repository and what git said', async () => {
    const repo = makeRepo();
    dirs.push(repo);
    const error = await failure(git(['rev-parse', '--verify', 'no-such-ref'], { cwd: repo }));
    expect(error.failure).toBe('exit');
    expect(error.message).toMatch(
      new RegExp(`^git rev-parse failed in ${repo}: .*no-such-ref|^git rev-parse failed in ${repo}: fatal`),
    );
    expect(error.kind).toBe('sandbox');
  });

  it('credentials in a repository URL never reach the message', async () => {
    const error = await failure(
      git(['ls-remote', 'https://user:s3cret@127.0.0.1:1/x.git'], {
        cwd: cache(),
        repository: 'https://user:s3cret@127.0.0.1:1/x.git',
        timeoutMs: 20_000,
      }),
    );
    expect(error.message).not.toContain('s3cret');
    expect(error.repository).toBe('https://***@127.0.0.1:1/x.git');
  });
});
