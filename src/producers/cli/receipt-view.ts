import { terminalText } from '../../shared/terminal-text.js';
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Receipt } from '../../shared/contracts/receipt.js';

/** The receipt plus where its artifacts are, for `--json`. */
export function receiptJson(receipt: Receipt, dir: string) {
  return {
    ...receipt,
    artifacts: {
      dir,
      receipt: join(dir, 'receipt.json'),
      diff: join(dir, 'diff.patch'),
      final_message: join(dir, 'runtime-final.txt'),
      events: join(dir, 'events.jsonl'),
    },
  };
}

const MARK: Record<string, string> = { completed: '✔', failed: '✖', blocked: '⛔', cancelled: '■' };

/** ✔ only when the runtime completed and the verdict holds; a completed run that failed its checks or scope is ✘. */
export function receiptMark(receipt: Pick<Receipt, 'status' | 'verdict'>): string {
  if (
    receipt.status === 'completed' &&
    (receipt.verdict === 'verification_failed' || receipt.verdict === 'scope_violation')
  )
    return '✘';
  return MARK[receipt.status] ?? '?';
}

/** The lines of a failed check's output worth showing on a terminal: the tail (or the head when short). */
export function checkTailLines(check: Receipt['checks'][number], max = 20): string[] {
  const text = (check.output_tail || check.output_head).replace(/\n$/, '');
  return text === '' ? [] : text.split('\n').slice(-max);
}

/** A check log as this host has it: the collected copy beside the receipt (fleet mode), else the path the receipt names. */
function localLog(log: string, dir: string): string {
  const copy = join(dir, basename(log));
  return existsSync(copy) ? copy : log;
}

/** `usage: 1200 in (200 cached) · 340 out · gpt-5-mini 1.4.2 · $0.0021`, or null when nothing is known. */
export function usageLine(receipt: Pick<Receipt, 'usage' | 'runtime'>): string | null {
  const u = receipt.usage;
  const parts = [
    u.input_tokens === undefined
      ? null
      : `${u.input_tokens} in${u.cached_input_tokens ? ` (${u.cached_input_tokens} cached)` : ''}`,
    u.output_tokens === undefined ? null : `${u.output_tokens} out`,
    u.total_tokens === undefined || u.input_tokens !== undefined ? null : `${u.total_tokens} tokens`,
    [receipt.runtime.model, receipt.runtime.version].filter(Boolean).join(' ') || null,
    u.cost_usd === undefined ? null : `$${u.cost_usd.toFixed(u.cost_usd < 0.01 ? 4 : 2)}`,
  ].filter((p): p is string => p !== null);
  return parts.length === 0 ? null : `usage: ${parts.join(' · ')}`;
}

export function printReceiptSummary(receipt: Receipt, dir: string, attached: boolean): void {
  const passed = receipt.checks.filter((c) => c.passed).length;
  const checks = receipt.checks.length > 0 ? ` (${passed}/${receipt.checks.length} checks passed)` : '';
  const lines = [
    `${receiptMark(receipt)} ${receipt.operation_id} ${receipt.status} · ${receipt.verdict}${checks} · ${receipt.changed_files.length} file(s) changed${attached ? ' · existing operation (not run again)' : ''}`,
  ];
  if (receipt.status !== 'completed')
    lines.push(`  why: ${receipt.outcome.message}${receipt.outcome.timed_out ? ' (timed out)' : ''}`);
  if (receipt.outcome.hint) lines.push(`  hint: ${receipt.outcome.hint}`);
  for (const v of receipt.scope.violations)
    lines.push(
      `  scope: ${v.path} ${v.reason === 'forbidden' ? `matches forbidden ${v.glob}` : 'is outside allowed_change_globs'}`,
    );
  for (const c of receipt.checks.filter((c) => !c.passed)) {
    lines.push(
      `  check ${c.name} failed: ${c.timed_out ? 'timed out' : `exit ${c.exit_code ?? c.signal}`} (log: ${localLog(c.log, dir)})`,
    );
    for (const line of checkTailLines(c)) lines.push(`    | ${line}`);
  }
  for (const f of receipt.changed_files.slice(0, 20))
    lines.push(`  ${f.status.padEnd(8)} ${f.from ? `${f.from} → ` : ''}${f.path}`);
  if (receipt.changed_files.length > 20) lines.push(`  … and ${receipt.changed_files.length - 20} more`);
  if (receipt.diff?.truncated)
    lines.push(
      `  diff truncated: diff.patch keeps ${receipt.diff.cap_bytes} of ${receipt.diff.bytes_total} bytes (UH_DIFF_CAP_BYTES); it will not be promoted`,
    );
  const usage = usageLine(receipt);
  if (usage) lines.push(`  ${usage}`);
  if (receipt.final_message) lines.push(`  final: ${receipt.final_message.split('\n')[0]?.slice(0, 160)}`);
  lines.push(`  receipt: ${join(dir, 'receipt.json')}`);
  if (receipt.sandbox.retained && receipt.sandbox.path) lines.push(`  sandbox kept: ${receipt.sandbox.path}`);
  process.stdout.write(`${lines.map((l) => terminalText(l, { oneLine: true })).join('\n')}\n`);
}
