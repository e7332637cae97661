import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readBoundedFile } from '../../src/shared/contracts/load-file.js';

const dir = mkdtempSync(join(tmpdir(), 'uh-load-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('readBoundedFile', () => {
  it('reads a file of exactly the limit, and refuses one byte more', () => {
    const path = join(dir, 'at-limit.yaml');
    writeFileSync(path, 'é'.repeat(8)); // 16 bytes of UTF-8
    expect(readBoundedFile(path, 16)).toBe('é'.repeat(8));
    expect(() => readBoundedFile(path, 15)).toThrow(/larger than 15 bytes/);
  });

  it('reads all of a file that holds more than its size said when opened', () => {
    // /proc files stat as 0 bytes: the read goes past the opened size up to the limit.
    const whole = readBoundedFile('/proc/self/mountinfo', 1024 * 1024);
    expect(whole.length).toBeGreaterThan(100);
    expect(whole.split('\n')[0]).toBe(readFileSync('/proc/self/mountinfo', 'utf8').split('\n')[0]);
    expect(() => readBoundedFile('/proc/self/mountinfo', 50)).toThrow(/larger than 50 bytes/);
  });

  it('refuses a directory, naming it', () => {
    expect(() => readBoundedFile(dir)).toThrow(/not a regular file/);
  });
});
