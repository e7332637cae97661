/**
 * The generic `acp` runtime against a REAL ACP peer: the example agent shipped in
 * `@agentclientprotocol/sdk@1.9.0` (`dist/examples/agent.js`, pinned dev dependency), a separate
 * Node process speaking the official SDK's wire. Its turn: a chunk, a read tool call, another
 * chunk, an edit tool call that needs permission for /home/user/project/config.json, then a chunk
 * that depends on the answer. It waits ~1 s between steps, so each run takes ~5 s.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { acpAdapter } from '../../src/workers/runtimes/acp/acp-adapter.js';
import type { RuntimeSessionV1 } from '../../src/shared/runtime/v1/index.js';
import { runAdapter, terminalOf } from '../support/run-adapter.js';
import { abortWhen, assistantText, ofType } from '../workers/runtimes/acp/fake-acp.js';

// The package's exports map hides package.json and the examples: locate it in node_modules.
const SDK_DIR = fileURLToPath(new URL('../../node_modules/@agentclientprotocol/sdk', import.meta.url));
const EXAMPLE_AGENT = join(SDK_DIR, 'dist', 'examples', 'agent.js');
const command = [process.execPath, EXAMPLE_AGENT];

describe.concurrent('acp runtime against the ACP SDK 1.9.0 example agent (real peer)', () => {
  it('is the pinned SDK version', () => {
    expect((JSON.parse(readFileSync(join(SDK_DIR, 'package.json'), 'utf8')) as { version: string }).version).toBe(
      '1.9.0',
    );
  });

  it('streams chunks and tool calls; the sandbox policy denies its edit outside the work dir', async () => {
    const r = await runAdapter(acpAdapter, { command });
    const t = terminalOf(r.events);
    expect(t.outcome).toMatchObject({ status: 'completed', raw: 'stop:end_turn' });
    expect(assistantText(r.events)).toBe(
      "I'll help you with that. Let me start by reading some files to understand the current situation." +
        ' Now I understand the project structure. I need to make some changes to improve it.' +
        " I understand you prefer not to make that change. I'll skip the configuration update.",
    );
    expect(
      ofType(r.events, 'runtime.tool_call').map((e) => `${e.data.id}:${e.data.kind ?? ''}:${e.data.status}`),
    ).toEqual(['call_1:read:pending', 'call_1::completed', 'call_2:edit:pending']);
    // The permission is decided on everything known about call_2: the path of its earlier
    // tool_call (/project/config.json) and the one in the request itself.
    const [permission] = ofType(r.events, 'runtime.permission');
    expect(permission?.data).toMatchObject({
      request: {
        tool_call_id: 'call_2',
        kind: 'edit',
        paths: ['/project/config.json', '/home/user/project/config.json'],
      },
      answer: { outcome: { outcome: 'selected', optionId: 'reject' } },
      allowed: false,
    });
    expect(t.final_message_source).toBe('native');
    expect(t.session_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('selects its allow option when a person allows through send (policy ask)', async () => {
    let session: RuntimeSessionV1 | undefined;
    const r = await runAdapter(
      acpAdapter,
      { command, permission_policy: 'ask' },
      {
        onSession: (s) => (session = s),
        onEvent: (e) => {
          if (e.type === 'runtime.permission' && e.data.pending) void session?.send?.('allow');
        },
      },
    );
    expect(ofType(r.events, 'runtime.permission')[1]?.data).toMatchObject({
      answer: { outcome: { outcome: 'selected', optionId: 'allow' } },
      allowed: true,
    });
    expect(ofType(r.events, 'runtime.tool_call').map((e) => `${e.data.id}:${e.data.status}`)).toContain(
      'call_2:completed',
    );
    expect(assistantText(r.events)).toContain("Perfect! I've successfully updated the configuration.");
    expect(terminalOf(r.events).outcome.status).toBe('completed');
  });

  it('cancels mid-turn: session/cancel, and the prompt comes back cancelled', async () => {
    const started = Date.now();
    const { signal, onEvent } = abortWhen((e) => e.type === 'runtime.message', {
      kind: 'cancel',
      message: 'cancelled by test',
    });
    const r = await runAdapter(acpAdapter, { command }, { signal, onEvent });
    const t = terminalOf(r.events);
    expect(t.outcome).toMatchObject({ status: 'cancelled', raw: 'cancel' });
    expect(t.stop_reason).toBe('cancelled'); // the agent answered, we did not have to kill it
    expect(ofType(r.events, 'runtime.log').some((e) => e.data.message.includes('did not answer session/cancel'))).toBe(
      false,
    );
    expect(Date.now() - started).toBeLessThan(15_000); // a safety net: the agent checks for cancel once a second
  });
});
