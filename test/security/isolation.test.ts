/**
 * Hostile agents under bubblewrap (docs/security.md "Isolation"), inline and through a worker on
 * real Redis: writes to $HOME, the state dir, the cache dir and the mirror, the user's checkout,
 * another sandbox and /tmp outside the agent's private tmp all fail or land nowhere visible; the
 * verdict of the agent's own in-scope change stands; `sandbox.network: none` blocks a connect to
 * a server on 127.0.0.1 (test/security/egress.test.ts covers the default egress mode). As the
 * deployment's user `uh` too (a fleet, inline and through a worker): pool poisoning, reading the
 * signing key and writing the checkout, $HOME, the cache or / all fail, the verdict stands. Needs
 * bwrap (fails with a clear message without it).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import {
  commandMission,
  firstMission,
  fleetTable,
  poolPristine,
  runMission,
  signingKeys,
  startFleet,
  stopFleet,
  type Fleet,
} from '../support/fleet.js';
import { checkoutFingerprint, makeRepo } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker } from '../support/worker-process.js';
import { hostileMission, requireBwrap, treeFingerprint } from './isolation-helpers.js';

let repo: string;
let cacheDir: string;
let home: string;
let outside: string;
let otherSandbox: string;
const created: string[] = [];

/** Each attack appends its name to escaped.txt in the worktree when it succeeded. */
const ATTACKS = `
try() { name="$1"; shift; if sh -c "$*" 2>/dev/null; then echo "$name" >> escaped.txt; fi; }
try home 'echo x > "$T_HOME/pwned"'
try home-dotfile 'echo "alias ls=rm" >> "$T_HOME/.bashrc"'
try state 'mkdir -p "$T_STATE/operations/forged" && echo x > "$T_STATE/pwned"'
try cache 'echo x > "$T_CACHE/pwned"'
try mirror-config 'git config --file "$(git rev-parse --git-common-dir)/config" core.fsmonitor "touch /tmp/fsmon"'
try mirror-exclude 'echo "*" >> "$(git rev-parse --git-common-dir)/info/exclude"'
try mirror-hook 'mkdir -p "$(git rev-parse --git-common-dir)/hooks" && echo evil > "$(git rev-parse --git-common-dir)/hooks/pre-commit"'
try mirror-object 'echo x > "$(git rev-parse --git-common-dir)/objects/pwned"'
try checkout 'echo x > "$T_REPO/pwned"'
try checkout-git 'echo x > "$T_REPO/.git/pwned"'
try other-sandbox 'echo x > "$T_OTHER/pwned"'
try tmp-outside 'echo x > "$T_OUTSIDE/pwned"'
try see-checkout 'test -e "$T_REPO/README.md"'
try see-other-sandbox 'test -e "$T_OTHER/secret.txt"'
echo ok > private-tmp-ok.txt; echo y > /tmp/mine && cat /tmp/mine >/dev/null || echo tmp-broken >> escaped.txt
echo done > result.txt
cat escaped.txt 2>/dev/null || true
`;

function sandboxEnv(stateDir: string): Record<string, string> {
  return {
    T_HOME: home,
    T_STATE: stateDir,
    T_CACHE: cacheDir,
    T_REPO: repo,
    T_OTHER: otherSandbox,
    T_OUTSIDE: outside,
  };
}

function snapshot() {
  return {
    checkout: checkoutFingerprint(repo),
    home: treeFingerprint(home),
    outside: treeFingerprint(outside),
    other: treeFingerprint(otherSandbox),
  };
}

/** No file named `pwned` anywhere under `dir`, and no forged operation. */
function noPwned(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter(
    (p) => p.endsWith('pwned') || p.includes('forged'),
  );
}

function mirrorState(): string {
  const mirrors = join(cacheDir, 'mirrors');
  if (!existsSync(mirrors)) return '';
  // Config, info (exclude), hooks and refs; objects are written by uh's own diff capture, and the
  // `.verified.json` stamp beside a mirror by uh's own mirror check.
  return treeFingerprint(
    mirrors,
    (rel) =>
      /\/(worktrees|logs|objects)$/.test(rel) ||
      rel.includes('lock') ||
      rel.endsWith('FETCH_HEAD') ||
      rel.endsWith('.verified.json'),
  );
}

function expectContained(receipt: any, before: ReturnType<typeof snapshot>, stateDir: string): void {
  expect(receipt.isolation).toMatchObject({ kind: 'bwrap', reason: null, network: 'egress' });
  expect(receipt.status).toBe('completed');
  // escaped.txt lists each write that did not fail. Writes to $HOME, and in this test to the
  // state and cache dirs (they live under /tmp here), land in the agent's private home and tmp:
  // allowed, as long as the host's copies stay untouched (asserted below). Everything else fails.
  const patch = readFileSync(join(stateDir, 'operations', receipt.operation_id, 'diff.patch'), 'utf8');
  const escaped = [...patch.matchAll(/^\+([a-z-]+)$/gm)].map((m) => m[1]).filter((n) => n !== 'ok' && n !== 'done');
  // The mirror-* attacks go through `git rev-parse --git-common-dir`, which is now the agent's OWN
  // private .git (docs/security.md, "Git"): writing there is allowed and changes nothing uh reads
  // (test/security/git-attacks.test.ts); the real mirror, masked from the agent, is asserted unchanged.
  const harmless = [
    'home',
    'home-dotfile',
    'state',
    'cache',
    'mirror-config',
    'mirror-exclude',
    'mirror-hook',
    'mirror-object',
  ];
  expect(
    escaped.filter((n) => !harmless.includes(n!)),
    patch,
  ).toEqual([]);
  expect(
    receipt.changed_files
      .map((f: any) => f.path)
      .filter((p: string) => p !== 'escaped.txt')
      .sort(),
  ).toEqual(['private-tmp-ok.txt', 'result.txt']);
  expect(receipt.verdict).toBe('verified');
  expect(snapshot()).toEqual(before);
  expect(noPwned(cacheDir)).toEqual([]);
  expect(noPwned(stateDir)).toEqual([]);
  expect(existsSync('/tmp/fsmon')).toBe(false);
}

beforeAll(() => {
  requireBwrap();
  repo = makeRepo({ 'README.md': '# demo\n', 'src/app.txt': 'v1\n' });
  cacheDir = tempDir('uh-sec-cache-');
  home = tempDir('uh-sec-home-');
  writeFileSync(join(home, '.bashrc'), '# mine\n');
  outside = tempDir('uh-sec-outside-');
  otherSandbox = join(cacheDir, 'sandboxes', 'op-someone-else-1234');
  mkdirSync(otherSandbox, { recursive: true });
  writeFileSync(join(otherSandbox, 'secret.txt'), 'theirs\n');
  created.push(repo, cacheDir, home, outside);
});
afterAll(() => created.forEach(removeDir));

const check = { name: 'result', argv: ['test', '-f', 'result.txt'], timeout_seconds: 30 };

describe('isolation: a hostile agent inline (uh mission run)', () => {
  it('cannot write $HOME, the state dir, the cache dir or mirror, the checkout, another sandbox or /tmp; its verdict stands', async () => {
    const stateDir = tempDir('uh-sec-state-');
    created.push(stateDir);
    const { path } = hostileMission(repo, ATTACKS, { sandbox: { env: sandboxEnv(stateDir) }, verification: [check] });
    const warm = hostileMission(repo, 'echo warm > warm.txt');
    await runCli(['mission', 'run', warm.path, '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: { UH_CACHE_DIR: cacheDir, HOME: home },
    });
    const before = snapshot();
    const mirror = mirrorState();
    const r = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: { UH_CACHE_DIR: cacheDir, HOME: home },
    });
    expect(r.code, r.stderr).toBe(0);
    expectContained(JSON.parse(r.stdout), before, stateDir);
    expect(mirrorState()).toBe(mirror);
  });

  it('sandbox.network: none blocks a connect to a server on 127.0.0.1 (egress naming it reaches it)', async () => {
    let connections = 0;
    const server: Server = createServer((socket) => {
      connections++;
      socket.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const stateDir = tempDir('uh-sec-state-');
    created.push(stateDir);
    // A client as agents are: it waits for the server's answer (here the end of the connection).
    const script = `node -e "require('net').connect(${port},'127.0.0.1').on('connect',function(){this.resume()}).on('end',()=>{require('fs').writeFileSync('net.txt','connected');process.exit(0)}).on('error',()=>{require('fs').writeFileSync('net.txt','refused');process.exit(0)})"`;
    try {
      const off = hostileMission(repo, script, { sandbox: { network: 'none' } });
      const r = await runCli(['mission', 'run', off.path, '--json', '--state-dir', stateDir], {
        cwd: repo,
        env: { UH_CACHE_DIR: cacheDir, HOME: home },
      });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).isolation).toMatchObject({ kind: 'bwrap', network: 'none' });
      expect(connections).toBe(0);
      const on = hostileMission(repo, script, { sandbox: { egress: [`127.0.0.1:${port}`] } });
      const r2 = await runCli(['mission', 'run', on.path, '--json', '--state-dir', stateDir], {
        cwd: repo,
        env: { UH_CACHE_DIR: cacheDir, HOME: home },
      });
      expect(r2.code, r2.stderr).toBe(0);
      expect(connections).toBe(1);
    } finally {
      server.close();
    }
  });

  it('the private /tmp and home hold at most UH_ISOLATION_TMPFS_BYTES, are fresh for each check, and leave nothing on the host', async () => {
    const stateDir = tempDir('uh-sec-state-');
    created.push(stateDir);
    // 4 MiB cap: a 2 MiB file fits, 8 MiB do not (ENOSPC), in /tmp and in $HOME alike.
    const fill = (dir: string, mib: number, name: string) =>
      `dd if=/dev/zero of="${dir}/fill-${name}" bs=1048576 count=${mib} 2>/dev/null && echo ${name} >> fits.txt`;
    const script = [
      fill('/tmp', 2, 'tmp-small'),
      fill('/tmp', 8, 'tmp-big'),
      fill('$HOME', 2, 'home-small'),
      fill('$HOME', 8, 'home-big'),
      'echo agent > /tmp/agent-was-here',
      'echo done > result.txt',
    ].join('; ');
    const fresh = {
      name: 'fresh-tmp',
      argv: ['sh', '-c', 'test ! -e /tmp/agent-was-here && test ! -e /tmp/fill-tmp-small && echo mine > /tmp/check-1'],
      timeout_seconds: 30,
    };
    const second = { name: 'fresh-again', argv: ['sh', '-c', 'test ! -e /tmp/check-1'], timeout_seconds: 30 };
    const { path, operationId } = hostileMission(repo, script, { verification: [fresh, second] });
    const r = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: { UH_CACHE_DIR: cacheDir, HOME: home, UH_ISOLATION_TMPFS_BYTES: String(4 * 1024 * 1024) },
    });
    expect(r.code, r.stderr).toBe(0);
    const receipt = JSON.parse(r.stdout);
    expect(receipt.isolation).toMatchObject({ kind: 'bwrap' });
    expect(receipt.checks.map((c: any) => [c.name, c.passed])).toEqual([
      ['fresh-tmp', true],
      ['fresh-again', true],
    ]);
    const patch = readFileSync(join(stateDir, 'operations', operationId, 'diff.patch'), 'utf8');
    expect([...patch.matchAll(/^\+([a-z-]+)$/gm)].map((m) => m[1]).filter((n) => n !== 'done')).toEqual([
      'tmp-small',
      'home-small',
    ]);
    // Nothing of the private /tmp and home was ever on the host: no scratch dir, no file in the real home.
    expect(readdirSync(join(stateDir, 'operations', operationId))).not.toContain('scratch');
    expect(readdirSync(home).filter((n) => n.startsWith('fill-'))).toEqual([]);
  });

  it('a mission that requires isolation is refused (blocked, exit 3, hint) when it is off', async () => {
    const stateDir = tempDir('uh-sec-state-');
    created.push(stateDir);
    const { path } = hostileMission(repo, 'echo x > result.txt', { sandbox: { isolation: 'required' } });
    // A PATH without bwrap: git and sh only.
    const bin = tempDir('uh-sec-bin-');
    created.push(bin);
    for (const tool of ['git', 'sh'])
      symlinkSync(execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(), join(bin, tool));
    const r = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: { UH_CACHE_DIR: cacheDir, HOME: home, PATH: bin },
    });
    expect(r.code, r.stderr).toBe(3);
    const receipt = JSON.parse(r.stdout);
    expect(receipt.status).toBe('blocked');
    expect(receipt.outcome.message).toMatch(/requires isolation/);
    expect(receipt.outcome.hint).toMatch(/bubblewrap/);
    expect(receipt.isolation).toMatchObject({ kind: 'none' });
    expect(receipt.changed_files).toEqual([]);
  });
});

describe('isolation: a hostile agent through a worker on real Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startTestRedis('isolation');
  });
  afterAll(async () => {
    await redis?.cleanup();
  });

  it('is contained the same way; the receipt says isolation: bwrap', async () => {
    const stateDir = tempDir('uh-sec-state-');
    created.push(stateDir);
    const env = { REDIS_URL: redis.url, UH_REDIS_PREFIX: redis.prefix('iso'), UH_CACHE_DIR: cacheDir, HOME: home };
    const worker = await startWorker(['--state-dir', stateDir, '--runtime', 'command'], { cwd: repo, env });
    try {
      await worker.waitForOutput('ready');
      const before = snapshot();
      const { path } = hostileMission(repo, ATTACKS, { sandbox: { env: sandboxEnv(stateDir) }, verification: [check] });
      const r = await runCli(['mission', 'submit', path, '--wait', '--json', '--state-dir', stateDir], {
        cwd: repo,
        env,
      });
      expect(r.code, `${r.stderr}\n${worker.output()}`).toBe(0);
      expectContained(JSON.parse(r.stdout), before, stateDir);
      expect(readFileSync(join(home, '.bashrc'), 'utf8')).toBe('# mine\n');
    } finally {
      await worker.stop('SIGTERM');
    }
  });
});

/**
 * The same boundary for the deployment's user (infra/ runs the worker as `uh`; test/support/fleet.ts
 * creates it when the suite runs as root, else this is the current user): the attacks an auditor
 * tries first, as that user, inline and through a worker, under bubblewrap.
 */
describe.each(fleetTable(['inline', 'worker'], ['auto']).filter(([, , user]) => user !== 'root'))(
  'isolation: a hostile agent as the deployment user (%s, UH_ISOLATION=%s, as %s)',
  (mode, isolation, user) => {
    let redis: TestRedis;
    let f: Fleet;
    const mission = { mission_id: 'm-iso-user', verification: [check] };
    beforeAll(async () => {
      redis = await startTestRedis('iso-user');
      f = await startFleet({
        mode,
        isolation,
        user,
        redis,
        tag: 'iso-user',
        files: { 'src/app.txt': 'v1\n' },
        cacheOutsideTmp: true,
      });
      await firstMission(f, { ...mission, verification: [{ name: 'ok', argv: ['true'], timeout_seconds: 30 }] });
    }, 90_000);
    afterAll(async () => {
      await stopFleet(f);
      await redis?.cleanup();
    });

    it('cannot poison the pool, read the signing key, or write the checkout, $HOME, the cache or /', async () => {
      const host = `/uh-iso-user-${process.pid}`;
      const script = [
        `try() { name="$1"; shift; if sh -c "$*" 2>/dev/null; then echo "$name" >> escaped.txt; fi; }`,
        `try pool 'for d in ${f.cacheDir}/sandboxes/pool*; do echo BACKDOOR >> "$d/src/app.txt" || exit 1; done; ls -d ${f.cacheDir}/sandboxes/pool*'`,
        `try signing-key 'cat ${f.cacheDir}/receipt-signing.pem | grep -q PRIVATE'`,
        `try checkout 'echo x > ${f.repo}/pwned'`,
        `try home 'echo x > ${f.home}/.profile'`,
        `try cache 'echo x > ${f.cacheDir}/pwned'`,
        `try host 'echo x > ${host}'`,
        'echo ok > result.txt',
      ].join('\n');
      const before = {
        checkout: checkoutFingerprint(f.repo),
        home: treeFingerprint(f.home),
        keys: JSON.stringify(signingKeys(f)),
      };
      const { receipt, operationDir } = await runMission(f, commandMission(f, script, mission));
      const patch = readFileSync(join(operationDir, 'diff.patch'), 'utf8');
      // escaped.txt lists each write that did not fail: one to $HOME, the checkout or the cache dir
      // may land in the agent's private tmp and home (harmless: the host's copies are asserted below);
      // the pool (cache outside /tmp, really there to attack), the signing key and / must fail.
      const escaped = [...patch.matchAll(/^\+([a-z-]+)$/gm)].map((m) => m[1]);
      expect(escaped, patch).not.toContain('pool');
      expect(escaped, patch).not.toContain('signing-key');
      expect(escaped, patch).not.toContain('host');
      expect(receipt.verdict).toBe('verified');
      expect(receipt.isolation?.kind).toBe('bwrap');
      expect({
        checkout: checkoutFingerprint(f.repo),
        home: treeFingerprint(f.home),
        keys: JSON.stringify(signingKeys(f)),
      }).toEqual(before);
      expect(poolPristine(f)).toBe(true);
      expect(existsSync(join(f.cacheDir, 'pwned'))).toBe(false);
      expect(existsSync(host)).toBe(false);
    }, 60_000);
  },
);
