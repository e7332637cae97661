/**
 * A runtime that cannot prove whether its work was dispatched ends with `dispatch: 'unknown'`:
 * the pipeline must leave the operation UNKNOWN (no receipt, sandbox kept, an
 * `operation.unknown` event) and a second run of the same operation must not run it again.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseMission } from '../../src/shared/contracts/load-mission.js';
import type { AnyRuntimeAdapter, RuntimeEventV1 } from '../../src/shared/runtime/v1/index.js';
import { prepareOperation } from '../../src/operation/prepare-operation.js';
import { executeOperation } from '../../src/workers/execute-operation.js';
import { OPERATION_PORTS } from '../../src/workers/operation-ports.js';
import { claimOperationDir, readReceipt, readRecord } from '../../src/operation/operation-files.js';
import { makeRepo } from '../support/git-repo.js';
import { removeDir, tempDir } from '../support/temp.js';
import { testSettings } from '../support/settings.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

describe('a terminal event with dispatch unknown', () => {
  it('leaves the operation unknown: no receipt, sandbox kept, operation.unknown event', async () => {
    const repo = makeRepo();
    const stateDir = tempDir('uh-state-');
    const cacheDir = tempDir('uh-cache-');
    dirs.push(repo, stateDir, cacheDir);
    const mission = parseMission(
      {
        schema_version: 'uh.mission.v0',
        mission_id: 'm',
        operation_id: 'op-unknown',
        title: 't',
        objective: 'o',
        repository: { url: repo, ref: 'main' },
        runtime: 'command',
        runtime_config_overrides: { command: { argv: ['true'] } },
      },
      repo,
    );
    const prepared = await prepareOperation(mission, { stateDir, cacheDir }, OPERATION_PORTS);
    let launches = 0;
    // A port-level stand-in: the signal under test is the terminal event's `dispatch` field.
    const lostReply: AnyRuntimeAdapter = {
      ...prepared.runtime.adapter,
      launch() {
        launches += 1;
        async function* events(): AsyncGenerator<RuntimeEventV1> {
          yield { type: 'runtime.started', data: { thread_id: 'thr-1' } };
          yield {
            type: 'runtime.finished',
            data: {
              outcome: {
                status: 'failed',
                raw: 'dispatch:unknown',
                message: 'turn/start reply lost',
                hint: 'uh mission recover op-unknown',
                timed_out: false,
              },
              final_message: '',
              final_message_source: 'none',
              dispatch: 'unknown',
              thread_id: 'thr-1',
            },
          };
        }
        return { events: events() };
      },
    };
    prepared.runtime = { ...prepared.runtime, adapter: lostReply };
    expect(claimOperationDir(stateDir, 'op-unknown')).toBe(true);
    const result = await executeOperation({ prepared, settings: testSettings({ stateDir, cacheDir }), mode: 'inline' });

    expect(result.state).toBe('unknown');
    expect(launches).toBe(1);
    expect(readReceipt(stateDir, 'op-unknown')).toBeNull();
    const record = readRecord(stateDir, 'op-unknown');
    expect(record).toMatchObject({ state: 'unknown', runtime_started: true, thread_id: 'thr-1' });
    expect(record?.sandbox_path && existsSync(record.sandbox_path)).toBeTruthy();
    const types = readFileSync(join(stateDir, 'operations', 'op-unknown', 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).type);
    expect(types).toContain('operation.unknown');
    expect(types).not.toContain('operation.completed');
  });
});
