/**
 * The batch report as one self-contained HTML file: no network, inline CSS and JS. A sortable
 * runtime table, an inline SVG chart of pass rate and median duration per runtime, and per
 * trial a side-by-side diff (expand/collapse with <details>). Pure.
 */
import type { BatchReport, RuntimeRow, TrialRow } from './report.js';
import {
  checksText,
  counts,
  errorsText,
  listText,
  matrixRows,
  msText,
  num,
  passKText,
  passText,
  pct,
  rewardText,
  usd,
} from './report-text.js';

export const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const CSS = `body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2433;background:#f7f8fa}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}.sub{color:#5b6475;margin-bottom:16px}
table{border-collapse:collapse;background:#fff;box-shadow:0 1px 2px #0002;width:100%}
th,td{padding:6px 10px;border-bottom:1px solid #e4e7ec;text-align:left;vertical-align:top}
th{background:#eef1f5;cursor:pointer;user-select:none;white-space:nowrap}th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
td.n{text-align:right;font-variant-numeric:tabular-nums}.o-passed{color:#1a7f37}.o-failed{color:#cf222e;font-weight:600}.o-blocked{color:#9a6700}.o-unsettled,.o-error{color:#6e4dbf;font-weight:600}
.reasons{color:#5b6475;font-size:12px}details{background:#fff;margin:6px 0;box-shadow:0 1px 2px #0002}summary{padding:6px 10px;cursor:pointer}
.diff{width:100%;font:12px/1.35 ui-monospace,monospace;box-shadow:none}.diff td{padding:0 6px;border:0;white-space:pre-wrap;word-break:break-all;width:50%}
.diff td.ln{width:1%;color:#8c959f;text-align:right;user-select:none}.diff .del{background:#ffebe9}.diff .add{background:#dafbe1}.diff .file td{background:#eef1f5;font-weight:600;padding:4px 6px}
pre{white-space:pre-wrap;margin:4px 10px;font-size:12px}svg{background:#fff;box-shadow:0 1px 2px #0002}`;

const SORT_JS = `document.querySelectorAll('table.sortable').forEach(function(t){t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
var asc=th.getAttribute('aria-sort')!=='ascending';t.querySelectorAll('th').forEach(function(h){h.removeAttribute('aria-sort')});th.setAttribute('aria-sort',asc?'ascending':'descending');
var rows=Array.prototype.slice.call(t.tBodies[0].rows);rows.sort(function(a,b){var x=a.cells[i].getAttribute('data-v')||a.cells[i].textContent,y=b.cells[i].getAttribute('data-v')||b.cells[i].textContent;
var nx=parseFloat(x),ny=parseFloat(y);var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);return asc?c:-c});rows.forEach(function(r){t.tBodies[0].appendChild(r)})})})});`;

const td = (text: string, sortValue?: number | null, cls = ''): string =>
  `<td${cls ? ` class="${cls}"` : ''}${sortValue === undefined ? '' : ` data-v="${sortValue === null ? -1 : sortValue}"`}>${esc(text)}</td>`;

function runtimeTable(rows: readonly RuntimeRow[]): string {
  const head = [
    'runtime',
    'pass@1',
    'pass@k',
    'errors',
    'statuses',
    'verdicts',
    'median',
    'p90',
    'tokens',
    'cost',
    'files',
    'checks',
    'mean reward',
    'model',
    'version',
  ];
  const body = rows.map((r) => {
    const reasons = r.reasons.map((x) => `${x.count}× ${x.status}: ${x.reason}`).join('\n');
    return `<tr data-runtime="${esc(r.runtime)}">${td(r.runtime)}${td(passText(r), r.pass_at_1, 'n')}${td(passKText(r), r.pass_at_k, 'n')}${td(String(r.errors), r.errors, 'n')}<td>${esc(counts(r.statuses))}${reasons ? `<div class="reasons">${esc(reasons)}</div>` : ''}</td>${td(counts(r.verdicts))}${td(msText(r.median_ms), r.median_ms, 'n')}${td(msText(r.p90_ms), r.p90_ms, 'n')}${td(num(r.tokens), r.tokens, 'n')}${td(usd(r.cost_usd), r.cost_usd, 'n')}${td(String(r.files_changed.length), r.files_changed.length, 'n')}${td(checksText(r))}${td(rewardText(r), r.mean_reward, 'n reward')}${td(listText(r.models), undefined, 'model')}${td(listText(r.versions), undefined, 'version')}</tr>`;
  });
  return `<table class="sortable" id="runtimes"><thead><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>${body.join('')}</tbody></table>`;
}

/** Two bars per runtime: pass@1 (0–100 %) and median duration (scaled to the slowest). */
export function chartSvg(rows: readonly RuntimeRow[]): string {
  const rowH = 44;
  const left = 140;
  const barW = 300;
  const height = rows.length * rowH + 40;
  const maxMs = Math.max(1, ...rows.map((r) => r.median_ms ?? 0));
  const bars = rows.map((r, i) => {
    const y = 30 + i * rowH;
    const passW = Math.round((r.pass_at_1 ?? 0) * barW);
    const durW = Math.round(((r.median_ms ?? 0) / maxMs) * barW);
    return `<g class="bar" data-runtime="${esc(r.runtime)}" data-pass="${r.pass_at_1 ?? ''}" data-median-ms="${r.median_ms ?? ''}"><text x="${left - 8}" y="${y + 16}" text-anchor="end">${esc(r.runtime)}</text>
<rect class="pass" x="${left}" y="${y}" width="${passW}" height="16" fill="#2da44e"/><text x="${left + passW + 6}" y="${y + 13}">${pct(r.pass_at_1)}</text>
<rect class="duration" x="${left + barW + 80}" y="${y}" width="${durW}" height="16" fill="#0969da"/><text x="${left + barW + 86 + durW}" y="${y + 13}">${msText(r.median_ms)}</text></g>`;
  });
  return `<svg id="chart" xmlns="http://www.w3.org/2000/svg" width="${left + 2 * barW + 160}" height="${height}" font-size="12" font-family="system-ui,sans-serif" role="img" aria-label="pass rate and median duration per runtime">
<text x="${left}" y="18" font-weight="600">pass@1</text><text x="${left + barW + 80}" y="18" font-weight="600">median duration</text>${bars.join('')}</svg>`;
}

type Side = { n: number; text: string; cls: string } | null;

function diffRow(l: Side, r: Side): string {
  const half = (s: Side) =>
    s ? `<td class="ln">${s.n}</td><td class="${s.cls}">${esc(s.text)}</td>` : '<td class="ln"></td><td></td>';
  return `<tr>${half(l)}${half(r)}</tr>`;
}

/** A unified diff as a two-column table: removed lines left, added lines right, paired. */
export function sideBySide(diff: string): string {
  const rows: string[] = [];
  let ln = 0;
  let rn = 0;
  let dels: string[] = [];
  let adds: string[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i += 1) {
      const d = dels[i];
      const a = adds[i];
      rows.push(
        diffRow(
          d === undefined ? null : { n: ++ln, text: d, cls: 'del' },
          a === undefined ? null : { n: ++rn, text: a, cls: 'add' },
        ),
      );
    }
    dels = [];
    adds = [];
  };
  for (const line of diff.split('\n')) {
    if (line.startsWith('diff --git')) {
      flush();
      rows.push(`<tr class="file"><td colspan="4">${esc(line.replace(/^diff --git a\/(.*) b\/.*$/, '$1'))}</td></tr>`);
    } else if (line.startsWith('@@')) {
      flush();
      const m = /@@ -(\d+)(?:,\d+)? \+(\d+)/.exec(line);
      ln = Number(m?.[1] ?? 1) - 1;
      rn = Number(m?.[2] ?? 1) - 1;
    } else if (
      line.startsWith('---') ||
      line.startsWith('+++') ||
      /^(index|new file|deleted file|similarity|rename|old mode|new mode)/.test(line)
    ) {
      continue;
    } else if (line.startsWith('-')) dels.push(line.slice(1));
    else if (line.startsWith('+')) adds.push(line.slice(1));
    else if (line.startsWith(' ')) {
      flush();
      rows.push(diffRow({ n: ++ln, text: line.slice(1), cls: '' }, { n: ++rn, text: line.slice(1), cls: '' }));
    }
  }
  flush();
  return `<table class="diff">${rows.join('')}</table>`;
}

/**
 * The colour of a trial follows its outcome, not its status: a `completed` run whose verdict is
 * `verification_failed` or `scope_violation` exited non-zero and is red, never green.
 */
export function outcomeClass(t: TrialRow): 'passed' | 'failed' | 'blocked' | 'unsettled' | 'error' {
  if (t.error !== null) return 'error';
  if (t.passed === true) return 'passed';
  if (t.passed === null) return 'unsettled';
  return t.status === 'blocked' ? 'blocked' : 'failed';
}

/** A link of a trial: its events, its transcript, … (see report-links.ts for where they point). */
export interface TrialLink {
  /** `events`, `transcript`, `final-message`, `receipt`, `operation`: the class of the anchor is `link-<rel>`. */
  rel: string;
  label: string;
  href: string;
}

export interface HtmlOptions {
  /** The links of each trial (none by default): artifact files beside the report, or the API's dashboard. */
  links?: (t: TrialRow) => readonly TrialLink[];
  /** Shown under the title, e.g. why a fleet report has no links. */
  note?: string;
}

function linksHtml(links: readonly TrialLink[]): string {
  return links.map((l) => ` · <a class="link-${esc(l.rel)}" href="${esc(l.href)}">${esc(l.label)}</a>`).join('');
}

/** Tokens, cost and model of a trial, when known. */
function usageHtml(t: TrialRow): string {
  if (t.tokens === null && t.cost_usd === null && t.model === null) return '';
  return ` · <small class="usage">${esc([`${num(t.tokens)} tokens`, usd(t.cost_usd), t.model ?? ''].filter(Boolean).join(' · '))}</small>`;
}

function trialDetails(t: TrialRow, links: readonly TrialLink[]): string {
  const checks = t.checks
    .map(
      (c) =>
        `<div>${c.passed ? '✔' : '✘'} ${esc(c.name)}${c.passed || !c.tail ? '' : `<pre>${esc(c.tail)}</pre>`}</div>`,
    )
    .join('');
  const diff = t.diff === null || t.diff.trim() === '' ? '<p class="sub">no diff</p>' : sideBySide(t.diff);
  return `<details class="trial" data-operation="${esc(t.operation_id)}" data-status="${esc(t.status)}" data-outcome="${outcomeClass(t)}"><summary><b>${esc(t.task ? `${t.task} · ${t.runtime}` : t.runtime)}</b> trial ${t.trial}${t.superseded ? ' (retried)' : ''}${t.reward === null ? '' : ` · reward ${t.reward}`} — <span class="o-${outcomeClass(t)}">${esc(t.status)} / ${esc(t.verdict)}</span> · ${esc(msText(t.duration_ms))} · ${t.changed_files.length} files${usageHtml(t)} · <code>${esc(t.operation_id)}</code>${linksHtml(links)}</summary>
${t.error ? `<p class="reasons error">infrastructure error (excluded from the rates): ${esc(t.error)}</p>` : ''}${t.reason ? `<p class="reasons">${esc(t.reason)}</p>` : ''}${checks}${t.final_message ? `<pre>${esc(t.final_message)}</pre>` : ''}${diff}</details>`;
}

/** The suite's task × runtime matrix (nothing for a one-mission batch). */
function matrixTable(report: BatchReport): string {
  if (report.matrix.length === 0) return '';
  const { header, body } = matrixRows(report);
  const rows = body.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('');
  return `<h2>Tasks × runtimes</h2><table id="matrix"><thead><tr>${header.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows}</tbody></table>`;
}

export function renderHtml(report: BatchReport, options: HtmlOptions = {}): string {
  const links = options.links ?? (() => []);
  const { batch } = report;
  const title = `Batch ${batch.batch_id}: ${batch.title}`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>${esc(title)}</title><style>${CSS}</style></head><body>
<h1>${esc(title)}</h1><div class="sub">${batch.runtimes.length} runtimes × ${batch.trials} trials · mission ${esc(batch.mission_id)} · ${report.settled ? 'settled' : 'not settled yet'} · generated ${esc(report.generated_at)} · pass@1 over settled trials with a 95% Wilson interval · pass@k with k = ${report.k} (unbiased estimator) · cost “unknown” = no usage or no price${options.note ? ` · ${esc(options.note)}` : ''}</div>
${runtimeTable(report.runtimes)}
<p class="sub" id="errors" data-errors="${report.trials.filter((t) => t.error !== null).length}">${esc(errorsText(report))}</p>
${matrixTable(report)}
<h2>Pass rate and duration</h2>${chartSvg(report.runtimes)}
<h2>Trials</h2>${report.trials.map((t) => trialDetails(t, links(t))).join('\n')}
<script>${SORT_JS}</script></body></html>
`;
}
