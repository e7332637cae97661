import { describe, expect, it } from 'vitest';
import { JsonRpcRemoteError } from '../../../../src/shared/transport/jsonrpc-errors.js';
import { mergeToolCall, newTranscriptState } from '../../../../src/workers/runtimes/acp/acp-events.js';
import { decidePermission } from '../../../../src/workers/runtimes/acp/acp-permissions.js';
import { ERROR_DATA_CAP, toFailure, usageOfAnswer } from '../../../../src/workers/runtimes/acp/acp-run-support.js';

describe('toFailure keeps error.data', () => {
  it.each<[string, unknown, string]>([
    [
      'an object with the provider status',
      { message: 'unexpected status 401 Unauthorized: bad key' },
      'Internal error: {"message":"unexpected status 401 Unauthorized: bad key"}',
    ],
    ['a string', 'upstream said 429', 'Internal error: upstream said 429'],
    ['nothing', undefined, 'Internal error'],
  ])('%s', (_name, data, message) => {
    const failure = toFailure(new JsonRpcRemoteError(-32603, 'Internal error', data, 'session/prompt'));
    expect(failure).toEqual({ kind: 'remote', method: 'session/prompt', code: -32603, message });
  });

  it('bounds it and scrubs known secrets and key-shaped strings', () => {
    const data = {
      message: 'key sk-proj-abcdefghijklmnop refused; token hunter2secret; Authorization: Bearer abc.def.ghijklmnop',
      pad: 'x'.repeat(5000),
    };
    const failure = toFailure(new JsonRpcRemoteError(-32603, 'Internal error', data), ['hunter2secret']);
    expect(failure.message.length).toBeLessThan(ERROR_DATA_CAP + 40);
    expect(failure.message).not.toMatch(/sk-proj-abcdefghijklmnop|hunter2secret|abc\.def\.ghijklmnop/);
    expect(failure.message).toContain('Bearer [redacted]');
  });
});

describe('usageOfAnswer reads usage where the agent reports it', () => {
  it.each<[string, Record<string, unknown>, Record<string, number> | null]>([
    [
      'ACP usage',
      { usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12, thoughtTokens: 1 } },
      { input_tokens: 10, output_tokens: 2, total_tokens: 12, reasoning_tokens: 1 },
    ],
    [
      '_meta.usage, snake case',
      { _meta: { usage: { input_tokens: 7, output_tokens: 3 } } },
      { input_tokens: 7, output_tokens: 3 },
    ],
    [
      '_meta.usage, OpenAI names',
      { _meta: { usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 } } },
      { input_tokens: 5, output_tokens: 4, total_tokens: 9 },
    ],
    [
      'Gemini CLI _meta.quota.token_count',
      { _meta: { quota: { token_count: { input_tokens: 321, output_tokens: 45 }, model_usage: [] } } },
      { input_tokens: 321, output_tokens: 45 },
    ],
    ['none', { _meta: { other: 1 } }, null],
  ])('%s', (_name, extra, usage) => {
    expect(usageOfAnswer({ stopReason: 'end_turn', ...extra })).toEqual(usage);
  });
});

describe('mergeToolCall', () => {
  const workDir = '/work/dir';

  it('a permission toolCall without kind is decided on the kind and locations of the earlier tool_call', () => {
    const state = newTranscriptState();
    mergeToolCall(state, {
      toolCallId: 't1',
      title: 'Write a.txt',
      kind: 'edit',
      status: 'pending',
      locations: [{ path: '/work/dir/a.txt' }],
    });
    const alone = { toolCallId: 't1', title: 'Write a.txt', rawInput: { content: 'x' } };
    expect(decidePermission('sandbox', alone, workDir).allow).toBe(false); // "other" without the merge
    const merged = mergeToolCall(state, alone);
    expect(merged).toMatchObject({
      kind: 'edit',
      title: 'Write a.txt',
      rawInput: { content: 'x' },
      locations: [{ path: '/work/dir/a.txt' }],
    });
    expect(decidePermission('sandbox', merged, workDir)).toMatchObject({ allow: true });
  });

  it('bounds the edit by every path it was said to touch', () => {
    const state = newTranscriptState();
    mergeToolCall(state, { toolCallId: 't2', kind: 'edit', locations: [{ path: '/etc/passwd' }] });
    const merged = mergeToolCall(state, { toolCallId: 't2', locations: [{ path: '/work/dir/a.txt' }] });
    expect(merged.locations?.map((l) => l.path)).toEqual(['/etc/passwd', '/work/dir/a.txt']);
    expect(decidePermission('sandbox', merged, workDir)).toMatchObject({
      allow: false,
      reason: expect.stringContaining('/etc/passwd'),
    });
  });

  it('a later report wins for the fields it carries, an omitted one keeps its earlier value', () => {
    const state = newTranscriptState();
    mergeToolCall(state, { toolCallId: 't3', kind: 'read', status: 'pending' });
    expect(mergeToolCall(state, { toolCallId: 't3', kind: 'edit', status: null })).toMatchObject({
      kind: 'edit',
      status: 'pending',
    });
  });
});
