/**
 * Inline `uh mission run` (command runtime, one trivial edit) against its floor: a shell script
 * doing `git worktree add`, the same edit, `git diff`, `git worktree remove`. uh runs warm (a
 * pooled sandbox, reset: `UH_SANDBOX_POOL_SIZE=2`, primed by one run) and cold (the pool off:
 * a full checkout each time). Generated repositories: a tiny one, then `UH_BENCH_FILES` sizes
 * (default 5,000 files of 8 KiB, ~40 MB, and 50,000 of 1 KiB; `UH_BENCH_LARGE_ROUNDS`, default
 * 3, rounds beyond 5,000 files). Contenders interleave; medians and ratios from the same run are
 * printed, with the git subcommands one warm run starts (a `git` shim on PATH). Then where the
 * fixed cost of a tiny run goes.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtMs, interleave, median, printTable } from './bench-kit.js';

const UH = fileURLToPath(new URL('../../bin/uh.js', import.meta.url));
const ROUNDS = Number(process.env.UH_BENCH_ROUNDS ?? 9);

function sh(cwd: string, ...args: string[]): void {
  execFileSync(args[0] as string, args.slice(1), {
    cwd,
    stdio: 'ignore',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'b',
      GIT_AUTHOR_EMAIL: 'b@b',
      GIT_COMMITTER_NAME: 'b',
      GIT_COMMITTER_EMAIL: 'b@b',
    },
  });
}

export function makeRepo(root: string, files: number, bytesPerFile: number): string {
  const repo = join(root, `repo-${files}`);
  rmSync(repo, { recursive: true, force: true });
  mkdirSync(repo, { recursive: true });
  sh(repo, 'git', 'init', '-q', '-b', 'main');
  const line = 'lorem ipsum dolor sit amet, consectetur adipiscing elit ';
  for (let i = 0; i < files; i++) {
    const dir = join(repo, 'src', `d${i % 50}`);
    mkdirSync(dir, { recursive: true });
    // Unique content per file so git stores every blob (no dedup flattering either side).
    writeFileSync(
      join(dir, `f${i}.txt`),
      `${i}\n${line.repeat(Math.ceil(bytesPerFile / line.length))}`.slice(0, bytesPerFile),
    );
  }
  writeFileSync(join(repo, 'README.md'), '# bench\n');
  sh(repo, 'git', 'add', '-A');
  sh(repo, 'git', 'commit', '-q', '-m', 'bench repo');
  return repo;
}

const FLOOR = `set -e
wt="$1"
git worktree add --detach --quiet "$wt" HEAD
echo "edited" >> "$wt/README.md"
git -C "$wt" diff > "$wt.patch"
git worktree remove --force "$wt"
rm -f "$wt.patch"`;

/** Which git subcommands a run started: a `git` shim on PATH logs each call's subcommand. */
function gitShim(root: string): { dir: string; log: string } {
  const dir = join(root, 'git-shim');
  const log = join(root, 'git-calls.log');
  mkdirSync(dir, { recursive: true });
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  // The subcommand: the first argument that is not an option or an option's value (-c x=y).
  writeFileSync(
    join(dir, 'git'),
    `#!/bin/sh\nprev=\nfor a in "$@"; do case "$prev" in -c|-C) prev=; continue;; esac; case "$a" in -*) prev="$a";; *) echo "$a" >> "${log}"; break;; esac; done\nexec ${real} "$@"\n`,
    { mode: 0o755 },
  );
  return { dir, log };
}

async function benchRepo(
  root: string,
  name: string,
  repo: string,
  rounds: number,
): Promise<Record<string, string | number>> {
  const label = name.replace(/[^A-Za-z0-9]+/g, '-');
  const stateDir = join(root, `state-${label}`);
  const cacheDir = join(root, `cache-${label}`);
  const floorScript = join(root, 'floor.sh');
  writeFileSync(floorScript, FLOOR);
  let n = 0;
  const mission = (id: string) => {
    const path = join(root, `${label}-${id}.json`);
    writeFileSync(
      path,
      JSON.stringify({
        schema_version: 'uh.mission.v0',
        mission_id: 'bench',
        operation_id: id,
        title: 'bench',
        objective: 'append one line to README.md',
        repository: { url: repo, ref: 'main' },
        runtime: 'command',
        runtime_config_overrides: { command: { argv: ['sh', '-c', 'echo edited >> README.md'] } },
      }),
    );
    return path;
  };
  // Cold: the pool off (every run checks out the tree). Warm: the default pool, primed by one run.
  const runUh = (id: string, warm: boolean, extraEnv: Record<string, string> = {}) => {
    const r = spawnSync(process.execPath, [UH, 'mission', 'run', mission(id), '--json', '--state-dir', stateDir], {
      cwd: root,
      env: {
        ...process.env,
        UH_CACHE_DIR: cacheDir,
        UH_LOG_LEVEL: 'silent',
        UH_SANDBOX_POOL_SIZE: warm ? '2' : '0',
        ...extraEnv,
      },
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`uh mission run failed (${r.status}): ${r.stderr}`);
    const receipt = JSON.parse(r.stdout) as { timings_ms: Record<string, number>; changed_files: unknown[] };
    if (receipt.changed_files.length !== 1) throw new Error('the edit is missing from the receipt');
    return receipt;
  };
  runUh(`prime-${label}`, true); // clones the mirror once, and leaves one sandbox in the pool
  const shim = gitShim(root);
  runUh(`count-${label}`, true, { PATH: `${shim.dir}:${process.env.PATH ?? ''}` });
  const calls = readFileSync(shim.log, 'utf8').trim().split('\n');
  rmSync(shim.log, { force: true });
  const phases: Record<string, Record<string, number[]>> = { warm: {}, cold: {} };
  const uhRun = (kind: 'warm' | 'cold') => async () => {
    const receipt = runUh(`${label}-${kind}-${++n}`, kind === 'warm');
    for (const [k, v] of Object.entries(receipt.timings_ms)) (phases[kind]![k] ??= []).push(v);
  };
  const times = await interleave(rounds, {
    'uh warm': uhRun('warm'),
    'uh cold': uhRun('cold'),
    floor: async () => {
      const r = spawnSync('sh', [floorScript, join(root, `wt-${label}-${n}`)], { cwd: repo });
      if (r.status !== 0) throw new Error(`floor failed: ${r.stderr}`);
    },
  });
  const [warm, cold, floor] = [median(times['uh warm']!), median(times['uh cold']!), median(times.floor!)];
  const phaseText = (kind: string) =>
    ['sandbox', 'runtime', 'diff', 'total']
      .map((k) => `${k} ${median(phases[kind]![`${k}_ms`] ?? []).toFixed(0)}`)
      .join(', ');
  return {
    repository: name,
    'uh warm': fmtMs(warm),
    'uh cold': fmtMs(cold),
    floor: fmtMs(floor),
    'warm / floor': (warm / floor).toFixed(2),
    'cold / floor': (cold / floor).toFixed(2),
    'warm phases (ms)': phaseText('warm'),
    'cold phases (ms)': phaseText('cold'),
    'git calls (warm run)': `${calls.length}: ${calls.join(' ')}`,
  };
}

async function fixedCost(): Promise<void> {
  const times = await interleave(ROUNDS, {
    'node -e ""': async () => void spawnSync(process.execPath, ['-e', '']),
    'uh --version (CLI entry only)': async () => void spawnSync(process.execPath, [UH, '--version']),
    'uh mission run --help (run command imported)': async () =>
      void spawnSync(process.execPath, [UH, 'mission', 'run', '--help']),
  });
  printTable(
    'Fixed cost of the CLI (tiny repository)',
    Object.entries(times).map(([what, t]) => ({ what, median: fmtMs(median(t)) })),
  );
}

/** `UH_BENCH_FILES`: the repository sizes (files), comma-separated; default 5,000 and 50,000. */
function sizes(): number[] {
  return (process.env.UH_BENCH_FILES ?? '5000,50000')
    .split(',')
    .map((v) => Number(v.trim()))
    .filter((v) => Number.isInteger(v) && v > 0);
}

export async function runInlineVsFloor(): Promise<void> {
  const root = join(tmpdir(), `uh-bench-inline-${process.pid}`);
  mkdirSync(root, { recursive: true });
  try {
    const rows = [await benchRepo(root, 'tiny (4 files)', makeRepo(root, 3, 200), ROUNDS)];
    for (const files of sizes()) {
      // 8 KiB per file up to 5,000 files (as before); 1 KiB beyond, so 50,000 files stay ~50 MB.
      const bytes = files <= 5000 ? 8 * 1024 : 1024;
      const repo = makeRepo(root, files, bytes);
      const size = execFileSync('du', ['-sm', join(repo, 'src')], { encoding: 'utf8' }).split('\t')[0];
      const rounds = files > 5000 ? Math.min(ROUNDS, Number(process.env.UH_BENCH_LARGE_ROUNDS ?? 3)) : ROUNDS;
      console.log(
        `repository: ${files + 1} files, ${size} MB of sources; ${rounds} rounds, interleaved; load: ${loadavg()
          .map((l) => l.toFixed(1))
          .join(' ')}`,
      );
      rows.push(await benchRepo(root, `${files} files`, repo, rounds));
    }
    console.log(
      `load after: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    printTable(
      'Inline mission run, warm (pooled sandbox) and cold, vs floor (git worktree add + edit + git diff + git worktree remove)',
      rows,
    );
    await fixedCost();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
