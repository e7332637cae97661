/**
 * Persistent agent state under bwrap (docs/security.md "Agent state"): pi and codex keep their
 * home between missions, but as the tenant's own copy on the worker. A hostile agent in tenant A's
 * mission plants a file in its home: tenant B's next mission on the same worker does not see it,
 * tenant A's next one does, and the worker user's real home (its ~/.pi, ~/.codex) is byte for byte
 * what it was.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { startTestRedis } from '../support/redis.js';
import { hostTempDir, removeDir, tempDir } from '../support/temp.js';
import { startWorker } from '../support/worker-process.js';
import { requireBwrap, treeFingerprint } from './isolation-helpers.js';

const HOSTILE = fileURLToPath(new URL('../fixtures/bin/hostile-agent-home.sh', import.meta.url));
const created: string[] = [];
let home: string;
let repo: string;
let cacheDir: string;
let counter = 0;

beforeAll(() => {
  requireBwrap();
  home = hostTempDir('uh-agent-home-');
  mkdirSync(join(home, '.pi', 'agent'), { recursive: true });
  writeFileSync(join(home, '.pi', 'agent', 'settings.json'), '{"retry":{"enabled":false}}\n');
  mkdirSync(join(home, '.codex'), { recursive: true });
  writeFileSync(join(home, '.codex', 'config.toml'), 'model = "m"\n');
  mkdirSync(join(home, '.ssh'), { recursive: true });
  writeFileSync(join(home, '.ssh', 'id_ed25519'), 'PRIVATE KEY\n');
  repo = makeRepo({ 'README.md': '# homes\n' });
  cacheDir = tempDir('uh-agent-home-cache-');
  created.push(home, repo, cacheDir);
});
afterAll(() => created.forEach(removeDir));

function missionFile(runtime: string, tenant: string): { path: string; operationId: string } {
  const operationId = `op-home-${process.pid}-${++counter}`;
  const spec = {
    schema_version: 'uh.mission.v0',
    mission_id: `m-home-${counter}`,
    operation_id: operationId,
    title: 'Hostile agent home',
    objective: 'Plant a file for the next tenant.',
    repository: { url: repo, ref: 'main' },
    runtime,
    runtime_config_overrides: { [runtime]: { binary: HOSTILE, env: { HOSTILE_TAG: `from-${tenant}` } } },
    timeout_seconds: 60,
  };
  const path = join(tempDir('uh-agent-home-mission-'), 'mission.yaml');
  created.push(join(path, '..'));
  writeFileSync(path, stringify(spec));
  return { path, operationId };
}

/** One `uh mission run` of the hostile agent as `runtime`, submitted by `tenant`: what it found in its home. */
async function mission(runtime: string, tenant: string, stateDir: string): Promise<string> {
  const { path, operationId } = missionFile(runtime, tenant);
  const env = { UH_CACHE_DIR: cacheDir, HOME: home, UH_TENANT: tenant, UH_ISOLATION: 'require' };
  const r = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], { cwd: repo, env });
  const opDir = join(stateDir, 'operations', operationId);
  const receipt = JSON.parse(readFileSync(join(opDir, 'receipt.json'), 'utf8'));
  expect(receipt.isolation.kind, r.stderr).toBe('bwrap');
  const patch = readFileSync(join(opDir, 'diff.patch'), 'utf8');
  const seen = /^\+seen=(.*)$/m.exec(patch);
  expect(seen, `${receipt.status}: ${receipt.outcome.message}\n${r.stderr}`).not.toBeNull();
  return seen![1]!;
}

/** Every file under the agent homes of `runtime` (relative path → content). */
function homesOf(stateDir: string, runtime: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, rel: string) => {
    for (const name of readdirSync(dir)) {
      const abs = join(dir, name);
      const r = rel ? `${rel}/${name}` : name;
      if (statSync(abs).isDirectory()) walk(abs, r);
      else out[r.replace(/-[0-9a-f]{12}\//, '/')] = readFileSync(abs, 'utf8');
    }
  };
  walk(join(stateDir, 'agent-homes', runtime), '');
  return out;
}

describe.each([
  ['pi', 'PI_CODING_AGENT_DIR', 'settings.json', '{"retry":{"enabled":false}}\n'],
  ['codex', 'CODEX_HOME', 'config.toml', 'model = "m"\n'],
  ['codex-app-server', 'CODEX_HOME', 'config.toml', 'model = "m"\n'],
])('a hostile %s agent under bwrap', (runtime, name, seedFile, seedText) => {
  it("plants a file in its home: the next tenant's mission does not see it, its own tenant's does; the real home is untouched", async () => {
    const stateDir = tempDir('uh-agent-home-state-');
    created.push(stateDir);
    const before = treeFingerprint(home);

    expect(await mission(runtime, 'team-a', stateDir)).toBe('none');
    expect(await mission(runtime, 'team-b', stateDir)).toBe('none');
    expect(await mission(runtime, 'team-a', stateDir)).toBe('from-team-a');
    expect(await mission(runtime, 'team-b', stateDir)).toBe('from-team-b');

    expect(treeFingerprint(home)).toBe(before);
    const homes = homesOf(stateDir, runtime);
    // Each tenant's home: seeded from the configured dir (never its secrets), then the agent's own writes.
    for (const tenant of ['team-a', 'team-b']) {
      expect(homes[`${tenant}/${name}/${seedFile}`]).toBe(seedText);
      expect(homes[`${tenant}/${name}/planted.txt`]).toBe(`from-${tenant}\n`);
    }
    expect(Object.keys(homes).some((k) => k.includes('.ssh') || k.includes('id_ed25519'))).toBe(false);
    const dir = join(stateDir, 'agent-homes', runtime, 'team-a');
    expect(statSync(join(dir, readdirSync(dir)[0]!)).mode & 0o777).toBe(0o700);
    expect(existsSync(join(home, '.pi', 'agent', 'planted.txt'))).toBe(false);
  }, 120_000);
});

describe('a hostile pi agent through a worker (queue mode)', () => {
  it("the job's tenant picks the home: the other tenant's next mission does not see the planted file", async () => {
    const redis = await startTestRedis('agent-homes');
    const stateDir = tempDir('uh-agent-home-qstate-');
    created.push(stateDir);
    const before = treeFingerprint(home);
    const base = { REDIS_URL: redis.url, UH_REDIS_PREFIX: redis.prefix('homes'), UH_CACHE_DIR: cacheDir, HOME: home };
    // The worker checks its runtime at start: `pi` on its PATH is the hostile agent too.
    const bin = hostTempDir('uh-agent-home-bin-');
    created.push(bin);
    symlinkSync(HOSTILE, join(bin, 'pi'));
    const worker = await startWorker(['--state-dir', stateDir, '--runtime', 'pi'], {
      cwd: repo,
      env: { ...base, PATH: `${bin}:${process.env.PATH}`, UH_ISOLATION: 'require', UH_TENANT: 'worker-own' },
    });
    try {
      await worker.waitForOutput('ready');
      for (const tenant of ['team-a', 'team-b', 'team-a']) {
        const { path } = missionFile('pi', tenant);
        const args = ['mission', 'submit', path, '--wait', '--json', '--state-dir', stateDir];
        const r = await Promise.race([
          runCli(args, { cwd: repo, env: { ...base, UH_TENANT: tenant } }),
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error(worker.output())), 30_000)),
        ]);
        expect(JSON.parse(r.stdout).isolation?.kind, `${r.stderr}\n${worker.output()}`).toBe('bwrap');
      }
    } finally {
      await worker.stop('SIGTERM');
      await redis.cleanup();
    }
    const homes = homesOf(stateDir, 'pi');
    expect(homes['team-a/PI_CODING_AGENT_DIR/seen.log']).toBe('seen=none\nseen=from-team-a\n');
    expect(homes['team-b/PI_CODING_AGENT_DIR/seen.log']).toBe('seen=none\n');
    expect(existsSync(join(stateDir, 'agent-homes', 'pi', 'worker-own'))).toBe(false);
    expect(treeFingerprint(home)).toBe(before);
  }, 120_000);
});
