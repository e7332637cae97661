/**
 * Everything a CI host gets from an operation, written by `mission run`, `mission submit --wait`
 * and `mission collect`: the JUnit file (`--junit`), GitHub step outputs (`$GITHUB_OUTPUT`), the
 * step summary (`$GITHUB_STEP_SUMMARY`) and `::error` annotations (`GITHUB_ACTIONS=true`; on
 * stderr when stdout carries --json). Every way a run ends is reported the same three ways: a
 * receipt (`reportReceipt`), no receipt (`reportUnsettled`: wait timed out, unknown, untrusted,
 * detached) and a refused mission (`reportRefused`: invalid input, conflict, runtime unavailable).
 */
import { appendFileSync, lstatSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { UhConfig } from '../../shared/config.js';
import type { Receipt } from '../../shared/contracts/receipt.js';
import { errorMessage, UhError } from '../../shared/errors.js';
import { writeGithubOutput } from '../queue/github-output.js';
import { githubAnnotations, githubStepSummary } from './github-report.js';
import { junitDocument, receiptJunit, type Case } from './junit.js';
import { makeDir } from '../../shared/fs/make-dir.js';

export interface CiReportOptions {
  /** Where the receipt and its artifacts are on this host. */
  dir: string;
  junit?: string | undefined;
  json: boolean;
}

/** The result as one JSON document (`result_json` step output): what a later step needs without a parser for the receipt. */
export function resultJson(receipt: Receipt, dir: string): string {
  return JSON.stringify({
    operation_id: receipt.operation_id,
    status: receipt.status,
    verdict: receipt.verdict,
    exit_code: receipt.exit_code,
    why: receipt.status === 'completed' ? null : receipt.outcome.message,
    hint: receipt.outcome.hint ?? null,
    changed_files: receipt.changed_files.map((f) => ({ path: f.path, status: f.status })),
    scope_violations: receipt.scope.violations.map((v) => v.path),
    checks: receipt.checks.map((c) => ({ name: c.name, passed: c.passed, timed_out: c.timed_out })),
    receipt_path: join(dir, 'receipt.json'),
    diff_path: join(dir, 'diff.patch'),
  });
}

/** The step outputs of an operation that settled with a receipt. */
export function receiptOutputs(receipt: Receipt, dir: string): Record<string, string> {
  return {
    status: receipt.status,
    verdict: receipt.verdict,
    operation_id: receipt.operation_id,
    receipt_path: join(dir, 'receipt.json'),
    diff_path: join(dir, 'diff.patch'),
    final_message: receipt.final_message,
    result_json: resultJson(receipt, dir),
  };
}

function writeJunitText(path: string, text: string): void {
  const full = resolve(path);
  makeDir(dirname(full));
  writeFileSync(full, text);
}

export function writeJunit(path: string, receipt: Receipt): void {
  writeJunitText(path, receiptJunit(receipt));
}

/**
 * Remove a previous run's JUnit file so a run that ends early never leaves a stale report behind.
 * Only a regular file: `--junit /dev/stdout` (a symlink to the process's stdout) or a FIFO is
 * written through when the report comes, never removed (as root, removing it took /dev/stdout
 * from the whole host).
 */
export function resetJunit(path: string | undefined): void {
  if (path && lstatSync(resolve(path), { throwIfNoEntry: false })?.isFile()) rmSync(resolve(path), { force: true });
}

const escapeData = (s: string): string => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');

export function reportReceipt(receipt: Receipt, ci: UhConfig['ci'], options: CiReportOptions): void {
  if (options.junit) writeJunit(options.junit, receipt);
  if (ci.githubOutput) writeGithubOutput(ci.githubOutput, receiptOutputs(receipt, options.dir));
  if (ci.stepSummary) appendFileSync(ci.stepSummary, githubStepSummary(receipt));
  if (ci.annotations) {
    const text = githubAnnotations(receipt)
      .map((l) => `${l}\n`)
      .join('');
    (options.json ? process.stderr : process.stdout).write(text);
  }
}

/** A run that ended without a (trusted) receipt, as the outputs, summary, annotation and JUnit error say. */
function reportWithoutReceipt(
  ci: UhConfig['ci'],
  o: { operationId: string; status: string; title: string; message: string; junit: string | undefined },
): void {
  const outputs = {
    status: o.status,
    verdict: '',
    operation_id: o.operationId,
    receipt_path: '',
    final_message: '',
    diff_path: '',
    result_json: JSON.stringify({ operation_id: o.operationId, status: o.status, verdict: null, why: o.message }),
  };
  if (ci.githubOutput) writeGithubOutput(ci.githubOutput, outputs);
  const name = o.operationId || 'mission';
  if (ci.stepSummary) appendFileSync(ci.stepSummary, `## ❌ uh ${name}: ${o.title}\n\n> **why:** ${o.message}\n`);
  if (ci.annotations) process.stderr.write(`::error title=uh ${o.title}::${escapeData(o.message)}\n`);
  if (o.junit) {
    const kase: Case = { name: o.status, seconds: 0, error: { message: `${o.status}: ${o.message}`, text: o.message } };
    const doc = junitDocument(`uh ${name}`, [kase], { status: o.status }, new Date().toISOString());
    writeJunitText(o.junit, doc);
  }
}

/** An operation that did not settle (wait timed out, unknown, cancelled before a receipt, untrusted). */
export function reportUnsettled(
  ci: UhConfig['ci'],
  operationId: string,
  status: string,
  message: string,
  junit?: string,
): void {
  reportWithoutReceipt(ci, { operationId, status, title: status, message, junit });
}

/** The status a refused command reports: `invalid` (bad input, conflict), `blocked` (runtime unavailable), else `error`. */
function refusedStatus(error: unknown): string {
  if (!UhError.isInstance(error)) return 'error';
  if (['invalid_input', 'conflict', 'unsupported_capability', 'not_found'].includes(error.kind)) return 'invalid';
  return error.kind === 'runtime_unavailable' ? 'blocked' : 'error';
}

/** A mission refused before it ran (invalid field, conflicting operation, no runtime): the field and reason, reported. */
export function reportRefused(
  ci: UhConfig['ci'],
  o: { source: string; operationId: string | undefined; junit: string | undefined },
  error: unknown,
): void {
  const status = refusedStatus(error);
  const lines = [errorMessage(error)];
  if (UhError.isInstance(error)) {
    lines.push(...error.details);
    if (error.hint) lines.push(`hint: ${error.hint}`);
  }
  const kind = UhError.isInstance(error) ? error.kind : 'internal';
  const title = status === 'invalid' ? `${kind === 'conflict' ? 'conflict' : 'invalid mission'}` : status;
  const message = `${o.source}: ${lines.join('\n')}`;
  reportWithoutReceipt(ci, { operationId: o.operationId ?? '', status, title, message, junit: o.junit });
}
