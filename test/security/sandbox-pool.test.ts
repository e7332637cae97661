/**
 * Warm sandboxes (issue 16): a pooled sandbox handed to the next mission shows nothing of the
 * mission before it. Real git, the real inline pipeline (`runInline`, the `command` runtime running
 * `sh -c`): a dirty mission does its worst, then an observer mission on the same repository takes
 * the pooled sandbox and fingerprints everything it can see (every path with kind, mode and
 * content digest, its `.git` dir, what its git says); the fingerprint must equal the one taken in a
 * sandbox checked out from scratch. Also: doubtful sandboxes are discarded, concurrent acquirers
 * never share one, retained sandboxes are never pooled, size and idle lifetime are honoured.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { MissionSchema } from '../../src/shared/contracts/mission.js';
import { runInline } from '../../src/workers/inline/run-inline.js';
import { resolveInMirror } from '../../src/workers/sandbox/mirror-cache.js';
import { acquirePooled, drainPool, releaseToPool, type PoolSettings } from '../../src/workers/sandbox/sandbox-pool.js';
import { sweepSandboxes } from '../../src/workers/sandbox/retention.js';
import { planGc } from '../../src/workers/sandbox/gc.js';
import { createSandbox, readRecords, sandboxPaths } from '../../src/workers/sandbox/worktree.js';
import { spawnCounts } from '../../src/shared/process/spawn-group.js';
import { FAKE_AGENT, runCli } from '../support/cli.js';
import { git, makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { removeDir, tempDir } from '../support/temp.js';
import { testSettings } from '../support/settings.js';

const POOL: PoolSettings = { size: 2, idleMs: 3_600_000 };
const dirs: string[] = [];
let repo: string;
let n = 0;

beforeAll(() => {
  repo = makeRepo({
    'README.md': '# demo\n',
    '.gitignore': 'build/\n*.log\n',
    'src/app.txt': 'v1\n',
    'docs/guide.md': 'guide\n',
    'bin/run.sh': '#!/bin/sh\necho run\n',
  });
  git(repo, 'update-index', '--chmod=+x', 'bin/run.sh');
  symlinkSync('README.md', join(repo, 'link'));
  git(repo, 'add', 'link');
  git(repo, 'commit', '-q', '-m', 'exec bit and a symlink');
  dirs.push(repo);
});
afterAll(() => dirs.forEach(removeDir));

function fresh(prefix: string): string {
  const d = tempDir(prefix);
  dirs.push(d);
  return d;
}

/** What the observer prints: every path (kind, mode, size, digest), its .git, what git says. */
const FINGERPRINT = [
  'cd "$PWD"',
  'find . -path ./.git/index -prune -o \\( -type f -printf "%p f %m %s " -exec sh -c \'sha256sum < "$1" | cut -c1-16\' _ {} \\; \\) -o -printf "%p %y %m %l\\n" | sort',
  'echo ---; cat .git/config .git/HEAD; echo ---; git ls-files -s --debug 2>/dev/null | grep -v "ctime\\|mtime\\|dev:\\|uid:\\|size:" ; echo ---; git status --porcelain=v1 --ignored=matching --untracked-files=all; echo ---; git log --oneline -1 2>&1',
].join('\n');

/** What the pipeline logged about the pool (why a sandbox was not pooled or was discarded). */
const poolLog: string[] = [];
const logger = {
  debug() {},
  info(o: unknown, m?: string) {
    if (typeof o === 'object' && o !== null && 'reason' in o)
      poolLog.push(`${m}: ${String((o as { reason: unknown }).reason)}`);
  },
  warn(o: unknown, m?: string) {
    logger.info(o, m);
  },
  error() {},
  child() {
    return logger;
  },
};

interface Ran {
  receipt: {
    status: string;
    verdict: string;
    exit_code: number;
    sandbox: { path: string | null; retained: boolean };
    isolation: { kind: string };
    scope: { violations: Array<{ path: string; reason: string }> };
  };
  events: Array<{ type: string; data: Record<string, unknown> }>;
}

async function mission(
  cacheDir: string,
  script: string,
  options: { pool?: PoolSettings; ref?: string; isolation?: 'off' | 'auto' } = {},
): Promise<Ran> {
  const stateDir = fresh('uh-pool-state-');
  const operationId = `pool-${process.pid}-${++n}`;
  const parsed = MissionSchema.parse({
    schema_version: 'uh.mission.v0',
    mission_id: 'm-pool',
    operation_id: operationId,
    title: 'pool',
    objective: 'pool test',
    repository: { url: repo, ref: options.ref ?? 'main' },
    runtime: 'command',
    runtime_config_overrides: { command: { argv: ['sh', '-c', script] } },
    timeout_seconds: 60,
  });
  const settings = testSettings({
    stateDir,
    cacheDir,
    logger,
    isolation: options.isolation ?? 'off',
    poolSize: (options.pool ?? POOL).size,
    sandboxBackend: 'worktree', // the warm pool is the worktree backend's
  });
  const out = await runInline(parsed, { settings });
  if (out.kind !== 'ran') throw new Error(`not run: ${out.kind}`);
  const events = readFileSync(join(out.dir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  return { receipt: out.receipt as unknown as Ran['receipt'], events };
}

const warmOf = (r: Ran) => r.events.find((e) => e.type === 'sandbox.created')?.data.warm;
const pooledOf = (r: Ran) => r.events.find((e) => e.type === 'sandbox.removed')?.data.pooled;
const pooledRecords = (cacheDir: string) => readRecords(cacheDir).filter((r) => r.state === 'pooled');

/** Run the observer; returns its fingerprint and whether it got a warm sandbox. */
async function observe(
  cacheDir: string,
  options: { pool?: PoolSettings; ref?: string } = {},
): Promise<{ print: string; warm: unknown }> {
  const out = join(fresh('uh-pool-out-'), 'print.txt');
  const r = await mission(cacheDir, `{\n${FINGERPRINT}\n} > ${out} 2>&1`, options);
  expect(r.receipt.status).toBe('completed');
  return { print: readFileSync(out, 'utf8'), warm: warmOf(r) };
}

describe('warm sandboxes: nothing of one mission reaches the next', () => {
  let cacheDir: string;
  let cold: string;

  beforeAll(async () => {
    cacheDir = fresh('uh-pool-cache-');
    // The reference: what a mission sees in a sandbox checked out from scratch (pool off).
    cold = (await observe(cacheDir, { pool: { size: 0, idleMs: 0 } })).print;
    if (process.env.UH_TEST_SHOW) console.log(cold);
    expect(cold).toContain('./src/app.txt f 644');
    expect(cold).toContain('./bin/run.sh f 755');
    expect(cold).toContain('./link l 777 README.md');
  });

  const attacks: Array<[string, string]> = [
    [
      'a new file, an ignored file and an ignored dir',
      'echo new > new.txt; mkdir -p build/deep; echo x > build/deep/out.o; echo log > debug.log; echo y > src/trace.log',
    ],
    [
      'a tracked file modified (mtime restored) and one deleted',
      'cp -p README.md /tmp/uh-pool-ref-$$; printf "# dEmo\\n" > README.md; touch -r /tmp/uh-pool-ref-$$ README.md; rm -f /tmp/uh-pool-ref-$$ src/app.txt',
    ],
    [
      'an exec bit flipped and a symlink retargeted',
      'chmod -x bin/run.sh; chmod 600 docs/guide.md; chmod 777 src; chmod 700 .; ln -sfn docs link',
    ],
    ['a directory replaced by a symlink into the tree', 'rm -rf docs && ln -s src docs'],
    ['a file replaced by a directory, a FIFO', 'rm src/app.txt && mkdir -p src/app.txt/x && mkfifo fifo'],
    [
      "hooks and config written into the agent's .git",
      'mkdir -p .git/hooks && printf "#!/bin/sh\\necho pwned\\n" > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout && git config core.fsmonitor "echo pwned" && git config alias.st "!echo pwned" && echo "*.txt export-ignore" > .git/info/attributes 2>/dev/null; mkdir -p .git/info && echo "*.md" > .git/info/exclude',
    ],
    ['.git replaced by a gitfile pointing elsewhere', 'rm -rf .git && printf "gitdir: /tmp\\n" > .git'],
    ['.git replaced by a symlink', 'rm -rf .git && ln -s /tmp .git'],
    [
      'the agent commits in its own .git',
      'git -c user.name=a -c user.email=b@c commit -q --allow-empty -m mine && git update-ref refs/heads/evil HEAD',
    ],
  ];

  it.each(attacks)('%s: pooled, and the next mission sees a clean checkout', async (_name, script) => {
    const dirty = await mission(cacheDir, script);
    expect(dirty.receipt.verdict).toBe('unverified');
    expect(dirty.receipt.sandbox.retained).toBe(false);
    expect(pooledOf(dirty), poolLog.join('\n')).toBe(true);
    expect(existsSync(dirty.receipt.sandbox.path as string)).toBe(false); // its path is gone, as after a removal
    const next = await observe(cacheDir);
    expect(next.warm).toBe(true);
    expect(next.print).toBe(cold);
  });

  it('a nested .git in a tracked dir (a gitfile, a directory) is a scope violation: never pooled', async () => {
    const script = 'printf "gitdir: /tmp/elsewhere\\n" > src/.git && mkdir docs/.git';
    const dirty = await mission(cacheDir, script);
    expect(dirty.receipt.verdict).toBe('scope_violation');
    expect(dirty.receipt.scope.violations).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: 'src/.git', reason: 'nested_repository' })]),
    );
    expect(pooledOf(dirty), poolLog.join('\n')).not.toBe(true);
  });

  it('under bubblewrap too: what an isolated mission leaves is gone for the next one', async () => {
    const dirty = await mission(
      cacheDir,
      'echo x > new.txt; echo y > debug.log; mkdir -p .git/hooks; echo "#!/bin/sh" > .git/hooks/pre-commit',
      { isolation: 'auto' },
    );
    expect(dirty.receipt.isolation.kind).toBe('bwrap');
    expect(pooledOf(dirty), poolLog.join('\n')).toBe(true);
    const next = await observe(cacheDir);
    expect(next.warm).toBe(true);
    expect(next.print).toBe(cold);
  });

  it('two `uh mission run` processes at once: one takes the only pooled sandbox, the other checks out its own', async () => {
    const cache = fresh('uh-pool-cli-');
    const env = { UH_CACHE_DIR: cache, UH_SANDBOX_POOL_SIZE: '1', UH_ISOLATION: 'off' };
    const first = writeMission(repo, ['noop']);
    expect(
      (await runCli(['mission', 'run', first.path, '--json', '--state-dir', fresh('uh-pool-st-')], { cwd: repo, env }))
        .code,
    ).toBe(0);
    expect(pooledRecords(cache)).toHaveLength(1);
    // Each run's agent waits until both have started (a file each in `barrier`): both sandboxes
    // were taken before either goes back to the pool, however slowly the second process starts.
    const barrier = fresh('uh-pool-barrier-');
    const wait = `touch "${barrier}/$$"; i=0; while [ "$(ls "${barrier}" | wc -l)" -lt 2 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; exec "$0" "$@"`;
    const runs = await Promise.all(
      [1, 2].map(async () => {
        const m = writeMission(repo, [], {
          runtime_config_overrides: {
            command: {
              argv: ['sh', '-c', wait, process.execPath, FAKE_AGENT, 'edit', 'src/x.txt', 'x'],
              kill_grace_ms: 500,
            },
          },
        });
        const stateDir = fresh('uh-pool-st-');
        const r = await runCli(['mission', 'run', m.path, '--json', '--state-dir', stateDir], { cwd: repo, env });
        expect(r.code).toBe(0);
        const events = readFileSync(join(stateDir, 'operations', m.operationId, 'events.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l));
        return events.find((e) => e.type === 'sandbox.created').data as { path: string; warm: boolean };
      }),
    );
    expect(runs.map((r) => r.warm).sort()).toEqual([false, true]);
    expect(runs[0]!.path).not.toBe(runs[1]!.path);
    expect(pooledRecords(cache)).toHaveLength(1); // the size: one back, the other removed
  });

  it("a hook or config written into uh's private git dir (isolation off): the sandbox is discarded, never reused", async () => {
    const script =
      'p=$(dirname "$PWD")/.uh/$(basename "$PWD")/git; mkdir -p "$p/hooks" && echo "#!/bin/sh" > "$p/hooks/post-checkout"; printf "[core]\\n\\tfsmonitor = echo pwned\\n" >> "$p/config"';
    const dirty = await mission(cacheDir, script);
    expect(pooledOf(dirty)).toBe(false);
    expect(pooledRecords(cacheDir).some((r) => r.operation_id === dirty.events[0]?.data.operation_id)).toBe(false);
    for (const r of pooledRecords(cacheDir)) {
      const p = sandboxPaths(r.path);
      expect(readdirSync(p.gitDir).sort()).toEqual(['HEAD', 'config', 'info', 'objects', 'refs']);
      expect(readFileSync(join(p.gitDir, 'config'), 'utf8')).not.toContain('fsmonitor');
    }
    const next = await observe(cacheDir);
    expect(next.print).toBe(cold);
  });

  it('a pooled sandbox touched while idle is discarded at acquire; the mission gets a cold one', async () => {
    await observe(cacheDir); // leaves one pooled (at least)
    for (const r of pooledRecords(cacheDir)) writeFileSync(join(r.path, 'late.txt'), 'written after release\n');
    const next = await observe(cacheDir);
    expect(next.warm).toBe(false);
    expect(next.print).toBe(cold);
  });

  it("uh's private git dir rewritten while pooled (config, attributes; same size): discarded at acquire", async () => {
    for (const part of ['config', 'info/attributes']) {
      await observe(cacheDir); // leaves one pooled (at least)
      for (const r of pooledRecords(cacheDir)) {
        const path = join(sandboxPaths(r.path).gitDir, part);
        const text = readFileSync(path, 'utf8');
        writeFileSync(path, `${text.slice(0, -2)}x\n`); // the same length: only the stat data tells
      }
      const next = await observe(cacheDir);
      expect(next.warm, part).toBe(false);
      expect(next.print).toBe(cold);
    }
  });

  it('a retained sandbox (failed mission) is never pooled', async () => {
    const before = pooledRecords(cacheDir).length;
    const failed = await mission(cacheDir, 'echo leak > leak.txt; exit 3');
    expect(failed.receipt.sandbox.retained).toBe(true);
    expect(existsSync(join(failed.receipt.sandbox.path as string, 'leak.txt'))).toBe(true);
    expect(failed.events.find((e) => e.type === 'sandbox.kept')).toBeDefined();
    // It may have taken a pooled sandbox; it gave none back.
    expect(pooledRecords(cacheDir).length).toBe(before - (warmOf(failed) ? 1 : 0));
    expect(readRecords(cacheDir).find((r) => r.path === failed.receipt.sandbox.path)?.state).toBe('retained');
  });

  it('moves a pooled sandbox to another base commit: the next mission sees that commit exactly', async () => {
    const other = fresh('uh-pool-cache2-');
    git(repo, 'checkout', '-q', '-b', 'next');
    writeFileSync(join(repo, 'src/app.txt'), 'v2\n');
    mkdirSync(join(repo, 'src/new'), { recursive: true });
    writeFileSync(join(repo, 'src/new/file.txt'), 'new\n');
    git(repo, 'rm', '-q', 'docs/guide.md');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'next');
    git(repo, 'checkout', '-q', 'main');
    const coldNext = (await observe(other, { ref: 'next', pool: { size: 0, idleMs: 0 } })).print;
    await mission(other, 'echo x > junk.txt'); // pools a sandbox at main
    const moved = await observe(other, { ref: 'next' });
    expect(moved.warm).toBe(true);
    expect(moved.print).toBe(coldNext);
    expect(moved.print).toContain('./src/new/file.txt');
  });
});

describe('the pool itself', () => {
  it('its settings come from the environment, parsed once with the rest (errors name the variable)', () => {
    expect(loadConfig({}).core.sandboxPool).toEqual({ size: 2, idleMs: 30 * 60_000 });
    expect(loadConfig({ UH_SANDBOX_POOL_SIZE: '0', UH_SANDBOX_POOL_IDLE_MINUTES: '1.5' }).core.sandboxPool).toEqual({
      size: 0,
      idleMs: 90_000,
    });
    expect(() => loadConfig({ UH_SANDBOX_POOL_SIZE: '-1' })).toThrow(
      expect.objectContaining({ details: [expect.stringContaining('(environment UH_SANDBOX_POOL_SIZE)')] }),
    );
  });

  async function pooledSandbox(cacheDir: string, settings: PoolSettings = POOL): Promise<string | null> {
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'main');
    const s = await createSandbox(cacheDir, mirror, commit, `op-${++n}`, new Date());
    return releaseToPool(cacheDir, s, 'op', settings, new Date());
  }

  it('concurrent acquirers never get the same sandbox; the size per mirror is honoured', async () => {
    const cacheDir = fresh('uh-pool-conc-');
    expect(await pooledSandbox(cacheDir)).toBeNull();
    expect(await pooledSandbox(cacheDir)).toBeNull();
    expect(await pooledSandbox(cacheDir)).toBe('the pool is full');
    expect(pooledRecords(cacheDir)).toHaveLength(2);
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'main');
    const got = await Promise.all(
      [1, 2, 3, 4, 5].map((i) => acquirePooled(cacheDir, mirror, commit, `c-${i}`, new Date(), POOL, () => undefined)),
    );
    const paths = got.filter((s) => s !== null).map((s) => s!.path);
    expect(paths).toHaveLength(2);
    expect(new Set(paths).size).toBe(2);
    expect(pooledRecords(cacheDir)).toHaveLength(0);
    for (const p of paths) expect(readRecords(cacheDir).find((r) => r.path === p)?.state).toBe('active');
  });

  it('idle past its lifetime, the sweep removes it; under the cache cap pooled ones go first', async () => {
    const cacheDir = fresh('uh-pool-idle-');
    expect(await pooledSandbox(cacheDir, { size: 2, idleMs: 60_000 })).toBeNull();
    const [pooled] = pooledRecords(cacheDir);
    expect(await sweepSandboxes(cacheDir, new Date(Date.now() + 30_000))).toMatchObject({ removed: [] });
    const plan = await planGc(
      cacheDir,
      null,
      { now: new Date(), mirrorIdleDays: 14, operationRetentionDays: 30, cacheCapBytes: 1 },
      { operationState: async () => null },
    );
    expect(plan[0]).toMatchObject({ kind: 'sandbox_cap', path: pooled!.path });
    expect((await sweepSandboxes(cacheDir, new Date(Date.now() + 61_000))).removed).toEqual([pooled!.path]);
    expect(existsSync(pooled!.path)).toBe(false);
    expect(pooledRecords(cacheDir)).toHaveLength(0);
  });

  it("a same-size edit with its mtime set back right after the checkout (git's racy case) is still undone", async () => {
    const cacheDir = fresh('uh-pool-racy-');
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'main');
    for (let i = 0; i < 5; i++) {
      const s = await createSandbox(cacheDir, mirror, commit, `op-racy-${i}`, new Date());
      const f = join(s.path, 'src/app.txt');
      execFileSync('sh', [
        '-c',
        `cp -p "${f}" /tmp/uh-racy-$$ && printf 'v9\\n' > "${f}" && touch -r /tmp/uh-racy-$$ "${f}" && rm /tmp/uh-racy-$$`,
      ]);
      expect(readFileSync(f, 'utf8')).toBe('v9\n');
      expect(await releaseToPool(cacheDir, s, 'op', POOL, new Date())).toBeNull();
      const got = await acquirePooled(cacheDir, mirror, commit, `op-next-${i}`, new Date(), POOL, () => undefined);
      expect(readFileSync(join(got!.path, 'src/app.txt'), 'utf8')).toBe('v1\n');
      expect(await releaseToPool(cacheDir, got!, 'op', POOL, new Date())).toBeNull(); // nothing changed: no git process, still proven
      const again = await acquirePooled(cacheDir, mirror, commit, `op-again-${i}`, new Date(), POOL, () => undefined);
      expect(readFileSync(join(again!.path, 'src/app.txt'), 'utf8')).toBe('v1\n');
      await releaseToPool(cacheDir, again!, 'op', { size: 0, idleMs: 0 }, new Date());
    }
  });

  it('told a tracked file changed, the release resets at once; told wrongly, it still proves the tree clean', async () => {
    const cacheDir = fresh('uh-pool-hint-');
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'main');
    const s = await createSandbox(cacheDir, mirror, commit, `op-hint-${++n}`, new Date());
    writeFileSync(join(s.path, 'src/app.txt'), 'changed by the agent\n');
    const resets = () => spawnCounts()['git read-tree'] ?? 0;
    const before = resets();
    expect(await releaseToPool(cacheDir, s, 'op', POOL, new Date(), {}, { trackedChanged: true })).toBeNull();
    expect(resets()).toBe(before + 1);
    const got = await acquirePooled(cacheDir, mirror, commit, `op-hint-next-${n}`, new Date(), POOL, () => undefined);
    expect(readFileSync(join(got!.path, 'src/app.txt'), 'utf8')).toBe('v1\n');
    // A hint that nothing tracked changed is not taken for proof: the walk still finds the edit.
    writeFileSync(join(got!.path, 'src/app.txt'), 'changed again\n');
    expect(await releaseToPool(cacheDir, got!, 'op', POOL, new Date(), {}, { trackedChanged: false })).toBeNull();
    expect(resets()).toBe(before + 2);
    const again = await acquirePooled(
      cacheDir,
      mirror,
      commit,
      `op-hint-again-${n}`,
      new Date(),
      POOL,
      () => undefined,
    );
    expect(readFileSync(join(again!.path, 'src/app.txt'), 'utf8')).toBe('v1\n');
  });

  it("an agent's .git left exactly as written is kept; one its git touched (index, hook) is written anew", async () => {
    const cacheDir = fresh('uh-pool-agentgit-');
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'main');
    const s = await createSandbox(cacheDir, mirror, commit, `op-agentgit-${++n}`, new Date());
    // A mark a rewrite would lose: an old mtime on the agent's config (its content is unchanged).
    const old = new Date('2001-01-01T00:00:00Z');
    utimesSync(join(s.path, '.git', 'config'), old, old);
    const marked = (p: string) => lstatSync(join(p, '.git', 'config')).mtimeMs === old.getTime();
    expect(await releaseToPool(cacheDir, s, 'op', POOL, new Date())).toBeNull();
    const got = await acquirePooled(
      cacheDir,
      mirror,
      commit,
      `op-agentgit-next-${n}`,
      new Date(),
      POOL,
      () => undefined,
    );
    expect(marked(got!.path)).toBe(true); // kept: nothing removed and written again
    // The agent's own git writes its index and a hook: the next mission must see neither.
    execFileSync('git', ['status', '--porcelain'], { cwd: got!.path });
    writeFileSync(join(got!.path, 'src/app.txt'), 'edited\n');
    execFileSync('git', ['add', 'src/app.txt'], { cwd: got!.path });
    mkdirSync(join(got!.path, '.git', 'hooks'));
    writeFileSync(join(got!.path, '.git', 'hooks', 'pre-commit'), '#!/bin/sh\n');
    expect(await releaseToPool(cacheDir, got!, 'op', POOL, new Date(), {}, { trackedChanged: true })).toBeNull();
    const again = await acquirePooled(
      cacheDir,
      mirror,
      commit,
      `op-agentgit-again-${n}`,
      new Date(),
      POOL,
      () => undefined,
    );
    const paths = sandboxPaths(again!.path);
    expect(existsSync(join(again!.path, '.git', 'hooks'))).toBe(false);
    expect(readFileSync(join(again!.path, '.git', 'index')).equals(readFileSync(paths.index))).toBe(true);
    expect(execFileSync('git', ['status', '--porcelain'], { cwd: again!.path, encoding: 'utf8' })).toBe('');
    expect(marked(again!.path)).toBe(false);
  });

  it('low disk: drainPool drops every pooled sandbox (the disk guard calls it below UH_MIN_FREE_BYTES)', async () => {
    const cacheDir = fresh('uh-pool-drain-');
    expect(await pooledSandbox(cacheDir)).toBeNull();
    expect(await pooledSandbox(cacheDir)).toBeNull();
    const paths = pooledRecords(cacheDir).map((r) => r.path);
    expect(await drainPool(cacheDir)).toBe(2);
    expect(pooledRecords(cacheDir)).toHaveLength(0);
    for (const p of paths) expect(existsSync(p)).toBe(false);
  });
});
