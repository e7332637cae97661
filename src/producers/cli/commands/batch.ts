import type { UhConfig } from '../../../shared/config.js';
import { terminalText } from '../../../shared/terminal-text.js';
import { loadMissionFile, repositoryPolicy } from '../../../shared/contracts/load-mission.js';
import { EXIT } from '../../../shared/contracts/exit-codes.js';
import { invalidInput } from '../../../shared/errors.js';
import { createLogger } from '../../../shared/logger.js';
import { readReceipt, readRecord } from '../../../operation/operation-files.js';
import {
  batchExitCode,
  batchMissions,
  batchRuntimes,
  compareReceipts,
  readBatchRecord,
  writeBatchRecord,
  type BatchRecord,
  type ComparisonRow,
} from '../../batch.js';
import { COMMON_OPTIONS, helpText, parseCommand, resolveStateDir, writeJson, type CommandSpec } from '../cli-kit.js';

const RUN: CommandSpec = {
  usage: 'uh batch run <mission.yaml> [--runtimes a,b,c] [--concurrency N] [--json] [--state-dir dir]',
  summary:
    'Run one mission on several runtimes inline and compare them side by side. Each runtime is its own operation <operation_id>.<runtime> (idempotent on its own); the batch is <operation_id>. Exit 0 when every runtime exited 0, else 1.',
  options: { ...COMMON_OPTIONS, runtimes: { type: 'string' }, concurrency: { type: 'string', default: '1' } },
  details: ['Runtimes come from --runtimes, else from the mission (runtime: [a, b]); runtime_config_overrides are keyed by runtime id.'],
  examples: ['uh batch run mission.yaml --runtimes codex,pi,hermes-proxy', 'uh batch run mission.yaml --concurrency 3 --json > comparison.json'],
};

const REPORT: CommandSpec = {
  usage: 'uh batch report <batch_id> [--json] [--state-dir dir]',
  summary: 'Print the comparison of a batch from its receipts.',
  options: { ...COMMON_OPTIONS },
  examples: ['uh batch report fix-login-001', 'uh batch report fix-login-001 --json'],
};

function printTable(record: BatchRecord, rows: ComparisonRow[]): void {
  const header = ['runtime', 'status', 'verdict', 'files', 'checks', 'ms', 'tokens', 'final message'];
  const body = rows.map((r) => [r.runtime, r.status, r.verdict, String(r.changed_files), r.checks, r.duration_ms === null ? '-' : String(r.duration_ms), r.tokens === null ? '-' : String(r.tokens), r.final_message]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ');
  process.stdout.write(terminalText(`batch ${record.batch_id}: ${record.title}\n${line(header)}\n${body.map(line).join('\n')}\n`));
}

function rowsOf(stateDir: string, record: BatchRecord): ComparisonRow[] {
  return compareReceipts(
    record.operations.map((o) => ({
      ...o,
      receipt: readReceipt(stateDir, o.operation_id),
      state: readRecord(stateDir, o.operation_id)?.state ?? 'missing',
    })),
  );
}

export async function batchRun(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(RUN, argv);
  if (values.help) return void process.stdout.write(`${helpText(RUN)}\n`), EXIT.ok;
  if (positionals.length !== 1) throw invalidInput('uh batch run needs exactly one mission file', [], RUN.usage);
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 16) throw invalidInput(`--concurrency: "${values.concurrency}" must be a whole number from 1 to 16`);
  const mission = loadMissionFile(positionals[0] as string, repositoryPolicy(config.core, 'cli'));
  const runtimes = batchRuntimes(mission, values.runtimes as string | undefined);
  const missions = batchMissions(mission, runtimes);
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  // Refuse bad input for every runtime before anything runs or is written.
  const { prepareOperation } = await import('../../../operation/prepare-operation.js');
  const { OPERATION_PORTS } = await import('../../../workers/operation-ports.js');
  for (const m of missions) await prepareOperation(m, { stateDir, cacheDir: config.core.cacheDir }, OPERATION_PORTS);
  const record: BatchRecord = {
    schema_version: 'uh.batch.v0',
    batch_id: mission.operation_id,
    mission_id: mission.mission_id,
    title: mission.title,
    runtimes,
    operations: missions.map((m) => ({ runtime: m.runtime as string, operation_id: m.operation_id })),
    created_at: new Date().toISOString(),
  };
  writeBatchRecord(stateDir, record);
  const { runInline } = await import('../../../workers/inline/run-inline.js');
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort({ kind: 'cancel', message: 'cancelled by SIGINT' }));
  const logger = createLogger(config.core.logLevel);
  const queue = [...missions];
  const worker = async () => {
    for (let m = queue.shift(); m !== undefined; m = queue.shift()) {
      if (!values.json) process.stderr.write(`uh: ${m.operation_id} on ${String(m.runtime)}…\n`);
      await runInline(m, { stateDir, cacheDir: config.core.cacheDir, signal: controller.signal, logger, sandboxKeepHours: config.core.sandboxKeepHours, keepSandbox: config.core.keepSandbox, isolation: config.core.isolation });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, missions.length) }, worker));
  const rows = rowsOf(stateDir, record);
  if (values.json) writeJson({ batch: record, comparison: rows });
  else printTable(record, rows);
  return batchExitCode(rows);
}

export async function batchReport(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(REPORT, argv);
  if (values.help) return void process.stdout.write(`${helpText(REPORT)}\n`), EXIT.ok;
  if (positionals.length !== 1) throw invalidInput('uh batch report needs one batch id', [], REPORT.usage);
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const record = readBatchRecord(stateDir, positionals[0] as string);
  const rows = rowsOf(stateDir, record);
  if (values.json) writeJson({ batch: record, comparison: rows });
  else printTable(record, rows);
  return batchExitCode(rows);
}
