/**
 * Shapes real ACP agents were seen to send (issue 17), replayed by the fake agent: provider
 * errors whose reason is only in `error.data` or in the code, a permission request that omits
 * the tool kind an earlier `tool_call` gave, and usage reported only in the answer's `_meta`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acpAdapter } from '../../../../src/workers/runtimes/acp/acp-adapter.js';
import { runAdapter, terminalOf } from '../../../support/run-adapter.js';
import { fakeCommand, newJournal, ofType, readJournal } from './fake-acp.js';

async function run(scenario: string, extra: Record<string, unknown> = {}) {
  const journal = newJournal();
  const r = await runAdapter(acpAdapter, {
    command: fakeCommand(scenario),
    env: { FAKE_ACP_JOURNAL: journal },
    ...extra,
  });
  return { ...r, journal: readJournal(journal), terminal: terminalOf(r.events) };
}

describe('acp runtime: provider failures in the shapes agents send them', () => {
  it.each([
    ['provider-401-data', 'blocked', 'auth_failed', 'unexpected status 401 Unauthorized'],
    ['provider-401-code', 'blocked', 'auth_failed', 'UNAUTHENTICATED'],
    ['provider-429-data', 'blocked', 'rate_limited', 'unexpected status 429'],
    ['provider-429-azure', 'blocked', 'rate_limited', 'exceeded call rate limit'],
    ['provider-500-data', 'failed', 'rpc:-32603', 'unexpected status 500'],
  ])('%s ends %s (%s), the message keeping error.data', async (scenario, status, raw, detail) => {
    const r = await run(scenario);
    expect(r.terminal.outcome).toMatchObject({ status, raw });
    expect(r.terminal.outcome.message).toContain(detail);
    if (status === 'blocked') expect(r.terminal.outcome.hint).toBeTruthy();
    if (raw === 'auth_failed') expect(r.terminal.outcome.hint).toMatch(/credentials|API key/);
  });

  it('scrubs a key-shaped secret out of error.data', async () => {
    const r = await run('provider-401-data');
    expect(JSON.stringify(r.events)).not.toContain('sk-fake1234567890abcdef');
    expect(r.terminal.outcome.message).toContain('[redacted]');
  });
});

describe('acp runtime: a permission request without the kind its tool_call gave', () => {
  it('merges the earlier tool_call (kind edit, location in the work dir) and allows the edit', async () => {
    const r = await run('partial-permission');
    expect(r.terminal.outcome.status).toBe('completed');
    expect(readFileSync(join(r.workDir, 'hello.txt'), 'utf8')).toBe('hi from a partial agent\n');
    const decided = ofType(r.events, 'runtime.permission').find((e) => e.data.answer !== null);
    expect(decided?.data).toMatchObject({
      allowed: true,
      request: { tool_call_id: 'call_p', kind: 'edit', paths: [join(r.workDir, 'hello.txt')] },
    });
    expect(r.journal.find((m) => m.permission_result)).toMatchObject({ permission_result: 'once' });
  });

  it('reads usage from the prompt answer _meta (Gemini CLI quota.token_count)', async () => {
    const r = await run('partial-permission');
    expect(r.terminal.usage).toEqual({ input_tokens: 321, output_tokens: 45 });
  });

  it('still denies under the deny policy', async () => {
    const r = await run('partial-permission', { permission_policy: 'deny' });
    expect(existsSync(join(r.workDir, 'hello.txt'))).toBe(false);
  });
});
