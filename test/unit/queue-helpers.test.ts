import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatGithubOutput } from '../../src/producers/queue/github-output.js';
import { jobIdFor, queueName } from '../../src/shared/queue/topology.js';
import { readCapped } from '../../src/workers/results/store-artifacts.js';
import { tempDir } from '../support/temp.js';

describe('job ids and queue names', () => {
  it.each(['12345', 'a:b'.replace(':', '.'), 'x', 'release-1.2_rc'])(
    'job id of operation %s is never all digits and has no ":"',
    (id) => {
      for (const attempt of [1, 2, 10]) {
        const jobId = jobIdFor(id, attempt);
        expect(jobId).not.toMatch(/^\d+$/);
        expect(jobId).not.toContain(':');
      }
    },
  );

  it('keeps attempts of one operation apart from other operations', () => {
    expect(new Set([jobIdFor('x'), jobIdFor('x', 2), jobIdFor('x.2'), jobIdFor('x-2')]).size).toBe(4);
    expect(queueName('command')).toBe('runtime.command');
  });
});

describe('GitHub outputs', () => {
  it('writes single-line values as name=value and multi-line ones with a heredoc delimiter', () => {
    const text = formatGithubOutput({ status: 'completed', final_message: 'one\ntwo' });
    expect(text.startsWith('status=completed\nfinal_message<<uh_')).toBe(true);
    const m = /final_message<<(uh_[0-9a-f]+)\n([\s\S]*)\n\1\n$/.exec(text);
    expect(m?.[2]).toBe('one\ntwo');
  });
});

describe('capped artifacts', () => {
  it('keeps a small file whole and cuts a large one at a line boundary with a marker', () => {
    const dir = tempDir('uh-cap-');
    const small = join(dir, 'small');
    const large = join(dir, 'large');
    writeFileSync(small, 'abc\n');
    writeFileSync(large, 'line of text\n'.repeat(1000));
    expect(readCapped(small, 100)).toBe('abc\n');
    const capped = readCapped(large, 100);
    const [head, marker] = capped.split('\n# uh: truncated:');
    expect(head).toBe('line of text\n'.repeat(7));
    expect(marker).toContain('kept 91 of 13000 bytes');
  });
});
