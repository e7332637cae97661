/**
 * The diff phase of a mission whose agent writes many new files (issue 34: 40,000 took 71 s to
 * diff, `git add` with one pathspec per file being quadratic), against a plain
 * `git add -A && git diff --cached --binary` of the same files in a fresh clone. uh: an inline
 * `uh mission run` (command runtime, a node one-liner writing `UH_BENCH_DIFF_FILES` files, default
 * 40,000, unique content, 200 directories), its figure the receipt's `timings_ms.diff_ms`. Rounds
 * (`UH_BENCH_DIFF_ROUNDS`, default 3) interleave; medians, and their ratio, from the same run.
 * Target: ratio ≤ 2.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtMs, interleave, median, printTable } from './bench-kit.js';

const UH = fileURLToPath(new URL('../../bin/uh.js', import.meta.url));
const FILES = Number(process.env.UH_BENCH_DIFF_FILES ?? 40_000);
const ROUNDS = Number(process.env.UH_BENCH_DIFF_ROUNDS ?? 3);
const TARGET = 2;
const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'b',
  GIT_AUTHOR_EMAIL: 'b@b',
  GIT_COMMITTER_NAME: 'b',
  GIT_COMMITTER_EMAIL: 'b@b',
};

/** The agent: `files` new files, unique content, under `gen/` in 200 directories. */
const writer = (files: number) =>
  `const fs=require('fs');for(let d=0;d<200;d++)fs.mkdirSync('gen/d'+d,{recursive:true});` +
  `for(let i=0;i<${files};i++)fs.writeFileSync('gen/d'+(i%200)+'/f'+i+'.txt','file '+i+'\\n');`;

function makeRepo(root: string): string {
  const repo = join(root, 'repo');
  mkdirSync(join(repo, 'src'), { recursive: true });
  writeFileSync(join(repo, 'README.md'), '# bench\n');
  writeFileSync(join(repo, 'src', 'app.ts'), 'export {};\n');
  for (const args of [
    ['init', '-q', '-b', 'main'],
    ['add', '-A'],
    ['commit', '-q', '-m', 'base'],
  ])
    execFileSync('git', args, { cwd: repo, env: GIT_ENV, stdio: 'ignore' });
  return repo;
}

export async function runDiffCapture(): Promise<void> {
  const root = join(tmpdir(), `uh-bench-diff-${process.pid}`);
  mkdirSync(root, { recursive: true });
  try {
    const repo = makeRepo(root);
    const stateDir = join(root, 'state');
    const env = {
      ...process.env,
      UH_CACHE_DIR: join(root, 'cache'),
      UH_LOG_LEVEL: 'silent',
      UH_SANDBOX_POOL_SIZE: '0',
    };
    let n = 0;
    const diffMs: number[] = [];
    const uhRun = async () => {
      const path = join(root, `mission-${++n}.json`);
      writeFileSync(
        path,
        JSON.stringify({
          schema_version: 'uh.mission.v0',
          mission_id: 'bench-diff',
          operation_id: `bench-diff-${process.pid}-${n}`,
          title: 'many new files',
          objective: 'write many files',
          repository: { url: repo, ref: 'main' },
          runtime: 'command',
          runtime_config_overrides: { command: { argv: [process.execPath, '-e', writer(FILES)] } },
          timeout_seconds: 3600,
        }),
      );
      const r = spawnSync(process.execPath, [UH, 'mission', 'run', path, '--json', '--state-dir', stateDir], {
        cwd: root,
        env,
        encoding: 'utf8',
        maxBuffer: 256 * 1024 * 1024,
      });
      if (r.status !== 0) throw new Error(`uh mission run failed (${r.status}): ${r.stderr}`);
      const receipt = JSON.parse(r.stdout) as { timings_ms: Record<string, number>; changed_files: unknown[] };
      if (receipt.changed_files.length !== FILES)
        throw new Error(`the receipt lists ${receipt.changed_files.length} files`);
      diffMs.push(receipt.timings_ms.diff_ms ?? Number.NaN);
    };
    const plainMs: number[] = [];
    const plainRun = async () => {
      const clone = join(root, `plain-${++n}`);
      execFileSync('git', ['clone', '-q', repo, clone], { env: GIT_ENV, stdio: 'ignore' });
      execFileSync(process.execPath, ['-e', writer(FILES)], { cwd: clone });
      const start = process.hrtime.bigint();
      execFileSync('sh', ['-c', 'git add -A && git diff --cached --binary > ../plain.patch'], { cwd: clone });
      plainMs.push(Number(process.hrtime.bigint() - start) / 1e6);
      rmSync(clone, { recursive: true, force: true });
    };
    const load = () =>
      loadavg()
        .map((l) => l.toFixed(1))
        .join(' ');
    console.log(`diff capture: ${FILES} new files, ${ROUNDS} rounds, interleaved; load: ${load()}`);
    const wall = await interleave(ROUNDS, { uh: uhRun, plain: plainRun });
    const ratio = median(diffMs) / median(plainMs);
    printTable(`Diff phase of ${FILES} new files vs plain git add -A && git diff --cached (load after: ${load()})`, [
      {
        'uh diff phase (receipt diff_ms)': fmtMs(median(diffMs)),
        'plain add -A + diff --cached': fmtMs(median(plainMs)),
        '**ratio**': ratio.toFixed(2),
        target: `≤ ${TARGET} ${ratio <= TARGET ? '(met)' : '(NOT met)'}`,
        'uh whole run (wall)': fmtMs(median(wall.uh!)),
        'diff_ms per round': diffMs.map((v) => v.toFixed(0)).join(', '),
        'plain per round': plainMs.map((v) => v.toFixed(0)).join(', '),
      },
    ]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
