/**
 * `uh mission run` with runtime `codex-app-server`, the REAL app server against the scripted
 * Responses server: the receipt holds the thread id, turn id and readback status; a worker
 * (`uh mission run`) SIGKILLed right after turn/start is recovered into the same turn, and no
 * operation ever starts a second turn (the model requests are counted).
 */
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli } from '../support/cli.js';
import { waitGroupGone } from '../support/process-group.js';
import { makeRepo } from '../support/git-repo.js';
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { makeCodexHome } from '../support/codex-home.js';
import { startResponsesServer, type ResponsesServer } from '../support/responses-server.js';
import { runAdapter, terminalOf } from '../support/run-adapter.js';
import { removeDir, tempDir } from '../support/temp.js';
import { codexAppServerAdapter } from '../../src/workers/runtimes/codex-app-server/codex-app-server-adapter.js';
import { CodexAppServerSettingsSchema } from '../../src/workers/runtimes/codex-app-server/codex-app-server-settings.js';
import { fileJournal } from '../../src/operation/file-journal.js';
import { spawnGroup } from '../../src/shared/process/spawn-group.js';
import { silentLogger } from '../../src/shared/logger.js';
import { recoverOperationRuntime } from '../../src/operation/recover-runtime.js';
import { RUNTIME_CATALOG } from '../../src/workers/operation-ports.js';

const API_KEY = 'sk-uh-appserver-pipeline-0e7c2b55';
let server: ResponsesServer;
let codexHome: string;
let repo: string;
let cacheDir: string;
const created: string[] = [];

beforeAll(async () => {
  server = await startResponsesServer({ apiKey: API_KEY });
  codexHome = makeCodexHome(server.url);
  repo = makeRepo({ 'README.md': '# demo\n' });
  cacheDir = tempDir('uh-cache-');
  created.push(codexHome, repo, cacheDir);
});
afterAll(async () => {
  await server?.close();
  created.forEach(removeDir);
});

const runtimeConfig = () => ({
  binary: realRuntimeBinary('codex'),
  codex_home: codexHome,
  env: { UH_MOCK_API_KEY: API_KEY },
});

function missionFile(operationId: string): { path: string; stateDir: string } {
  const dir = tempDir('uh-mission-');
  const stateDir = tempDir('uh-state-');
  created.push(dir, stateDir);
  const path = join(dir, 'mission.yaml');
  writeFileSync(
    path,
    stringify({
      schema_version: 'uh.mission.v0',
      mission_id: `m-${operationId}`,
      operation_id: operationId,
      title: 'Create hello.txt',
      objective: 'Create hello.txt containing a greeting.',
      repository: { url: repo, ref: 'main' },
      runtime: 'codex-app-server',
      runtime_config_overrides: { 'codex-app-server': runtimeConfig() },
      scope: { allowed_change_globs: ['hello.txt'] },
      timeout_seconds: 120,
    }),
  );
  return { path, stateDir };
}

/** Resolves once `check()` holds, polling on a short interval; fails after a generous bound. */
async function until(what: string, check: () => boolean | Promise<boolean>, boundMs = 30_000): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('uh mission run --runtime codex-app-server (real app server)', () => {
  it('writes a receipt holding the thread id, the turn id and the readback status', async () => {
    await server.script([
      {
        kind: 'function_call',
        name: 'exec_command',
        arguments: { cmd: "printf 'hi from the app server\\n' > hello.txt" },
        call_id: 'call_1',
      },
      { kind: 'message', text: 'Done.\n\n```uh-runtime-final-message\nWrote hello.txt.\n```\n' },
    ]);
    const { path, stateDir } = missionFile(`op-as-receipt-${process.pid}`);
    const r = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: { UH_CACHE_DIR: cacheDir },
    });
    expect(r.code, r.stderr).toBe(0);
    const receipt = JSON.parse(r.stdout);
    expect(receipt.status).toBe('completed');
    expect(receipt.outcome.raw).toBe('readback:completed');
    expect(receipt.runtime.thread_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(receipt.runtime.turn_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(receipt.changed_files).toEqual([{ path: 'hello.txt', status: 'added' }]);
    expect(receipt.final_message).toBe('Wrote hello.txt.');
    const journal = JSON.parse(
      readFileSync(join(stateDir, 'operations', receipt.operation_id, 'runtime-journal.json'), 'utf8'),
    ).codex_app_server;
    expect(journal).toMatchObject({
      thread_id: receipt.runtime.thread_id,
      turn_id: receipt.runtime.turn_id,
      dispatch: 'terminal',
      readback_status: 'completed',
    });
    const events = readFileSync(receipt.artifacts.events, 'utf8');
    expect(events + r.stdout + r.stderr).not.toContain(API_KEY);
  });

  it('a worker SIGKILLed right after turn/start is recovered into the same turn; no operation ever starts two turns', async () => {
    await server.script([{ kind: 'hang' }]);
    const operationId = `op-as-kill-${process.pid}`;
    const { path, stateDir } = missionFile(operationId);
    const opDir = join(stateDir, 'operations', operationId);
    const journalPath = join(opDir, 'runtime-journal.json');
    const journalNow = () =>
      existsSync(journalPath) ? (JSON.parse(readFileSync(journalPath, 'utf8')).codex_app_server ?? {}) : {};

    let pid = 0;
    const worker = runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: { UH_CACHE_DIR: cacheDir },
      onSpawn: (p) => (pid = p),
    });
    // turn/start was sent (journal) and reached the model (the turn is live): kill the worker now.
    await until(
      'the turn to reach the model',
      async () => journalNow().dispatch !== undefined && (await server.requests()).length === 1,
    );
    process.kill(pid, 'SIGKILL');
    const killed = await worker;
    expect(killed.code).not.toBe(0);
    // The orphaned app server sees its stdin close and exits; recovery starts after it is gone.
    const started = readFileSync(join(opDir, 'events.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((e) => e.type === 'runtime.started');
    if (started?.data.pid) expect(await waitGroupGone(started.data.pid)).toEqual([]);
    const left = journalNow();
    expect(left.client_message_id).toBe(`uh-op:${operationId}`);
    expect(left.baseline_turn_ids).toEqual([]);

    const config = CodexAppServerSettingsSchema.parse(runtimeConfig());
    const recoverCtx = (journal: string) => ({
      journal: fileJournal(journal),
      logDir: tempDir('uh-recover-'),
      spawn: spawnGroup,
      env: { PATH: process.env.PATH, HOME: tempDir('uh-home-') },
      now: () => Date.now(),
      logger: silentLogger,
      mission: { missionId: `m-${operationId}`, operationId },
    });

    // 1. Recovery from the journal the dead worker left: the exact turn, read back terminal.
    const copy = join(tempDir('uh-journal-'), 'runtime-journal.json');
    copyFileSync(journalPath, copy);
    // Through the state dir `uh mission run` left (mission.json, operation.json, the journal).
    const viaState = await recoverOperationRuntime(stateDir, operationId, RUNTIME_CATALOG, {
      env: { PATH: process.env.PATH, HOME: tempDir('uh-home-') },
    });
    expect(viaState?.runtime).toBe('codex-app-server');
    const recovered = viaState!.recovery;
    expect(recovered.state, recovered.reason).toBe('settled');
    expect(recovered.thread_id).toBe(left.thread_id);
    if (left.turn_id) expect(recovered.turn_id).toBe(left.turn_id);
    expect(recovered.finished).toMatchObject({
      readback_status: 'interrupted',
      outcome: { status: 'failed', raw: 'readback:interrupted' },
      thread_id: left.thread_id,
    });
    expect(JSON.parse(readFileSync(journalPath, 'utf8')).codex_app_server).toMatchObject({
      dispatch: 'terminal',
      readback_status: 'interrupted',
      turn_id: recovered.turn_id,
    });

    // 2. The reply of turn/start lost (no turn id bound): adopted by our client message id alone.
    const lost = JSON.parse(readFileSync(copy, 'utf8'));
    delete lost.codex_app_server.turn_id;
    lost.codex_app_server.dispatch = 'sending';
    writeFileSync(copy, JSON.stringify(lost));
    const adopted = await codexAppServerAdapter.recover!(config, recoverCtx(copy));
    expect(adopted.state, adopted.reason).toBe('settled');
    expect(adopted.turn_id).toBe(recovered.turn_id);

    // 3. No turn carries the journal's client message id: stays unknown, nothing sent.
    const other = JSON.parse(readFileSync(copy, 'utf8'));
    other.codex_app_server = { ...lost.codex_app_server, client_message_id: 'uh-op:someone-else' };
    const otherPath = join(tempDir('uh-journal-'), 'runtime-journal.json');
    writeFileSync(otherPath, JSON.stringify(other));
    const none = await codexAppServerAdapter.recover!(config, recoverCtx(otherPath));
    expect(none.state).toBe('unknown');
    expect(none.reason).toMatch(/no new turn carries client message id/);

    // 4. The operation re-delivered to a worker (same journal, dispatch may have happened):
    //    it recovers instead of dispatching.
    writeFileSync(copy, JSON.stringify(lost));
    const rerun = await runAdapter(codexAppServerAdapter, runtimeConfig(), {
      env: { PATH: process.env.PATH, HOME: tempDir('uh-home-') },
      mission: { missionId: `m-${operationId}`, operationId },
      journalPath: copy,
    });
    const finished = terminalOf(rerun.events);
    expect(finished.turn_id).toBe(recovered.turn_id);
    expect(finished.recovery).toMatchObject({ state: 'settled' });

    // Exactly one model request in all of this: one operation, one turn.
    const requests = await server.requests();
    expect(requests).toHaveLength(1);
    expect(JSON.stringify(requests[0]!.body.input)).toContain('Create hello.txt containing a greeting.');
  });
});
