import { describe, expect, it } from 'vitest';
import { extractRuntimeFinalMessageSentinel, SentinelScanner, resolveFinalMessage } from '../../src/shared/sentinel.js';

const block = (body: string, nl = '\n') => ['```uh-runtime-final-message', body, '```'].join(nl);

describe('extractRuntimeFinalMessageSentinel', () => {
  it.each([
    ['no block', 'just text', null],
    ['one block', `intro\n${block('done it')}\n`, 'done it'],
    ['last of several wins', `${block('draft')}\nmore\n${block('final')}`, 'final'],
    ['CRLF line endings', `a\r\n${block('crlf body', '\r\n')}\r\n`, 'crlf body'],
    ['spaces after the tag and around content', '```uh-runtime-final-message   \n   padded   \n```   \n', 'padded'],
    ['indented fences', '  ```uh-runtime-final-message\n  body\n  ```', 'body'],
    ['multi-line content kept verbatim inside', block('line one\nline two'), 'line one\nline two'],
    [
      'unclosed last block is ignored, earlier closed one wins',
      `${block('closed')}\n\`\`\`uh-runtime-final-message\nnever closed`,
      'closed',
    ],
    ['other fenced blocks are not sentinels', '```js\ncode\n```', null],
    ['a different tag prefix does not match', '```uh-runtime-final-messages\nx\n```', null],
    ['empty block is an empty message', block(''), ''],
  ])('%s', (_name, text, expected) => {
    expect(extractRuntimeFinalMessageSentinel(text)).toBe(expected);
  });

  it('finds the same block whatever the chunking', () => {
    const text = `noise\r\n${block('chunked answer', '\r\n')}\r\ntrailing`;
    for (const size of [1, 2, 3, 7, 64]) {
      const scanner = new SentinelScanner();
      for (let i = 0; i < text.length; i += size) scanner.push(text.slice(i, i + size));
      expect(scanner.result()).toBe('chunked answer');
    }
  });

  it('keeps memory bounded on a huge block by truncating with a marker', () => {
    const huge = 'y'.repeat(200) + '\n';
    const text = block(huge.repeat(2000));
    const out = extractRuntimeFinalMessageSentinel(text) ?? '';
    expect(out.length).toBeLessThan(70 * 1024);
    expect(out).toContain('truncated by uh');
  });
});

describe('resolveFinalMessage', () => {
  it.each([
    [
      'sentinel preferred',
      'from sentinel',
      'native',
      { final_message: 'from sentinel', final_message_source: 'sentinel' },
    ],
    ['native fallback', null, ' native text ', { final_message: 'native text', final_message_source: 'native' }],
    ['nothing', null, '   ', { final_message: '', final_message_source: 'none' }],
  ])('%s', (_n, scanned, native, expected) => {
    expect(resolveFinalMessage(scanned, native)).toEqual(expected);
  });
});
