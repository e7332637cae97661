import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resetJunit, writeJunit } from '../../src/producers/ci/ci-report.js';
import { parse as parseJunit, type TestSuites } from 'junit2json';
import { githubAnnotations, githubStepSummary } from '../../src/producers/ci/github-report.js';
import { receiptJunit, xmlEscape } from '../../src/producers/ci/junit.js';
import type { Receipt } from '../../src/shared/contracts/receipt.js';

const receipt = {
  operation_id: 'op-1',
  title: 'T',
  status: 'completed',
  verdict: 'verification_failed',
  exit_code: 1,
  finished_at: '2026-01-01T00:00:00Z',
  runtime: { adapter_id: 'command' },
  outcome: { message: 'ok' },
  final_message: 'done ```x```',
  changed_files: [{ path: 'a,b:c.txt', status: 'added' }],
  scope: { ok: false, violations: [{ path: 'a,b:c.txt', reason: 'outside_allowed' }] },
  checks: [
    {
      name: 'unit',
      argv: ['npm', 'test'],
      duration_ms: 1500,
      passed: false,
      timed_out: false,
      exit_code: 1,
      signal: null,
      output_head: 'h',
      output_tail: 'fail <&> "q"\u0007\n100% broken\n',
    },
  ],
} as unknown as Receipt;

describe('CI reports of a receipt', () => {
  it.each([
    ['a<b', 'a&lt;b'],
    ['"x" & \'y\'', '&quot;x&quot; &amp; &apos;y&apos;'],
    ['bell\u0007', 'bell'],
  ])('xmlEscape(%j) = %j', (input, out) => expect(xmlEscape(input)).toBe(out));

  it('JUnit parses back with the tail as failure text, control characters dropped', async () => {
    const suites = (await parseJunit(receiptJunit(receipt))) as TestSuites;
    const cases = suites.testsuite?.[0]?.testcase ?? [];
    expect(cases.map((c) => c.name)).toEqual(['scope', 'unit']);
    expect(cases[1]?.failure?.[0]?.inner).toBe('fail <&> "q"\n100% broken\n');
    expect(cases[0]?.failure?.[0]?.inner).toContain('a,b:c.txt');
  });

  it('annotations escape properties and data; the summary fence survives backticks', () => {
    const [scope, check] = githubAnnotations(receipt);
    expect(scope).toBe(
      '::error file=a%2Cb%3Ac.txt,title=uh scope violation::op-1: a,b:c.txt is outside allowed_change_globs',
    );
    expect(check).toContain('%0A100%25 broken');
    expect(githubStepSummary(receipt)).toContain('````text\ndone ```x```\n````');
  });

  it('a run that did not complete: an outcome case (timeout a failure, blocked an error), never skipped', async () => {
    const ended = (status: string, timedOut: boolean) =>
      ({
        ...receipt,
        status,
        verdict: 'unverified',
        checks: [],
        scope: { ok: true, violations: [] },
        outcome: {
          status,
          raw: timedOut ? 'timeout' : 'exit:127',
          message: 'why',
          hint: 'do this',
          timed_out: timedOut,
        },
      }) as unknown as Receipt;
    const timeout = (await parseJunit(receiptJunit(ended('failed', true)))) as TestSuites;
    const outcome = timeout.testsuite?.[0]?.testcase?.find((c) => c.name === 'outcome');
    expect(outcome?.failure?.[0]?.message).toBe('failed (timed out): why');
    expect(timeout.testsuite?.[0]?.skipped).toBe(0);
    const blocked = (await parseJunit(receiptJunit(ended('blocked', false)))) as TestSuites;
    expect(blocked.testsuite?.[0]?.errors).toBe(1);
    expect(blocked.testsuite?.[0]?.testcase?.[0]?.error?.[0]?.inner).toContain('hint: do this');
    expect(githubAnnotations(ended('blocked', false))[0]).toBe('::error title=uh blocked::op-1: why%0Ahint: do this');
    expect(githubStepSummary(ended('blocked', false))).toContain('> **hint:** do this');
  });
});

describe('resetJunit', () => {
  it('removes a previous report, but never what a symlink or a device path names (--junit /dev/stdout)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'uh-junit-'));
    try {
      const plain = join(dir, 'junit.xml');
      writeFileSync(plain, 'stale');
      resetJunit(plain);
      expect(existsSync(plain)).toBe(false);
      // A link, as /dev/stdout is one: kept, and the report goes through it.
      const target = join(dir, 'target.xml');
      const link = join(dir, 'stdout');
      writeFileSync(target, 'stale');
      symlinkSync(target, link);
      resetJunit(link);
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      writeJunit(link, receipt);
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      expect(readFileSync(target, 'utf8')).toContain('<testsuite');
      resetJunit(join(dir, 'missing.xml'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
