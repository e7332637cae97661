import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { codexAppServerAdapter } from '../../../../src/workers/runtimes/codex-app-server/codex-app-server-adapter.js';
import {
  buildAppServerArgv,
  CodexAppServerSettingsSchema,
} from '../../../../src/workers/runtimes/codex-app-server/codex-app-server-settings.js';
import {
  missionThreadOf,
  rememberMissionThread,
  MISSION_THREADS_FILE,
} from '../../../../src/workers/runtimes/codex-app-server/codex-app-server-mission-threads.js';
import { IdentityJournal } from '../../../../src/workers/runtimes/codex-app-server/codex-app-server-identity.js';

describe('codex-app-server settings and prepare', () => {
  it('rejects an unknown key and a relative codex_home', () => {
    expect(CodexAppServerSettingsSchema.safeParse({ binary: 'codex', sandboxx: 'x' }).success).toBe(false);
    expect(CodexAppServerSettingsSchema.safeParse({ codex_home: 'rel/dir' }).success).toBe(false);
  });

  it('builds `codex app-server` with -c overrides as TOML', () => {
    const config = CodexAppServerSettingsSchema.parse({
      config_overrides: { model_reasoning_effort: 'low', 'a.b': 3 },
    });
    expect(buildAppServerArgv(config)).toEqual([
      'codex',
      'app-server',
      '-c',
      'model_reasoning_effort="low"',
      '-c',
      'a.b=3',
    ]);
  });

  it('describes the dry run with the client message id and without secrets', async () => {
    const config = CodexAppServerSettingsSchema.parse({
      env: { OPENAI_API_KEY: 'sk-dry-run-secret-1234' },
      config_overrides: { 'providers.x.api_key': 'sk-in-override-5678' },
    });
    const plan = await codexAppServerAdapter.prepare({
      config,
      prompt: 'do it',
      workDir: '/w',
      mission: { missionId: 'm1', operationId: 'op-9' },
    });
    const text = JSON.stringify(plan.describe);
    expect(text).not.toContain('sk-dry-run-secret-1234');
    expect(text).not.toContain('sk-in-override-5678');
    expect(plan.describe).toMatchObject({
      turn_start: { clientUserMessageId: 'uh-op:op-9' },
      thread_params: { cwd: '/w', sandbox: 'workspace-write', approvalPolicy: 'never' },
    });
  });
});

describe('mission → thread map in CODEX_HOME', () => {
  it('remembers the last thread of a mission; a corrupt file reads as empty', () => {
    const home = mkdtempSync(join(tmpdir(), 'uh-mt-'));
    expect(missionThreadOf(home, 'm1')).toBeNull();
    rememberMissionThread(home, 'm1', 'thread-a', 'op-1', new Date(0));
    rememberMissionThread(home, 'm2', 'thread-b', 'op-2', new Date(0));
    expect(missionThreadOf(home, 'm1')).toBe('thread-a');
    expect(JSON.parse(readFileSync(join(home, MISSION_THREADS_FILE), 'utf8')).m2.operation_id).toBe('op-2');
    writeFileSync(join(home, MISSION_THREADS_FILE), '{not json');
    expect(missionThreadOf(home, 'm1')).toBeNull();
  });
});

describe('IdentityJournal', () => {
  it('keeps the record under one key and reads a corrupt record as possibly dispatched (fail closed)', async () => {
    let stored: Record<string, unknown> = { other: 1 };
    const journal = {
      get: async () => stored,
      put: async (patch: Record<string, unknown>) => void (stored = { ...stored, ...patch }),
    };
    const identity = new IdentityJournal(journal);
    await identity.load();
    await identity.put({ thread_id: 't1' });
    await identity.put({ baseline_turn_ids: [] });
    expect(stored).toEqual({ other: 1, codex_app_server: { thread_id: 't1', baseline_turn_ids: [] } });
    stored = { codex_app_server: { dispatch: 'maybe' } };
    expect((await new IdentityJournal(journal).load()).dispatch).toBe('sending');
  });
});
