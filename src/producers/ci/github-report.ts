/**
 * What a receipt looks like on GitHub Actions: the step summary (Markdown: verdict, changed
 * files, the checks table with each failed check's tail, the final message) and `::error`
 * workflow commands (one per scope violation, with `file=`, and one per failed check). Pure.
 */
import type { Receipt } from '../../shared/contracts/receipt.js';

/** Workflow-command escaping: data escapes `%`, CR, LF; properties also `:` and `,`. */
const escapeData = (s: string): string => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
const escapeProperty = (s: string): string => escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');

/** One `::error` per outcome that is not a completed run (blocked, failed, timed out, cancelled): why, and the hint. */
function outcomeAnnotation(receipt: Receipt): string[] {
  if (receipt.status === 'completed') return [];
  const o = receipt.outcome;
  const title = `uh ${receipt.status}${o.timed_out ? ' (timed out)' : ''}`;
  const text = `${receipt.operation_id}: ${o.message}${o.hint ? `\nhint: ${o.hint}` : ''}`;
  return [`::error title=${escapeProperty(title)}::${escapeData(text)}`];
}

export function githubAnnotations(receipt: Receipt): string[] {
  const out: string[] = outcomeAnnotation(receipt);
  for (const v of receipt.scope.violations) {
    const why = v.reason === 'forbidden' ? `matches forbidden glob ${v.glob ?? ''}` : 'is outside allowed_change_globs';
    out.push(
      `::error file=${escapeProperty(v.path)},title=${escapeProperty('uh scope violation')}::${escapeData(`${receipt.operation_id}: ${v.path} ${why}`)}`,
    );
  }
  for (const c of receipt.checks.filter((c) => !c.passed)) {
    const why = c.timed_out ? 'timed out' : `exit ${c.exit_code ?? c.signal}`;
    const tail = (c.output_tail || c.output_head).split('\n').slice(-15).join('\n');
    out.push(
      `::error title=${escapeProperty(`uh check ${c.name} failed`)}::${escapeData(`${c.argv.join(' ')}: ${why}\n${tail}`)}`,
    );
  }
  return out;
}

/** A fenced block that no backtick run inside `text` can close. */
function fence(text: string): string {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((m) => m.length));
  const ticks = '`'.repeat(longest + 1);
  return `${ticks}text\n${text.replace(/\n$/, '')}\n${ticks}`;
}

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function githubStepSummary(receipt: Receipt): string {
  const mark = receipt.exit_code === 0 ? '✅' : receipt.status === 'cancelled' ? '⏹️' : '❌';
  const lines = [`## ${mark} uh ${cell(receipt.operation_id)}: ${receipt.status} · ${receipt.verdict}`, ''];
  lines.push(`**${cell(receipt.title)}** · runtime \`${receipt.runtime.adapter_id}\` · exit ${receipt.exit_code}`, '');
  if (receipt.status !== 'completed') {
    const o = receipt.outcome;
    lines.push(`> **why:** ${cell(o.message)}${o.timed_out ? ' (timed out)' : ''}`);
    lines.push(...(o.hint ? ['>', `> **hint:** ${cell(o.hint)}`] : []), '');
  }
  lines.push(`### Changed files (${receipt.changed_files.length})`, '');
  if (receipt.changed_files.length === 0) lines.push('_none_');
  for (const f of receipt.changed_files.slice(0, 100)) {
    const bad = receipt.scope.violations.some((v) => v.path === f.path);
    lines.push(`- \`${f.path}\` ${f.status}${bad ? ' ⚠️ **out of scope**' : ''}`);
  }
  lines.push('', '### Checks', '');
  if (receipt.checks.length === 0) lines.push('_no checks ran_');
  else lines.push('| check | result | time | command |', '|---|---|---|---|');
  for (const c of receipt.checks) {
    const result = c.passed ? '✅ passed' : c.timed_out ? '❌ timed out' : `❌ exit ${c.exit_code ?? c.signal}`;
    lines.push(
      `| ${cell(c.name)} | ${result} | ${(c.duration_ms / 1000).toFixed(1)} s | \`${cell(c.argv.join(' '))}\` |`,
    );
  }
  for (const c of receipt.checks.filter((c) => !c.passed)) {
    lines.push(
      '',
      `<details open><summary>${cell(c.name)}: output tail</summary>`,
      '',
      fence(c.output_tail || c.output_head),
      '',
      '</details>',
    );
  }
  if (receipt.final_message) lines.push('', '### Final message', '', fence(receipt.final_message));
  return `${lines.join('\n')}\n`;
}
