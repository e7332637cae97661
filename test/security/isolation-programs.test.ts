/**
 * Agents installed the way users install them, run through `uh mission run` under bubblewrap
 * (docs/security.md "Programs as users install them", "Agent state"): an nvm prefix under the
 * home (a bin symlink into lib/node_modules, `#!/usr/bin/env node` found on the agent's PATH),
 * `~/.local/bin` linking into `~/.local/share`, a `node_modules/.bin` entry named by path; a
 * program or path argument under /tmp refused (exit 3, blocked, naming it); `~/.ssh` hidden while
 * a program in the home is exposed; a failing agent's stderr in the why line; an ACP agent whose
 * configured HOME and XDG_DATA_HOME it must write. The fake home lives under /var/tmp: the
 * sandbox's /tmp is private. Needs bwrap (fails with a clear message without it).
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { hostTempDir, removeDir, tempDir } from '../support/temp.js';
import { requireBwrap, treeFingerprint } from './isolation-helpers.js';

const FAKE_ACP_AGENT = fileURLToPath(new URL('../fixtures/fake-acp-agent/agent.mjs', import.meta.url));
const SECRET = 'PRIVATE-KEY-do-not-show-4b1d';
let repo: string;
let cacheDir: string;
let home: string;
let secretFile: string;
const created: string[] = [];
let counter = 0;

/** A node script that reports what it could reach: its module next door, the interpreter, the secret. */
const NODE_AGENT = (lib: string) => `#!/usr/bin/env node
const fs = require('fs');
const { greeting } = require(${JSON.stringify(lib)});
let secret = 'hidden';
try { secret = fs.readFileSync(process.env.T_SECRET, 'utf8').includes('PRIVATE') ? 'visible' : 'other'; } catch {}
fs.writeFileSync('agent-ran.txt', greeting + '\\nnode: ' + (process.env.UH_TEST_NODE || 'host') + '\\nsecret: ' + secret + '\\n');
`;

function write(path: string, text: string, mode = 0o644): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  chmodSync(path, mode);
}

function link(target: string, path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  symlinkSync(target, path);
}

beforeAll(() => {
  requireBwrap();
  repo = makeRepo({ 'README.md': '# demo\n' });
  cacheDir = tempDir('uh-prog-cache-');
  home = hostTempDir('uh-prog-home-');
  created.push(repo, cacheDir, home);
  secretFile = join(home, '.ssh', 'id_rsa');
  write(secretFile, `${SECRET}\n`, 0o600);
});
afterAll(() => created.forEach(removeDir));

async function missionRun(
  runtime: string,
  config: Record<string, unknown>,
  env: Record<string, string> = {},
  json = true,
) {
  const operationId = `op-prog-${process.pid}-${++counter}`;
  const dir = tempDir('uh-prog-mission-');
  const stateDir = tempDir('uh-prog-state-');
  created.push(dir, stateDir);
  const mission = {
    schema_version: 'uh.mission.v0',
    mission_id: 'm-prog',
    operation_id: operationId,
    title: 'Installed agent',
    objective: 'Run the installed agent.',
    repository: { url: repo, ref: 'main' },
    runtime,
    runtime_config_overrides: { [runtime]: config },
    sandbox: { env: { T_SECRET: secretFile } },
    timeout_seconds: 60,
  };
  writeFileSync(join(dir, 'mission.yaml'), stringify(mission));
  const args = ['mission', 'run', join(dir, 'mission.yaml'), ...(json ? ['--json'] : []), '--state-dir', stateDir];
  const r = await runCli(args, { cwd: repo, env: { UH_CACHE_DIR: cacheDir, HOME: home, ...env } });
  const opDir = join(stateDir, 'operations', operationId);
  const receipt = JSON.parse(readFileSync(join(opDir, 'receipt.json'), 'utf8'));
  const patch = existsSync(join(opDir, 'diff.patch')) ? readFileSync(join(opDir, 'diff.patch'), 'utf8') : '';
  return { ...r, receipt, patch, opDir };
}

const command = (argv: string[]) => ({ argv, kill_grace_ms: 500 });
const pathWith = (dir: string) => `${dir}:${process.env.PATH}`;

describe('isolation: programs as users install them (uh mission run under bwrap)', () => {
  it('runs an agent from an nvm prefix under $HOME: the bin symlink, its package, node from the prefix; ~/.ssh stays hidden', async () => {
    const prefix = join(home, '.nvm', 'versions', 'node', 'v20.11.1');
    write(join(prefix, 'lib', 'node_modules', 'pkg', 'cli.js'), NODE_AGENT('./lib.js'), 0o755);
    write(join(prefix, 'lib', 'node_modules', 'pkg', 'lib.js'), "exports.greeting = 'hello from an nvm package';\n");
    link('../lib/node_modules/pkg/cli.js', join(prefix, 'bin', 'nvm-agent'));
    // nvm's node: a wrapper that says it was the one run (env finds it first on the agent's PATH).
    write(join(prefix, 'bin', 'node'), `#!/bin/sh\nUH_TEST_NODE=nvm exec ${process.execPath} "$@"\n`, 0o755);
    const r = await missionRun('command', command(['nvm-agent']), { PATH: pathWith(join(prefix, 'bin')) });
    expect(r.code, `${r.stderr}\n${r.receipt.outcome.message}`).toBe(0);
    expect(r.receipt.isolation.kind).toBe('bwrap');
    expect(r.patch).toContain('+hello from an nvm package');
    expect(r.patch).toContain('+node: nvm');
    expect(r.patch).toContain('+secret: hidden');
  });

  it('runs an agent from ~/.local/bin linking into ~/.local/share', async () => {
    const tool = join(home, '.local', 'share', 'agent-tool');
    write(join(tool, 'agent.js'), NODE_AGENT('./helper.js'), 0o755);
    write(join(tool, 'helper.js'), "exports.greeting = 'hello from ~/.local';\n");
    link('../share/agent-tool/agent.js', join(home, '.local', 'bin', 'local-agent'));
    const r = await missionRun('command', command(['local-agent']), { PATH: pathWith(join(home, '.local', 'bin')) });
    expect(r.code, `${r.stderr}\n${r.receipt.outcome.message}`).toBe(0);
    expect(r.receipt.isolation.kind).toBe('bwrap');
    expect(r.patch).toContain('+hello from ~/.local');
    expect(r.patch).toContain('+secret: hidden');
  });

  it('a tool the agent runs from a PATH directory under $HOME is visible too (each entry and what it links to)', async () => {
    const opt = join(home, '.local', 'opt', 'rg-like');
    write(join(opt, 'run.sh'), '#!/bin/sh\necho "tool output from ~/.local/opt"\n', 0o755);
    link('../opt/rg-like/run.sh', join(home, '.local', 'bin', 'path-tool'));
    const r = await missionRun('command', command(['sh', '-c', 'path-tool > tool.txt']), {
      PATH: pathWith(join(home, '.local', 'bin')),
    });
    expect(r.code, `${r.stderr}\n${r.receipt.outcome.message}`).toBe(0);
    expect(r.receipt.isolation.kind).toBe('bwrap');
    expect(r.patch).toContain('+tool output from ~/.local/opt');
  });

  it('runs a node_modules/.bin entry of a project elsewhere, named by its path', async () => {
    const modules = join(home, 'work', 'project', 'node_modules');
    write(join(modules, 'pkg3', 'bin', 'cli.js'), NODE_AGENT('../lib/greet.js'), 0o755);
    write(join(modules, 'pkg3', 'lib', 'greet.js'), "exports.greeting = 'hello from node_modules/.bin';\n");
    link('../pkg3/bin/cli.js', join(modules, '.bin', 'project-agent'));
    const r = await missionRun('command', command([join(modules, '.bin', 'project-agent')]));
    expect(r.code, `${r.stderr}\n${r.receipt.outcome.message}`).toBe(0);
    expect(r.receipt.isolation.kind).toBe('bwrap');
    expect(r.patch).toContain('+hello from node_modules/.bin');
    expect(r.patch).toContain('+secret: hidden');
  });

  it('a program right in $HOME is exposed alone: ~/.ssh/id_rsa stays hidden (the home is not bound for it)', async () => {
    const agent = join(home, 'home-agent');
    write(
      agent,
      '#!/bin/sh\nif cat "$T_SECRET" >/dev/null 2>&1; then echo visible > secret.txt; else echo hidden > secret.txt; fi\nls "$(dirname "$T_SECRET")" > ssh-dir.txt 2>&1 || true\n',
      0o755,
    );
    const r = await missionRun('command', command([agent]));
    expect(r.code, `${r.stderr}\n${r.receipt.outcome.message}`).toBe(0);
    expect(r.receipt.isolation.kind).toBe('bwrap');
    expect(r.patch).toContain('+hidden');
    expect(r.patch).not.toContain('id_rsa');
    expect(r.patch).not.toContain(SECRET);
  });

  it('a program in a secret location (~/.ssh) is refused: exit 3, blocked, naming it', async () => {
    const agent = join(home, '.ssh', 'ssh-agent-tool');
    write(agent, '#!/bin/sh\ncat "$T_SECRET" > leaked.txt\n', 0o755);
    const r = await missionRun('command', command([agent]));
    expect(r.code, r.stderr).toBe(3);
    expect(r.receipt.isolation.kind).toBe('bwrap');
    expect(r.receipt.status).toBe('blocked');
    expect(r.receipt.outcome.message).toContain(agent);
    expect(r.receipt.changed_files).toEqual([]);
  });

  it('a program under /tmp is refused before launch: exit 3, blocked, naming the path and the fix', async () => {
    const dir = tempDir('uh-prog-tmp-');
    created.push(dir);
    const agent = join(dir, 'tmp-agent');
    write(agent, '#!/bin/sh\necho ran > ran.txt\n', 0o755);
    const r = await missionRun('command', command([agent]));
    expect(r.code, r.stderr).toBe(3);
    expect(r.receipt.isolation.kind).toBe('bwrap');
    expect(r.receipt.status).toBe('blocked');
    expect(r.receipt.outcome.message).toContain(agent);
    expect(r.receipt.outcome.message).toContain('/tmp');
    expect(r.receipt.outcome.hint).toMatch(/outside \/tmp/);
    expect(r.receipt.changed_files).toEqual([]);
    // A path argument under /tmp the same way (the program itself, node, is visible).
    const script = join(dir, 'script.js');
    write(script, "require('fs').writeFileSync('ran.txt', 'ran');\n");
    const r2 = await missionRun('command', command(['node', script]));
    expect(r2.code, r2.stderr).toBe(3);
    expect(r2.receipt.isolation.kind).toBe('bwrap');
    expect(r2.receipt.outcome.message).toContain(script);
  });

  it('UH_ISOLATION_READABLE makes an operator path readable (a program under /tmp runs), never ~/.ssh', async () => {
    const dir = tempDir('uh-prog-fleet-');
    created.push(dir);
    const agent = join(dir, 'fleet-agent');
    write(
      agent,
      '#!/bin/sh\nif cat "$T_SECRET" >/dev/null 2>&1; then echo visible > fleet.txt; else echo hidden > fleet.txt; fi\n',
      0o755,
    );
    const r = await missionRun('command', command([agent]), { UH_ISOLATION_READABLE: `${dir}:${join(home, '.ssh')}` });
    expect(r.code, `${r.stderr}\n${r.receipt.outcome.message}`).toBe(0);
    expect(r.receipt.isolation.kind).toBe('bwrap');
    expect(r.patch).toContain('+hidden');
  });
});

describe('isolation: the why line carries the reason', () => {
  it("a failing agent's last stderr lines are in the why line and the receipt's outcome message, secrets scrubbed", async () => {
    const script =
      'echo "starting" >&2; echo "fatal: cannot reach the model (key sk-abcdefghijkl12345678)" >&2; exit 1';
    const r = await missionRun('command', command(['sh', '-c', script]), {}, false);
    expect(r.receipt.isolation.kind).toBe('bwrap');
    expect(r.receipt.status).toBe('failed');
    expect(r.receipt.outcome.message).toContain('fatal: cannot reach the model');
    expect(r.receipt.outcome.message).not.toContain('sk-abcdefghijkl12345678');
    const why = r.stdout.split('\n').find((l) => l.trim().startsWith('why:'));
    expect(why).toContain('fatal: cannot reach the model (key [redacted])');
  });

  it('a missing program is still blocked spawn:ENOENT with an install hint under isolation', async () => {
    const r = await missionRun('command', command(['no-such-agent-xyz']));
    expect(r.code, r.stderr).toBe(3);
    expect(r.receipt.isolation.kind).toBe('bwrap');
    expect(r.receipt.outcome.raw).toBe('spawn:ENOENT');
    expect(r.receipt.outcome.hint).toBeTruthy();
  });
});

describe('isolation: writable agent state (acp)', () => {
  it('an ACP agent configured with HOME and XDG_DATA_HOME writes its state in its own copy; the configured dirs are untouched', async () => {
    const agentHome = hostTempDir('uh-prog-agent-home-');
    const dataHome = hostTempDir('uh-prog-agent-data-');
    created.push(agentHome, dataHome);
    writeFileSync(join(agentHome, 'seed.txt'), 'seeded from the configured home\n');
    write(join(agentHome, '.ssh', 'id_ed25519'), 'NOT-FOR-AGENTS\n', 0o600);
    const before = [treeFingerprint(agentHome), treeFingerprint(dataHome)];
    const config = {
      command: [FAKE_ACP_AGENT, 'state'],
      env: { HOME: agentHome, XDG_DATA_HOME: dataHome },
      kill_grace_ms: 500,
    };
    const r = await missionRun('acp', config);
    expect(r.code, `${r.stderr}\n${r.receipt.outcome.message}`).toBe(0);
    expect(r.receipt.isolation.kind).toBe('bwrap');
    expect(r.receipt.status).toBe('completed');
    expect(r.patch).toContain('+seeded from the configured home');
    expect(r.patch).toContain('+ssh: absent'); // the seed's ~/.ssh is never copied in
    expect([treeFingerprint(agentHome), treeFingerprint(dataHome)]).toEqual(before);
    // The copy is gone with the run: no agent login or secret among the artifacts.
    expect(readdirSync(r.opDir)).not.toContain('agent-state');
  });
});
