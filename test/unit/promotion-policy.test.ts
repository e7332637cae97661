import { describe, expect, it } from 'vitest';
import { parseMission } from '../../src/shared/contracts/load-mission.js';
import { automaticPromotion, branchNameProblem } from '../../src/shared/contracts/promotion.js';
import { UhError } from '../../src/shared/errors.js';
import { expandBranch } from '../../src/promotion/branch-ref.js';
import { parsePerson, promotionIdentity } from '../../src/promotion/promotion-identity.js';
import { policyRefusal, promotionPolicy } from '../../src/promotion/promotion-policy.js';
import { rejectionReason } from '../../src/promotion/push-branch.js';
import { scrubUrls } from '../../src/promotion/promotion-git.js';
import { normalizePushArg } from '../../src/producers/cli/commands/mission-promote.js';

describe('promotion policy', () => {
  it.each([
    ['completed', 'verified', 'allow'],
    ['completed', 'unverified', 'needs_flag'],
    ['completed', 'verification_failed', 'never'],
    ['completed', 'scope_violation', 'never'],
    ['failed', 'verified', 'never'],
    ['failed', 'unverified', 'never'],
    ['blocked', 'unverified', 'never'],
    ['cancelled', 'verified', 'never'],
  ] as const)('%s + %s → %s', (status, verdict, decision) => {
    expect(promotionPolicy({ status, verdict }).decision).toBe(decision);
  });

  it('refuses with exit-2 input errors naming status and verdict; the flag admits only unverified', () => {
    const refusal = policyRefusal({ operation_id: 'op', status: 'completed', verdict: 'scope_violation' }, true);
    expect(refusal?.kind).toBe('invalid_input');
    expect(refusal?.message).toContain('verdict scope_violation');
    expect(policyRefusal({ operation_id: 'op', status: 'completed', verdict: 'unverified' }, false)?.hint).toContain(
      '--allow-unverified',
    );
    expect(policyRefusal({ operation_id: 'op', status: 'completed', verdict: 'unverified' }, true)).toBeNull();
    expect(policyRefusal({ operation_id: 'op', status: 'completed', verdict: 'verified' }, false)).toBeNull();
  });

  it('refuses a truncated diff whatever the verdict (a partial patch is never promoted), and not one under the cap', () => {
    const cut = { truncated: true, bytes_total: 320 * 2 ** 20, cap_bytes: 50 * 2 ** 20 };
    for (const [verdict, flag] of [
      ['verified', false],
      ['unverified', true],
    ] as const) {
      const refusal = policyRefusal({ operation_id: 'op', status: 'completed', verdict, diff: cut }, flag);
      expect(refusal?.kind).toBe('invalid_input');
      expect(refusal?.message).toContain('truncated at 52428800 of 335544320 bytes');
      expect(refusal?.hint).toContain('UH_DIFF_CAP_BYTES');
    }
    const whole = { truncated: false, bytes_total: 10, cap_bytes: 50 * 2 ** 20 };
    expect(
      policyRefusal({ operation_id: 'op', status: 'completed', verdict: 'verified', diff: whole }, false),
    ).toBeNull();
  });
});

describe('branch names', () => {
  it.each([
    ['uh/op-1', null],
    ['feature/x', null],
    ['-x', 'must not start with "-"'],
    ['a..b', 'must not contain ".." or "@{"'],
    ['a b', 'must not contain spaces'],
    ['a/.hidden', 'no component may start with "."'],
    ['x.lock', 'end with ".lock"'],
    ['a/', 'must not start or end with "/"'],
  ])('%s', (name, problem) => {
    const got = branchNameProblem(name);
    if (problem === null) expect(got).toBeNull();
    else expect(got).toContain(problem);
  });

  it('fills placeholders and names the field of a bad result', () => {
    expect(
      expandBranch('uh/{mission_id}/{operation_id}', { operation_id: 'op-1', mission_id: 'm', runtime: 'codex' }),
    ).toBe('uh/m/op-1');
    expect(expandBranch(undefined, { operation_id: 'op-1', mission_id: 'm', runtime: 'codex' })).toBe('uh/op-1');
    expect(() => expandBranch('bad..name', { operation_id: 'o', mission_id: 'm', runtime: 'r' })).toThrow(
      /--branch: "bad..name"/,
    );
  });
});

describe('mission promotion setting', () => {
  const base = {
    schema_version: 'uh.mission.v0',
    mission_id: 'm1',
    operation_id: 'op-1',
    title: 'T',
    objective: 'Do it',
    repository: { url: '/tmp/repo', ref: 'main' },
    runtime: 'command',
  };
  it('accepts none, branch and the object form', () => {
    expect(automaticPromotion(parseMission(base, '/tmp').promotion)).toBeNull();
    expect(automaticPromotion(parseMission({ ...base, promotion: 'branch' }, '/tmp').promotion)).toEqual({
      branch: 'uh/{operation_id}',
      push: false,
      remote: undefined,
    });
    const object = parseMission(
      { ...base, promotion: { branch: 'ai/{runtime}/{operation_id}', push: true, remote: 'upstream' } },
      '/tmp',
    );
    expect(automaticPromotion(object.promotion)).toEqual({
      branch: 'ai/{runtime}/{operation_id}',
      push: true,
      remote: 'upstream',
    });
  });
  it.each([
    [{ branch: 'x/{nope}' }, 'unknown placeholder {nope}'],
    [{ branch: 'a..b' }, 'not a valid branch name'],
    [{ push: 'yes' }, 'promotion'],
    [{ branch: 'x', remote: '--upload-pack=evil' }, 'must be a remote name'],
    [{ branch: 'x', remote: 'https://evil.example/x.git' }, 'not a URL or path'],
  ])('refuses %j', (promotion, message) => {
    try {
      parseMission({ ...base, promotion }, '/tmp');
      expect.unreachable();
    } catch (error) {
      expect(UhError.isInstance(error)).toBe(true);
      expect([(error as UhError).message, ...(error as UhError).details].join('\n')).toContain(message);
    }
  });
});

describe('identity, push reasons, URLs, arguments', () => {
  it('parses Name <email> from flags before the environment', () => {
    expect(parsePerson('Bot <b@x.io>', '--author')).toEqual({ name: 'Bot', email: 'b@x.io' });
    expect(() => parsePerson('just a name', '--author')).toThrow(/--author/);
    const id = promotionIdentity({ committer: 'C <c@x.io>' }, { UH_PROMOTION_AUTHOR: 'A <a@x.io>' });
    expect(id).toEqual({ author: { name: 'A', email: 'a@x.io' }, committer: { name: 'C', email: 'c@x.io' } });
  });
  it("takes the remote's reason from remote: lines and the porcelain status", () => {
    const stderr = "remote: policy: no uh branches\nTo /tmp/x.git\nerror: failed to push some refs to '/tmp/x.git'\n";
    const stdout = 'To /tmp/x.git\n!\tabc:refs/heads/uh/op\t[remote rejected] (pre-receive hook declined)\nDone\n';
    expect(rejectionReason(stdout, stderr)).toBe(
      'policy: no uh branches: [remote rejected] (pre-receive hook declined)',
    );
  });
  it('scrubs userinfo from URLs', () => {
    expect(scrubUrls("fatal: unable to access 'https://bot:t0ken@github.com/o/r.git/'")).toBe(
      "fatal: unable to access 'https://***@github.com/o/r.git/'",
    );
  });
  it('reads --push [remote] around the operation id', () => {
    expect(normalizePushArg(['op-1', '--push'])).toEqual(['op-1', '--push']);
    expect(normalizePushArg(['op-1', '--push', 'upstream'])).toEqual(['op-1', '--push', '--remote', 'upstream']);
    expect(normalizePushArg(['--push', 'op-1'])).toEqual(['--push', 'op-1']);
    expect(normalizePushArg(['--push=upstream', 'op-1'])).toEqual(['--push', '--remote', 'upstream', 'op-1']);
  });
});
