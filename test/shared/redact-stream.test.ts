import { describe, expect, it } from 'vitest';
import { byteRedactor, StreamRedactor } from '../../src/shared/redact.js';

const SECRET = 'sk-live-0123456789abcdef';
const TEXT = `before ${SECRET} middle ${SECRET}${SECRET} after`;
const WANT = 'before [redacted] middle [redacted][redacted] after';

function run(chunks: string[], secrets: string[]): string {
  const r = new StreamRedactor(secrets);
  return chunks.map((c) => r.push(c)).join('') + r.end();
}

describe('StreamRedactor', () => {
  it('scrubs a secret whatever the split point of two chunks', () => {
    for (let i = 0; i <= TEXT.length; i++) {
      expect(run([TEXT.slice(0, i), TEXT.slice(i)], [SECRET]), `split at ${i}`).toBe(WANT);
    }
  });

  it('scrubs across every pair of split points (three chunks) and one character at a time', () => {
    for (let i = 0; i <= TEXT.length; i++) {
      for (let j = i; j <= TEXT.length; j++) {
        expect(run([TEXT.slice(0, i), TEXT.slice(i, j), TEXT.slice(j)], [SECRET])).toBe(WANT);
      }
    }
    expect(run([...TEXT], [SECRET])).toBe(WANT);
  });

  it('prefers the longer of two overlapping secrets and keeps short values alone', () => {
    const secrets = ['abcd-1234', 'abcd-1234-extended', 'xy'];
    const text = 'a abcd-1234-extended b abcd-1234 c xy';
    for (let i = 0; i <= text.length; i++) {
      expect(run([text.slice(0, i), text.slice(i)], secrets)).toBe('a [redacted] b [redacted] c xy');
    }
  });

  it('holds back no more than the longest secret minus one character', () => {
    const r = new StreamRedactor([SECRET]);
    const out = r.push('x'.repeat(1000));
    expect(out.length).toBe(1000 - (SECRET.length - 1));
    expect(r.end()).toBe('x'.repeat(SECRET.length - 1));
  });

  it('passes text through unchanged with no secrets', () => {
    expect(run(['plain ', 'text'], [])).toBe('plain text');
  });
});

describe('byteRedactor', () => {
  it('finds a UTF-8 secret split inside a multi-byte character, at every byte', () => {
    const secret = 'clé-sécrète-ünïcode';
    const bytes = Buffer.from(`[${secret}]`, 'utf8');
    for (let i = 0; i <= bytes.length; i++) {
      const r = byteRedactor([secret]);
      const out = Buffer.concat([r.push(bytes.subarray(0, i)), r.push(bytes.subarray(i)), r.end()]);
      expect(out.toString('utf8'), `split at byte ${i}`).toBe('[[redacted]]');
    }
  });

  it('leaves binary that holds no secret byte for byte', () => {
    const bin = Buffer.from([0, 255, 128, 10, 0xc3, 0x28, 0xe2, 0x82]);
    const r = byteRedactor(['a-secret-value']);
    expect(Buffer.concat([r.push(bin), r.end()]).equals(bin)).toBe(true);
  });
});
