/**
 * `uh doctor --redis` warns about a Redis that answers clients with no password (anyone who
 * reaches it, an agent too, reads and rewrites the fleet), and is quiet about one that refuses
 * them: a real `redis-server` with `requirepass` on a free loopback port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { waitFor } from '../support/process.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';

const PASSWORD = 'redis-auth-password-6d1f0b9e3a';
let open: TestRedis;
let locked: ChildProcess;
let port: number;
const dirs: string[] = [];

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const p = (server.address() as { port: number }).port;
      server.close(() => resolve(p));
    });
  });

beforeAll(async () => {
  open = await startTestRedis('redis-auth');
  port = await freePort();
  const data = tempDir('uh-redis-auth-');
  dirs.push(data);
  locked = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--requirepass', PASSWORD, '--save', '', '--dir', data],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  locked.stdout?.on('data', (c) => (out += c));
  expect(await waitFor(() => out.includes('Ready to accept connections'), 10_000), out).toBe(true);
});
afterAll(async () => {
  locked?.kill('SIGTERM');
  await open?.cleanup();
  dirs.forEach(removeDir);
});

describe('uh doctor --redis: auth', () => {
  it('warns about a Redis with no password, and not about one that requires it', async () => {
    const repo = makeRepo({ 'README.md': '# auth\n' });
    dirs.push(repo);
    const env = { UH_CACHE_DIR: tempDir('uh-ra-c-'), UH_REDIS_PREFIX: open.prefix('auth') };
    const bare = await runCli(['doctor', '--json', '--redis', open.url], { cwd: repo, env });
    const bareAuth = JSON.parse(bare.stdout).findings.find((f: { what: string }) => f.what === 'redis auth');
    expect(bareAuth).toMatchObject({ ok: false, detail: 'answers clients with no password', core: false });
    const text = await runCli(['doctor', '--redis', open.url], { cwd: repo, env });
    expect(text.stdout).toMatch(/redis auth\s+answers clients with no password/);
    expect(text.stdout).toContain('hint: start Redis with ACL users per role');

    const url = `redis://:${PASSWORD}@127.0.0.1:${port}`;
    const guarded = await runCli(['doctor', '--json', '--redis', url], { cwd: repo, env });
    const body = JSON.parse(guarded.stdout);
    expect(body.findings.find((f: { what: string }) => f.what === 'redis')).toMatchObject({ ok: true });
    expect(body.findings.find((f: { what: string }) => f.what === 'redis auth')).toMatchObject({
      ok: true,
      detail: 'refuses clients without a password',
    });
    expect(guarded.stdout).not.toContain(PASSWORD);
  });
});
