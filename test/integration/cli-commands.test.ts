/**
 * The rest of the inline CLI: the README's demo mission, status / collect / list, adapter
 * list / add / check, help, and sandbox retention (kept on failure, collected when expired,
 * orphans collected at start-up).
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { runCli } from '../support/cli.js';
import { git, makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { removeDir, tempDir } from '../support/temp.js';
import { sweepSandboxes } from '../../src/workers/sandbox/retention.js';
import { readRecords, writeRecord } from '../../src/workers/sandbox/worktree.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let cacheDir: string;
let repo: string;
const dirs: string[] = [];

beforeAll(() => {
  cacheDir = tempDir('uh-cache-');
  repo = makeRepo({ 'README.md': '# r\n', 'src/a.txt': 'a\n' });
  dirs.push(cacheDir, repo);
});
afterAll(() => dirs.forEach(removeDir));

const env = () => ({ UH_CACHE_DIR: cacheDir });

describe('the README quick start', () => {
  it('runs examples/hello/mission.yaml to a verified receipt', async () => {
    const stateDir = tempDir('uh-state-');
    dirs.push(stateDir);
    const r = await runCli(['mission', 'run', 'examples/hello/mission.yaml', '--state-dir', stateDir], {
      cwd: ROOT,
      env: env(),
    });
    expect(r.stderr).toBe('uh: running hello-001 (Write a greeting)…\n');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('hello-001 completed · verified (1/1 checks passed)');
    expect(r.stdout).toContain('added    greeting.txt');
    expect(existsSync(join(ROOT, 'greeting.txt'))).toBe(false);
  });
});

describe('uh mission status | collect | list', () => {
  let stateDir: string;
  let operationId: string;
  beforeAll(async () => {
    stateDir = tempDir('uh-state-');
    dirs.push(stateDir);
    const m = writeMission(repo, ['edit', 'src/b.txt', 'b']);
    operationId = m.operationId;
    const r = await runCli(['mission', 'run', m.path, '--state-dir', stateDir], { cwd: repo, env: env() });
    expect(r.code).toBe(0);
  });

  it('status prints the receipt summary and exits with the operation code', async () => {
    const r = await runCli(['mission', 'status', operationId, '--state-dir', stateDir], { cwd: repo, env: env() });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`${operationId} completed · unverified`);
    const j = await runCli(['mission', 'status', operationId, '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: env(),
    });
    expect(JSON.parse(j.stdout)).toMatchObject({ operation: { state: 'finished' }, receipt: { status: 'completed' } });
  });

  it('status of an unknown id is exit 2 with a hint', async () => {
    const r = await runCli(['mission', 'status', 'no-such-op', '--state-dir', stateDir], { cwd: repo, env: env() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no operation no-such-op');
    expect(r.stderr).toContain('hint:');
  });

  it('collect copies receipt, diff, final message and events to --out', async () => {
    const out = join(tempDir('uh-out-'), 'artifacts');
    const r = await runCli(['mission', 'collect', operationId, '--out', out, '--state-dir', stateDir], {
      cwd: repo,
      env: env(),
    });
    expect(r.code).toBe(0);
    expect(readdirSync(out).sort()).toEqual([
      'diff.patch',
      'events.jsonl',
      'mission.json',
      'receipt.json',
      'runtime-final.txt',
      'runtime-result.yaml',
    ]);
    expect(readFileSync(join(out, 'runtime-final.txt'), 'utf8')).toBe('Edited src/b.txt.');
    expect(parseYaml(readFileSync(join(out, 'runtime-result.yaml'), 'utf8'))).toMatchObject({
      schema_version: 'uh.runtime-result.v0',
      status: 'completed',
    });
  });

  it('list shows operations, filtered by state', async () => {
    const r = await runCli(['mission', 'list', '--json', '--state-dir', stateDir], { cwd: repo, env: env() });
    expect(JSON.parse(r.stdout).map((o: any) => o.operation_id)).toEqual([operationId]);
    const none = await runCli(['mission', 'list', '--state', 'unknown', '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: env(),
    });
    expect(JSON.parse(none.stdout)).toEqual([]);
  });

  it('a usage error names the flag and exits 2', async () => {
    const r = await runCli(['mission', 'run', '--bogus'], { cwd: repo, env: env() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Unknown option '--bogus'");
  });

  it('reads the state dir from UH_STATE_DIR, and --state-dir wins over it', async () => {
    const other = tempDir('uh-state-');
    dirs.push(other);
    const fromEnv = await runCli(['mission', 'list', '--json'], {
      cwd: repo,
      env: { ...env(), UH_STATE_DIR: stateDir, REDIS_URL: undefined },
    });
    expect(JSON.parse(fromEnv.stdout).map((o: any) => o.operation_id)).toEqual([operationId]);
    const flag = await runCli(['mission', 'list', '--json', '--state-dir', other], {
      cwd: repo,
      env: { ...env(), UH_STATE_DIR: stateDir, REDIS_URL: undefined },
    });
    expect(JSON.parse(flag.stdout)).toEqual([]);
  });

  it('a bad environment variable is exit 2 naming the option and the variable, before anything runs', async () => {
    const r = await runCli(['mission', 'list', '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: { ...env(), UH_QUEUE_LOCK_MS: 'soon' },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('job lock duration (environment UH_QUEUE_LOCK_MS)');
    expect(JSON.parse(r.stdout).error.kind).toBe('invalid_input');
  });

  it('--help teaches, with an example', async () => {
    const r = await runCli(['mission', 'run', '--help'], { cwd: repo, env: env() });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('usage: uh mission run');
    expect(r.stdout).toContain('examples:');
  });
});

describe('uh adapter list | add | check', () => {
  it('adds a manifest from the template, which then drives runs and checks', async () => {
    const stateDir = tempDir('uh-state-');
    dirs.push(stateDir);
    const add = await runCli(['adapter', 'add', 'my-agent', '--kind', 'command', '--state-dir', stateDir], {
      cwd: repo,
      env: env(),
    });
    expect(add.code).toBe(0);
    const path = join(stateDir, 'adapters', 'my-agent.yaml');
    const manifest = parseYaml(readFileSync(path, 'utf8'));
    expect(manifest).toMatchObject({ schema_version: 'uh.adapter.v0', id: 'my-agent', runtime_kind: 'command' });
    const again = await runCli(['adapter', 'add', 'my-agent', '--kind', 'command', '--state-dir', stateDir], {
      cwd: repo,
      env: env(),
    });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('--force');

    const ok = await runCli(['adapter', 'check', 'my-agent', '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: env(),
    });
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ id: 'my-agent', ok: true });

    manifest.runtime_config.argv = ['uh-missing-binary-xyz'];
    writeFileSync(path, JSON.stringify(manifest));
    const missing = await runCli(['adapter', 'check', 'my-agent', '--state-dir', stateDir], { cwd: repo, env: env() });
    expect(missing.code).toBe(3);
    expect(missing.stdout).toContain('program not found: uh-missing-binary-xyz');

    manifest.runtime_config = { argv: ['true'], argvv: [] };
    writeFileSync(path, JSON.stringify(manifest));
    const m = writeMission(repo, ['noop'], { runtime: 'my-agent', runtime_config_overrides: {} });
    const bad = await runCli(['mission', 'run', m.path, '--state-dir', stateDir], { cwd: repo, env: env() });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('argvv: unknown key');
  });

  it('lists the registered runtimes', async () => {
    const r = await runCli(['adapter', 'list', '--json'], { cwd: repo, env: env() });
    expect(JSON.parse(r.stdout).map((a: any) => a.id)).toContain('command');
  });
});

describe('sandbox retention', () => {
  it('keeps a failed run’s sandbox until its time is up, then the sweep collects it; orphans go too', async () => {
    const stateDir = tempDir('uh-state-');
    dirs.push(stateDir);
    const m = writeMission(repo, ['exit', '1']);
    const r = await runCli(['mission', 'run', m.path, '--json', '--state-dir', stateDir], { cwd: repo, env: env() });
    const receipt = JSON.parse(r.stdout);
    expect(receipt.sandbox.retained).toBe(true);
    expect(existsSync(receipt.sandbox.path)).toBe(true);

    // Not yet expired: kept.
    await sweepSandboxes(cacheDir, new Date());
    expect(existsSync(receipt.sandbox.path)).toBe(true);
    // An orphan: a worktree directory with no record (a crash between add and record).
    const record = readRecords(cacheDir).find((x) => x.path === receipt.sandbox.path)!;
    const orphan = join(cacheDir, 'sandboxes', 'orphan-1');
    const orphanPrivate = join(cacheDir, 'sandboxes', '.uh', 'orphan-1');
    git(cacheDir, 'init', '-q', orphan);
    mkdirSync(join(orphanPrivate, 'git'), { recursive: true });
    // Past keep_until: collected with uh's private dir.
    writeRecord(cacheDir, { ...record, keep_until: new Date(Date.now() - 1000).toISOString() });
    const swept = await sweepSandboxes(cacheDir, new Date());
    expect(swept.removed.sort()).toEqual([orphan, receipt.sandbox.path].sort());
    expect(existsSync(receipt.sandbox.path)).toBe(false);
    expect(existsSync(orphan)).toBe(false);
    expect(existsSync(orphanPrivate)).toBe(false);
    expect(existsSync(join(cacheDir, 'sandboxes', '.uh', record.name))).toBe(false);
    expect(git(record.mirror, 'worktree', 'list')).not.toContain('orphan-1');
  });

  it('refuses to remove anything outside the sandboxes root', async () => {
    const { removeSandbox } = await import('../../src/workers/sandbox/worktree.js');
    const victim = tempDir('uh-victim-');
    mkdirSync(join(victim, 'keep'), { recursive: true });
    await expect(removeSandbox(cacheDir, { name: 'x', path: victim, mirror: victim })).rejects.toThrow(
      /refusing to remove/,
    );
    expect(existsSync(join(victim, 'keep'))).toBe(true);
  });
});

describe('uh doctor', () => {
  it('reports a ready machine, and a Redis that does not answer as not ready (exit 3)', async () => {
    const ok = await runCli(['doctor', '--json', '--redis', process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'], {
      cwd: repo,
      env: { ...env(), UH_REDIS_PREFIX: `uh-doctor-${process.pid}` },
    });
    expect(ok.code).toBe(0);
    const body = JSON.parse(ok.stdout);
    expect(body.ok).toBe(true);
    expect(body.findings.map((f: any) => f.what)).toEqual(
      expect.arrayContaining(['node', 'git', 'state dir', 'cache dir', 'redis', 'runtime command']),
    );
    const down = await runCli(['doctor', '--redis', 'redis://127.0.0.1:1'], { cwd: repo, env: env() });
    expect(down.code).toBe(3);
    expect(down.stdout).toMatch(/✖ redis\s+.*ECONNREFUSED/);
    expect(down.stdout).toContain('hint: start Redis');
  });

  it('says what network an agent gets: egress by default, host only when the fleet allows it', async () => {
    const json = async (extra: Record<string, string>) => {
      const r = await runCli(['doctor', '--json'], { cwd: repo, env: { ...env(), ...extra } });
      return JSON.parse(r.stdout).findings.find((f: any) => f.what === 'network');
    };
    const strict = await json({});
    expect(strict.detail).toMatch(/^egress by default: out only through uh's proxy/);
    expect(strict.detail).toContain('network: host refused (UH_ALLOW_MISSION_NETWORK_HOST unset)');
    expect((await json({ UH_ALLOW_MISSION_NETWORK_HOST: '1' })).detail).toContain(
      'a mission may ask for network: host',
    );
    expect((await json({ UH_ISOLATION: 'off' })).detail).toMatch(/^host: unisolated runs use the host network/);
  });
});
