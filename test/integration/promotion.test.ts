/**
 * `uh mission promote` and automatic promotion end to end: the real CLI, real git repositories
 * (the user's dirty checkout, bare repositories as remotes, one with a rejecting pre-receive
 * hook), real Redis and a real worker process. Every promotion into the user's repository also
 * asserts its HEAD, index, working tree and stash are byte-for-byte unchanged.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApiServer } from '../../src/producers/http/api-server.js';
import { readApiConfig } from '../../src/producers/http/api-config.js';
import { QueueClient } from '../../src/producers/queue/queue-client.js';
import { loadConfig } from '../../src/shared/config.js';
import { runCli, type CliResult } from '../support/cli.js';
import { git, makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { waitFor } from '../support/process.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

let cacheDir: string;
let repo: string;
let remote: string;
let redis: TestRedis;
const created: string[] = [];
const workers: WorkerProcess[] = [];

function bareRepo(hook?: string): string {
  const dir = tempDir('uh-remote-');
  created.push(dir);
  git(dir, 'init', '-q', '--bare', '-b', 'main');
  if (hook) {
    writeFileSync(join(dir, 'hooks', 'pre-receive'), `#!/bin/sh\n${hook}\n`);
    chmodSync(join(dir, 'hooks', 'pre-receive'), 0o755);
  }
  return dir;
}

beforeAll(async () => {
  redis = await startTestRedis('promotion');
  cacheDir = tempDir('uh-pcache-');
  repo = makeRepo({ 'README.md': '# demo\n', 'src/app.txt': 'v1\n', 'docs/guide.md': 'guide\n' });
  remote = bareRepo();
  git(repo, 'remote', 'add', 'origin', remote);
  git(repo, 'push', '-q', 'origin', 'main');
  // A dirty user checkout: staged, unstaged, untracked and a stash, all of which must survive.
  writeFileSync(join(repo, 'src/app.txt'), 'v1 local edit\n');
  writeFileSync(join(repo, 'staged.txt'), 'staged\n');
  git(repo, 'add', 'staged.txt');
  writeFileSync(join(repo, 'untracked.txt'), 'mine\n');
  writeFileSync(join(repo, 'stashme.txt'), 'stash\n');
  git(repo, 'stash', 'push', '-u', '-m', 'user stash', '--', 'stashme.txt');
  created.push(cacheDir, repo);
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  await redis?.cleanup();
  created.forEach(removeDir);
});

/** The user's checkout as bytes: HEAD, index, stash ref and reflog, every working-tree file, and git's own view. */
function userFingerprint(dir: string): string {
  const hash = (path: string) =>
    existsSync(path) ? createHash('sha256').update(readFileSync(path)).digest('hex') : 'absent';
  const files: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      if (name === '.git' && d === dir) continue;
      const st = statSync(path);
      if (st.isDirectory()) walk(path);
      else files.push(`${relative(dir, path)} ${st.mode.toString(8)} ${hash(path)}`);
    }
  };
  walk(dir);
  const quiet = { GIT_OPTIONAL_LOCKS: '0' }; // git status must not refresh the index it is fingerprinting
  const status = (args: string[]) =>
    execFileSync('git', args, { cwd: dir, env: { ...process.env, ...quiet }, encoding: 'utf8' });
  return [
    `HEAD ${hash(join(dir, '.git/HEAD'))}`,
    `index ${hash(join(dir, '.git/index'))}`,
    `stash ${hash(join(dir, '.git/refs/stash'))} ${hash(join(dir, '.git/logs/refs/stash'))}`,
    `main ${git(dir, 'rev-parse', 'refs/heads/main')}`,
    ...files,
    status(['status', '--porcelain=v2', '--branch', '--untracked-files=all']),
    status(['stash', 'list']),
  ].join('\n');
}

interface Ran {
  operationId: string;
  stateDir: string;
  receipt: any;
}

async function runMission(target: string, agentArgs: string[], patch: Record<string, unknown> = {}): Promise<Ran> {
  const stateDir = tempDir('uh-pstate-');
  created.push(stateDir);
  const { path, operationId } = writeMission(target, agentArgs, patch);
  const result = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], {
    cwd: stateDir,
    env: { UH_CACHE_DIR: cacheDir },
  });
  return { operationId, stateDir, receipt: JSON.parse(result.stdout) };
}

function promote(ran: Ran, args: string[] = [], env: Record<string, string> = {}): Promise<CliResult> {
  return runCli(['mission', 'promote', ran.operationId, '--state-dir', ran.stateDir, ...args], {
    cwd: ran.stateDir,
    env: { UH_CACHE_DIR: cacheDir, ...env },
  });
}

const verified = { verification: [{ name: 'ok', argv: ['true'], timeout_seconds: 30 }] };
const editTwo = ['edit-many', 'src/app.txt=agent change', 'src/new/feature.txt=feature'];

describe('uh mission promote into the user repository', () => {
  it("makes the receipt's exact change a branch while HEAD, index, working tree and stash stay byte-for-byte", async () => {
    const ran = await runMission(repo, editTwo, verified);
    expect(ran.receipt.verdict).toBe('verified');
    const before = userFingerprint(repo);
    const r = await promote(ran, ['--json', '--author', 'Promo Bot <bot@example.com>']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(userFingerprint(repo)).toBe(before);

    const record = JSON.parse(r.stdout);
    const branch = `uh/${ran.operationId}`;
    expect(record).toMatchObject({
      schema_version: 'uh.promotion.v0',
      decision: 'promoted',
      branch,
      tree_verified: true,
      created: true,
      pushed: null,
    });
    expect(git(repo, 'rev-parse', branch)).toBe(record.commit);
    // Tree equality with the sandbox's final tree, parent = base commit, exactly the receipt's files.
    expect(git(repo, 'rev-parse', `${branch}^{tree}`)).toBe(ran.receipt.final_tree);
    expect(git(repo, 'rev-parse', `${branch}^`)).toBe(ran.receipt.repository.base_commit);
    expect(git(repo, 'diff', '--name-only', `${branch}^`, branch).split('\n').sort()).toEqual(
      ran.receipt.changed_files.map((f: any) => f.path).sort(),
    );
    expect(git(repo, 'show', `${branch}:src/app.txt`)).toBe('agent change');
    const message = git(repo, 'log', '-1', '--format=%B', branch);
    expect(message.split('\n')[0]).toBe('Test mission');
    expect(message).toContain(`Uh-Operation-Id: ${ran.operationId}`);
    expect(message).toMatch(/Uh-Receipt-Digest: sha256:[0-9a-f]{64}/);
    expect(git(repo, 'log', '-1', '--format=%an <%ae>|%cn <%ce>', branch)).toBe(
      'Promo Bot <bot@example.com>|Promo Bot <bot@example.com>',
    );
    expect(
      JSON.parse(readFileSync(join(ran.stateDir, 'operations', ran.operationId, 'promotion.json'), 'utf8')).commit,
    ).toBe(record.commit);

    // Idempotent: the same branch and commit again; another branch is a conflict that changes nothing.
    const again = await promote(ran, ['--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ branch, commit: record.commit, created: false });
    const refsBefore = git(repo, 'for-each-ref');
    const other = await promote(ran, ['--branch', 'feature/other']);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain(`already promoted to branch ${branch}`);
    expect(git(repo, 'for-each-ref')).toBe(refsBefore);
    expect(userFingerprint(repo)).toBe(before);
  });

  it('refuses a branch name that already exists at another commit (exit 2, nothing moved)', async () => {
    const ran = await runMission(repo, ['edit', 'docs/guide.md', 'new guide'], verified);
    git(repo, 'branch', `taken-${ran.operationId}`, 'main');
    const r = await promote(ran, ['--branch', `taken-${ran.operationId}`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('already exists');
    expect(git(repo, 'rev-parse', `taken-${ran.operationId}`)).toBe(git(repo, 'rev-parse', 'main'));
    expect(existsSync(join(ran.stateDir, 'operations', ran.operationId, 'promotion.json'))).toBe(false);
  });

  it.each([
    ['unverified', ['edit', 'src/u.txt', 'u'], {}, 'unverified'],
    [
      'verification_failed',
      ['edit', 'src/f.txt', 'f'],
      { verification: [{ name: 'no', argv: ['false'], timeout_seconds: 30 }] },
      'verification_failed',
    ],
    [
      'scope_violation',
      ['edit', 'docs/s.txt', 's'],
      { ...verified, scope: { allowed_change_globs: ['src/**'] } },
      'scope_violation',
    ],
    ['failed', ['exit', '3'], verified, 'status failed'],
  ])(
    'refuses a %s operation with exit 2 naming the verdict, and creates nothing',
    async (_name, agent, patch, named) => {
      const ran = await runMission(repo, agent as string[], patch);
      const refs = git(repo, 'for-each-ref');
      const r = await promote(ran);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(named);
      expect(git(repo, 'for-each-ref')).toBe(refs);
      expect(existsSync(join(ran.stateDir, 'operations', ran.operationId, 'promotion.json'))).toBe(false);
      if (_name === 'unverified') {
        expect(r.stderr).toContain('--allow-unverified');
        const allowed = await promote(ran, ['--allow-unverified', '--json']);
        expect(allowed.code).toBe(0);
        expect(JSON.parse(allowed.stdout).verdict).toBe('unverified');
      }
    },
  );

  it('refuses an operation whose state is unknown, and a cancelled one', async () => {
    const ran = await runMission(repo, ['edit', 'src/k.txt', 'k'], verified);
    const dir = join(ran.stateDir, 'operations', ran.operationId);
    const receipt = JSON.parse(readFileSync(join(dir, 'receipt.json'), 'utf8'));
    // The same operation as if cancelled: a receipt with status cancelled.
    writeFileSync(join(dir, 'receipt.json'), JSON.stringify({ ...receipt, status: 'cancelled', exit_code: 4 }));
    const cancelled = await promote(ran);
    expect(cancelled.code).toBe(2);
    expect(cancelled.stderr).toContain('status cancelled');
    // Unknown: no receipt, the record says unknown.
    const record = JSON.parse(readFileSync(join(dir, 'operation.json'), 'utf8'));
    writeFileSync(join(dir, 'operation.json'), JSON.stringify({ ...record, state: 'unknown' }));
    removeDir(join(dir, 'receipt.json'));
    const unknown = await promote(ran);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('state unknown');
    expect(unknown.stderr).toContain('uh mission recover');
  });

  it('reports whether the branch still merges cleanly once the ref moved on', async () => {
    const own = makeRepo({ 'a.txt': 'one\ntwo\nthree\n', 'b.txt': 'b\n' });
    created.push(own);
    const ran = await runMission(own, ['edit', 'a.txt', 'one\\nTWO by agent\\nthree\\n'], verified);
    const first = JSON.parse((await promote(ran, ['--json'])).stdout);
    expect(first.mergeable).toMatchObject({ into: 'main', clean: true, conflicts: [] });
    writeFileSync(join(own, 'b.txt'), 'b moved on\n');
    git(own, 'commit', '-qam', 'unrelated change');
    expect(JSON.parse((await promote(ran, ['--json'])).stdout).mergeable).toMatchObject({
      clean: true,
      head: git(own, 'rev-parse', 'main'),
    });
    writeFileSync(join(own, 'a.txt'), 'one\nTWO by user\nthree\n');
    git(own, 'commit', '-qam', 'conflicting change');
    const moved = JSON.parse((await promote(ran, ['--json'])).stdout);
    expect(moved.commit).toBe(first.commit);
    expect(moved.mergeable).toMatchObject({ clean: false, conflicts: ['a.txt'], head: git(own, 'rev-parse', 'main') });
  });
});

describe('pushing', () => {
  it('pushes the branch to the remote (a bare repository) and records where', async () => {
    const ran = await runMission(repo, ['edit', 'src/pushed.txt', 'pushed'], verified);
    const before = userFingerprint(repo);
    const r = await promote(ran, ['--push', '--json']);
    expect(r.code).toBe(0);
    const record = JSON.parse(r.stdout);
    expect(record.pushed).toMatchObject({ remote: 'origin', ref: `refs/heads/uh/${ran.operationId}` });
    expect(git(remote, 'rev-parse', `refs/heads/uh/${ran.operationId}`)).toBe(record.commit);
    expect(userFingerprint(repo)).toBe(before);
  });

  it("exits 3 with the remote's own reason when the push is rejected; the local branch stays on record", async () => {
    const strict = bareRepo('echo "policy: uh branches need a review first" >&2; exit 1');
    const ran = await runMission(repo, ['edit', 'src/rejected.txt', 'r'], verified);
    const r = await promote(ran, ['--push', strict]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('policy: uh branches need a review first');
    expect(git(strict, 'for-each-ref')).toBe('');
    const record = JSON.parse(
      readFileSync(join(ran.stateDir, 'operations', ran.operationId, 'promotion.json'), 'utf8'),
    );
    expect(record.pushed).toBeNull();
    expect(git(repo, 'rev-parse', `uh/${ran.operationId}`)).toBe(record.commit);
  });

  it('never shows a token from a remote URL', async () => {
    const ran = await runMission(repo, ['edit', 'src/token.txt', 't'], verified);
    const r = await promote(ran, ['--push', 'https://bot:s3cr3t-t0ken@127.0.0.1:9/x.git', '--json']);
    expect(r.code).toBe(3);
    expect(r.stdout + r.stderr).not.toContain('s3cr3t-t0ken');
    expect(readFileSync(join(ran.stateDir, 'operations', ran.operationId, 'promotion.json'), 'utf8')).not.toContain(
      's3cr3t-t0ken',
    );
  });
});

describe('automatic promotion', () => {
  it('inline: promotion: branch makes the branch at the end of the run', async () => {
    const ran = await runMission(repo, ['edit', 'src/auto.txt', 'auto'], { ...verified, promotion: 'branch' });
    expect(ran.receipt.promotion).toMatchObject({
      decision: 'promoted',
      branch: `uh/${ran.operationId}`,
      promoted_by: { via: 'inline' },
    });
    expect(git(repo, 'rev-parse', `uh/${ran.operationId}^{tree}`)).toBe(ran.receipt.final_tree);
  });

  it('queue: the results worker promotes a verified operation of a remote repository in its mirror and pushes it', async () => {
    const upstream = bareRepo();
    git(repo, 'push', '-q', upstream, 'main');
    const prefix = redis.prefix('auto');
    const env = {
      REDIS_URL: redis.url,
      UH_REDIS_PREFIX: prefix,
      UH_CACHE_DIR: cacheDir,
      UH_PROMOTION_AUTHOR: 'Queue Bot <queue@example.com>',
    };
    const stateDir = tempDir('uh-pqstate-');
    created.push(stateDir);
    const w = await startWorker(['--runtime', 'command', '--results', '--state-dir', stateDir], { cwd: stateDir, env });
    workers.push(w);
    const { path, operationId } = writeMission(`file://${upstream}`, ['edit', 'src/queued.txt', 'queued'], {
      ...verified,
      promotion: { branch: 'auto/{operation_id}', push: true },
    });
    const submitted = await runCli(['mission', 'submit', path, '--wait', '--json'], { cwd: stateDir, env });
    expect(submitted.code).toBe(0);
    const branch = `refs/heads/auto/${operationId}`;
    const pushed = await waitFor(
      () => {
        try {
          git(upstream, 'rev-parse', '--verify', branch);
          return true;
        } catch {
          return false;
        }
      },
      30_000,
      100,
    );
    expect(pushed, w.output()).toBe(true);
    // The record lands in Redis right after the push.
    let record: any = null;
    const deadline = Date.now() + 10_000;
    while (record === null && Date.now() < deadline) {
      const text = await redis.redis.hget(`{${prefix}}:op:${operationId}:artifacts`, 'promotion');
      if (text) record = JSON.parse(text);
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(record).toMatchObject({
      decision: 'promoted',
      branch: `auto/${operationId}`,
      repository: { kind: 'mirror' },
      promoted_by: { via: 'results-worker' },
      author: { name: 'Queue Bot' },
    });
    expect(record.pushed).toMatchObject({ remote: 'origin', ref: branch });
    expect(git(upstream, 'rev-parse', branch)).toBe(record.commit);
    expect(git(upstream, 'show', `${branch}:src/queued.txt`)).toBe('queued');
    // The CLI against Redis returns the same promotion.
    const again = await runCli(['mission', 'promote', operationId, '--redis', redis.url, '--json'], {
      cwd: stateDir,
      env,
    });
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ commit: record.commit, created: false });
    // And through the HTTP API: the same target answers 200 with the same commit, another is a 409.
    const client = await QueueClient.open(
      loadConfig({ UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cacheDir }).queue,
      redis.url,
    );
    const identity = { name: 'Api Bot', email: 'api@example.com' };
    const API_TOKEN = 'promotion-api-token-9c2e4b1d7a';
    const app = await buildApiServer({
      client,
      config: readApiConfig({ UH_API_TOKEN: API_TOKEN }, '127.0.0.1'),
      stateDir,
      cacheDir,
      baseDir: stateDir,
      repositoryPolicy: { allowLocal: true, allowHttp: false },
      prices: {},
      receiptKey: loadConfig({ UH_CACHE_DIR: cacheDir }).receipts,
      promotionIdentity: { author: identity, committer: identity },
    });
    try {
      const post = (body: unknown, id = operationId) =>
        app.inject({
          method: 'POST',
          url: `/v1/operations/${id}/promote`,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${API_TOKEN}` },
          payload: JSON.stringify(body),
        });
      const same = await post({ branch: `auto/${operationId}` });
      expect(same.statusCode).toBe(200);
      expect(same.json()).toMatchObject({ created: false, promotion: { commit: record.commit } });
      expect((await post({ branch: `other/${operationId}` })).statusCode).toBe(409);
      expect((await post({ remote: 'https://evil.example/x.git', push: true })).statusCode).toBe(400);
      expect((await post({}, 'no-such-operation')).statusCode).toBe(404);
    } finally {
      await app.close();
      await client.close();
    }
  });
});
