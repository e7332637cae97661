/**
 * The compose quick start's steps as docs/deploy.md writes them, with the containers replaced by
 * this host (issue 31): the token step turns .env.example into a .env whose token the API accepts
 * beyond loopback; Redis is published on loopback only; the demo mission runs against the demo
 * repository built by the script the image runs, and is verified. KEDA: one trigger per list per
 * served runtime queue, summed (waiting + active), and a drain that waits for running missions.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/producers/http/api-tokens.js';
import { readApiConfig } from '../../src/producers/http/api-config.js';
import { runCli } from '../support/cli.js';
import { removeDir, tempDir } from '../support/temp.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DEPLOY = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
const temp = (prefix: string) => {
  const d = tempDir(prefix);
  dirs.push(d);
  return d;
};

/** The quick start's shell block of docs/deploy.md, line by line (comments stripped). */
function quickStart(): string[] {
  const block = /## Docker Compose[\s\S]*?```sh\n([\s\S]*?)```/.exec(DEPLOY)?.[1] ?? '';
  return block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
}

describe('the compose quick start', () => {
  it('the token step makes a .env whose token the API accepts on 0.0.0.0; .env.example alone is refused', () => {
    const dir = temp('uh-qs-');
    const steps = quickStart();
    expect(steps[0]).toBe('cp .env.example .env');
    const tokenStep = steps[1] as string;
    expect(tokenStep).toMatch(/^sed -i .*UH_API_TOKEN=.*openssl rand -hex 32/);
    copyFileSync(join(ROOT, '.env.example'), join(dir, '.env'));
    const envOf = () =>
      Object.fromEntries(
        readFileSync(join(dir, '.env'), 'utf8')
          .split('\n')
          .filter((l) => /^[A-Z_]+=/.test(l))
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      ) as Record<string, string>;
    // As shipped: no token, and compose refuses to interpolate an empty one.
    expect(envOf().UH_API_TOKEN).toBe('');
    expect(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8')).toMatch(/UH_API_TOKEN: .\$\{UH_API_TOKEN:\?/);
    expect(() => readApiConfig({ UH_API_TOKEN: 'change-me' }, '0.0.0.0')).toThrow(/UH_API_TOKEN/);
    execFileSync('bash', ['-c', tokenStep], { cwd: dir });
    const token = envOf().UH_API_TOKEN as string;
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(readApiConfig({ UH_API_TOKEN: token }, '0.0.0.0').tokens[0]?.sha256).toEqual(sha256(token));
  });

  it('publishes Redis on the host loopback only, so the documented --redis URL reaches it', () => {
    const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
      services: Record<string, { ports?: string[] }>;
    };
    expect(compose.services.redis?.ports).toEqual(['127.0.0.1:${UH_REDIS_PORT:-6379}:6379']);
    for (const [name, svc] of Object.entries(compose.services))
      for (const port of svc.ports ?? []) if (name !== 'api') expect(port, name).toMatch(/^127\.0\.0\.1:/);
    // With the ACL users (the default user is off) a host producer logs in as the producer role.
    expect(DEPLOY).toContain('--redis redis://uh-producer@127.0.0.1:6379');
    expect(DEPLOY).toContain('UH_REDIS_PASSWORD_FILE=./redis-secrets/producer');
  });

  it('the demo mission runs against the demo repository the image bakes, and is verified', async () => {
    const submit = quickStart().find((l) => l.includes('mission submit')) as string;
    expect(submit).toBe('docker compose exec api uh mission submit /opt/uh-hello/mission.yaml --wait');
    expect(readFileSync(join(ROOT, 'infra/docker/Dockerfile'), 'utf8')).toContain(
      'bash /tmp/hello/hello-repo.sh /opt/uh-hello /tmp/hello',
    );
    // The container part replaced: the same script builds the repository in a temp dir.
    const repo = join(temp('uh-hello-'), 'uh-hello');
    execFileSync('bash', [join(ROOT, 'scripts/hello-repo.sh'), repo, join(ROOT, 'examples/hello')]);
    const mission = readFileSync(join(repo, 'mission.yaml'), 'utf8');
    expect(mission).toContain('url: /opt/uh-hello');
    const local = join(temp('uh-hello-m-'), 'mission.yaml');
    writeFileSync(local, mission.replace('url: /opt/uh-hello', `url: ${repo}`));
    const state = temp('uh-hello-s-');
    const run = await runCli(['mission', 'run', local, '--json', '--state-dir', state], {
      cwd: repo,
      env: { UH_CACHE_DIR: temp('uh-hello-c-'), UH_ISOLATION: 'off' },
    });
    expect(run.code, run.stderr).toBe(0);
    const receipt = JSON.parse(run.stdout) as { status?: string; verdict?: string; receipt?: { verdict: string } };
    expect(receipt.receipt?.verdict ?? receipt.verdict).toBe('verified');
  });
});

describe('KEDA scaling', () => {
  const pools = ['worker-command.yaml', 'worker-codex.yaml', 'worker-pi.yaml'].map((file) => {
    const docs = parseAllDocuments(readFileSync(join(ROOT, 'infra/k8s', file), 'utf8')).map(
      (d) => d.toJS() as Record<string, any>,
    );
    return {
      file,
      deployment: docs.find((d) => d.kind === 'Deployment') as Record<string, any>,
      scaled: docs.find((d) => d.kind === 'ScaledObject') as Record<string, any>,
    };
  });

  it.each(pools)('$file: a wait and an active trigger per served queue, summed over the concurrency', (pool) => {
    const args = pool.deployment.spec.template.spec.containers[0].args as string[];
    const served = args.flatMap((a, i) => (args[i - 1] === '--runtime' ? [a] : []));
    const concurrency = args[args.indexOf('--concurrency') + 1];
    const triggers = pool.scaled.spec.triggers as Array<{ name: string; metadata: { listName: string } }>;
    expect(triggers.map((t) => t.metadata.listName).sort()).toEqual(
      served.flatMap((r) => [`{uh}:bull:runtime.${r}:active`, `{uh}:bull:runtime.${r}:wait`]).sort(),
    );
    const modifiers = pool.scaled.spec.advanced.scalingModifiers;
    expect(modifiers.formula.split(' + ').sort()).toEqual(triggers.map((t) => t.name).sort());
    expect(modifiers.target).toBe(concurrency);
  });

  it.each(pools)('$file: a removed pod drains its running missions (--grace wait, an hour of grace)', (pool) => {
    const spec = pool.deployment.spec.template.spec;
    const args = spec.containers[0].args as string[];
    expect(args[args.indexOf('--grace') + 1]).toBe('wait');
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(3600);
  });
});
