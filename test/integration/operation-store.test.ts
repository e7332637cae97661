/**
 * The operation record's transitions against a real Redis, racing where production races:
 * many producers on one id, two workers on one job, a cancel against a claim, a retry attempt
 * against the job of the attempt before it.
 */
import { describe, expect, it } from 'vitest';
import { completionOf, type OperationJob } from '../../src/shared/queue/operation-store.js';
import { jobIdFor } from '../../src/shared/queue/topology.js';
import { useOperationStore } from '../support/operation-store.js';

const fx = useOperationStore('store', 's');
let n = 0;

function job(digest = 'sha256:a'): OperationJob {
  return {
    operation_id: `op-${++n}`,
    runtime: 'command',
    mission: { title: 't', repository: { url: '/r', ref: 'main' } },
    base_commit: 'c0ffee',
    contract_digest: digest,
    attempt: 1,
  };
}
const fields = { mission_id: 'm', prompt_digest: 'sha256:p' };
const worker = (id: string) => ({ id, host: 'h', pid: 1 });
const done = (j: OperationJob) => completionOf({ operation_id: j.operation_id, attempt: 1, runtime: 'command' });

describe('operation record transitions', () => {
  it('one of 100 concurrent create-or-attach calls creates; the rest attach; another digest conflicts', async () => {
    const j = job();
    const results = await Promise.all(Array.from({ length: 100 }, () => fx.store.createOrAttach(j, fields)));
    expect(results.filter((r) => r.kind === 'created')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'attached')).toHaveLength(99);
    expect(await fx.store.createOrAttach({ ...j, contract_digest: 'sha256:b' }, fields)).toEqual({
      kind: 'conflict',
      digest: 'sha256:a',
    });
  });

  it('two workers claiming one job: the later claim takes over only while the runtime has not started; the loser cannot start it', async () => {
    const j = job();
    await fx.store.createOrAttach(j, fields);
    expect((await fx.store.claim(j.operation_id, 'w1', worker('w1'), jobIdFor(j.operation_id), done(j))).kind).toBe(
      'run',
    );
    expect((await fx.store.claim(j.operation_id, 'w2', worker('w2'), jobIdFor(j.operation_id), done(j))).kind).toBe(
      'run',
    );
    expect(await fx.store.markRuntimeStarted(j.operation_id, 'w1')).toBe('lost');
    expect(await fx.store.markRuntimeStarted(j.operation_id, 'w2')).toBe('ok');
    expect(await fx.store.markRuntimeStarted(j.operation_id, 'w2')).toBe('lost'); // never twice
    // Re-delivered after the runtime started: unknown, with an event and an outbox entry.
    expect((await fx.store.claim(j.operation_id, 'w3', worker('w3'), jobIdFor(j.operation_id), done(j))).kind).toBe(
      'unknown',
    );
    expect((await fx.store.get(j.operation_id))?.state).toBe('unknown');
    const events = await fx.store.redis.xrange(fx.store.keys.events(j.operation_id), '-', '+');
    expect(events.map(([, f]) => JSON.parse(f[1] as string).type)).toEqual(['operation.unknown']);
    expect(await fx.store.updateIfOwner(j.operation_id, 'w2', { state: 'verifying' })).toBe(false);
  });

  it('a cancel requested before the runtime starts closes the gate', async () => {
    const j = job();
    await fx.store.createOrAttach(j, fields);
    expect((await fx.store.claim(j.operation_id, 'w1', worker('w1'), jobIdFor(j.operation_id), done(j))).kind).toBe(
      'run',
    );
    expect((await fx.store.requestCancel(j.operation_id, 'test')).kind).toBe('requested');
    expect(await fx.store.markRuntimeStarted(j.operation_id, 'w1')).toBe('cancelled');
  });

  it('a retry attempt is claimable only with its own job id, and only after the previous attempt left running', async () => {
    const j = job();
    await fx.store.createOrAttach(j, fields);
    await fx.store.claim(j.operation_id, 'w1', worker('w1'), jobIdFor(j.operation_id), done(j));
    await fx.store.markRuntimeStarted(j.operation_id, 'w1');
    expect(
      await fx.store.nextAttempt(j.operation_id, 'w-other', 2, jobIdFor(j.operation_id, 2), '{}', new Date()),
    ).toBe(false);
    expect(
      await fx.store.nextAttempt(j.operation_id, 'w1', 2, jobIdFor(j.operation_id, 2), '{"attempt":1}', new Date()),
    ).toBe(true);
    const r = await fx.store.get(j.operation_id);
    expect(r).toMatchObject({
      state: 'queued',
      attempt: 2,
      runtime_started: false,
      job_id: jobIdFor(j.operation_id, 2),
    });
    expect((await fx.store.claim(j.operation_id, 'w2', worker('w2'), jobIdFor(j.operation_id, 1), done(j))).kind).toBe(
      'stale',
    );
    expect((await fx.store.claim(j.operation_id, 'w2', worker('w2'), jobIdFor(j.operation_id, 2), done(j))).kind).toBe(
      'run',
    );
    expect(await fx.store.attempts(j.operation_id)).toEqual(['{"attempt":1}']);
  });

  it('settle is all or nothing and only from an allowed state', async () => {
    const j = job();
    await fx.store.createOrAttach(j, fields);
    const settle = (owner: string | null, allowed: string[]) =>
      fx.store.settle(j.operation_id, {
        owner,
        allowedStates: allowed,
        record: { state: 'finished', status: 'cancelled', exit_code: 4 },
        artifacts: { receipt: '{}' },
        event: null,
        completion: done(j),
      });
    expect(await settle(null, ['running'])).toBe(false);
    expect(await fx.store.artifacts(j.operation_id)).toEqual({});
    expect(await settle(null, ['queued'])).toBe(true);
    expect(await settle(null, ['queued'])).toBe(false);
    expect((await fx.store.get(j.operation_id))?.state).toBe('finished');
    expect((await fx.store.claim(j.operation_id, 'w1', worker('w1'), jobIdFor(j.operation_id), done(j))).kind).toBe(
      'settled',
    );
  });
});

describe('runtime journal in the record', () => {
  it('merges puts durably, only for the owner, and survives in the record', async () => {
    const { redisJournal } = await import('../../src/workers/pools/redis-journal.js');
    const j = job();
    await fx.store.createOrAttach(j, fields);
    await fx.store.claim(j.operation_id, 'w1', worker('w1'), jobIdFor(j.operation_id), done(j));
    const journal = redisJournal(fx.store, j.operation_id, 'w1');
    await Promise.all([journal.put({ thread_id: 't-1' }), journal.put({ baseline_turns: [] })]);
    expect(await journal.get()).toEqual({ thread_id: 't-1', baseline_turns: [] });
    expect((await fx.store.get(j.operation_id))?.journal).toEqual({ thread_id: 't-1', baseline_turns: [] });
    await expect(redisJournal(fx.store, j.operation_id, 'w2').put({ turn_id: 'x' })).rejects.toThrow('no longer owns');
  });
});
