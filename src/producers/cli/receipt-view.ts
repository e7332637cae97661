import { terminalText } from '../../shared/terminal-text.js';
import { join } from 'node:path';
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

export function printReceiptSummary(receipt: Receipt, dir: string, attached: boolean): void {
  const passed = receipt.checks.filter((c) => c.passed).length;
  const checks = receipt.checks.length > 0 ? ` (${passed}/${receipt.checks.length} checks passed)` : '';
  const lines = [
    `${MARK[receipt.status] ?? '?'} ${receipt.operation_id} ${receipt.status} · ${receipt.verdict}${checks} · ${receipt.changed_files.length} file(s) changed${attached ? ' · existing operation (not run again)' : ''}`,
  ];
  if (receipt.status !== 'completed') lines.push(`  why: ${receipt.outcome.message}${receipt.outcome.timed_out ? ' (timed out)' : ''}`);
  if (receipt.outcome.hint) lines.push(`  hint: ${receipt.outcome.hint}`);
  for (const v of receipt.scope.violations) lines.push(`  scope: ${v.path} ${v.reason === 'forbidden' ? `matches forbidden ${v.glob}` : 'is outside allowed_change_globs'}`);
  for (const c of receipt.checks.filter((c) => !c.passed)) {
    lines.push(`  check ${c.name} failed: ${c.timed_out ? 'timed out' : `exit ${c.exit_code ?? c.signal}`} (log: ${c.log})`);
  }
  for (const f of receipt.changed_files.slice(0, 20)) lines.push(`  ${f.status.padEnd(8)} ${f.from ? `${f.from} → ` : ''}${f.path}`);
  if (receipt.changed_files.length > 20) lines.push(`  … and ${receipt.changed_files.length - 20} more`);
  if (receipt.final_message) lines.push(`  final: ${receipt.final_message.split('\n')[0]?.slice(0, 160)}`);
  lines.push(`  receipt: ${join(dir, 'receipt.json')}`);
  if (receipt.sandbox.retained && receipt.sandbox.path) lines.push(`  sandbox kept: ${receipt.sandbox.path}`);
  process.stdout.write(`${lines.map((l) => terminalText(l, { oneLine: true })).join('\n')}\n`);
}
