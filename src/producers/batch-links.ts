/**
 * The HTML report's per-trial links of an inline batch: the trial's artifact files, relative to
 * where the report is written (so the report and the state dir can move together): its events
 * (`events.jsonl`), its transcript (what the runtime printed, `runtime.stdout.log`, else its first
 * `runtime.*.log`), its final message and its receipt. A file that is not there gets no link.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import type { TrialLink } from '../shared/batch/report-html.js';
import type { TrialRow } from '../shared/batch/report.js';
import { operationDir } from '../operation/operation-files.js';

function transcriptFile(dir: string): string | null {
  if (existsSync(join(dir, 'runtime.stdout.log'))) return 'runtime.stdout.log';
  try {
    return readdirSync(dir).find((f) => f.startsWith('runtime.') && f.endsWith('.log')) ?? null;
  } catch {
    return null;
  }
}

/** A relative URL from `reportDir` to `path` (slashes, each segment escaped). */
function relativeHref(reportDir: string, path: string): string {
  return relative(reportDir, path).split(sep).map(encodeURIComponent).join('/');
}

export function fileTrialLinks(stateDir: string, reportDir: string): (t: TrialRow) => TrialLink[] {
  return (t) => {
    const dir = operationDir(stateDir, t.operation_id);
    const files: Array<[string, string, string | null]> = [
      ['events', 'events', 'events.jsonl'],
      ['transcript', 'transcript', transcriptFile(dir)],
      ['final-message', 'final message', 'runtime-final.txt'],
      ['receipt', 'receipt', 'receipt.json'],
    ];
    return files.flatMap(([rel, label, file]) =>
      file !== null && existsSync(join(dir, file))
        ? [{ rel, label, href: relativeHref(reportDir, join(dir, file)) }]
        : [],
    );
  };
}
