// The Action's report of a step that ended before uh could report it (a bad input, uh missing or
// crashing): the same four things uh writes for every outcome (src/producers/ci/ci-report.ts), so
// no outcome goes unreported: a `status` step output, an `::error` annotation, the step summary
// and a fresh JUnit file with one <error>. Node built-ins only.
//   node action-report.mjs <status> <title> <message>     (env: GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, UH_ACTION_JUNIT)
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const xml = (s) =>
  s
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '')
    .replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]);
const escapeData = (s) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');

export function reportStep(status, title, message, env = process.env) {
  if (env.GITHUB_OUTPUT) {
    const result = JSON.stringify({ operation_id: null, status, verdict: null, why: message });
    const delim = `uh_${Date.now().toString(36)}_eof`;
    appendFileSync(env.GITHUB_OUTPUT, `status=${status}\nverdict=\nresult_json=${result}\n`);
    appendFileSync(env.GITHUB_OUTPUT, `final_message<<${delim}\n\n${delim}\n`);
  }
  process.stderr.write(`::error title=uh ${title}::${escapeData(message)}\n`);
  if (env.GITHUB_STEP_SUMMARY) appendFileSync(env.GITHUB_STEP_SUMMARY, `## ❌ uh: ${title}\n\n> **why:** ${message}\n`);
  if (env.UH_ACTION_JUNIT) {
    const file = resolve(env.UH_ACTION_JUNIT);
    mkdirSync(dirname(file), { recursive: true });
    const counts = 'tests="1" failures="0" errors="1" skipped="0" time="0.000"';
    writeFileSync(
      file,
      [
        '<?xml version="1.0" encoding="UTF-8"?>',
        `<testsuites name="uh" ${counts}>`,
        `  <testsuite name="uh" ${counts} timestamp="${new Date().toISOString()}">`,
        `    <properties><property name="status" value="${xml(status)}"/></properties>`,
        `    <testcase classname="uh" name="${xml(status)}" time="0.000">`,
        `      <error message="${xml(`${status}: ${message.split('\n')[0]}`)}" type="error">${xml(message)}</error>`,
        '    </testcase>',
        '  </testsuite>',
        '</testsuites>',
        '',
      ].join('\n'),
    );
  }
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const [status = 'error', title = 'error', message = ''] = process.argv.slice(2);
  reportStep(status, title, message);
}
