/**
 * Inline `uh mission run` (command runtime, one trivial edit) against its floor: a shell script
 * doing `git worktree add`, the same edit, `git diff`, `git worktree remove`. Two generated
 * repositories: a tiny one and one of 5,000 files (~40 MB). Contenders interleave; medians
 * and their ratio are printed. Then where the fixed cost of a tiny run goes.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtMs, interleave, median, printTable } from './bench-kit.js';

const UH = fileURLToPath(new URL('../../bin/uh.js', import.meta.url));
const ROUNDS = Number(process.env.UH_BENCH_ROUNDS ?? 9);

function sh(cwd: string, ...args: string[]): void {
  execFileSync(args[0] as string, args.slice(1), { cwd, stdio: 'ignore', env: { ...process.env, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@b', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@b' } });
}

function makeRepo(root: string, files: number, bytesPerFile: number): string {
  const repo = join(root, `repo-${files}`);
  mkdirSync(repo, { recursive: true });
  sh(repo, 'git', 'init', '-q', '-b', 'main');
  const line = 'lorem ipsum dolor sit amet, consectetur adipiscing elit ';
  for (let i = 0; i < files; i++) {
    const dir = join(repo, 'src', `d${i % 50}`);
    mkdirSync(dir, { recursive: true });
    // Unique content per file so git stores every blob (no dedup flattering either side).
    writeFileSync(join(dir, `f${i}.txt`), `${i}\n${line.repeat(Math.ceil(bytesPerFile / line.length))}`.slice(0, bytesPerFile));
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

async function benchRepo(root: string, label: string, repo: string): Promise<Record<string, string | number>> {
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
  const runUh = (id: string) => {
    const r = spawnSync(process.execPath, [UH, 'mission', 'run', mission(id), '--json', '--state-dir', stateDir], {
      cwd: root,
      env: { ...process.env, UH_CACHE_DIR: cacheDir, UH_LOG_LEVEL: 'silent' },
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`uh mission run failed (${r.status}): ${r.stderr}`);
    return JSON.parse(r.stdout) as { timings_ms: Record<string, number>; changed_files: unknown[] };
  };
  runUh(`warm-${label}`); // the first run clones the mirror once; every later run reuses it
  const phases: Record<string, number[]> = {};
  const times = await interleave(ROUNDS, {
    uh: async () => {
      const receipt = runUh(`${label}-${++n}`);
      for (const [k, v] of Object.entries(receipt.timings_ms)) (phases[k] ??= []).push(v);
    },
    floor: async () => {
      const r = spawnSync('sh', [floorScript, join(root, `wt-${label}-${n}`)], { cwd: repo });
      if (r.status !== 0) throw new Error(`floor failed: ${r.stderr}`);
    },
  });
  const uh = median(times.uh!);
  const floor = median(times.floor!);
  return {
    repository: label,
    'uh mission run (median)': fmtMs(uh),
    'floor script (median)': fmtMs(floor),
    ratio: (uh / floor).toFixed(2),
    'uh phases (median ms)': Object.entries(phases)
      .map(([k, v]) => `${k.replace('_ms', '')} ${median(v).toFixed(0)}`)
      .join(', '),
  };
}

async function fixedCost(): Promise<void> {
  const times = await interleave(ROUNDS, {
    'node -e ""': async () => void spawnSync(process.execPath, ['-e', '']),
    'uh --version (CLI entry only)': async () => void spawnSync(process.execPath, [UH, '--version']),
    'uh mission run --help (run command imported)': async () => void spawnSync(process.execPath, [UH, 'mission', 'run', '--help']),
  });
  printTable(
    'Fixed cost of the CLI (tiny repository)',
    Object.entries(times).map(([what, t]) => ({ what, median: fmtMs(median(t)) })),
  );
}

export async function runInlineVsFloor(): Promise<void> {
  const root = join(tmpdir(), `uh-bench-inline-${process.pid}`);
  mkdirSync(root, { recursive: true });
  try {
    const tiny = makeRepo(root, 3, 200);
    const large = makeRepo(root, 5000, 8 * 1024);
    const size = execFileSync('du', ['-sm', join(large, 'src')], { encoding: 'utf8' }).split('\t')[0];
    console.log(`\nrepositories: tiny = 4 files; large = 5,001 files, ${size} MB of sources (rounds: ${ROUNDS}, interleaved)`);
    const rows = [await benchRepo(root, 'tiny', tiny), await benchRepo(root, 'large', large)];
    printTable('Inline mission run vs floor (git worktree add + edit + git diff + git worktree remove)', rows);
    await fixedCost();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
