/** `uh mission watch|cancel|recover`: queue-mode commands that act on one operation from any host. */
import type { UhConfig } from '../../../shared/config.js';
import { terminalText } from '../../../shared/terminal-text.js';
import { EXIT } from '../../../shared/contracts/status.js';
import type { UhEvent } from '../../../shared/contracts/event.js';
import { invalidInput, UhError } from '../../../shared/errors.js';
import { publicRecord, type QueueRecord } from '../../../shared/queue/operation-store.js';
import {
  COMMON_OPTIONS,
  helpText,
  parseCommand,
  queueRedisUrl,
  resolveStateDir,
  writeJson,
  type CommandSpec,
} from '../cli-kit.js';
import { readRecord } from '../../../operation/operation-files.js';
import type { QueueClient } from '../../queue/queue-client.js';

const REDIS = { redis: { type: 'string' as const } };

const WATCH: CommandSpec = {
  usage: 'uh mission watch <operation_id> [--from start|now] [--timeout s] [--json] [--redis url]',
  summary:
    "Follow an operation's events live until it settles; exit with the code of its receipt (5 for unknown or --timeout, 6 when the receipt is unsigned, edited or signed by an unknown key).",
  options: { ...COMMON_OPTIONS, ...REDIS, from: { type: 'string', default: 'start' }, timeout: { type: 'string' } },
  details: ['--json prints one uh.event.v0 per line.'],
  examples: ['uh mission watch hello-001', 'uh mission watch hello-001 --from now --json | jq -c .type'],
};

const CANCEL: CommandSpec = {
  usage: 'uh mission cancel <operation_id> [--wait] [--reason text] [--json] [--redis url]',
  summary:
    'Cancel an operation from any host. A waiting job is removed and gets a cancelled receipt at once; a running one is aborted by its worker (runtime process group killed, cancelled receipt).',
  options: { ...COMMON_OPTIONS, ...REDIS, wait: { type: 'boolean', default: false }, reason: { type: 'string' } },
  examples: ['uh mission cancel hello-001', 'uh mission cancel hello-001 --wait --json'],
};

const RECOVER: CommandSpec = {
  usage: 'uh mission recover <operation_id> [--settle failed|cancelled] [--state-dir dir] [--json] [--redis url]',
  summary:
    'Inspect an operation that may be stuck and settle what can be settled; never runs a runtime again. unknown (or running on a dead worker after its runtime started) → a runtime that can read its own records (codex-app-server: the thread in CODEX_HOME) settles it exactly; otherwise a receipt with --settle status (default failed). queued whose job is gone → enqueued again (its runtime never started).',
  options: { ...COMMON_OPTIONS, ...REDIS, settle: { type: 'string', default: 'failed' } },
  details: ['To run the mission again after recovery, submit it under a new operation_id.'],
  examples: ['uh mission recover hello-001', 'uh mission recover hello-001 --settle cancelled --json'],
};

async function open(spec: CommandSpec, argv: string[], config: UhConfig) {
  const parsed = parseCommand(spec, argv);
  if (parsed.values.help) return null;
  if (parsed.positionals.length !== 1)
    throw invalidInput(`${spec.usage.split(' <')[0]} needs one operation_id`, [], spec.usage);
  const id = parsed.positionals[0] as string;
  const { QueueClient } = await import('../../queue/queue-client.js');
  const client = await QueueClient.open(config.queue, queueRedisUrl(config, parsed.values.redis));
  const record = await client.store.get(id);
  if (!record) {
    await client.close();
    throw new UhError('not_found', `no operation ${id} in Redis (prefix ${client.config.prefix})`, {
      hint: 'check the id (uh mission list --redis …) and UH_REDIS_PREFIX',
    });
  }
  return { values: parsed.values, id, client, record };
}

const settledCode = (record: QueueRecord): number =>
  record.state === 'finished' ? (record.exit_code ?? EXIT.failed) : EXIT.unknown;

function printEvent(event: UhEvent): void {
  const data = Object.entries(event.data)
    .filter(([, v]) => v !== null && typeof v !== 'object')
    .map(([k, v]) => `${k}=${String(v).slice(0, 80)}`)
    .join(' ');
  process.stdout.write(
    `${terminalText(`${event.at.slice(11, 23)} ${event.type.padEnd(20)} ${data}`, { oneLine: true })}\n`,
  );
}

export async function missionWatch(argv: string[], config: UhConfig): Promise<number> {
  const got = await open(WATCH, argv, config);
  if (!got) return (void process.stdout.write(`${helpText(WATCH)}\n`), EXIT.ok);
  const { values, id, client } = got;
  try {
    if (values.from !== 'start' && values.from !== 'now')
      throw invalidInput(`--from: "${values.from}" must be start or now`);
    const timeoutS = values.timeout === undefined ? undefined : Number(values.timeout);
    if (timeoutS !== undefined && !(timeoutS > 0))
      throw invalidInput(`--timeout: "${values.timeout}" is not a positive number of seconds`);
    const { tailOperation } = await import('../../../shared/queue/event-stream.js');
    const record = await tailOperation(client.store, id, {
      from: values.from,
      onEvent: (e) => (values.json ? process.stdout.write(`${JSON.stringify(e)}\n`) : printEvent(e)),
      ...(timeoutS !== undefined ? { timeoutMs: timeoutS * 1000 } : {}),
    });
    if (!record) {
      process.stderr.write(`uh: ${id} has not settled after ${timeoutS} s\n`);
      return EXIT.unknown;
    }
    if (record.state !== 'finished') {
      if (!values.json) process.stderr.write(`uh: ${id} ${record.state}\n`);
      return settledCode(record);
    }
    return await trustedReceiptCode(client, config, id, Boolean(values.json));
  } finally {
    await client.close();
  }
}

/** A finished operation's code from its receipt, once its signature verifies (else exit 6 with the reason). */
async function trustedReceiptCode(client: QueueClient, config: UhConfig, id: string, json: boolean): Promise<number> {
  const { readReceiptWithText } = await import('../../queue/materialize.js');
  const { checkReceiptText, reportSignature } = await import('../receipt-check.js');
  const stored = await readReceiptWithText(client.store, id);
  const trust = stored
    ? checkReceiptText(stored.text, config)
    : { state: 'unsigned' as const, key_id: null, reason: 'no receipt in Redis' };
  const forced = reportSignature(trust, true, id);
  if (forced !== null || !stored?.receipt) return forced ?? EXIT.tampered;
  const r = stored.receipt;
  if (!json) process.stderr.write(`uh: ${id} finished · ${r.status} · ${r.verdict} (signature key ${trust.key_id})\n`);
  return r.exit_code;
}

/** Remove a waiting job and settle its record as cancelled, if it is still queued (atomic). */
export async function missionCancel(argv: string[], config: UhConfig): Promise<number> {
  const got = await open(CANCEL, argv, config);
  if (!got) return (void process.stdout.write(`${helpText(CANCEL)}\n`), EXIT.ok);
  const { values, id, client } = got;
  try {
    const reason = (values.reason as string | undefined) ?? 'uh mission cancel';
    const { cancelOperation } = await import('../../queue/cancel-operation.js');
    const outcome = await cancelOperation(client, got.record, reason, config.receipts);
    let record = (await client.store.get(id)) as QueueRecord;
    if (values.wait && record.state !== 'finished' && record.state !== 'unknown') {
      const { tailOperation } = await import('../../../shared/queue/event-stream.js');
      record = (await tailOperation(client.store, id, { from: 'now' })) ?? record;
    }
    if (values.json)
      writeJson({ operation_id: id, outcome, state: record.state, status: record.status, exit_code: record.exit_code });
    else process.stdout.write(`${id}: ${outcome}${values.wait ? ` → ${record.state} ${record.status ?? ''}` : ''}\n`);
    return values.wait ? settledCode(record) : EXIT.ok;
  } finally {
    await client.close();
  }
}

/** Recover an operation: the local state dir's inline operation, else the queue's (workers/recover). */
export async function missionRecover(argv: string[], config: UhConfig): Promise<number> {
  const parsed = parseCommand(RECOVER, argv);
  if (parsed.values.help) return (void process.stdout.write(`${helpText(RECOVER)}\n`), EXIT.ok);
  const settle = parsed.values.settle;
  if (settle !== 'failed' && settle !== 'cancelled')
    throw invalidInput(`--settle: "${String(settle)}" must be failed or cancelled`);
  const stateDir = resolveStateDir(parsed.values['state-dir'] as string | undefined, config);
  const { compileSettings } = await import('../../../operation/settings.js');
  const settings = compileSettings(config, { stateDir });
  const localId = parsed.positionals[0];
  // An inline operation in the local state dir is recovered there, without Redis (a queue
  // worker's local copy is not: Redis holds that operation's truth).
  if (
    !parsed.values.redis &&
    localId !== undefined &&
    parsed.positionals.length === 1 &&
    readRecord(stateDir, localId)?.mode === 'inline'
  ) {
    const { recoverInline } = await import('../../../workers/recover/recover-inline.js');
    const { steps, record } = await recoverInline(settings, localId, settle);
    printRecovery(localId, steps, record, parsed.values.json === true);
    return record.state === 'finished' ? (record.exit_code ?? EXIT.failed) : EXIT.unknown;
  }
  const got = await open(RECOVER, argv, config);
  if (!got) return (void process.stdout.write(`${helpText(RECOVER)}\n`), EXIT.ok);
  try {
    const { recoverQueued } = await import('../../../workers/recover/recover-queued.js');
    const { steps, record } = await recoverQueued(got.client, got.record, settle, settings);
    printRecovery(got.id, steps, publicRecord(record), parsed.values.json === true);
    return settledCode(record);
  } finally {
    await got.client.close();
  }
}

function printRecovery(id: string, steps: string[], operation: object, json: boolean): void {
  if (json) writeJson({ operation_id: id, steps, operation });
  else process.stdout.write(`${id}:\n${steps.map((s) => `  ${s}`).join('\n')}\n`);
}
