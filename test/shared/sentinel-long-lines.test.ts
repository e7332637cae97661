import { describe, expect, it } from 'vitest';
import { SentinelScanner } from '../../src/shared/sentinel.js';

/** The scanner skips over-long lines outside a block (they cannot be a fence) without losing a block after them. */
describe('SentinelScanner on long unbroken lines', () => {
  const block = '```uh-runtime-final-message\nsummary\n```\n';

  it.each([
    ['a block after a 5 MB line fed in small pieces', 'x'.repeat(5_000_000) + '\n' + block, 4096],
    ['a block after a long line, the newline at a chunk edge', 'y'.repeat(3000) + '\n' + block, 3000],
    ['a block whose opening line is itself split', 'z'.repeat(2000) + '\n' + block, 7],
  ])('%s', (_name, text, size) => {
    const scanner = new SentinelScanner();
    for (let i = 0; i < text.length; i += size) scanner.push(text.slice(i, i + size));
    expect(scanner.result()).toBe('summary');
  });

  it('does not take a fence that only appears at the end of a long line', () => {
    const scanner = new SentinelScanner().push('w'.repeat(2000) + '```uh-runtime-final-message\nnot a block\n```\n');
    expect(scanner.result()).toBeNull();
  });

  it('stays fast on 50 MB without a newline', () => {
    const scanner = new SentinelScanner();
    const piece = 'a'.repeat(64 * 1024);
    const started = performance.now();
    for (let i = 0; i < 800; i++) scanner.push(piece);
    expect(scanner.result()).toBeNull();
    expect(performance.now() - started).toBeLessThan(5000); // safety net; ~10 ms here, minutes when quadratic
  });
});
