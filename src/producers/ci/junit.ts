/**
 * A receipt as JUnit XML, for CI hosts that render test reports: one `<testsuite>` named after
 * the operation, one `<testcase>` per check plus one for the scope check. A failed check's
 * `<failure>` text is its output tail (head when short). A run that did not complete adds an
 * `outcome` case: a `<failure>` when it timed out, an `<error>` when it was blocked, failed or
 * cancelled (the why line and hint). Only a completed mission with no checks has a `<skipped>`. Pure.
 */
import type { Receipt } from '../../shared/contracts/receipt.js';

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** Escape for attributes and text; drop characters XML 1.0 cannot carry. */
export function xmlEscape(text: string): string {
  return (
    text
      // eslint-disable-next-line no-control-regex
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '')
      .replace(/[&<>"']/g, (c) => XML_ESCAPES[c] ?? c)
  );
}

export interface Case {
  name: string;
  seconds: number;
  failure?: { message: string; text: string };
  error?: { message: string; text: string };
  skipped?: string;
}

function scopeCase(receipt: Receipt): Case {
  if (receipt.scope.ok) return { name: 'scope', seconds: 0 };
  const lines = receipt.scope.violations.map(
    (v) =>
      `${v.path}: ${v.reason === 'forbidden' ? `matches forbidden ${v.glob ?? ''}` : 'outside allowed_change_globs'}`,
  );
  return {
    name: 'scope',
    seconds: 0,
    failure: {
      message: `scope violation: ${receipt.scope.violations.length} file(s) out of scope${receipt.checks.length === 0 ? '; the checks did not run' : ''}`,
      text: lines.join('\n'),
    },
  };
}

/** Why a run that did not complete ended: timeouts are failures, the rest errors. */
function outcomeCase(receipt: Receipt): Case | null {
  if (receipt.status === 'completed') return null;
  const o = receipt.outcome;
  const message = `${receipt.status}${o.timed_out ? ' (timed out)' : ''}: ${o.message}`;
  const text = [o.message, `raw: ${o.raw}`, ...(o.hint ? [`hint: ${o.hint}`] : [])].join('\n');
  return {
    name: 'outcome',
    seconds: 0,
    ...(o.timed_out ? { failure: { message, text } } : { error: { message, text } }),
  };
}

function checkCases(receipt: Receipt): Case[] {
  return receipt.checks.map((c) => {
    const base = { name: c.name, seconds: c.duration_ms / 1000 };
    if (c.passed) return base;
    const why = c.timed_out ? 'timed out' : `exit ${c.exit_code ?? c.signal}`;
    return { ...base, failure: { message: `${c.argv.join(' ')}: ${why}`, text: c.output_tail || c.output_head } };
  });
}

export function receiptJunit(receipt: Receipt): string {
  const outcome = outcomeCase(receipt);
  const cases = [...(outcome ? [outcome] : []), scopeCase(receipt), ...checkCases(receipt)];
  if (receipt.checks.length === 0 && !outcome && receipt.scope.ok)
    cases.push({ name: 'checks', seconds: 0, skipped: 'the mission has no verification checks' });
  const properties = { status: receipt.status, verdict: receipt.verdict, runtime: receipt.runtime.adapter_id };
  return junitDocument(`uh ${receipt.operation_id}`, cases, properties, receipt.finished_at);
}

function caseLines(suite: string, c: Case): string[] {
  const open = `    <testcase classname="${xmlEscape(suite)}" name="${xmlEscape(c.name)}" time="${c.seconds.toFixed(3)}"`;
  const bad = c.failure ? (['failure', c.failure] as const) : c.error ? (['error', c.error] as const) : null;
  if (bad)
    return [
      `${open}>`,
      `      <${bad[0]} message="${xmlEscape(bad[1].message)}" type="${bad[0]}">${xmlEscape(bad[1].text)}</${bad[0]}>`,
      '    </testcase>',
    ];
  if (c.skipped) return [`${open}>`, `      <skipped message="${xmlEscape(c.skipped)}"/>`, '    </testcase>'];
  return [`${open}/>`];
}

/** One suite of cases as a JUnit document (also for runs that ended without a receipt: ci-report.ts). */
export function junitDocument(
  suite: string,
  cases: Case[],
  properties: Record<string, string>,
  timestamp: string,
): string {
  const failures = cases.filter((c) => c.failure).length;
  const errors = cases.filter((c) => c.error).length;
  const skipped = cases.filter((c) => c.skipped).length;
  const time = cases.reduce((sum, c) => sum + c.seconds, 0).toFixed(3);
  const counts = `tests="${cases.length}" failures="${failures}" errors="${errors}" skipped="${skipped}" time="${time}"`;
  const props = Object.entries(properties)
    .map(([k, v]) => `<property name="${xmlEscape(k)}" value="${xmlEscape(v)}"/>`)
    .join('');
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="uh" ${counts}>`,
    `  <testsuite name="${xmlEscape(suite)}" ${counts} timestamp="${xmlEscape(timestamp)}">`,
    `    <properties>${props}</properties>`,
  ];
  for (const c of cases) lines.push(...caseLines(suite, c));
  lines.push('  </testsuite>', '</testsuites>', '');
  return lines.join('\n');
}
