import { describe, expect, it } from 'vitest';
import {
  answerAllows,
  answerFromReply,
  decidePermission,
  permissionAnswer,
  pickOption,
} from '../../../../src/workers/runtimes/acp/acp-permissions.js';
import { RequestPermissionResponseSchema } from '../../../../src/workers/runtimes/acp/acp-protocol.js';
import { HERMES_PERMISSION_OPTIONS } from '../../../../src/workers/runtimes/hermes-acp/hermes-acp-protocol.js';

const WORK = '/w/sandbox';
const hermes = [...HERMES_PERMISSION_OPTIONS];
const sdkExample = [
  { kind: 'allow_once', name: 'Allow this change', optionId: 'allow' },
  { kind: 'reject_once', name: 'Skip this change', optionId: 'reject' },
];
const kindless = [{ optionId: 'proceed_always' }, { optionId: 'yes' }, { optionId: 'no' }];
const allowOnlyAlways = [
  { optionId: 'a', kind: 'allow_always' },
  { optionId: 'r', kind: 'reject_always' },
];
const noReject = [{ optionId: 'allow_once', kind: 'allow_once' }];

describe('decidePermission', () => {
  const call = (kind: string | undefined, extra: object = {}) => ({ toolCallId: 't', kind, ...extra });
  it.each<[string, 'sandbox' | 'deny', object, boolean]>([
    [
      'edit of a file inside the work dir',
      'sandbox',
      call('edit', { locations: [{ path: `${WORK}/src/a.ts` }] }),
      true,
    ],
    ['edit with a relative rawInput path', 'sandbox', call('edit', { rawInput: { path: 'src/a.ts' } }), true],
    ['read inside', 'sandbox', call('read', { locations: [{ path: `${WORK}/README.md` }] }), true],
    ['search naming no path', 'sandbox', call('search'), true],
    ['edit outside the work dir', 'sandbox', call('edit', { locations: [{ path: '/etc/hosts' }] }), false],
    ['edit climbing out with ..', 'sandbox', call('edit', { rawInput: { file_path: '../other/x' } }), false],
    [
      'a sibling dir sharing the prefix',
      'sandbox',
      call('edit', { locations: [{ path: '/w/sandbox-evil/x' }] }),
      false,
    ],
    [
      'one path inside, one outside',
      'sandbox',
      call('move', { rawInput: { source: 'a', destination: '/tmp/b' } }),
      false,
    ],
    ['a home-relative path', 'sandbox', call('read', { rawInput: { path: '~/.ssh/id_rsa' } }), false],
    [
      "Hermes' edit approval: the path only in rawInput.arguments",
      'sandbox',
      call('edit', { rawInput: { tool: 'write_file', arguments: { path: `${WORK}/a.txt`, content: 'x' } } }),
      true,
    ],
    [
      "Hermes' edit approval outside the work dir",
      'sandbox',
      call('edit', { rawInput: { tool: 'write_file', arguments: { path: '/etc/hosts', content: 'x' } } }),
      false,
    ],
    ['an edit naming no path', 'sandbox', call('edit'), false],
    ['a shell command (execute)', 'sandbox', call('execute', { rawInput: { command: 'rm -rf build' } }), false],
    ['a fetch', 'sandbox', call('fetch', { rawInput: { url: 'https://example.com' } }), false],
    ['no kind at all', 'sandbox', call(undefined), false],
    ['policy deny, even inside', 'deny', call('read', { locations: [{ path: `${WORK}/README.md` }] }), false],
  ])('%s', (_name, policy, toolCall, allow) => {
    expect(decidePermission(policy, toolCall as never, WORK).allow).toBe(allow);
  });
});

describe('picking the option to select', () => {
  it.each<[string, object[], boolean, string | null]>([
    ['Hermes allow: allow_once, never the persistent ones', hermes, true, 'allow_once'],
    ['Hermes deny: deny (reject_once)', hermes, false, 'deny'],
    ['SDK example allow', sdkExample, true, 'allow'],
    ['SDK example deny', sdkExample, false, 'reject'],
    ['only allow_always offered', allowOnlyAlways, true, 'a'],
    ['only reject_always offered', allowOnlyAlways, false, 'r'],
    ['no kinds: by well-known id (allow)', kindless, true, 'yes'],
    ['no kinds: by well-known id (deny)', kindless, false, 'no'],
    ['no reject option at all', noReject, false, null],
  ])('%s', (_name, options, allow, expected) => {
    expect(pickOption(options as never, allow)?.optionId ?? null).toBe(expected);
  });

  it('answers exactly {outcome:{outcome:"selected", optionId}} or {outcome:{outcome:"cancelled"}}', () => {
    expect(permissionAnswer(hermes, true)).toEqual({ outcome: { outcome: 'selected', optionId: 'allow_once' } });
    expect(permissionAnswer(noReject, false)).toEqual({ outcome: { outcome: 'cancelled' } });
  });
});

describe('the permission answer shape', () => {
  it.each<[string, unknown, boolean]>([
    ['selected, nested', { outcome: { outcome: 'selected', optionId: 'allow_once' } }, true],
    ['cancelled, nested', { outcome: { outcome: 'cancelled' } }, true],
    ['flat selected', { outcome: 'selected', optionId: 'allow_once' }, false],
    ['allowed/denied words', { outcome: { outcome: 'allowed' } }, false],
    ['selected without optionId', { outcome: { outcome: 'selected' } }, false],
    ['a bare option id', 'allow_once', false],
    ['extra members', { outcome: { outcome: 'cancelled', optionId: 'x' } }, false],
  ])('%s', (_name, answer, valid) => {
    expect(RequestPermissionResponseSchema.safeParse(answer).success).toBe(valid);
  });
});

describe('answers from send (policy ask)', () => {
  const request = { sessionId: 's', toolCall: { toolCallId: 't' }, options: hermes };
  it.each<[string, string | null]>([
    ['allow', 'allow_once'],
    ['  yes ', 'allow_once'],
    ['deny', 'deny'],
    ['no', 'deny'],
    ['allow_session', 'allow_session'],
    ['please go ahead', null],
  ])('%s', (reply, optionId) => {
    const answer = answerFromReply(reply, request as never);
    expect(answer === null ? null : answer.outcome.outcome === 'selected' ? answer.outcome.optionId : 'cancelled').toBe(
      optionId,
    );
  });

  it('knows which answers allow', () => {
    expect(answerAllows({ outcome: { outcome: 'selected', optionId: 'allow_session' } }, hermes)).toBe(true);
    expect(answerAllows({ outcome: { outcome: 'selected', optionId: 'deny_always' } }, hermes)).toBe(false);
    expect(answerAllows({ outcome: { outcome: 'cancelled' } }, hermes)).toBe(false);
  });
});
