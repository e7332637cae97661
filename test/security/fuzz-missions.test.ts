/**
 * Hundreds of bad missions, each refused with exit 2 (3 where the network says no) and ONE line
 * naming the field, fast, in bounded memory, writing nothing. All of them go through the same
 * functions the CLI (loadMissionFile) and the HTTP API (parseMissionBody) use; a sample goes
 * through the real `uh mission run` binary.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { loadMissionFile, parseMissionBody, repositoryPolicy } from '../../src/shared/contracts/load-mission.js';
import { errorLines, exitCodeForError } from '../../src/producers/cli/cli-kit.js';
import { UhError } from '../../src/shared/errors.js';
import { runCli } from '../support/cli.js';
import { removeDir, tempDir } from '../support/temp.js';
import { buildCorpus, DOCUMENT, validMission, type BadMission } from './fuzz-corpus.js';

const root = tempDir('uh-fuzz-');
afterAll(() => removeDir(root));

const CLI = repositoryPolicy({ allowLocalRepos: undefined, allowHttpRepos: false }, 'cli');
const HTTP = repositoryPolicy({ allowLocalRepos: undefined, allowHttpRepos: false }, 'http');

/** What the CLI or the API would do with this text: the refusal, or null when it was accepted. */
function refusal(c: BadMission, index: number): { error: unknown; source: string } {
  try {
    if (c.format === 'http') {
      parseMissionBody(c.text, root, HTTP);
      return { error: null, source: 'body' };
    }
    const path = join(root, 'in', `case-${index}.${c.format}`);
    writeFileSync(path, c.text);
    loadMissionFile(path, CLI);
    return { error: null, source: path };
  } catch (error) {
    return { error, source: c.format === 'http' ? 'body' : join(root, 'in', `case-${index}.${c.format}`) };
  }
}

describe('fuzz corpus of bad missions', () => {
  const corpus = buildCorpus();
  mkdirSync(join(root, 'in'), { recursive: true });

  it('has at least 300 cases in YAML, JSON and HTTP bodies', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(300);
    for (const format of ['yaml', 'json', 'http'])
      expect(corpus.filter((c) => c.format === format).length).toBeGreaterThan(80);
  });

  it('refuses every case with exit 2 and one line naming the field, each in under 2 s, heap growth under 100 MB', () => {
    const heapBefore = process.memoryUsage().heapUsed;
    let heapPeak = heapBefore;
    const failures: string[] = [];
    let slowest = 0;
    corpus.forEach((c, i) => {
      const started = performance.now();
      const { error, source } = refusal(c, i);
      const ms = performance.now() - started;
      slowest = Math.max(slowest, ms);
      heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
      const label = `#${i} ${c.format} ${c.name}`;
      if (error === null) return failures.push(`${label}: accepted`);
      if (!UhError.isInstance(error)) return failures.push(`${label}: untyped ${String(error)}`);
      const lines = errorLines(error);
      const want = c.field === DOCUMENT ? source : c.field;
      if (exitCodeForError(error) !== 2) failures.push(`${label}: exit ${exitCodeForError(error)}`);
      if (lines.length !== 1) failures.push(`${label}: ${lines.length} lines: ${lines.join(' | ').slice(0, 300)}`);
      if (!lines[0]?.includes(want)) failures.push(`${label}: does not name ${want}: ${lines[0]?.slice(0, 300)}`);
      if (ms > 2000) failures.push(`${label}: took ${Math.round(ms)} ms`);
      return undefined;
    });
    expect(failures).toEqual([]);
    expect(slowest).toBeLessThan(2000);
    expect(heapPeak - heapBefore).toBeLessThan(100 * 1024 * 1024);
    // Validation writes nothing: the input folder holds only the cases themselves.
    expect(readdirSync(root).sort()).toEqual(['in']);
  });
});

function repo(): string {
  const dir = join(root, 'repo');
  if (existsSync(dir)) return dir;
  mkdirSync(dir);
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'a.txt'), 'a\n');
  git('add', '.');
  git('-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-q', '-m', 'init');
  return dir;
}

function missionFile(name: string, patch: (m: Record<string, any>) => void, format: 'yaml' | 'json' = 'yaml'): string {
  const m = validMission();
  m.repository.url = repo();
  patch(m);
  const path = join(root, 'cli', `${name}.${format}`);
  mkdirSync(join(root, 'cli'), { recursive: true });
  writeFileSync(path, format === 'json' ? JSON.stringify(m) : toYaml(m));
  return path;
}

describe('a sample through the real uh mission run', () => {
  const samples: Array<[string, () => string, number, string]> = [
    ['/dev/zero', () => '/dev/zero', 2, '/dev/zero'],
    ['a directory', () => root, 2, root],
    [
      'a FIFO',
      () => {
        const p = join(root, 'fifo.yaml');
        if (!existsSync(p)) execFileSync('mkfifo', [p]);
        return p;
      },
      2,
      'fifo.yaml',
    ],
    ['a missing file', () => join(root, 'missing.yaml'), 2, 'missing.yaml'],
    [
      'url with a leading -',
      () => missionFile('dash', (m) => (m.repository.url = '--upload-pack=touch /tmp/uh-pwned')),
      2,
      'repository.url',
    ],
    [
      'ext:: url',
      () => missionFile('ext', (m) => (m.repository.url = 'ext::sh -c touch% /tmp/uh-pwned')),
      2,
      'repository.url',
    ],
    [
      'file:///nonexistent',
      () => missionFile('file', (m) => (m.repository.url = 'file:///nonexistent/uh-fuzz')),
      2,
      'repository.url',
    ],
    [
      'unreachable remote',
      () => missionFile('unreachable', (m) => (m.repository.url = 'https://127.0.0.1:1/r.git')),
      3,
      'repository.url',
    ],
    [
      'NUL in ref (JSON)',
      () => missionFile('nul', (m) => (m.repository.ref = 'ma\u0000in'), 'json'),
      2,
      'repository.ref',
    ],
    ['ref option', () => missionFile('refopt', (m) => (m.repository.ref = '--output=/tmp/x')), 2, 'repository.ref'],
    [
      '100k-char glob',
      () => missionFile('glob', (m) => (m.scope.allowed_change_globs = ['*'.repeat(100_000)])),
      2,
      'scope.allowed_change_globs[0]',
    ],
    [
      'escape in title',
      () => missionFile('esc', (m) => (m.title = `\u001b]0;pwned\u0007${'x'.repeat(300)}`)),
      2,
      'title',
    ],
    ['unknown key', () => missionFile('unknown', (m) => (m.objectve = 'x')), 2, 'objectve'],
    [
      'duplicate JSON key',
      () => {
        const p = join(root, 'cli', 'dup.json');
        writeFileSync(p, '{"title":"a","title":"b"}');
        return p;
      },
      2,
      'title',
    ],
    [
      '__proto__ in JSON',
      () => {
        const p = join(root, 'cli', 'proto.json');
        writeFileSync(p, '{"__proto__":{"x":1}}');
        return p;
      },
      2,
      '__proto__',
    ],
    [
      '100k YAML keys',
      () => {
        const p = join(root, 'cli', 'keys.yaml');
        writeFileSync(p, Array.from({ length: 100_000 }, (_, i) => `k${i}: 1`).join('\n'));
        return p;
      },
      2,
      'keys',
    ],
    [
      'billion laughs',
      () => {
        const p = join(root, 'cli', 'laughs.yaml');
        writeFileSync(
          p,
          `a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n`,
        );
        return p;
      },
      2,
      'laughs.yaml',
    ],
    [
      '2 MB file',
      () => {
        const p = join(root, 'cli', 'big.yaml');
        writeFileSync(p, `title: ${'x'.repeat(2_000_000)}\n`);
        return p;
      },
      2,
      'big.yaml',
    ],
    ['timeout huge', () => missionFile('timeout', (m) => (m.timeout_seconds = 1e12)), 2, 'timeout_seconds'],
    [
      'check shell string',
      () => missionFile('check', (m) => (m.verification = [{ name: 't', argv: ['rm -rf /'] }])),
      2,
      'verification[0].argv',
    ],
  ];

  it.each(samples)(
    '%s: the exit code, one stderr line naming the field, no state written',
    async (_name, make, code: number, field) => {
      const path = make();
      const stateDir = join(root, 'state');
      const started = Date.now();
      const r = await runCli(['mission', 'run', path, '--state-dir', stateDir], {
        cwd: root,
        env: { UH_CACHE_DIR: join(root, 'cache'), UH_STATE_DIR: undefined },
        sampleMemory: true,
      });
      expect(r.code).toBe(code);
      // The progress line `uh: running <op> (<title>)…` may come first; the refusal is one line.
      const lines = r.stderr
        .trimEnd()
        .split('\n')
        .filter((l) => !l.startsWith('uh: running '));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(field);
      // eslint-disable-next-line no-control-regex
      expect(lines[0]).not.toMatch(/[\u0000-\u001f\u007f]/);
      expect(r.stdout).toBe('');
      expect(existsSync(stateDir)).toBe(false);
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(r.peakRssKb).toBeLessThan(300 * 1024);
    },
  );
});

describe('mission text on the terminal', () => {
  it('prints a title carrying escape sequences as visible escapes', async () => {
    const path = missionFile('title-escape', (m) => {
      m.title = 'T\u001b]0;pwned\u0007\u001b[2J';
      m.operation_id = `esc-${process.pid}`;
      m.verification = [{ name: 'fails', argv: ['false'] }];
    });
    const r = await runCli(['mission', 'run', path, '--state-dir', join(root, 'state-esc')], {
      cwd: root,
      env: { UH_CACHE_DIR: join(root, 'cache') },
    });
    expect(r.code).toBe(1); // the check fails: the mission ran
    expect(r.stderr).toContain('T\\x1b]0;pwned\\x07\\x1b[2J');
    // eslint-disable-next-line no-control-regex
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f]/);
  });
});
