import { describe, expect, it } from 'vitest';
import {
  selectAdoptableTurn,
  clientMessageIdOf,
} from '../../../../src/workers/runtimes/codex-app-server/codex-app-server-identity.js';
import { decideApproval } from '../../../../src/workers/runtimes/codex-app-server/codex-app-server-approvals.js';
import type { Turn } from '../../../../src/workers/runtimes/codex-app-server/codex-app-server-protocol.js';

const ours = clientMessageIdOf('op-1');
const turn = (id: string, clientId: string | null, status: Turn['status'] = 'completed'): Turn =>
  ({
    id,
    status,
    error: null,
    items: clientId === null ? [] : [{ type: 'userMessage', id: `u-${id}`, clientId, content: [] }],
  }) as Turn;

describe('selectAdoptableTurn: exactly one new turn carrying our client message id', () => {
  it.each([
    [
      'one new turn with our id',
      [turn('t0', 'uh-op:op-0'), turn('t1', ours)],
      { baseline_turn_ids: ['t0'], client_message_id: ours },
      { kind: 'one' },
    ],
    [
      'one, and it is the bound turn',
      [turn('t1', ours)],
      { baseline_turn_ids: [], client_message_id: ours, turn_id: 't1' },
      { kind: 'one' },
    ],
    [
      'the bound turn is another one',
      [turn('t1', ours)],
      { baseline_turn_ids: [], client_message_id: ours, turn_id: 't9' },
      { kind: 'none' },
    ],
    [
      'no new turn',
      [turn('t0', 'uh-op:op-0')],
      { baseline_turn_ids: ['t0'], client_message_id: ours },
      { kind: 'none' },
    ],
    [
      'our id only in the baseline (an older turn)',
      [turn('t0', ours)],
      { baseline_turn_ids: ['t0'], client_message_id: ours },
      { kind: 'none' },
    ],
    [
      'a new turn without a client id',
      [turn('t1', null)],
      { baseline_turn_ids: [], client_message_id: ours },
      { kind: 'none' },
    ],
    [
      'a new turn of someone else',
      [turn('t1', 'uh-op:other')],
      { baseline_turn_ids: [], client_message_id: ours },
      { kind: 'none' },
    ],
    [
      'several new turns with our id',
      [turn('t1', ours), turn('t2', ours)],
      { baseline_turn_ids: [], client_message_id: ours },
      { kind: 'several', turnIds: ['t1', 't2'] },
    ],
    ['no baseline journalled', [turn('t1', ours)], { client_message_id: ours }, { kind: 'none' }],
    ['no client id journalled', [turn('t1', ours)], { baseline_turn_ids: [] }, { kind: 'none' }],
  ] as const)('%s → %o', (_name, turns, record, expected) => {
    expect(selectAdoptableTurn(turns, record as never)).toMatchObject(expected);
  });

  it('derives the client message id from the operation id (and the attempt, past the first)', () => {
    expect(clientMessageIdOf('op-1')).toBe('uh-op:op-1');
    expect(clientMessageIdOf('op-1', 1)).toBe('uh-op:op-1');
    expect(clientMessageIdOf('op-1', 2)).toBe('uh-op:op-1:attempt-2');
  });
});

describe('decideApproval: decline anything outside the worktree', () => {
  const W = '/work/tree';
  it.each([
    [
      'command in the worktree',
      'item/commandExecution/requestApproval',
      { threadId: 't', turnId: 'u', itemId: 'i', command: 'ls', cwd: '/work/tree/src' },
      'decline_outside_workdir',
      true,
    ],
    [
      'command with no cwd (the thread cwd)',
      'item/commandExecution/requestApproval',
      { threadId: 't', turnId: 'u', itemId: 'i', command: 'ls' },
      'decline_outside_workdir',
      true,
    ],
    [
      'command naming an absolute path outside (cwd inside)',
      'item/commandExecution/requestApproval',
      {
        threadId: 't',
        turnId: 'u',
        itemId: 'i',
        command: "/bin/bash -lc 'touch /tmp/x'",
        cwd: '/work/tree',
        commandActions: [{ type: 'unknown', command: 'touch /tmp/x' }],
      },
      'decline_outside_workdir',
      false,
    ],
    [
      'command naming an absolute path inside',
      'item/commandExecution/requestApproval',
      {
        threadId: 't',
        turnId: 'u',
        itemId: 'i',
        command: "/bin/bash -lc 'touch /work/tree/a'",
        cwd: '/work/tree',
        commandActions: [{ type: 'unknown', command: 'touch /work/tree/a' }],
      },
      'decline_outside_workdir',
      true,
    ],
    [
      'command without actions: the bash wrapper is not a path',
      'item/commandExecution/requestApproval',
      { threadId: 't', turnId: 'u', itemId: 'i', command: "/bin/bash -lc 'touch a.txt'", cwd: '/work/tree' },
      'decline_outside_workdir',
      true,
    ],
    [
      'command climbing out with ..',
      'item/commandExecution/requestApproval',
      {
        threadId: 't',
        turnId: 'u',
        itemId: 'i',
        command: 'cat ../secret',
        cwd: '/work/tree',
        commandActions: [{ type: 'read', command: 'cat ../secret' }],
      },
      'decline_outside_workdir',
      false,
    ],
    [
      'command into the home dir',
      'item/commandExecution/requestApproval',
      {
        threadId: 't',
        turnId: 'u',
        itemId: 'i',
        command: 'cat ~/.ssh/id_rsa',
        cwd: '/work/tree',
        commandActions: [{ type: 'read', command: 'cat ~/.ssh/id_rsa' }],
      },
      'decline_outside_workdir',
      false,
    ],
    [
      'command asking for network',
      'item/commandExecution/requestApproval',
      {
        threadId: 't',
        turnId: 'u',
        itemId: 'i',
        command: 'curl x',
        cwd: '/work/tree',
        networkApprovalContext: { host: 'x' },
      },
      'decline_outside_workdir',
      false,
    ],
    [
      'command outside',
      'item/commandExecution/requestApproval',
      { threadId: 't', turnId: 'u', itemId: 'i', command: 'ls', cwd: '/etc' },
      'decline_outside_workdir',
      false,
    ],
    [
      'command climbing out',
      'item/commandExecution/requestApproval',
      { threadId: 't', turnId: 'u', itemId: 'i', cwd: '/work/tree/../other' },
      'decline_outside_workdir',
      false,
    ],
    [
      'command under decline_all',
      'item/commandExecution/requestApproval',
      { threadId: 't', turnId: 'u', itemId: 'i', cwd: '/work/tree' },
      'decline_all',
      false,
    ],
    [
      'file change inside',
      'item/fileChange/requestApproval',
      { threadId: 't', turnId: 'u', itemId: 'i' },
      'decline_outside_workdir',
      true,
    ],
    [
      'file change granting a root outside',
      'item/fileChange/requestApproval',
      { threadId: 't', turnId: 'u', itemId: 'i', grantRoot: '/home' },
      'decline_outside_workdir',
      false,
    ],
    [
      'extra permissions',
      'item/permissions/requestApproval',
      { threadId: 't', turnId: 'u', itemId: 'i' },
      'decline_outside_workdir',
      false,
    ],
    ['legacy exec approval', 'execCommandApproval', {}, 'decline_outside_workdir', false],
    ['malformed', 'item/commandExecution/requestApproval', { nope: 1 }, 'decline_outside_workdir', false],
  ] as const)('%s', (_name, method, params, policy, accepted) => {
    expect(decideApproval(method, params, W, policy)?.accepted).toBe(accepted);
  });

  it('answers nothing for a request that is not an approval (the caller answers method not found)', () => {
    expect(decideApproval('item/tool/requestUserInput', {}, W, 'decline_outside_workdir')).toBeNull();
  });
});
