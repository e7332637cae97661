/** How a batch report is printed (`--format`, `--out`): shared by `uh batch report` inline and queued. */
import { writeFileSync } from 'node:fs';
import type { BatchReport } from '../../../shared/batch/report.js';
import { renderHtml, type HtmlOptions } from '../../../shared/batch/report-html.js';
import { renderMarkdown, renderTable } from '../../../shared/batch/report-text.js';
import { invalidInput } from '../../../shared/errors.js';

const FORMATS = ['table', 'md', 'html', 'json'] as const;
type Format = (typeof FORMATS)[number];

export function parseFormat(value: unknown, json: unknown): Format {
  if (value === undefined) return json ? 'json' : 'table';
  if (!FORMATS.includes(value as Format))
    throw invalidInput(`--format: "${String(value)}" must be one of ${FORMATS.join(', ')}`);
  return value as Format;
}

export function renderReport(report: BatchReport, format: Format, html: HtmlOptions = {}): string {
  if (format === 'json') return `${JSON.stringify(report, null, 2)}\n`;
  if (format === 'md') return renderMarkdown(report);
  if (format === 'html') return renderHtml(report, html);
  return renderTable(report);
}

/** Print to stdout, or write to --out. */
export function emit(text: string, out: unknown): void {
  if (typeof out === 'string') writeFileSync(out, text);
  else process.stdout.write(text);
}
