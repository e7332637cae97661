/**
 * The resident uh's socket (docs/resident.md, docs/security.md "The resident uh"): whoever
 * answers on it answers for a run (its output and exit code, which CI gates on), and whoever can
 * connect to it can hand it command lines. So `uh mission run` hands a run only to a socket of
 * its own user in a directory of its own user that no one else may enter; anything else and the
 * run goes on in its own process. And an agent never reaches the socket: the sandbox masks the
 * cache dir it lives in. Each defence is shown to be what stops the attack: the same forged
 * socket in a sound directory is used, and the same agent unisolated connects.
 */
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { residentStatus, startResident, type TestResident } from '../support/resident.js';
import { removeDir, tempDir } from '../support/temp.js';
import { hostileMission, requireBwrap } from './isolation-helpers.js';

const created: string[] = [];
let repo: string;
afterAll(() => created.forEach(removeDir));
beforeAll(() => {
  repo = makeRepo({ 'README.md': '# demo\n' });
  created.push(repo);
});

/** A socket at `<cache>/daemon/uh.sock` that answers every run "completed" without running it. */
async function forgedResident(cacheDir: string, garbage = false): Promise<{ server: Server; hellos: () => number }> {
  mkdirSync(join(cacheDir, 'daemon'), { recursive: true, mode: 0o700 });
  let hellos = 0;
  const server = createServer((conn) => {
    conn.once('data', () => {
      hellos++;
      if (garbage) return void conn.end('HTTP/1.1 400 Bad Request\r\n\r\n');
      conn.write(`${JSON.stringify({ kind: 'accepted', pid: 1 })}\n`);
      conn.once('data', () => {
        const out = Buffer.from('{"status":"completed","verdict":"verified","forged":true}\n').toString('base64');
        conn.end(`${JSON.stringify({ kind: 'out', data: out })}\n${JSON.stringify({ kind: 'exit', code: 0 })}\n`);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(join(cacheDir, 'daemon', 'uh.sock'), resolve));
  return { server, hellos: () => hellos };
}

/** `fn` with a forged resident uh listening in a fresh cache dir, closed after. */
async function withForged(fn: (cacheDir: string, hellos: () => number) => Promise<void>, garbage = false) {
  const cacheDir = tempDir('uh-resident-forged-');
  created.push(cacheDir);
  const forged = await forgedResident(cacheDir, garbage);
  try {
    await fn(cacheDir, forged.hellos);
  } finally {
    forged.server.close();
  }
}

async function runAgainst(cacheDir: string) {
  const { path, operationId } = writeMission(repo, ['exit', '1', 'the real run fails']);
  const state = tempDir('uh-resident-sec-state-');
  created.push(state);
  const r = await runCli(['mission', 'run', path, '--json', '--state-dir', state], {
    cwd: repo,
    env: { UH_CACHE_DIR: cacheDir },
  });
  return { ...r, ranHere: existsSync(join(state, 'operations', operationId, 'receipt.json')) };
}

describe('the client hands a run over only to its own user', () => {
  const cases: Array<[string, (cacheDir: string) => void]> = [
    ['a daemon directory others may enter (0777)', (c) => chmodSync(join(c, 'daemon'), 0o777)],
    ['a daemon directory of another user', (c) => chownSync(join(c, 'daemon'), 65534, 65534)],
    ['a socket of another user', (c) => chownSync(join(c, 'daemon', 'uh.sock'), 65534, 65534)],
  ];

  it('uses a forged socket in a sound directory (the check below is what stops it)', async () => {
    await withForged(async (cacheDir, hellos) => {
      const r = await runAgainst(cacheDir);
      expect(hellos()).toBe(1);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('"forged":true');
      expect(r.ranHere).toBe(false);
    });
  }, 30_000);

  for (const [name, spoil] of cases) {
    it(`ignores ${name}: the run goes on in its own process, with its own verdict`, async () => {
      await withForged(async (cacheDir, hellos) => {
        spoil(cacheDir);
        const r = await runAgainst(cacheDir);
        expect(hellos()).toBe(0);
        expect(r.stdout).not.toContain('"forged":true');
        expect(r.code).toBe(1);
        expect(r.ranHere).toBe(true);
      });
    }, 30_000);
  }

  it('runs the command itself when the socket answers something else than the protocol', async () => {
    await withForged(async (cacheDir, hellos) => {
      const r = await runAgainst(cacheDir);
      expect(hellos()).toBe(1);
      expect(r.code).toBe(1);
      expect(r.ranHere).toBe(true);
    }, true);
  }, 30_000);

  it('ignores a daemon path that is a symlink to a sound directory', async () => {
    await withForged(async (forgedDir, hellos) => {
      const cacheDir = tempDir('uh-resident-link-');
      created.push(cacheDir);
      symlinkSync(join(forgedDir, 'daemon'), join(cacheDir, 'daemon'));
      const r = await runAgainst(cacheDir);
      expect(hellos()).toBe(0);
      expect(r.code).toBe(1);
      expect(r.ranHere).toBe(true);
    });
  }, 30_000);
});

describe('an agent and the resident uh', () => {
  let cacheDir: string;
  let resident: TestResident;
  beforeAll(async () => {
    requireBwrap();
    cacheDir = tempDir('uh-resident-agent-');
    created.push(cacheDir);
    resident = await startResident(cacheDir);
  }, 30_000);
  afterAll(async () => {
    resident.child.kill('SIGTERM');
    await resident.exited;
  });

  /** Runs an agent that connects to the resident uh's socket; what it got ("connected" or an error code). */
  async function probe(env: Record<string, string>): Promise<string> {
    const sock = join(cacheDir, 'daemon', 'uh.sock');
    const script =
      `node -e "const fs=require('fs');require('net').connect('${sock}')` +
      `.on('connect',function(){fs.writeFileSync('probe.txt','connected');this.destroy()})` +
      `.on('error',function(e){fs.writeFileSync('probe.txt',e.code)})"`;
    const { path, operationId } = hostileMission(repo, script, { scope: { allowed_change_globs: ['probe.txt'] } });
    const state = tempDir('uh-resident-agent-state-');
    created.push(state);
    const r = await runCli(['mission', 'run', path, '--json', '--state-dir', state], {
      cwd: repo,
      env: { UH_CACHE_DIR: cacheDir, ...env },
    });
    expect(r.code, r.stderr).toBe(0);
    const patch = readFileSync(join(state, 'operations', operationId, 'diff.patch'), 'utf8');
    return (/^\+([A-Za-z]+)$/m.exec(patch.split('+++ b/probe.txt')[1] ?? '') ?? [])[1] ?? '';
  }

  it('cannot connect from inside the sandbox, where the cache dir is masked (the run served by it)', async () => {
    const before = (await residentStatus(cacheDir)).served;
    expect(await probe({})).toBe('ENOENT');
    // The resident uh ran it: the agent's own parent process was out of its reach.
    expect((await residentStatus(cacheDir)).served).toBe(before + 1);
  }, 60_000);

  it('connects unisolated (UH_ISOLATION=off): the mask is what stops it', async () => {
    expect(await probe({ UH_ISOLATION: 'off' })).toBe('connected');
  }, 60_000);
});
