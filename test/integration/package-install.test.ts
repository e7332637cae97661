/**
 * The package as a consumer gets it: `npm pack` (of the built tree; run `npm run build` first),
 * `npm install <tarball>` into an empty project from the npm cache (no devDependencies needed),
 * its `uh` runs the hello demo, and a small TypeScript program type-checks against the exported
 * client and runs it against a worker (the installed `uh worker start`) on real Redis.
 */
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git } from '../support/git-repo.js';
import { ACTION_PATH } from '../support/action-runner.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';

let project: string;
const cacheDir = tempDir('uh-consumer-cache-');
let redis: TestRedis;
const dirs: string[] = [cacheDir];

function sh(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}): string {
  return execFileSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, UH_LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 50_000,
  });
}

beforeAll(async () => {
  redis = await startTestRedis('package');
  const packDir = tempDir('uh-pack-');
  project = tempDir('uh-consumer-');
  dirs.push(packDir, project);
  const packed = JSON.parse(
    sh('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packDir], ACTION_PATH),
  ) as Array<{ filename: string }>;
  const tarball = join(packDir, packed[0]?.filename as string);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }),
  );
  sh(
    'npm',
    [
      'install',
      tarball,
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--omit=dev',
      '--ignore-scripts',
      '--no-update-notifier',
    ],
    project,
  );
  git(project, 'init', '-q', '-b', 'main');
  cpSync(join(project, 'node_modules/ultimate-harness/examples'), join(project, 'examples'), { recursive: true });
  writeFileSync(join(project, '.gitignore'), 'node_modules/\n');
  git(project, 'add', '-A');
  git(project, '-c', 'user.name=t', '-c', 'user.email=t@t.invalid', 'commit', '-q', '-m', 'consumer');
}, 60_000);

afterAll(async () => {
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

describe('the npm pack tarball', () => {
  it('installs into an empty project whose uh runs the hello demo to a verified receipt', () => {
    const out = sh(
      join(project, 'node_modules/.bin/uh'),
      ['mission', 'run', 'examples/hello/mission.yaml', '--json'],
      project,
      { UH_CACHE_DIR: cacheDir },
    );
    expect(JSON.parse(out)).toMatchObject({
      operation_id: 'hello-001',
      status: 'completed',
      verdict: 'verified',
      exit_code: 0,
    });
    expect(git(project, 'status', '--porcelain')).toBe('');
  }, 30_000);

  it('exports a typed client: a program type-checks and runs submit, wait, collect, and the CLI errors', async () => {
    const program = `
import { createClient, exitCodeOf, UhError, EXIT, type Settled } from 'ultimate-harness/client';
import { readFileSync } from 'node:fs';
const uh = await createClient({ redisUrl: process.env.REDIS_URL as string, prefix: process.env.UH_REDIS_PREFIX as string, stateDir: '.harness' });
try {
  const mission = { schema_version: 'uh.mission.v0', mission_id: 'hello', operation_id: 'client-001', title: 'greet', objective: 'Write greeting.txt.',
    repository: { url: process.cwd(), ref: 'HEAD' }, runtime: 'command', runtime_config_overrides: { command: { argv: ['node', 'examples/hello/agent.mjs'] } },
    scope: { allowed_change_globs: ['greeting.txt'] }, verification: [{ name: 'greeting', argv: ['node', '-e', "require('fs').statSync('greeting.txt')"], timeout_seconds: 30 }], timeout_seconds: 60 };
  const submitted = await uh.submit(mission);
  const settled: Settled = await uh.wait(submitted.operationId, { timeoutMs: 30000 });
  const collected = await uh.collect(submitted.operationId, 'collected');
  const diff = readFileSync('collected/diff.patch', 'utf8');
  let invalid = 0;
  try { await uh.submit({ ...mission, timeout_seconds: -1 }); } catch (e) { if (UhError.isInstance(e)) invalid = exitCodeOf(e); }
  let missing = '';
  try { await uh.attach('no-such-op'); } catch (e) { if (UhError.isInstance(e)) missing = e.kind; }
  console.log(JSON.stringify({ exitCode: settled.exitCode, ok: settled.exitCode === EXIT.ok, verdict: settled.receipt?.verdict, files: collected.files.length, greeting: diff.includes('greeting.txt'), invalid, missing }));
} finally {
  await uh.close();
}
`;
    writeFileSync(join(project, 'program.ts'), program);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2023',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck: true,
          outDir: 'out',
          typeRoots: [join(ACTION_PATH, 'node_modules/@types')],
          types: ['node'],
        },
        files: ['program.ts'],
      }),
    );
    sh(process.execPath, [join(ACTION_PATH, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], project);
    const prefix = redis.prefix('consumer');
    const env = { REDIS_URL: redis.url, UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cacheDir, UH_HEARTBEAT_MS: '500' };
    const worker = spawn(
      join(project, 'node_modules/.bin/uh'),
      ['worker', 'start', '--runtime', 'command', '--state-dir', tempDir('uh-consumer-worker-')],
      { cwd: project, env: { ...process.env, ...env, UH_LOG_LEVEL: 'silent' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        let out = '';
        const onData = (c: Buffer) => ((out += c), out.includes('ready') && resolve());
        worker.stdout.on('data', onData);
        worker.stderr.on('data', onData);
        worker.on('close', () => reject(new Error(`worker exited: ${out}`)));
      });
      const result = JSON.parse(
        sh(process.execPath, ['out/program.js'], project, env).trim().split('\n').pop() as string,
      );
      expect(result).toEqual({
        exitCode: 0,
        ok: true,
        verdict: 'verified',
        files: expect.any(Number),
        greeting: true,
        invalid: 2,
        missing: 'not_found',
      });
      expect(result.files).toBeGreaterThanOrEqual(4);
    } finally {
      worker.kill('SIGKILL');
    }
  }, 60_000);
});
