/**
 * `uh mission status|collect|list` in queue mode. With `--redis` (or `$REDIS_URL` and no local
 * record of the operation) they read our operation records and artifacts in Redis, from any
 * host; otherwise they are the inline commands over the local state dir, unchanged.
 */
import type { UhConfig } from '../../../shared/config.js';
import { resolve } from 'node:path';
import { EXIT } from '../../../shared/contracts/status.js';
import { invalidInput, UhError } from '../../../shared/errors.js';
import { publicRecord, type QueueRecord } from '../../../shared/queue/operation-store.js';
import { readRecord } from '../../../operation/operation-files.js';
import {
  COMMON_OPTIONS,
  helpText,
  parseCommand,
  queueRedisUrl,
  resolveStateDir,
  writeJson,
  type CommandSpec,
} from '../cli-kit.js';
import { printReceiptSummary, receiptJson } from '../receipt-view.js';
import { checkReceiptText, receiptFields, reportSignature, type ReceiptTrust } from '../receipt-check.js';
import { checkStateFilter, missionCollect, missionList, missionStatus } from './mission-status.js';
import { writeJunit } from '../../ci/ci-report.js';

const REDIS_NOTE =
  'Queue mode: with --redis, or with $REDIS_URL when the operation is not in the local state dir, this reads Redis.';

const STATUS: CommandSpec = {
  usage: 'uh mission status <operation_id> [--json] [--state-dir dir] [--redis url]',
  summary:
    "Show an operation's state and, when finished, its receipt summary. Exit code: the operation's (5 while not finished); 6 when the receipt is unsigned, edited or signed by an unknown key.",
  options: { ...COMMON_OPTIONS, redis: { type: 'string' } },
  details: [REDIS_NOTE],
  examples: [
    'uh mission status hello-001',
    'uh mission status hello-001 --redis redis://queue:6379 --json | jq .operation.state',
  ],
};

const COLLECT: CommandSpec = {
  usage: 'uh mission collect <operation_id> --out <dir> [--junit path] [--json] [--state-dir dir] [--redis url]',
  summary:
    'Copy the receipt, diff, final message, runtime result, mission and events of an operation into --out; exit 6 when the receipt is unsigned, edited or signed by an unknown key.',
  options: { ...COMMON_OPTIONS, out: { type: 'string' }, redis: { type: 'string' }, junit: { type: 'string' } },
  details: [
    REDIS_NOTE,
    'From Redis the diff, final message and check logs are capped (UH_ARTIFACT_CAP_BYTES, default 2 MiB) with a truncation marker.',
    '--junit also writes the receipt as JUnit XML: one test case per check plus one for the scope check.',
  ],
  examples: [
    'uh mission collect hello-001 --out ./artifacts',
    'uh mission collect hello-001 --redis redis://queue:6379 --out ./artifacts',
  ],
};

const LIST: CommandSpec = {
  usage: 'uh mission list [--state queued|running|verifying|finished|unknown] [--json] [--state-dir dir] [--redis url]',
  summary:
    'List operations, newest first: Redis with --redis (or $REDIS_URL without --state-dir), else the local state dir.',
  options: { ...COMMON_OPTIONS, state: { type: 'string' }, redis: { type: 'string' }, limit: { type: 'string' } },
  examples: ['uh mission list', 'uh mission list --redis redis://queue:6379 --state unknown --json'],
};

/**
 * Redis when asked for (`--redis`); else local when the operation is in the local state dir (or,
 * for list, when `--state-dir` is given); else Redis when `$REDIS_URL` is set; else local.
 */
function useRedis(values: Record<string, unknown>, operationId: string | undefined, config: UhConfig): boolean {
  if (values.redis) return true;
  if (!config.queue.redisUrl) return false;
  if (operationId === undefined) return values['state-dir'] === undefined; // list: an explicit state dir means local
  return readRecord(resolveStateDir(values['state-dir'] as string | undefined, config), operationId) === null;
}

async function withRecord<T>(
  config: UhConfig,
  values: Record<string, unknown>,
  id: string,
  fn: (client: import('../../queue/queue-client.js').QueueClient, record: QueueRecord) => Promise<T>,
): Promise<T> {
  const { QueueClient } = await import('../../queue/queue-client.js');
  const client = await QueueClient.open(config.queue, queueRedisUrl(config, values.redis));
  try {
    const record = await client.store.get(id);
    if (!record)
      throw new UhError('not_found', `no operation ${id} in Redis (prefix ${client.config.prefix})`, {
        hint: 'check the id (uh mission list) and UH_REDIS_PREFIX',
      });
    return await fn(client, record);
  } finally {
    await client.close();
  }
}

export async function missionStatusAny(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(STATUS, argv);
  if (values.help) return (void process.stdout.write(`${helpText(STATUS)}\n`), EXIT.ok);
  if (positionals.length !== 1) throw invalidInput('uh mission status needs one operation_id', [], STATUS.usage);
  const id = positionals[0] as string;
  if (!useRedis(values, id, config)) return missionStatus(argv, config);
  return withRecord(config, values, id, async (client, record) => {
    const { readReceiptWithText } = await import('../../queue/materialize.js');
    const stored = await readReceiptWithText(client.store, id);
    const receipt = stored?.receipt ?? null;
    // Checked before anything of the receipt is printed; the exit code comes from a trusted receipt, never the record alone.
    const signature = stored ? checkReceiptText(stored.text, config) : null;
    const trusted = receipt && signature?.state === 'valid' ? receipt : null;
    const where = `redis:${client.store.keys.op(id)}`;
    if (values.json) {
      const shown = receiptFields(receipt ? receiptJson(receipt, where) : null, signature);
      writeJson({ operation: publicRecord(record), ...shown, ...(signature ? { signature } : {}) });
    } else if (trusted && record.state === 'finished') printReceiptSummary(trusted, where, false);
    else
      process.stdout.write(
        `${id}: ${record.state} (runtime ${record.runtime}, attempt ${record.attempt}, updated ${record.updated_at}${record.worker ? `, worker ${record.worker.id}` : ''})${record.unknown_reason ? `\n  why: ${record.unknown_reason}\n  hint: uh mission recover ${id}` : ''}\n`,
      );
    const forced = signature ? reportSignature(signature, Boolean(values.json), id) : null;
    if (forced !== null) return forced;
    if (record.state !== 'finished') return EXIT.unknown;
    return trusted ? trusted.exit_code : (record.exit_code ?? EXIT.failed);
  });
}

export async function missionCollectAny(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(COLLECT, argv);
  if (values.help) return (void process.stdout.write(`${helpText(COLLECT)}\n`), EXIT.ok);
  if (positionals.length !== 1) throw invalidInput('uh mission collect needs one operation_id', [], COLLECT.usage);
  const id = positionals[0] as string;
  if (!useRedis(values, id, config)) return missionCollect(argv, config);
  const out = values.out as string | undefined;
  if (!out) throw invalidInput('--out: required', [], COLLECT.usage);
  return withRecord(config, values, id, async (client, record) => {
    if (record.state !== 'finished')
      throw new UhError('not_found', `operation ${id} has no receipt yet (state ${record.state})`, {
        hint: `uh mission status ${id}`,
      });
    const { materialize } = await import('../../queue/materialize.js');
    const got = await materialize(client.store, id, resolve(out));
    const signature: ReceiptTrust =
      got.receiptText === null
        ? { state: 'unsigned', key_id: null, reason: 'no receipt in Redis' }
        : checkReceiptText(got.receiptText, config);
    // JUnit only from a trusted receipt: a forged one would report passing checks.
    if (values.junit && got.receipt && signature.state === 'valid') writeJunit(values.junit as string, got.receipt);
    if (values.json) writeJson({ operation_id: id, files: got.files, signature });
    else process.stdout.write(`${got.files.map((f) => `  ${f}`).join('\n')}\n`);
    return reportSignature(signature, Boolean(values.json), id) ?? EXIT.ok;
  });
}

export async function missionListAny(argv: string[], config: UhConfig): Promise<number> {
  const { values } = parseCommand(LIST, argv);
  if (values.help) return (void process.stdout.write(`${helpText(LIST)}\n`), EXIT.ok);
  checkStateFilter(values.state);
  if (!useRedis(values, undefined, config)) return missionList(argv, config);
  const limit = values.limit === undefined ? 1000 : Number(values.limit);
  if (!(Number.isInteger(limit) && limit > 0))
    throw invalidInput(`--limit: "${values.limit}" is not a positive integer`);
  const { QueueClient } = await import('../../queue/queue-client.js');
  const client = await QueueClient.open(config.queue, queueRedisUrl(config, values.redis));
  try {
    const ids = await client.store.listIds(limit);
    const records = (await Promise.all(ids.map((id) => client.store.get(id))))
      .filter((r): r is QueueRecord => r !== null)
      .filter((r) => values.state === undefined || r.state === values.state);
    if (values.json) writeJson(records.map(publicRecord));
    else if (records.length === 0) process.stdout.write(`no operations in Redis (prefix ${client.config.prefix})\n`);
    else {
      for (const r of records) {
        process.stdout.write(
          `${r.operation_id.padEnd(32)} ${r.state.padEnd(9)} ${(r.status ?? '-').padEnd(9)} ${(r.verdict ?? '-').padEnd(19)} ${r.runtime} ${r.created_at}\n`,
        );
      }
    }
    return EXIT.ok;
  } finally {
    await client.close();
  }
}
