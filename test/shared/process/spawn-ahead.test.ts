import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HOST_PERL, launcherPid, startSpawnAhead, stopSpawnAhead } from '../../../src/shared/process/spawn-ahead.js';
import { spawnGroup, type SpawnGroupOptions } from '../../../src/shared/process/spawn-group.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterEach(() => stopSpawnAhead());
afterAll(() => dirs.forEach(removeDir));

async function until<T>(what: string, get: () => T | null, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = get();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !/^\d+ \([^)]*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

/** What the child saw and did: its env, directory, umask, stdin, its stdout (piped), its stderr (a file). */
async function observe(options: Omit<SpawnGroupOptions, 'argv'> & { argv?: string[] }) {
  const script = 'echo "$FOO|$BAR|$(pwd)|$(umask)|$$"; env | sort | tr "\\n" " "; cat; echo oops >&2; exit 3';
  const group = spawnGroup({ argv: ['/bin/sh', '-c', script], ...options });
  let out = '';
  group.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const result = await group.result;
  return { pid: group.pid, out, result };
}

describe('a child started ahead (spawn-ahead.ts)', () => {
  it("is the waiting launcher's process, and sees and does exactly what node's own spawn gives", async () => {
    const cwd = tempDir('uh-ahead-');
    dirs.push(cwd);
    const options = (tag: string): Omit<SpawnGroupOptions, 'argv'> => ({
      cwd,
      env: { FOO: 'a b', BAR: '', PATH: '/usr/bin:/bin', SKIPPED: undefined },
      stdin: { text: 'from stdin\n' },
      stdout: 'pipe',
      stderr: { file: join(cwd, `${tag}.err`) },
    });
    const plain = await observe(options('plain'));
    startSpawnAhead(HOST_PERL);
    const waiting = await until('a launcher', launcherPid);
    const ahead = await observe(options('ahead'));
    expect(ahead.pid).toBe(waiting);
    expect(ahead.out).toBe(plain.out.replace(`|${plain.pid}\n`, `|${ahead.pid}\n`));
    expect(ahead.out).toContain(`a b||${cwd}|0022|`);
    expect(ahead.result).toMatchObject({ exitCode: 3, signal: null, timedOut: false });
    expect(readFileSync(join(cwd, 'ahead.err'), 'utf8')).toBe('oops\n');
    // The next one is started once uh has been idle.
    const next = await until('the next launcher', () => (launcherPid() === waiting ? null : launcherPid()));
    expect(next).not.toBe(waiting);
  });

  it("keeps a spawn's signals, timeout and group kill, and its output file appended", async () => {
    const cwd = tempDir('uh-ahead-');
    dirs.push(cwd);
    startSpawnAhead(HOST_PERL);
    const first = await until('a launcher', launcherPid);
    const killed = spawnGroup({ argv: ['/bin/sh', '-c', 'kill -TERM $$'], cwd, env: {} });
    expect(killed.pid).toBe(first);
    expect(await killed.result).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
    const second = await until('a launcher', () => (launcherPid() === first ? null : launcherPid()));
    const log = join(cwd, 'out.log');
    const slow = spawnGroup({
      argv: ['/bin/sh', '-c', 'echo one; sleep 30 & sleep 30'],
      cwd,
      env: { PATH: '/usr/bin:/bin' },
      stdout: { file: log },
      timeoutMs: 300,
      killGraceMs: 200,
    });
    expect(slow.pid).toBe(second);
    expect(await slow.result).toMatchObject({ timedOut: true, signal: 'SIGTERM' });
    expect(readFileSync(log, 'utf8')).toBe('one\n');
    await until('the group gone', () => (alive(second) ? null : true));
  });

  it("leaves to node's spawn what could differ, and a launcher that died is replaced", async () => {
    const cwd = tempDir('uh-ahead-');
    dirs.push(cwd);
    startSpawnAhead(HOST_PERL);
    const waiting = await until('a launcher', launcherPid);
    // A relative program and a missing directory: node's spawn, with its own errors.
    const relative = spawnGroup({ argv: ['sh', '-c', 'exit 0'], cwd, env: { PATH: '/usr/bin:/bin' } });
    expect(relative.pid).not.toBe(waiting);
    expect((await relative.result).exitCode).toBe(0);
    const missing = spawnGroup({ argv: ['/bin/true'], cwd: join(cwd, 'gone'), env: {} });
    expect((await missing.result).spawnError?.code).toBe('ENOENT');
    expect(launcherPid()).toBe(waiting);
    process.kill(waiting, 'SIGKILL');
    await until('the launcher gone', () => (launcherPid() === null ? true : null));
    const after = spawnGroup({ argv: ['/bin/true'], cwd, env: {} });
    expect(after.pid).not.toBe(waiting);
    expect((await after.result).exitCode).toBe(0);
    await until('a new launcher', launcherPid);
    // Stopped: the waiting launcher exits and none is started again.
    const last = launcherPid() as number;
    stopSpawnAhead();
    await until('the launcher to exit', () => (alive(last) ? null : true));
    expect(launcherPid()).toBeNull();
  });
});
