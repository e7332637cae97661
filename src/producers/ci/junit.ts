/**
 * A receipt as JUnit XML, for CI hosts that render test reports: one `<testsuite>` named after
 * the operation, one `<testcase>` per check plus one for the scope check. A failed check's
 * `<failure>` text is its output tail (head when short); a check that never ran (the runtime
 * failed, or scope was violated) is `<skipped>`. Pure.
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

interface Case {
  name: string;
  seconds: number;
  failure?: { message: string; text: string };
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
    failure: { message: `${receipt.scope.violations.length} file(s) out of scope`, text: lines.join('\n') },
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
  const cases = [scopeCase(receipt), ...checkCases(receipt)];
  if (receipt.checks.length === 0) {
    const why =
      receipt.status === 'completed'
        ? 'the mission has no verification checks'
        : `checks did not run: ${receipt.status} (${receipt.outcome.message})`;
    cases.push({ name: 'checks', seconds: 0, skipped: why });
  }
  const failures = cases.filter((c) => c.failure).length;
  const skipped = cases.filter((c) => c.skipped).length;
  const total = cases.reduce((sum, c) => sum + c.seconds, 0);
  const suite = `uh ${receipt.operation_id}`;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="uh" tests="${cases.length}" failures="${failures}" errors="0" skipped="${skipped}" time="${total.toFixed(3)}">`,
    `  <testsuite name="${xmlEscape(suite)}" tests="${cases.length}" failures="${failures}" errors="0" skipped="${skipped}" time="${total.toFixed(3)}" timestamp="${xmlEscape(receipt.finished_at)}">`,
    `    <properties><property name="status" value="${receipt.status}"/><property name="verdict" value="${receipt.verdict}"/><property name="runtime" value="${xmlEscape(receipt.runtime.adapter_id)}"/></properties>`,
  ];
  for (const c of cases) {
    const open = `    <testcase classname="${xmlEscape(suite)}" name="${xmlEscape(c.name)}" time="${c.seconds.toFixed(3)}"`;
    if (c.failure)
      lines.push(
        `${open}>`,
        `      <failure message="${xmlEscape(c.failure.message)}" type="failure">${xmlEscape(c.failure.text)}</failure>`,
        '    </testcase>',
      );
    else if (c.skipped) lines.push(`${open}>`, `      <skipped message="${xmlEscape(c.skipped)}"/>`, '    </testcase>');
    else lines.push(`${open}/>`);
  }
  lines.push('  </testsuite>', '</testsuites>', '');
  return lines.join('\n');
}
