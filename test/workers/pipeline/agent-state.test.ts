/** agent-state.ts: the operation's copy of a configured state dir, and the env that points at it. */
import { mkdirSync, readFileSync, existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SpawnGroupOptions } from '../../../src/shared/process/spawn-group.js';
import { agentStateEnv } from '../../../src/shared/runtime/agent-state-env.js';
import {
  agentHomesDir,
  agentStateSpawn,
  prepareAgentState,
  preparePersistentState,
} from '../../../src/workers/pipeline/agent-state.js';
import { codexIsolation } from '../../../src/workers/runtimes/codex-shared/codex-common-settings.js';
import { CodexSettingsSchema } from '../../../src/workers/runtimes/codex/codex-settings.js';
import { piAdapter } from '../../../src/workers/runtimes/pi/pi-adapter.js';
import { removeDir, tempDir } from '../../support/temp.js';

const root = tempDir('uh-agent-state-');
afterAll(() => removeDir(root));

describe('agent state', () => {
  it('copies the configured dir without its secret locations or uh dirs; removes the copy on dispose', () => {
    const seed = join(root, 'home');
    mkdirSync(join(seed, '.ssh'), { recursive: true });
    mkdirSync(join(seed, '.config', 'tool'), { recursive: true });
    writeFileSync(join(seed, '.ssh', 'id_rsa'), 'key');
    writeFileSync(join(seed, '.config', 'tool', 'settings.json'), '{}');
    const own = join(seed, '.cache', 'uh');
    mkdirSync(own, { recursive: true });
    writeFileSync(join(own, 'receipt.key'), 'k');
    const op = join(root, 'op');
    const state = prepareAgentState(op, { HOME: seed }, [own]);
    const copy = state.env.HOME!;
    expect(readFileSync(join(copy, '.config', 'tool', 'settings.json'), 'utf8')).toBe('{}');
    expect(existsSync(join(copy, '.ssh'))).toBe(false);
    expect(existsSync(join(copy, '.cache', 'uh'))).toBe(false);
    expect(state.writable).toEqual([copy]);
    state.dispose();
    expect(existsSync(join(op, 'agent-state'))).toBe(false);
    expect(existsSync(join(seed, '.ssh', 'id_rsa'))).toBe(true);
  });

  it('does not copy program installs under the home (an nvm prefix, npm cache); the rest of the home is copied', () => {
    const seed = join(root, 'home-nvm');
    const prefix = join(seed, '.nvm', 'versions', 'node', 'v20.19.0', 'lib', 'node_modules', 'agent');
    mkdirSync(prefix, { recursive: true });
    writeFileSync(join(prefix, 'cli.js'), '// the agent');
    mkdirSync(join(seed, '.npm', '_cacache'), { recursive: true });
    mkdirSync(join(seed, '.gemini'), { recursive: true });
    writeFileSync(join(seed, '.gemini', 'settings.json'), '{}');
    const state = prepareAgentState(join(root, 'op-nvm'), { HOME: seed }, []);
    const copy = state.env.HOME!;
    expect(readFileSync(join(copy, '.gemini', 'settings.json'), 'utf8')).toBe('{}');
    expect(existsSync(join(copy, '.nvm'))).toBe(false);
    expect(existsSync(join(copy, '.npm'))).toBe(false);
    state.dispose();
    expect(existsSync(join(prefix, 'cli.js'))).toBe(true);
  });

  it('children see the copy where their env named the configured dir, and nothing else changes', () => {
    const seen: SpawnGroupOptions[] = [];
    const spawn = agentStateSpawn(
      (o) => (seen.push(o), null as never),
      { HOME: '/cfg/home' },
      { HOME: '/op/agent-state/HOME' },
    );
    spawn({ argv: ['a'], cwd: '/', env: { HOME: '/cfg/home', PATH: '/bin' } });
    spawn({ argv: ['b'], cwd: '/', env: { HOME: '/elsewhere' } });
    spawn({ argv: ['c'], cwd: '/', env: { HOME: '/cfg/home/' } });
    expect(seen.map((o) => o.env.HOME)).toEqual(['/op/agent-state/HOME', '/elsewhere', '/op/agent-state/HOME']);
  });

  it('names state from the env: homes and dirs with absolute paths; an existing file is only read', () => {
    const file = join(root, 'opencode.json');
    writeFileSync(file, '{}');
    const env = {
      HOME: '/var/lib/uh/gemini-home',
      XDG_DATA_HOME: '/var/lib/uh/opencode/',
      GEMINI_API_KEY: 'AIza-not-a-path',
      OPENCODE_CONFIG: file,
      OPENCODE_CONFIG_CONTENT: '{}',
      TMPDIR: '/x',
    };
    expect(agentStateEnv(env)).toEqual({
      state: { HOME: '/var/lib/uh/gemini-home', XDG_DATA_HOME: '/var/lib/uh/opencode' },
      readable: [file],
    });
  });

  it('persistent state: one seeded dir per runtime and tenant, kept across missions, never the seed; dispose keeps it', () => {
    const seed = join(root, 'pi-agent');
    mkdirSync(join(seed, '.ssh'), { recursive: true });
    writeFileSync(join(seed, 'settings.json'), '{}');
    writeFileSync(join(seed, '.ssh', 'id_rsa'), 'key');
    const stateDir = join(root, 'worker-state');
    const a = preparePersistentState(stateDir, { runtime: 'pi', tenant: 'team-a' }, { PI_CODING_AGENT_DIR: seed }, []);
    const dir = a.env.PI_CODING_AGENT_DIR!;
    expect(dir.startsWith(`${agentHomesDir(stateDir, 'pi', 'team-a')}/PI_CODING_AGENT_DIR-`)).toBe(true);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readFileSync(join(dir, 'settings.json'), 'utf8')).toBe('{}');
    expect(existsSync(join(dir, '.ssh'))).toBe(false);
    writeFileSync(join(dir, 'login.json'), 'team-a');
    a.dispose();
    writeFileSync(join(seed, 'settings.json'), '{"changed":true}');
    const again = preparePersistentState(
      stateDir,
      { runtime: 'pi', tenant: 'team-a' },
      { PI_CODING_AGENT_DIR: seed },
      [],
    );
    expect(again.env.PI_CODING_AGENT_DIR).toBe(dir);
    expect(readFileSync(join(dir, 'login.json'), 'utf8')).toBe('team-a');
    expect(readFileSync(join(dir, 'settings.json'), 'utf8')).toBe('{}'); // seeded once
    const b = preparePersistentState(stateDir, { runtime: 'pi', tenant: 'team-b' }, { PI_CODING_AGENT_DIR: seed }, []);
    expect(b.env.PI_CODING_AGENT_DIR).not.toBe(dir);
    expect(existsSync(join(b.env.PI_CODING_AGENT_DIR!, 'login.json'))).toBe(false);
    // No seed temp dir is left beside the homes.
    expect(readdirSync(agentHomesDir(stateDir, 'pi', 'team-a'))).toHaveLength(1);
    expect(readFileSync(join(seed, 'settings.json'), 'utf8')).toBe('{"changed":true}');
  });

  it('a runtime or tenant name never escapes the agent homes', () => {
    const dir = agentHomesDir('/s', '../x', '..');
    expect(dir.startsWith('/s/agent-homes/')).toBe(true);
    expect(dir.split('/').includes('..')).toBe(false);
  });

  it('persistent spawn: an unset variable is set to the copy (a default home), another value is kept', () => {
    const seen: SpawnGroupOptions[] = [];
    const spawn = agentStateSpawn(
      (o) => (seen.push(o), null as never),
      { CODEX_HOME: '/home/u/.codex' },
      { CODEX_HOME: '/s/agent-homes/codex/t/CODEX_HOME-x' },
      true,
    );
    spawn({ argv: ['a'], cwd: '/', env: { HOME: '/home/u' } });
    spawn({ argv: ['b'], cwd: '/', env: { CODEX_HOME: '/elsewhere' } });
    expect(seen.map((o) => o.env.CODEX_HOME)).toEqual(['/s/agent-homes/codex/t/CODEX_HOME-x', '/elsewhere']);
  });

  it("pi and codex's default homes are declared persistent; codex exec's configured home is a per-operation copy", () => {
    const env = { HOME: '/home/u' };
    const pi = piAdapter.isolation!(piAdapter.configSchema.parse({}), { env, logDir: '/l' });
    expect(pi).toEqual({ writable: [], state: { PI_CODING_AGENT_DIR: '/home/u/.pi/agent' }, persistent: true });
    const codex = CodexSettingsSchema.parse({});
    expect(codexIsolation(codex, env, [], true)).toEqual({
      writable: [],
      state: { CODEX_HOME: '/home/u/.codex' },
      persistent: true,
    });
    const configured = CodexSettingsSchema.parse({ codex_home: '/etc/codex' });
    expect(codexIsolation(configured, env, [], true)).toEqual({ writable: [], state: { CODEX_HOME: '/etc/codex' } });
    expect(codexIsolation(configured, env)).toEqual({
      writable: [],
      state: { CODEX_HOME: '/etc/codex' },
      persistent: true,
    });
  });
});
