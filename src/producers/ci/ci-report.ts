/**
 * Everything a CI host gets from a settled operation, written by `mission run`, `mission
 * submit --wait` and `mission collect`: the JUnit file (`--junit`), GitHub step outputs
 * (`$GITHUB_OUTPUT`), the step summary (`$GITHUB_STEP_SUMMARY`) and `::error` annotations
 * (`GITHUB_ACTIONS=true`; on stderr when stdout carries --json).
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { UhConfig } from '../../shared/config.js';
import type { Receipt } from '../../shared/contracts/receipt.js';
import { writeGithubOutput } from '../queue/github-output.js';
import { githubAnnotations, githubStepSummary } from './github-report.js';
import { receiptJunit } from './junit.js';
import { makeDir } from '../../shared/fs/make-dir.js';

export interface CiReportOptions {
  /** Where the receipt and its artifacts are on this host. */
  dir: string;
  junit?: string | undefined;
  json: boolean;
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
  };
}

export function writeJunit(path: string, receipt: Receipt): void {
  const full = resolve(path);
  makeDir(dirname(full));
  writeFileSync(full, receiptJunit(receipt));
}

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

/** An operation that did not settle (wait timed out, unknown, cancelled before a receipt): outputs say so. */
export function reportUnsettled(ci: UhConfig['ci'], operationId: string, status: string, message: string): void {
  if (ci.githubOutput)
    writeGithubOutput(ci.githubOutput, {
      status,
      verdict: '',
      operation_id: operationId,
      receipt_path: '',
      final_message: '',
      diff_path: '',
    });
  if (ci.stepSummary) appendFileSync(ci.stepSummary, `## ⚠️ uh ${operationId}: ${status}\n\n${message}\n`);
  if (ci.annotations)
    process.stderr.write(`::error title=uh ${status}::${message.replace(/%/g, '%25').replace(/\n/g, '%0A')}\n`);
}
