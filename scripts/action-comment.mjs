// The Action's sticky pull-request comment (input `pr-comment: 'true'`): one comment per job, found
// again by its marker and updated on each run, never a second one. Verdict, checks, changed files,
// the failed check's tail and a link to the run (its artifacts). Through the GitHub REST API with
// the job's token (`github-token`, default github.token; needs `pull-requests: write`); GITHUB_API_URL
// points it at GitHub Enterprise (or a test's scripted server). Node built-ins only.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

/** `name=value` lines and `name<<DELIM` heredocs of a GITHUB_OUTPUT file: the last value wins. */
export function parseOutputs(text) {
  const out = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const heredoc = /^([^=<]+)<<(.+)$/.exec(lines[i]);
    if (heredoc) {
      const end = lines.indexOf(heredoc[2], i + 1);
      out[heredoc[1]] = lines.slice(i + 1, end).join('\n');
      i = end;
    } else if (lines[i].includes('='))
      out[lines[i].slice(0, lines[i].indexOf('='))] = lines[i].slice(lines[i].indexOf('=') + 1);
  }
  return out;
}

const cell = (s) => String(s).replace(/\|/g, '\\|').replace(/\n/g, ' ');
const fence = (text) => `\`\`\`\`text\n${text.replace(/`{4,}/g, '```').replace(/\n$/, '')}\n\`\`\`\``;

function receiptLines(r) {
  const lines = [`operation \`${r.operation_id}\` · runtime \`${r.runtime.adapter_id}\` · exit ${r.exit_code}`, ''];
  if (r.status !== 'completed')
    lines.push(
      `> **why:** ${cell(r.outcome.message)}`,
      ...(r.outcome.hint ? [`> **hint:** ${cell(r.outcome.hint)}`] : []),
      '',
    );
  lines.push('| check | result |', '|---|---|');
  if (r.checks.length === 0) lines.push('| _no checks ran_ | |');
  for (const c of r.checks)
    lines.push(
      `| ${cell(c.name)} | ${c.passed ? '✅ passed' : c.timed_out ? '❌ timed out' : `❌ exit ${c.exit_code ?? c.signal}`} |`,
    );
  lines.push('', `**Changed files (${r.changed_files.length})**`, '');
  const bad = new Set(r.scope.violations.map((v) => v.path));
  for (const f of r.changed_files.slice(0, 50))
    lines.push(`- \`${f.path}\` ${f.status}${bad.has(f.path) ? ' ⚠️ **out of scope**' : ''}`);
  const failed = r.checks.find((c) => !c.passed);
  if (failed) {
    const tail = (failed.output_tail || failed.output_head).split('\n').slice(-30).join('\n');
    lines.push(
      '',
      `<details open><summary>${cell(failed.name)}: output tail</summary>`,
      '',
      fence(tail),
      '',
      '</details>',
    );
  }
  return lines;
}

export function commentBody(marker, outputs, env) {
  let receipt = null;
  if (outputs.receipt_path && existsSync(outputs.receipt_path))
    receipt = JSON.parse(readFileSync(outputs.receipt_path, 'utf8'));
  const ok = outputs.status === 'completed' && outputs.verdict === 'verified';
  const head = `### ${ok ? '✅' : '❌'} uh: ${outputs.status || 'error'}${outputs.verdict ? ` · ${outputs.verdict}` : ''}`;
  const lines = [marker, head, ''];
  if (receipt && outputs.status !== 'untrusted') lines.push(...receiptLines(receipt));
  else lines.push(`> **why:** ${cell(JSON.parse(outputs.result_json || '{}').why ?? 'see the step log')}`);
  if (env.GITHUB_SERVER_URL && env.GITHUB_REPOSITORY && env.GITHUB_RUN_ID)
    lines.push(
      '',
      `[Run, step summary and artifacts](${env.GITHUB_SERVER_URL}/${env.GITHUB_REPOSITORY}/actions/runs/${env.GITHUB_RUN_ID})`,
    );
  return `${lines.join('\n')}\n`;
}

async function github(env, method, path, body) {
  const res = await fetch(`${(env.GITHUB_API_URL || 'https://api.github.com').replace(/\/+$/, '')}${path}`, {
    method,
    headers: {
      accept: 'application/vnd.github+json',
      authorization: `Bearer ${env.UH_ACTION_GITHUB_TOKEN}`,
      'x-github-api-version': '2022-11-28',
      'user-agent': 'ultimate-harness-action',
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${(await res.text()).slice(0, 200)}`);
  return res.json();
}

/** Create the job's comment, or update the one that carries its marker. Returns its URL. */
export async function stickyComment(env = process.env) {
  const event =
    env.GITHUB_EVENT_PATH && existsSync(env.GITHUB_EVENT_PATH)
      ? JSON.parse(readFileSync(env.GITHUB_EVENT_PATH, 'utf8'))
      : {};
  const number = event.pull_request?.number ?? event.issue?.number;
  if (!number) return null;
  const marker = `<!-- uh-action-comment: ${env.UH_ACTION_COMMENT_KEY || env.GITHUB_JOB || 'uh'} -->`;
  const body = commentBody(marker, parseOutputs(readFileSync(env.GITHUB_OUTPUT, 'utf8')), env);
  const repo = env.GITHUB_REPOSITORY;
  let found = null;
  for (let page = 1; !found; page++) {
    const list = await github(env, 'GET', `/repos/${repo}/issues/${number}/comments?per_page=100&page=${page}`);
    found = list.find((c) => typeof c.body === 'string' && c.body.includes(marker)) ?? null;
    if (list.length < 100) break;
  }
  const made = found
    ? await github(env, 'PATCH', `/repos/${repo}/issues/comments/${found.id}`, { body })
    : await github(env, 'POST', `/repos/${repo}/issues/${number}/comments`, { body });
  return made.html_url ?? '';
}

try {
  const url = await stickyComment();
  if (url === null) process.stderr.write('::warning title=uh pr-comment::not a pull_request event: no comment\n');
  else if (process.env.GITHUB_OUTPUT) appendFileSync(process.env.GITHUB_OUTPUT, `comment_url=${url}\n`);
} catch (error) {
  // The comment is a courtesy: the step's outcome stays uh's.
  process.stderr.write(`::warning title=uh pr-comment::${String(error.message).replace(/\n/g, ' ')}\n`);
}
