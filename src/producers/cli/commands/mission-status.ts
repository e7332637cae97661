import type { UhConfig } from '../../../shared/config.js';
import { copyFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { EXIT, OperationStateSchema } from '../../../shared/contracts/status.js';
import { writeJunit } from '../../ci/ci-report.js';
import { invalidInput, UhError } from '../../../shared/errors.js';
import {
  CHECK_LOG_FILE,
  operationDir,
  operationsRoot,
  readReceipt,
  readRecord,
} from '../../../operation/operation-files.js';
import { COMMON_OPTIONS, helpText, parseCommand, resolveStateDir, writeJson, type CommandSpec } from '../cli-kit.js';
import { printReceiptSummary, receiptJson } from '../receipt-view.js';
import { checkReceiptText, receiptFields, reportSignature } from '../receipt-check.js';
import { makeDir } from '../../../shared/fs/make-dir.js';

const STATUS: CommandSpec = {
  usage: 'uh mission status <operation_id> [--json] [--state-dir dir]',
  summary:
    "Show an operation's state and, when finished, its receipt summary and signature check. Exit code: the operation's (5 while not finished); 6 when the receipt is not signed by a known key or was edited (its claims are then not shown).",
  options: { ...COMMON_OPTIONS },
  examples: ['uh mission status hello-001', 'uh mission status hello-001 --json | jq .verdict'],
};

const COLLECT: CommandSpec = {
  usage: 'uh mission collect <operation_id> --out <dir> [--junit path] [--json] [--state-dir dir]',
  summary:
    "Copy the receipt, diff, final message, runtime result, events and check logs of an operation into --out, and check the receipt's signature (exit 6 when it is unsigned, edited or signed by an unknown key).",
  options: { ...COMMON_OPTIONS, out: { type: 'string' }, junit: { type: 'string' } },
  examples: ['uh mission collect hello-001 --out ./artifacts'],
};

const LIST: CommandSpec = {
  usage: 'uh mission list [--state queued|running|verifying|finished|unknown] [--json] [--state-dir dir]',
  summary: 'List the operations in the state dir, newest first.',
  options: { ...COMMON_OPTIONS, state: { type: 'string' }, redis: { type: 'string' }, limit: { type: 'string' } },
  examples: ['uh mission list', 'uh mission list --state unknown --json'],
};

/** `--state` must name an operation state: a typo would otherwise list nothing, silently. */
export function checkStateFilter(state: unknown): void {
  if (state === undefined) return;
  const known = OperationStateSchema.options;
  if (!known.includes(state as (typeof known)[number]))
    throw invalidInput(`--state: "${String(state)}" is not an operation state (${known.join(', ')})`);
}

function oneOperation(spec: CommandSpec, argv: string[], config: UhConfig) {
  const parsed = parseCommand(spec, argv);
  if (parsed.values.help) return { help: true as const };
  if (parsed.positionals.length !== 1)
    throw invalidInput(`${spec.usage.split(' <')[0]} needs one operation_id`, [], spec.usage);
  const stateDir = resolveStateDir(parsed.values['state-dir'] as string | undefined, config);
  const id = parsed.positionals[0] as string;
  const record = readRecord(stateDir, id);
  if (!record) {
    throw new UhError('not_found', `no operation ${id} in ${stateDir}`, {
      hint: 'check the id (uh mission list) or pass --state-dir',
    });
  }
  return { help: false as const, values: parsed.values, stateDir, id, record };
}

export async function missionStatus(argv: string[], config: UhConfig): Promise<number> {
  const got = oneOperation(STATUS, argv, config);
  if (got.help) return (void process.stdout.write(`${helpText(STATUS)}\n`), EXIT.ok);
  const receipt = readReceipt(got.stateDir, got.id);
  const dir = operationDir(got.stateDir, got.id);
  // The signature is checked before anything of the receipt is printed: an untrusted one is never shown as the outcome.
  const signature = receipt ? checkReceiptText(readFileSync(join(dir, 'receipt.json'), 'utf8'), config) : null;
  const trusted = receipt && signature?.state === 'valid' ? receipt : null;
  if (got.values.json) {
    const shown = receiptFields(receipt ? receiptJson(receipt, dir) : null, signature);
    writeJson({ operation: got.record, ...shown, ...(signature ? { signature } : {}) });
  } else if (trusted) printReceiptSummary(trusted, dir, false);
  else
    process.stdout.write(
      `${got.id}: ${got.record.state} (runtime ${got.record.runtime}, updated ${got.record.updated_at})\n`,
    );
  const forced = signature ? reportSignature(signature, Boolean(got.values.json), got.id) : null;
  return forced ?? (trusted ? trusted.exit_code : EXIT.unknown);
}

const ARTIFACTS = [
  'receipt.json',
  'diff.patch',
  'runtime-final.txt',
  'runtime-result.yaml',
  'events.jsonl',
  'mission.json',
];

export async function missionCollect(argv: string[], config: UhConfig): Promise<number> {
  const got = oneOperation(COLLECT, argv, config);
  if (got.help) return (void process.stdout.write(`${helpText(COLLECT)}\n`), EXIT.ok);
  const out = got.values.out as string | undefined;
  if (!out) throw invalidInput('--out: required', [], COLLECT.usage);
  const receipt = readReceipt(got.stateDir, got.id);
  if (!receipt)
    throw new UhError('not_found', `operation ${got.id} has no receipt yet (state ${got.record.state})`, {
      hint: `uh mission status ${got.id}`,
    });
  const dir = operationDir(got.stateDir, got.id);
  makeDir(resolve(out));
  const copied: string[] = [];
  for (const name of [...ARTIFACTS, ...readdirSync(dir).filter((f) => CHECK_LOG_FILE.test(f))]) {
    if (!existsSync(join(dir, name))) continue;
    copyFileSync(join(dir, name), join(out, name));
    copied.push(join(resolve(out), name));
  }
  const signature = checkReceiptText(readFileSync(join(dir, 'receipt.json'), 'utf8'), config);
  // JUnit only from a trusted receipt: a forged one would report passing checks.
  if (got.values.junit && signature.state === 'valid') writeJunit(got.values.junit as string, receipt);
  if (got.values.json) writeJson({ operation_id: got.id, files: copied, signature });
  else process.stdout.write(`${copied.map((f) => `  ${f}`).join('\n')}\n`);
  return reportSignature(signature, Boolean(got.values.json), got.id) ?? EXIT.ok;
}

export async function missionList(argv: string[], config: UhConfig): Promise<number> {
  const { values } = parseCommand(LIST, argv);
  if (values.help) return (void process.stdout.write(`${helpText(LIST)}\n`), EXIT.ok);
  checkStateFilter(values.state);
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const root = operationsRoot(stateDir);
  const records = (existsSync(root) ? readdirSync(root) : [])
    .map((id) => readRecord(stateDir, id))
    .filter((r) => r !== null)
    .filter((r) => values.state === undefined || r.state === values.state)
    .sort((a, b) => b.created_at.localeCompare(a.created_at));
  if (values.json) writeJson(records);
  else if (records.length === 0) process.stdout.write(`no operations in ${stateDir}\n`);
  else {
    for (const r of records) {
      process.stdout.write(
        `${r.operation_id.padEnd(32)} ${r.state.padEnd(9)} ${(r.status ?? '-').padEnd(9)} ${(r.verdict ?? '-').padEnd(19)} ${r.runtime} ${r.created_at}\n`,
      );
    }
  }
  return EXIT.ok;
}
