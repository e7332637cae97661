/**
 * `uh doctor` checks each configured runtime inside the isolation a mission would give it
 * (docs/security.md "uh doctor under isolation"): an ACP agent installed in a home (`~/.local/bin`
 * into `~/.local/share`) whose configured HOME it writes at start passes, against a per-check copy
 * of that home (the configured one is never written); an agent under /tmp, which a mission's
 * sandbox cannot show, is reported as what the check could not see. Needs bwrap.
 */
import { chmodSync, copyFileSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli } from '../support/cli.js';
import { hostTempDir, removeDir, tempDir } from '../support/temp.js';
import { requireBwrap, treeFingerprint } from './isolation-helpers.js';

const FAKE_ACP_AGENT = fileURLToPath(new URL('../fixtures/fake-acp-agent/agent.mjs', import.meta.url));
const created: string[] = [];
let stateDir: string;
let cacheDir: string;
let home: string;
let tmpAgent: string;

interface Finding {
  what: string;
  ok: boolean;
  detail: string;
  hint?: string;
  unseen?: string[];
}

function manifest(id: string, runtimeConfig: Record<string, unknown>): void {
  const doc = { schema_version: 'uh.adapter.v0', id, name: id, runtime_kind: 'acp', runtime_config: runtimeConfig };
  writeFileSync(join(stateDir, 'adapters', `${id}.yaml`), stringify(doc));
}

beforeAll(() => {
  requireBwrap();
  stateDir = tempDir('uh-doctor-state-');
  cacheDir = tempDir('uh-doctor-cache-');
  home = hostTempDir('uh-doctor-home-'); // not /tmp: a mission's sandbox shows no host /tmp
  const tmp = tempDir('uh-doctor-tmpagent-');
  created.push(stateDir, cacheDir, home, tmp);
  const share = join(home, '.local', 'share', 'acp-agent');
  mkdirSync(share, { recursive: true });
  copyFileSync(FAKE_ACP_AGENT, join(share, 'agent.mjs'));
  chmodSync(join(share, 'agent.mjs'), 0o755);
  mkdirSync(join(home, '.local', 'bin'));
  symlinkSync(join(share, 'agent.mjs'), join(home, '.local', 'bin', 'acp-agent'));
  mkdirSync(join(home, '.ssh'));
  writeFileSync(join(home, '.ssh', 'id_rsa'), 'PRIVATE\n');
  tmpAgent = join(tmp, 'agent.mjs');
  copyFileSync(FAKE_ACP_AGENT, tmpAgent);
  chmodSync(tmpAgent, 0o755);
  mkdirSync(join(stateDir, 'adapters'));
  manifest('home-agent', { command: [join(home, '.local', 'bin', 'acp-agent'), 'state'], env: { HOME: home } });
  manifest('tmp-agent', { command: [tmpAgent, 'ok'] });
});
afterAll(() => created.forEach(removeDir));

describe('uh doctor under bwrap', () => {
  it("checks each configured runtime inside a mission's isolation and says what it could not see", async () => {
    const before = treeFingerprint(home);
    const r = await runCli(['doctor', '--json', '--state-dir', stateDir, '--redis', 'redis://127.0.0.1:1'], {
      cwd: stateDir,
      env: { UH_CACHE_DIR: cacheDir, HOME: home },
    });
    const findings = (JSON.parse(r.stdout) as { findings: Finding[] }).findings;
    const of = (what: string) => findings.find((f) => f.what === what);

    const homeAgent = of('runtime home-agent');
    expect(homeAgent, r.stdout).toMatchObject({ ok: true });
    expect(homeAgent?.detail).toContain('checked under bwrap');
    // The agent wrote its state at start: into the check's copy of HOME, never the configured one.
    expect(treeFingerprint(home)).toBe(before);
    expect(readdirSync(home).sort()).toEqual(['.local', '.ssh']);

    const tmp = of('runtime tmp-agent');
    expect(tmp, r.stdout).toMatchObject({ ok: false });
    expect(tmp?.unseen?.join('\n')).toContain(tmpAgent);
    expect(tmp?.hint).toContain('could not see');
  }, 120_000);
});
