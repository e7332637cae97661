import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { spawnGroup } from '../../../../src/shared/process/spawn-group.js';
import { startJsonRpcChild } from '../../../../src/shared/transport/jsonrpc-child.js';
import { AcpClient } from '../../../../src/workers/runtimes/acp/acp-client.js';
import { createAcpAdapter } from '../../../../src/workers/runtimes/acp/acp-adapter.js';
import { AcpSettingsSchema, type AcpSettings } from '../../../../src/workers/runtimes/acp/acp-settings.js';
import { hermesAcpAdapter } from '../../../../src/workers/runtimes/hermes-acp/hermes-acp-adapter.js';
import type { AnyRuntimeAdapter, RuntimeSessionV1 } from '../../../../src/shared/runtime/v1/index.js';
import { makeRepo } from '../../../support/git-repo.js';
import { runAdapter, terminalOf } from '../../../support/run-adapter.js';
import { tempDir } from '../../../support/temp.js';
import { assistantText, fakeCommand, newJournal, ofType, readJournal, requestsOf } from './fake-acp.js';

// A private adapter instance so pool assertions see only this file's children.
const acp = createAcpAdapter<AcpSettings>({
  id: 'acp',
  displayName: 'acp (test instance)',
  configSchema: AcpSettingsSchema,
  defaultConfig: {},
  hints: () => ({ install: 'install', auth: 'auth' }),
});
afterAll(() => acp.pool.closeAll());

async function run(
  adapter: AnyRuntimeAdapter,
  scenario: string,
  extra: Record<string, unknown> = {},
  options: Parameters<typeof runAdapter>[2] = {},
) {
  const journal = newJournal();
  const r = await runAdapter(
    adapter,
    { command: fakeCommand(scenario), env: { FAKE_ACP_JOURNAL: journal }, ...extra },
    options,
  );
  return { ...r, journal: readJournal(journal), terminal: terminalOf(r.events) };
}

describe('acp sessions: load and replay', () => {
  it.each([
    ['replay before the load reply (current Hermes)', 'ok', 0],
    ['replay after the load reply (older Hermes), within load_settle_ms', 'replay-after-load', 500],
  ])('continues a session with session/load; %s is not new output', async (_name, scenario, settle) => {
    const r = await run(acp, scenario, { session_id: 'hist-42', load_settle_ms: settle });
    expect(requestsOf(r.journal, 'session/load')[0]?.params).toEqual({
      sessionId: 'hist-42',
      cwd: r.workDir,
      mcpServers: [],
    });
    expect(requestsOf(r.journal, 'session/new')).toEqual([]);
    expect(ofType(r.events, 'runtime.started')[0]?.data).toMatchObject({ session_id: 'hist-42', resumed: true });
    expect(assistantText(r.events)).not.toContain('REPLAYED');
    expect(ofType(r.events, 'runtime.message').some((e) => e.data.role === 'user')).toBe(false);
    expect(ofType(r.events, 'runtime.tool_call').map((e) => e.data.id)).not.toContain('call_hist_1');
    expect(ofType(r.events, 'runtime.log').some((e) => e.data.message.includes('replayed 4 history update(s)'))).toBe(
      true,
    );
    expect(r.terminal.final_message).toBe('Wrote hello.txt with a greeting.');
    expect(r.terminal.outcome.status).toBe('completed');
  });

  it('hermes-acp handles late replay with its defaults', async () => {
    const r = await run(hermesAcpAdapter, 'replay-after-load', { session_id: 'hist-7' });
    expect(assistantText(r.events)).not.toContain('REPLAYED');
    expect(r.terminal.outcome.status).toBe('completed');
  });

  it('starts a new session when the agent answers session/load with null (unknown session)', async () => {
    const r = await run(acp, 'ok', { session_id: 'gone-1' });
    expect(requestsOf(r.journal, 'session/load')).toHaveLength(1);
    expect(requestsOf(r.journal, 'session/new')).toHaveLength(1);
    expect(ofType(r.events, 'runtime.started')[0]?.data).toMatchObject({ resumed: false });
    expect(
      ofType(r.events, 'runtime.log').some(
        (e) => e.data.level === 'warn' && e.data.message.includes('does not know session gone-1'),
      ),
    ).toBe(true);
  });
});

describe('acp prompts and follow-ups', () => {
  it('sends a follow-up from send() as the next prompt, after the first turn ends', async () => {
    let session: RuntimeSessionV1 | undefined;
    const r = await run(
      acp,
      'reasoning',
      {},
      {
        onSession: (s) => (session = s),
        onEvent: (e) => {
          if (e.type === 'runtime.started') void session?.send?.('And now the tests.');
        },
      },
    );
    expect(requestsOf(r.journal, 'session/prompt').map((m) => m.params.prompt[0].text)).toEqual([
      'Say hello.',
      'And now the tests.',
    ]);
    expect(assistantText(r.events)).toBe('RECEIVED[Say hello.]RECEIVED[And now the tests.]');
    expect(r.terminal.usage?.total_tokens).toBe(240);
    await expect(session?.send?.('too late')).rejects.toThrow(/finished/);
  });

  it('hermes-acp sends no /reasoning by default', async () => {
    const r = await run(hermesAcpAdapter, 'reasoning');
    expect(requestsOf(r.journal, 'session/prompt').map((m) => m.params.prompt[0].text)).toEqual(['Say hello.']);
  });

  it('hermes-acp sends /reasoning <level> as its own turn when asked, never swallowing the prompt', async () => {
    const r = await run(hermesAcpAdapter, 'reasoning', { reasoning_level: 'high' });
    expect(requestsOf(r.journal, 'session/prompt').map((m) => m.params.prompt[0].text)).toEqual([
      '/reasoning high',
      'Say hello.',
    ]);
    expect(r.terminal.final_message).toBe('RECEIVED[Say hello.]');
  });

  it('answers one prompt at a time per session, and refusal for an unknown session (client level)', async () => {
    const client = new AcpClient({
      spawn: spawnGroup,
      argv: fakeCommand('reasoning'),
      cwd: tempDir('uh-acp-client-'),
      env: process.env,
      killGraceMs: 500,
    });
    try {
      await client.initialize(10_000);
      const sessionId = await client.newSession(client.options.cwd, 10_000);
      const texts: string[] = [];
      client.attach(sessionId, {
        onUpdate: (u) => texts.push(String((u as { content?: { text?: string } }).content?.text ?? '')),
        onPermission: () => Promise.reject(new Error('none expected')),
      });
      // Sent together: the fake (like Hermes) would answer the second `end_turn` at once with no work.
      const [a, b] = await Promise.all([client.prompt(sessionId, 'one'), client.prompt(sessionId, 'two')]);
      expect([a.stopReason, b.stopReason]).toEqual(['end_turn', 'end_turn']);
      expect(texts.filter((t) => t.startsWith('RECEIVED'))).toEqual(['RECEIVED[one]', 'RECEIVED[two]']);
      expect((await client.prompt('no-such-session', 'x')).stopReason).toBe('refusal');
    } finally {
      await client.close();
    }
  });
});

describe('one agent child per work dir', () => {
  beforeEach(() => acp.pool.closeAll());
  const pidOf = (events: { type: string; data: any }[]) =>
    events.find((e) => e.type === 'runtime.started')?.data.pid as number;
  // Same command and env for every run, so runs in one dir share a pool entry; the scenario comes from env.
  const command = [process.execPath, fakeCommand('x')[1]!, 'acp'];
  const runIn = (workDir: string, scenario: string) =>
    runAdapter(acp, { command, env: { FAKE_ACP_SCENARIO: scenario }, idle_ms: 30_000 }, { workDir });

  it('reuses the child for the same work dir (followed through symlinks) and starts another for another dir', async () => {
    const root = tempDir('uh-acp-pool-');
    const dirA = makeRepo({ 'README.md': 'a\n' }, join(root, 'a'));
    const dirB = makeRepo({ 'README.md': 'b\n' }, join(root, 'b'));
    symlinkSync(dirA, join(root, 'a-link'));
    const a1 = pidOf((await runIn(dirA, 'reasoning')).events);
    const a2 = pidOf((await runIn(join(root, 'a-link'), 'reasoning')).events);
    const b1 = pidOf((await runIn(dirB, 'reasoning')).events);
    expect(a2).toBe(a1);
    expect(b1).not.toBe(a1);
    expect(acp.pool.size).toBe(2);
  });

  it('drops a child that crashed: the next run in that dir gets a fresh child', async () => {
    const dir = makeRepo({ 'README.md': 'c\n' }, join(tempDir('uh-acp-pool-'), 'c'));
    const first = await runIn(dir, 'crash');
    expect(terminalOf(first.events).outcome.raw).toBe('exit:1');
    expect(acp.pool.size).toBe(0);
    const second = await runIn(dir, 'reasoning');
    expect(terminalOf(second.events).outcome.status).toBe('completed');
    expect(pidOf(second.events)).not.toBe(pidOf(first.events));
  });

  it('closes the child at the end of the run by default (idle_ms 0)', async () => {
    const dir = makeRepo({ 'README.md': 'd\n' }, join(tempDir('uh-acp-pool-'), 'd'));
    const r = await runAdapter(acp, { command, env: { FAKE_ACP_SCENARIO: 'reasoning' } }, { workDir: dir });
    expect(terminalOf(r.events).outcome.status).toBe('completed');
    expect(acp.pool.size).toBe(0);
    expect(() => process.kill(pidOf(r.events), 0)).toThrow();
  });
});

describe('a permission answered in the wrong shape', () => {
  it.each([
    ['flat {outcome:"selected"}', { outcome: 'selected', optionId: 'allow_once' }, 'malformed answer'],
    ['allowed instead of selected', { outcome: { outcome: 'allowed', optionId: 'allow_once' } }, 'malformed answer'],
    [
      'an option that was not offered',
      { outcome: { outcome: 'selected', optionId: 'yes_please' } },
      'unknown option yes_please',
    ],
  ])('is a deny for a Hermes-like agent: %s', async (_name, answer, why) => {
    const journal = newJournal();
    const child = startJsonRpcChild({
      spawn: spawnGroup,
      argv: fakeCommand('ok'),
      cwd: tempDir('uh-acp-shape-'),
      env: { ...process.env, FAKE_ACP_JOURNAL: journal },
      dialect: 'jsonrpc2',
      onRequest: () => answer,
    });
    try {
      await child.connection.request('initialize', { protocolVersion: 1 });
      const { sessionId } = (await child.connection.request('session/new', {
        cwd: tempDir('uh-acp-shape-'),
        mcpServers: [],
      })) as { sessionId: string };
      await child.connection.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'go' }] });
      expect(readJournal(journal).find((m) => m.permission_result)).toMatchObject({
        permission_result: 'deny',
        why: expect.stringContaining(why),
      });
    } finally {
      await child.close();
    }
  });

  it('is never sent by our client: a handler returning a wrong shape becomes an error answer (a deny), not a silent one', async () => {
    const journal = newJournal();
    const cwd = tempDir('uh-acp-shape-');
    const client = new AcpClient({
      spawn: spawnGroup,
      argv: fakeCommand('ok'),
      cwd,
      env: { ...process.env, FAKE_ACP_JOURNAL: journal },
      killGraceMs: 500,
    });
    try {
      await client.initialize(10_000);
      const sessionId = await client.newSession(cwd, 10_000);
      client.attach(sessionId, {
        onUpdate: () => {},
        onPermission: async () => ({ outcome: 'selected', optionId: 'allow_once' }) as never,
      });
      await client.prompt(sessionId, 'go');
      const answer = readJournal(journal).find((m) => m.id === 'srv-1' && !('method' in m));
      expect(answer?.error?.code).toBe(-32603);
      expect(readJournal(journal).find((m) => m.permission_result)).toMatchObject({ permission_result: 'deny' });
    } finally {
      await client.close();
    }
  });
});
