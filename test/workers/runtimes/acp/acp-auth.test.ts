import { describe, expect, it } from 'vitest';
import { selectAuthMethod } from '../../../../src/workers/runtimes/acp/acp-auth.js';

const provider = { id: 'openrouter', name: 'OpenRouter' };
const terminal = { id: 'hermes-setup', name: 'Configure Hermes', type: 'terminal' };
const agentTyped = { id: 'oauth', name: 'OAuth', type: 'agent' };

describe('selectAuthMethod', () => {
  it.each<[string, object[], string | undefined, string]>([
    ['first non-terminal method (Hermes with a provider)', [provider, terminal], undefined, 'method:openrouter'],
    ['never a terminal method even when listed first', [terminal, agentTyped], undefined, 'method:oauth'],
    ['only terminal methods (Hermes, no provider)', [terminal], undefined, 'error'],
    ['nothing advertised', [], undefined, 'none'],
    ['the configured id', [provider, agentTyped], 'oauth', 'method:oauth'],
    ['a configured id the agent does not offer', [provider], 'nope', 'error'],
    ['a configured terminal id', [provider, terminal], 'hermes-setup', 'error'],
  ])('%s', (_name, methods, configured, expected) => {
    const selection = selectAuthMethod(methods as never, configured);
    const got = 'method' in selection ? `method:${selection.method.id}` : 'none' in selection ? 'none' : 'error';
    expect(got).toBe(expected);
  });
});
