/**
 * codex runtime, end to end, on the same machine in the same run:
 *   ours      `uh mission run <mission> --json` inline (worktree sandbox at the base commit,
 *             codex exec, diff, scope, receipt, sandbox removed), one process
 *   ours, resident uh  the same command line, handed by bin/uh.js to a resident uh (`uh daemon
 *             start`, docs/resident.md) started with the same environment: the run skips uh's start-up
 *   ours, overlay sandbox  the same with `UH_SANDBOX_BACKEND=auto` (a copy-on-write sandbox over
 *             the shared base checkout, docs/sandboxes.md), where the host mounts overlays; for
 *             reference (the default backend is the worktree)
 *   uh-0.9.0  Ultimate Harness 0.9.0 (npm, run with node), its codex adapter with `cli_command`
 *             pointed at the same fake codex, in its documented flow: `uh sandbox create` →
 *             `uh mission run --runtime codex` → `uh sandbox discard --force`; and, for
 *             reference, `uh mission run` in place (no sandbox, in a fresh clone each round)
 * The agent is test/fixtures/bin/fake-codex (scenario success: edits hello.txt, writes -o).
 * Targets: ours ≤ 0.5× uh-0.9.0 in place (issue 16; ≤ 0.35× in issue 32), and ≤ 0.5× its sandbox flow.
 *
 * Every process runs without NODE_EXTRA_CA_CERTS: a host that sets it (this one does) makes each
 * node start load that CA bundle, ~70 ms here, which would weigh on each side by its number of
 * node processes (and uh gives its agent a clean environment), not by its own work.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { fmtMs, median, percentile, printTable } from './bench-kit.js';

const run = promisify(execFile);

function withoutExtraCaCerts(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_EXTRA_CA_CERTS: _, ...rest } = env;
  return rest;
}
// Compiled to dist/bench/: the repository root is two levels up.
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FAKE_CODEX = join(ROOT, 'test/fixtures/bin/fake-codex');
const UH = join(ROOT, 'bin/uh.js');
const UH09_VERSION = '0.9.0';
const UH09_DIR = join(ROOT, '.cache/bench', `uh-${UH09_VERSION}`);
const UH09_CLI = join(UH09_DIR, 'node_modules/@agenticengineeringagency/ultimate-harness/dist/cli.js');
const ROUNDS = Number(process.env.UH_BENCH_ROUNDS ?? 7);

const HOST_ENV = withoutExtraCaCerts(process.env);
const GIT_ENV = {
  ...HOST_ENV,
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@uh.invalid',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@uh.invalid',
};
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: GIT_ENV, stdio: 'pipe' });

/** Ultimate Harness 0.9.0 from the npm registry into .cache/bench (once). It runs under node. */
function ensureUh09(): void {
  if (existsSync(UH09_CLI)) return;
  mkdirSync(UH09_DIR, { recursive: true });
  writeFileSync(join(UH09_DIR, 'package.json'), '{"name":"uh-bench-baseline","private":true}\n');
  console.log(`installing @agenticengineeringagency/ultimate-harness@${UH09_VERSION} into ${UH09_DIR}`);
  execFileSync(
    'npm',
    [
      'install',
      '--prefix',
      UH09_DIR,
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      `@agenticengineeringagency/ultimate-harness@${UH09_VERSION}`,
    ],
    { stdio: 'inherit' },
  );
}

function makeRepo(dir: string): void {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'README.md'), '# bench\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'initial');
}

/** A repo initialised for UH 0.9.0: `.harness/`, the codex manifest on the fake, one mission. */
function makeUh09Repo(dir: string): void {
  makeRepo(dir);
  const uh09 = (...args: string[]) =>
    execFileSync(process.execPath, [UH09_CLI, ...args], { cwd: dir, env: HOST_ENV, stdio: 'pipe' });
  uh09('init', '--root', '.');
  uh09('adapter', 'add', 'codex', '--root', '.');
  const manifest = join(dir, '.harness/adapters/codex.yaml');
  writeFileSync(manifest, readFileSync(manifest, 'utf8').replace('cli_command: codex', `cli_command: ${FAKE_CODEX}`));
  uh09(
    'mission',
    'create',
    'bench-1',
    '--title',
    'Create hello.txt',
    '--workflow',
    'bugfix-contained',
    '--objective',
    'Create hello.txt containing a greeting.',
    '--root',
    '.',
  );
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'harness');
}

function ourMission(dir: string, repo: string, n: number): string {
  const file = join(dir, `mission-${n}.yaml`);
  writeFileSync(
    file,
    [
      'schema_version: uh.mission.v0',
      'mission_id: bench-codex',
      `operation_id: bench-codex-${n}`,
      'title: Create hello.txt',
      'objective: Create hello.txt containing a greeting.',
      'repository:',
      `  url: ${repo}`,
      '  ref: HEAD',
      'runtime: codex',
      'runtime_config_overrides:',
      '  codex:',
      `    binary: ${FAKE_CODEX}`,
      'scope:',
      '  allowed_change_globs: [hello.txt]',
      'timeout_seconds: 120',
      '',
    ].join('\n'),
  );
  return file;
}

/** `uh daemon start` with `env`, once its socket answers (polled, 10 s at most). */
async function startResident(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(process.execPath, [UH, 'daemon', 'start'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const deadline = Date.now() + 10_000;
  for (;;) {
    const status = await run(process.execPath, [UH, 'daemon', 'status'], { env }).then(
      () => true,
      () => false,
    );
    if (status) return child;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('uh daemon start did not come up in 10 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** How many runs the resident uh served. */
async function servedByResident(env: NodeJS.ProcessEnv): Promise<number> {
  const { stdout } = await run(process.execPath, [UH, 'daemon', 'status', '--json'], { env });
  return (JSON.parse(stdout) as { served: number }).served;
}

export async function runCodexVsUh09(): Promise<void> {
  ensureUh09();
  const work = mkdtempSync(join(tmpdir(), 'uh-bench-codex-'));
  try {
    const ourRepo = join(work, 'ours-repo');
    makeRepo(ourRepo);
    const ourEnv = { ...HOST_ENV, UH_CACHE_DIR: join(work, 'ours-cache'), FAKE_CODEX_SCENARIO: 'success' };
    const ourState = join(work, 'ours-state');
    const theirSandboxRepo = join(work, 'uh09-sandbox');
    makeUh09Repo(theirSandboxRepo);
    const inPlace = Array.from({ length: ROUNDS + 1 }, (_, i) => {
      const dir = join(work, `uh09-inplace-${i}`);
      git(work, 'clone', '-q', theirSandboxRepo, dir);
      return dir;
    });
    const theirEnv = { ...HOST_ENV, FAKE_CODEX_SCENARIO: 'success' };
    const uh09 = (cwd: string, ...args: string[]) =>
      run(process.execPath, [UH09_CLI, ...args], { cwd, env: theirEnv, maxBuffer: 64 * 1024 * 1024 });

    let ourN = 0;
    let sbN = 0;
    let ipN = 0;
    /** One inline `uh mission run`, one process; its receipt's sandbox backend. */
    const ourRun = async (env: NodeJS.ProcessEnv): Promise<string> => {
      const mission = ourMission(work, ourRepo, ourN++);
      const { stdout } = await run(
        process.execPath,
        [UH, 'mission', 'run', mission, '--json', '--state-dir', ourState],
        {
          env,
          maxBuffer: 64 * 1024 * 1024,
        },
      );
      const receipt = JSON.parse(stdout) as {
        status: string;
        changed_files: Array<{ path: string }>;
        sandbox?: { backend?: string };
      };
      if (receipt.status !== 'completed' || receipt.changed_files[0]?.path !== 'hello.txt')
        throw new Error(`ours: unexpected receipt ${stdout.slice(0, 500)}`);
      return receipt.sandbox?.backend ?? '';
    };
    const overlayEnv = { ...ourEnv, UH_SANDBOX_BACKEND: 'auto' };
    // The resident uh has a cache dir of its own, so the one-shot rows never hand over to it.
    const residentEnv = { ...ourEnv, UH_CACHE_DIR: join(work, 'resident-cache') };
    const resident = await startResident(residentEnv);
    let residentRuns = 0;
    const contenders: Record<string, () => Promise<unknown>> = {
      // The real inline `uh mission run` from main (merged into this branch), one process per run.
      ours: () => ourRun(ourEnv),
      'ours, resident uh': async () => {
        residentRuns++;
        await ourRun(residentEnv);
      },
      'ours, overlay sandbox': () => ourRun(overlayEnv),
      'uh-0.9.0 sandbox': async () => {
        const sb = `sb-${sbN++}`;
        await uh09(theirSandboxRepo, 'sandbox', 'create', sb, '--mission', 'bench-1', '--root', '.');
        const { stdout } = await uh09(
          theirSandboxRepo,
          'mission',
          'run',
          '.harness/missions/bench-1/mission.yaml',
          '--runtime',
          'codex',
        );
        if (!stdout.includes(`Sandbox: ${sb}`))
          throw new Error(`uh-0.9.0 did not run in its sandbox: ${stdout.slice(0, 300)}`);
        await uh09(theirSandboxRepo, 'sandbox', 'discard', sb, '--force', '--root', '.');
      },
      'uh-0.9.0 in place': async () => {
        await uh09(inPlace[ipN++]!, 'mission', 'run', '.harness/missions/bench-1/mission.yaml', '--runtime', 'codex');
      },
    };
    // One untimed warm-up each (module caches, git mirror of ours, the overlay's base checkout).
    for (const fn of Object.values(contenders)) await fn();
    const overlayHere = (await ourRun(overlayEnv)) === 'overlay';
    if (!overlayHere) console.log('(no overlay sandbox on this host: `uh doctor` says why; that row is left out)');
    // Ours and uh-0.9.0 in place run next to each other in every round, whichever way round, so a
    // round's pair shares the machine's state (this host's speed drifts by 20 % within a minute).
    const names = [
      'ours',
      'uh-0.9.0 in place',
      'ours, resident uh',
      'uh-0.9.0 sandbox',
      ...(overlayHere ? ['ours, overlay sandbox'] : []),
    ];
    const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? names : [...names].reverse();
      for (const name of order) {
        const start = process.hrtime.bigint();
        await contenders[name]!();
        times[name]!.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
    }
    const served = await servedByResident(residentEnv);
    resident.kill('SIGTERM');
    if (served !== residentRuns) throw new Error(`the resident uh served ${served} of ${residentRuns} runs`);
    const ours = median(times.ours!);
    printTable(
      `codex: inline uh mission run vs Ultimate Harness ${UH09_VERSION} (fake codex, ${ROUNDS} rounds, node ${process.version})`,
      [
        ...names.map((name) => ({
          contender: name,
          median: fmtMs(median(times[name]!)),
          p90: fmtMs(percentile(times[name]!, 90)),
          'ours / this': (ours / median(times[name]!)).toFixed(2),
        })),
      ],
    );
    const inPlaceRatio = ours / median(times['uh-0.9.0 in place']!);
    const sandboxed = ours / median(times['uh-0.9.0 sandbox']!);
    const paired = times.ours!.map((t, i) => t / times['uh-0.9.0 in place']![i]!);
    const verdict = (target: number) => `≤ ${target.toFixed(2)}: ${inPlaceRatio <= target ? 'met' : 'NOT met'}`;
    console.log(
      `\nratio ours / uh-0.9.0 in place: ${inPlaceRatio.toFixed(3)} (issue 16's target ${verdict(0.5)}; issue 32's ${verdict(0.35)})`,
    );
    console.log(
      `  the same, round by round (each round's pair run back to back): median ${median(paired).toFixed(3)}, ${Math.min(...paired).toFixed(2)}–${Math.max(...paired).toFixed(2)}`,
    );
    const residentRatio = median(times['ours, resident uh']!) / median(times['uh-0.9.0 in place']!);
    const residentPaired = times['ours, resident uh']!.map((t, i) => t / times['uh-0.9.0 in place']![i]!);
    console.log(
      `ratio ours with a resident uh / uh-0.9.0 in place: ${residentRatio.toFixed(3)} (issue 32's target ≤ 0.35: ${residentRatio <= 0.35 ? 'met' : 'NOT met'}; ${served} of ${residentRuns} runs served by it)`,
    );
    console.log(
      `  the same, round by round: median ${median(residentPaired).toFixed(3)}, ${Math.min(...residentPaired).toFixed(2)}–${Math.max(...residentPaired).toFixed(2)}`,
    );
    console.log(
      `ratio ours / uh-0.9.0 sandbox flow (both with worktree sandboxes): ${sandboxed.toFixed(2)} (target ≤ 0.50: ${sandboxed <= 0.5 ? 'met' : 'NOT met'})`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
