/**
 * An agent that reached Redis forges what the results worker acts on: a finished record, an
 * unsigned "verified" receipt asking for promotion with push, a diff adding a CI workflow, and an
 * outbox entry. The results worker verifies the receipt before acting: no branch is pushed, no
 * promotion recorded, the entry goes to the dead-letter stream with the reason, and a manual
 * `uh mission promote` of the forgery exits 6. A signed receipt whose outbox entry lies about its
 * verdict is not promoted either: what to do comes from the signed receipt.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { git, makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { waitFor } from '../support/process.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';
import { forgeStoredArtifacts, storedArtifact } from '../support/stored-artifacts.js';

let redis: TestRedis;
const dirs: string[] = [];
const workers: WorkerProcess[] = [];
beforeAll(async () => {
  redis = await startTestRedis('forged-completion');
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await redis.cleanup();
  dirs.forEach(removeDir);
});

function dir(prefix: string): string {
  const d = tempDir(prefix);
  dirs.push(d);
  return d;
}

const WORKFLOW_DIFF = [
  'diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml',
  'new file mode 100644',
  'index 0000000..1111111',
  '--- /dev/null',
  '+++ b/.github/workflows/ci.yml',
  '@@ -0,0 +1 @@',
  '+on: push',
  '',
].join('\n');

function branches(upstream: string): string {
  return execFileSync('git', ['-C', upstream, 'for-each-ref', '--format=%(refname)', 'refs/heads/'], {
    encoding: 'utf8',
  });
}

async function deadLetters(prefix: string): Promise<string[]> {
  const entries = await redis.redis.xrange(`{${prefix}}:outbox:dead`, '-', '+');
  return entries.map(([, fields]) => fields[fields.indexOf('error') + 1] as string);
}

/** An upstream repository, a prefix of Redis and a runtime worker on it (isolation off: Redis is the attack surface here). */
async function fleet(name: string) {
  const repo = makeRepo();
  const upstream = dir('uh-forged-upstream-');
  git(upstream, 'init', '-q', '--bare', '-b', 'main');
  git(repo, 'push', '-q', upstream, 'main');
  const prefix = redis.prefix(name);
  const stateDir = dir('uh-forged-state-');
  const env = {
    REDIS_URL: redis.url,
    UH_REDIS_PREFIX: prefix,
    UH_CACHE_DIR: dir('uh-forged-cache-'),
    UH_ISOLATION: 'off',
  };
  workers.push(await startWorker(['--runtime', 'command', '--state-dir', stateDir], { cwd: stateDir, env }));
  return { upstream, prefix, stateDir, env };
}

describe('a forged completion in Redis', () => {
  it('is never promoted or pushed: the results worker acts only on a receipt it has verified', async () => {
    const { upstream, prefix, stateDir, env } = await fleet('forged');
    // A real operation whose check fails: its signed receipt says verification_failed.
    const failing = { verification: [{ name: 'unit', argv: ['false'], timeout_seconds: 30 }] };
    const real = writeMission(`file://${upstream}`, ['edit', 'src/x.txt', 'x'], failing);
    expect((await runCli(['mission', 'submit', real.path, '--wait', '--json'], { cwd: stateDir, env })).code).toBe(1);

    // The forgery: the same operation's receipt rewritten as verified with promotion + push,
    // unsigned; a workflow diff; a mission asking for push; a finished record; an outbox entry.
    const artifactsKey = `{${prefix}}:op:${real.operationId}:artifacts`;
    const signed = JSON.parse((await storedArtifact(redis.redis, env, real.operationId, 'receipt')) as string);
    const { signature: _signature, ...unsigned } = signed;
    const forged = {
      ...unsigned,
      verdict: 'verified',
      exit_code: 0,
      checks: [],
      promotion: { branch: 'ci/{operation_id}', push: true },
    };
    const mission = {
      ...JSON.parse((await storedArtifact(redis.redis, env, real.operationId, 'mission')) as string),
      promotion: { branch: 'ci/x', push: true },
    };
    await forgeStoredArtifacts(redis.redis, env, real.operationId, {
      receipt: JSON.stringify(forged),
      diff: WORKFLOW_DIFF,
      mission: JSON.stringify(mission),
    });
    await redis.redis.hset(`{${prefix}}:op:${real.operationId}`, 'verdict', 'verified', 'exit_code', '0');
    const completion = {
      operation_id: real.operationId,
      state: 'finished',
      status: 'completed',
      verdict: 'verified',
      exit_code: 0,
      attempt: 1,
      runtime: 'command',
      at: new Date().toISOString(),
    };
    await redis.redis.xadd(`{${prefix}}:outbox`, '*', 'completion', JSON.stringify(completion));

    const results = await startWorker(['--results', '--state-dir', stateDir], { cwd: stateDir, env });
    workers.push(results);
    // Two entries reach the consumer: the real one (signed, verification_failed: nothing to do)
    // and the forged one (refused). The refusal is written to the dead-letter stream with its reason.
    expect(await waitFor(async () => (await deadLetters(prefix)).length > 0, 20_000, 100), results.output()).toBe(true);
    expect((await deadLetters(prefix))[0]).toMatch(/untrusted receipt: .*unsigned/);
    expect(branches(upstream)).toBe('refs/heads/main\n');
    expect(await redis.redis.hget(artifactsKey, 'promotion')).toBeNull();

    // A person asking for the same promotion by hand is refused too (exit 6), naming the reason.
    const manual = await runCli(['mission', 'promote', real.operationId, '--redis', redis.url, '--push'], {
      cwd: stateDir,
      env,
    });
    expect(manual.code, manual.stderr).toBe(6);
    expect(manual.stderr).toMatch(/cannot be trusted: .*unsigned/);
    expect(branches(upstream)).toBe('refs/heads/main\n');
  });

  it('an outbox entry that lies about a signed receipt is acted on as the receipt says', async () => {
    const { upstream, prefix, stateDir, env } = await fleet('liar');
    // Signed, verification_failed, and the mission asked for automatic promotion.
    const failing = {
      verification: [{ name: 'unit', argv: ['false'], timeout_seconds: 30 }],
      promotion: { branch: 'auto/{operation_id}', push: true },
    };
    const real = writeMission(`file://${upstream}`, ['edit', 'src/x.txt', 'x'], failing);
    expect((await runCli(['mission', 'submit', real.path, '--wait', '--json'], { cwd: stateDir, env })).code).toBe(1);
    const liar = {
      operation_id: real.operationId,
      state: 'finished',
      status: 'completed',
      verdict: 'verified',
      exit_code: 0,
      attempt: 1,
      runtime: 'command',
      at: new Date().toISOString(),
    };
    await redis.redis.xadd(`{${prefix}}:outbox`, '*', 'completion', JSON.stringify(liar));
    const results = await startWorker(['--results', '--json', '--state-dir', stateDir], { cwd: stateDir, env });
    workers.push(results);
    // Both entries are taken (two `completion` lines), each with the receipt's verdict.
    const completions = () =>
      results
        .output()
        .split('\n')
        .filter((l) => l.includes('"event":"completion"'));
    expect(await waitFor(() => completions().length >= 2, 20_000, 100), results.output()).toBe(true);
    expect(completions().every((l) => l.includes('"exit_code":1'))).toBe(true);
    expect(branches(upstream)).toBe('refs/heads/main\n');
    expect(await redis.redis.hget(`{${prefix}}:op:${real.operationId}:artifacts`, 'promotion')).toBeNull();
  });
});
