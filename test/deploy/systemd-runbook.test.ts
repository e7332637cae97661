/**
 * docs/deploy.md's "Bare hosts with systemd" block, run in order, every command, in a temp root
 * instead of / (issue 31). Each line is the documented one with these substitutions, and only these:
 *   - `sudo ` dropped (the test runs as root, or the owner flags are dropped when it cannot chown);
 *   - absolute host paths (/etc, /var, /opt; a unit's `dir:/var/…` store too) moved under the temp root; `redis-host:6379` is this
 *     test's redis-server (started with the users.acl the runbook generates);
 *   - `useradd` gets `--root <temp root>` (its own /etc/passwd, copied from this host's without a uh);
 *   - `uh` is the copy the runbook installs (`node <root>/opt/uh/bin/uh.js`);
 *   - `npm ci` gets `--offline` (npm's cache, never the registry);
 *   - `systemctl daemon-reload` is `systemd-analyze verify --root=<temp root>` of the installed units;
 *   - `systemctl enable --now` is `systemctl --root=<temp root> enable` (the symlinks), and "--now" is
 *     the test starting each enabled unit's ExecStart with the unit's Environment= and EnvironmentFile=
 *     lines (paths under the temp root): what systemd would run, minus the sandboxing directives
 *     (ProtectSystem=, PrivateTmp=, …), which need a real systemd; User=uh is this host's uh user when
 *     the test is root and one exists (else the services run as the test's user) (docs/runbooks/deploy.md says what was not run).
 * Then a producer submits a mission as its ACL user (naming the units' artifact store), the worker runs it, the receipt verifies with
 * the fleet key, the API lists the workers, uh-worker@codex exits 3 (codex is not installed here:
 * not restarted, RestartPreventExitStatus), and SIGTERM stops each service with exit 0.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, linkSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { FAKE_AGENT, runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { waitFor } from '../support/process.js';
import { hostTempDir, removeDir, tempDir } from '../support/temp.js';

const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url));
const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  dirs.forEach(removeDir);
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

/** The systemd block of docs/deploy.md, one command line each, comments stripped. */
function runbook(): string[] {
  const deploy = readFileSync(join(CHECKOUT, 'docs/deploy.md'), 'utf8');
  const block = /## Bare hosts with systemd[\s\S]*?```sh\n([\s\S]*?)```/.exec(deploy)?.[1] ?? '';
  return block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
}

/** This host's `uh` user (the units' User=uh), when the test is root and one exists: the services run as it. */
const hostUh = (): { uid: number; gid: number } | null => {
  try {
    if (process.getuid?.() !== 0) return null;
    const id = (flag: string) => Number(execFileSync('id', [flag, 'uh'], { encoding: 'utf8' }).trim());
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    return null;
  }
};

/** The documented line as run here (the substitutions of the header, nothing else). */
function substitute(line: string, root: string, redisPort: number, chown: boolean): string {
  // useradd --root chroots: its paths (--home) are the ones inside the root already.
  const paths = /\buseradd /.test(line)
    ? (l: string) => l
    : (l: string) => l.replace(/(^|[\s=(])\/(etc|var|opt)\//g, `$1${root}/$2/`);
  let out = paths(line.replace(/\bsudo /g, ''))
    .replace(/redis-host:6379/g, `127.0.0.1:${redisPort}`)
    .replace(/\buseradd /, `useradd --root ${root} `)
    .replace(/(^|&& |\(|; )uh /g, `$1${process.execPath} ${root}/opt/uh/bin/uh.js `)
    .replace(/\bnpm ci /, 'npm ci --offline --no-audit --no-fund ')
    .replace(/\bsystemctl daemon-reload\b/, `systemd-analyze verify --man=no --root=${root} ${unitArgs()}`)
    .replace(/\bsystemctl enable --now /, `systemctl --root=${root} enable `);
  if (!chown) out = out.replace(/ -o uh| -g uh/g, '');
  return out;
}
const unitArgs = () =>
  readdirSync(join(CHECKOUT, 'infra/systemd'))
    .map((f) => `/etc/systemd/system/${f.replace('@.service', '@command.service')}`)
    .join(' ');

/** The temp root: what a Debian host already has that the runbook relies on (systemd's units, node, passwd). */
function tempRoot(): string {
  const root = tempDir('uh-root-');
  dirs.push(root);
  chmodSync(root, 0o755);
  for (const d of ['etc/systemd/system', 'usr/lib/systemd', 'usr/bin']) execFileSync('install', ['-d', join(root, d)]);
  execFileSync('cp', ['-a', '/usr/lib/systemd/system', join(root, 'usr/lib/systemd/')]);
  try {
    linkSync('/usr/bin/node', join(root, 'usr/bin/node'));
  } catch {
    copyFileSync(process.execPath, join(root, 'usr/bin/node'));
    chmodSync(join(root, 'usr/bin/node'), 0o755);
  }
  for (const f of ['passwd', 'group', 'shadow', 'gshadow', 'login.defs']) {
    if (!existsSync(`/etc/${f}`)) continue;
    const text = readFileSync(`/etc/${f}`, 'utf8');
    writeFileSync(join(root, 'etc', f), f === 'login.defs' ? text : text.replace(/^uh:.*\n/gm, ''));
  }
  return root;
}

async function startRedis(dir: string, aclFile: string, port: number): Promise<ChildProcess> {
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--aclfile', aclFile],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(server);
  let out = '';
  server.stdout?.on('data', (c) => (out += c));
  expect(await waitFor(() => out.includes('Ready to accept connections'), 10_000), out).toBe(true);
  return server;
}

/** A unit's environment as systemd builds it: EnvironmentFile= and Environment= lines in order (later wins). */
function unitEnv(unit: string, root: string, instance: string): Record<string, string> {
  const env: Record<string, string> = {};
  const under = (v: string) => v.replace(/^(dir:)?\/(etc|var|opt)\//, `$1${root}/$2/`);
  for (const line of unit.split('\n')) {
    const file = /^EnvironmentFile=(-?)(\S+)$/.exec(line);
    if (file) {
      const path = under(file[2] as string);
      if (!existsSync(path) && file[1] === '-') continue;
      for (const l of readFileSync(path, 'utf8').split('\n'))
        if (/^[A-Z_]+=/.test(l)) env[l.slice(0, l.indexOf('='))] = l.slice(l.indexOf('=') + 1);
    }
    const set = /^Environment=(.+)$/.exec(line);
    if (set)
      for (const pair of (set[1] as string).split(' '))
        env[pair.slice(0, pair.indexOf('='))] = under(pair.slice(pair.indexOf('=') + 1).replace('%i', instance));
  }
  return env;
}

/** "--now": the unit's ExecStart (node → this node, paths under the root) with its environment. */
function startUnit(
  root: string,
  name: string,
  extraEnv: Record<string, string>,
  as: { uid: number; gid: number } | null,
) {
  const [file, instance] = name.includes('@')
    ? [name.replace(/@.*\.service$/, '@.service'), /@(.*)\.service$/.exec(name)?.[1] ?? '']
    : [name, ''];
  const unit = readFileSync(join(root, 'etc/systemd/system', file), 'utf8');
  const exec = (/^ExecStart=(.+)$/m.exec(unit)?.[1] as string).replace(/%i/g, instance).split(' ');
  const argv = exec.slice(1).map((a) => a.replace(/^\/opt\//, `${root}/opt/`));
  const child = spawn(process.execPath, argv, {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: join(root, 'var/lib/uh'),
      ...unitEnv(unit, root, instance),
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(as ? { uid: as.uid, gid: as.gid } : {}),
  });
  children.push(child);
  let out = '';
  child.stdout?.on('data', (c) => (out += c));
  child.stderr?.on('data', (c) => (out += c));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, exited, output: () => out };
}

describe("docs/deploy.md's systemd runbook, in a temp root", () => {
  it('every command runs in order; the enabled units start, serve a mission as their ACL users, and stop on SIGTERM', async () => {
    const root = tempRoot();
    const work = tempDir('uh-admin-'); // the operator's working copy: infra/, bin/, dist/, the generated secrets
    dirs.push(work);
    for (const item of ['bin', 'dist', 'infra', 'package.json', 'package-lock.json'])
      execFileSync('cp', ['-r', join(CHECKOUT, item), work]);
    const port = await freePort();
    const as = hostUh();
    const chown = as !== null;
    const steps = runbook();
    expect(steps.length).toBeGreaterThanOrEqual(10);
    let redis: ChildProcess | null = null;
    for (const step of steps) {
      // Redis must run (with the generated users) before the services start, as on a real fleet.
      if (step.includes('systemctl enable') && !redis)
        redis = await startRedis(work, join(work, 'redis-secrets/users.acl'), port);
      const cmd = substitute(step, root, port, chown);
      try {
        execFileSync('bash', ['-euo', 'pipefail', '-c', cmd], { cwd: work, stdio: 'pipe', timeout: 240_000 });
      } catch (error) {
        const e = error as { stderr?: Buffer; stdout?: Buffer };
        throw new Error(`runbook step failed:\n  ${step}\nran as:\n  ${cmd}\n${e.stderr ?? ''}${e.stdout ?? ''}`, {
          cause: error,
        });
      }
    }
    // useradd made the service user in the root's passwd; the units are enabled.
    expect(readFileSync(join(root, 'etc/passwd'), 'utf8')).toMatch(/^uh:x:\d+:\d+::\/var\/lib\/uh:/m);
    const wants = readdirSync(join(root, 'etc/systemd/system/multi-user.target.wants')).sort();
    expect(wants).toEqual([
      'uh-api.service',
      'uh-results.service',
      'uh-worker@codex.service',
      'uh-worker@command.service',
    ]);

    // --now: what systemd would start. The operator's uh.env holds the API token.
    const token = execFileSync('openssl', ['rand', '-hex', '32'], { encoding: 'utf8' }).trim();
    writeFileSync(join(root, 'etc/uh/uh.env'), `UH_API_TOKEN=${token}\nUH_LOG_LEVEL=warn\n`);
    const extra = { UH_ALLOW_LOCAL_REPOS: '1' };
    const services = Object.fromEntries(wants.map((name) => [name, startUnit(root, name, extra, as)]));
    const codex = services['uh-worker@codex.service'];
    expect(await codex?.exited, codex?.output()).toBe(3); // RestartPreventExitStatus=2 3: not restarted
    const worker = services['uh-worker@command.service'];
    expect(await waitFor(() => worker?.output().includes('ready') ?? false, 30_000), worker?.output()).toBe(true);

    // A producer (CI, a laptop) as uh-producer, the password from its file: as the uh user too when
    // there is one, since git refuses a repository another user owns (the worker fetches it as uh).
    const repo = makeRepo({ 'README.md': '# runbook\n' });
    // The agent where a real host keeps programs (the checkout may be under /tmp, private inside the sandbox).
    const agentDir = hostTempDir('uh-runbook-agent-');
    const agent = join(agentDir, 'fake-agent.mjs');
    copyFileSync(FAKE_AGENT, agent);
    chmodSync(agentDir, 0o755);
    const mission = writeMission(repo, ['edit', 'README.md', '# via systemd\n'], {
      runtime_config_overrides: {
        command: { argv: [process.execPath, agent, 'edit', 'README.md', '# via systemd\n'] },
      },
    });
    const producerDir = tempDir('uh-prod-');
    dirs.push(repo, producerDir, dirname(mission.path), agentDir);
    copyFileSync(join(work, 'redis-secrets/producer'), join(producerDir, 'password'));
    if (as)
      for (const d of [repo, producerDir, dirname(mission.path)])
        execFileSync('chown', ['-R', `${as.uid}:${as.gid}`, d]);
    const producer = {
      REDIS_URL: `redis://uh-producer@127.0.0.1:${port}`,
      UH_REDIS_PASSWORD_FILE: join(producerDir, 'password'),
      UH_RECEIPT_PUBLIC_KEYS: join(root, 'etc/uh/receipt-public-keys'),
      UH_CACHE_DIR: join(producerDir, 'cache'),
      // The units' artifact store (docs/deploy.md): the producer on this host names it too.
      UH_ARTIFACT_STORE: `dir:${join(root, 'var/lib/uh/artifacts')}`,
    };
    const run = await runCli(
      ['mission', 'submit', mission.path, '--wait', '--json', '--state-dir', join(producerDir, 'state')],
      { cwd: repo, env: producer, as },
    );
    expect(run.code, `${run.stdout.slice(0, 3000)}\n${run.stderr}\n${worker?.output()}`).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'completed', operation_id: mission.operationId });

    const api = services['uh-api.service'];
    expect(await waitFor(() => /listening on http/.test(api?.output() ?? ''), 20_000), api?.output()).toBe(true);
    const listen = /listening on (http:\/\/\S+)/.exec(api?.output() ?? '')?.[1] as string;
    const fleet = await fetch(`${listen.replace('0.0.0.0', '127.0.0.1')}/v1/workers`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(fleet.status).toBe(200);
    const roles = ((await fleet.json()) as { workers: Array<{ role?: string; runtimes?: string[] }> }).workers;
    expect(roles.some((w) => w.runtimes?.includes('command'))).toBe(true);
    expect(roles.some((w) => w.role === 'results')).toBe(true);

    // KillSignal=SIGTERM: each drains and exits 0.
    for (const name of ['uh-worker@command.service', 'uh-results.service', 'uh-api.service']) {
      services[name]?.child.kill('SIGTERM');
      expect(await services[name]?.exited, `${name}\n${services[name]?.output()}`).toBe(0);
    }
    redis?.kill('SIGTERM');
  }, 420_000);
});
