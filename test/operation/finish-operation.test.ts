/**
 * finishOperation, the one place an operation ends: the receipt it writes is signed whichever
 * target it ends in; a queued operation ends in one owner-checked script (record, receipt among
 * the artifacts, `operation.completed`, the outbox entry) or not at all.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finishOperation } from '../../src/operation/finish-operation.js';
import { readRecord, type OperationRecord } from '../../src/operation/operation-files.js';
import { verifyReceipt, loadReceiptKey } from '../../src/operation/receipt-signature.js';
import { synthesizeReceipt } from '../../src/operation/synthesize-receipt.js';
import { OperationStore, type OperationJob } from '../../src/shared/queue/operation-store.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';

let redis: TestRedis;
const dirs: string[] = [];
beforeAll(async () => {
  redis = await startTestRedis('finish-operation');
});
afterAll(async () => {
  await redis.cleanup();
  dirs.forEach(removeDir);
});

const mission = {
  schema_version: 'uh.mission.v0',
  mission_id: 'm-finish',
  operation_id: 'op-finish',
  title: 'finish',
  objective: 'o',
  repository: { url: 'https://example.invalid/r.git', ref: 'main' },
  runtime: 'command',
  sandbox: { backend: 'git-worktree', env: {} },
  scope: { allowed_change_globs: ['**'], forbidden_globs: [] },
  verification: [],
  timeout_seconds: 60,
  promotion: 'none',
  labels: {},
};

async function queuedRecord(store: OperationStore, id: string) {
  const job = {
    operation_id: id,
    runtime: 'command',
    attempt: 1,
    contract_digest: 'sha256:c',
    base_commit: 'a'.repeat(40),
    mission: { ...mission, operation_id: id },
  };
  await store.createOrAttach(job as unknown as OperationJob, { mission_id: 'm-finish', prompt_digest: 'sha256:p' });
  const record = await store.get(id);
  if (!record) throw new Error('no record');
  return record;
}

function keySource() {
  const dir = tempDir('uh-finish-key-');
  dirs.push(dir);
  return { key: undefined, keyFile: join(dir, 'receipt.key') };
}

describe('finishOperation', () => {
  it('queued: one script writes record, signed receipt, the final event and the outbox entry; a stale owner writes nothing', async () => {
    const store = new OperationStore(redis.redis, redis.prefix('finish'));
    const record = await queuedRecord(store, 'op-finish-q');
    const keys = keySource();
    const receipt = synthesizeReceipt(record, {
      status: 'cancelled',
      raw: 'cancel',
      message: 'cancelled while waiting',
      timed_out: false,
    });

    const stale = await finishOperation(
      { kind: 'queue', store, record, owner: null, allowedStates: ['running'] },
      { receipt, keySource: keys },
    );
    expect(stale.settled).toBe(false);
    expect(await store.artifacts('op-finish-q')).toEqual({});

    const ended = await finishOperation(
      { kind: 'queue', store, record, owner: null, allowedStates: ['queued'], artifacts: { diff: 'd' } },
      { receipt, keySource: keys, event: { recovered: true } },
    );
    expect(ended.settled).toBe(true);
    expect(await store.get('op-finish-q')).toMatchObject({
      state: 'finished',
      status: 'cancelled',
      verdict: 'unverified',
      exit_code: 4,
    });
    const artifacts = await store.artifacts('op-finish-q');
    expect(artifacts.diff).toBe('d');
    expect(verifyReceipt(JSON.parse(artifacts.receipt as string), loadReceiptKey(keys, false))).toMatchObject({
      state: 'valid',
    });
    const events = await redis.redis.xrange(store.keys.events('op-finish-q'), '-', '+');
    expect(events.map(([, f]) => JSON.parse(f[1] as string))).toEqual([
      expect.objectContaining({
        type: 'operation.completed',
        data: expect.objectContaining({ status: 'cancelled', recovered: true }),
      }),
    ]);
    const outbox = await redis.redis.xrange(store.keys.outbox, '-', '+');
    expect(outbox.map(([, f]) => JSON.parse(f[f.indexOf('completion') + 1] as string))).toEqual([
      expect.objectContaining({ operation_id: 'op-finish-q', state: 'finished', exit_code: 4 }),
    ]);
  });

  it('files: the receipt written once and signed, the record finished, the event appended', async () => {
    const stateDir = tempDir('uh-finish-state-');
    dirs.push(stateDir);
    const dir = join(stateDir, 'operations', 'op-finish-f');
    mkdirSync(dir, { recursive: true });
    const store = new OperationStore(redis.redis, redis.prefix('finish-f'));
    const queued = await queuedRecord(store, 'op-finish-f');
    const record = {
      schema_version: 'uh.operation.v0',
      operation_id: 'op-finish-f',
      mission_id: 'm-finish',
      runtime: 'command',
      contract_digest: 'sha256:c',
      prompt_digest: 'sha256:p',
      state: 'running',
      base_commit: null,
      attempt: 1,
      created_at: queued.created_at,
      updated_at: queued.created_at,
      worker: { host: 'h', pid: 1 },
      sandbox_path: null,
      runtime_started: true,
      mode: 'inline',
      status: null,
      verdict: null,
      exit_code: null,
    } as OperationRecord;
    const appended: Array<[string, Record<string, unknown>]> = [];
    const target = {
      kind: 'files',
      stateDir,
      dir,
      record,
      events: { append: (type: string, data: Record<string, unknown>) => void appended.push([type, data]) },
    } as const;
    const keys = keySource();
    const receipt = synthesizeReceipt(queued, {
      status: 'failed',
      raw: 'unknown',
      message: 'settled by recover',
      timed_out: false,
    });

    const ended = await finishOperation(target, { receipt, keySource: keys });
    const written = JSON.parse(readFileSync(join(dir, 'receipt.json'), 'utf8'));
    expect(verifyReceipt(written, loadReceiptKey(keys, false))).toMatchObject({ state: 'valid' });
    expect(ended.receiptPath).toBe(join(dir, 'receipt.json'));
    expect(readRecord(stateDir, 'op-finish-f')).toMatchObject({ state: 'finished', status: 'failed', exit_code: 1 });
    expect(appended).toEqual([
      ['operation.completed', expect.objectContaining({ status: 'failed', receipt: join(dir, 'receipt.json') })],
    ]);
    // Receipts are immutable: a second ending is refused.
    await expect(finishOperation(target, { receipt, keySource: keys })).rejects.toThrow(/already written/);
  });
});
