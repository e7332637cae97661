import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { classifyRepositoryUrl, refProblem } from '../../src/shared/contracts/git-inputs.js';
import { loadMissionFile, parseMissionBody, repositoryPolicy } from '../../src/shared/contracts/load-mission.js';
import { spawnGroup } from '../../src/shared/process/spawn-group.js';
import { terminalText } from '../../src/shared/terminal-text.js';
import { buildCorpus, validMission } from './fuzz-corpus.js';

const dir = mkdtempSync(join(tmpdir(), 'uh-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('repository.ref, by the rules of git check-ref-format', () => {
  it.each([
    'main',
    'HEAD',
    'feature/x-1',
    'v1.2.3',
    'release/2024.01',
    'abc1234',
    'a'.repeat(40),
    'refs/heads/main',
    'a-b_c',
  ])('accepts %s', (ref) => {
    expect(refProblem(ref)).toBeNull();
  });
  it.each([
    'a..b',
    '-x',
    'a b',
    'a~1',
    'a^',
    'a:b',
    'a?',
    'a*',
    'a[',
    'a\\b',
    '/a',
    'a/',
    'a//b',
    'a.',
    '.a',
    'x/.a',
    'a.lock',
    'a/b.lock/c',
    '@',
    'a@{1}',
    'a\u0000',
    'a\u007f',
    'x'.repeat(256),
  ])('refuses %j', (ref) => expect(refProblem(ref)).not.toBeNull());
});

describe('repository.url forms', () => {
  it.each<[string, string]>([
    ['https://github.com/o/r.git', 'https'],
    ['http://h/r.git', 'http'],
    ['ssh://git@h/r.git', 'ssh'],
    ['git@github.com:o/r.git', 'scp'],
    ['file:///srv/r.git', 'file'],
    ['/srv/r', 'local'],
    ['../r', 'local'],
  ])('%s is %s', (url, kind) => expect(classifyRepositoryUrl(url)).toEqual({ kind }));
  it.each([
    '-u',
    '--upload-pack=x',
    'ext::sh -c x',
    'fd::3',
    'git://h/r',
    'ftp://h/r',
    'https://-x/r',
    'me@-oProxyCommand=x:r',
    'https://h/\u0000',
    ''.padEnd(2049, 'x'),
  ])('refuses %j', (url) => expect(classifyRepositoryUrl(url)).toHaveProperty('problem'));
});

describe('terminal text', () => {
  it('shows escape sequences, C1 codes and bidi overrides as escapes', () => {
    expect(terminalText('a\u001b]0;pwned\u0007b\u009b\u202e', { oneLine: true })).toBe(
      'a\\x1b]0;pwned\\x07b\\x9b\\u202e',
    );
    expect(terminalText('line\nnext\tcol')).toBe('line\nnext\tcol');
    expect(terminalText('line\nnext', { oneLine: true })).toBe('line\\nnext');
  });
});

describe('the corpus of bad missions (test/security/fuzz-missions.test.ts)', () => {
  const corpus = buildCorpus();

  it('draws on no randomness and no clock, so a failure\'s "#i format name" reproduces on every run', () => {
    const refuse = (what: string) => () => {
      throw new Error(`the corpus drew on ${what}`);
    };
    const random = vi.spyOn(Math, 'random').mockImplementation(refuse('Math.random'));
    const now = vi.spyOn(Date, 'now').mockImplementation(refuse('Date.now'));
    try {
      expect(buildCorpus()).toEqual(corpus);
    } finally {
      random.mockRestore();
      now.mockRestore();
    }
  });

  it('starts from a mission the CLI and the API accept, so each refusal comes from its mutation', () => {
    const rules = { allowLocalRepos: undefined, allowHttpRepos: false };
    const policy = (surface: 'cli' | 'http') => repositoryPolicy(rules, surface);
    const path = join(dir, 'valid.yaml');
    writeFileSync(path, toYaml(validMission()));
    expect(loadMissionFile(path, policy('cli')).mission_id).toBe('fuzz');
    expect(parseMissionBody(JSON.stringify(validMission()), dir, policy('http')).mission_id).toBe('fuzz');
  });

  it('changes the valid mission in every case, and names each case once per format', () => {
    const valid = [toYaml(validMission(), { lineWidth: 0 }), JSON.stringify(validMission())];
    expect(corpus.filter((c) => valid.includes(c.text)).map((c) => c.name)).toEqual([]);
    const labels = corpus.map((c) => `${c.format} ${c.name}`);
    expect(labels.filter((l, i) => labels.indexOf(l) !== i)).toEqual([]);
  });
});

describe('runtime log cap', () => {
  it('keeps at most maxBytes of a tapped output, then a marker, while the tap sees everything', async () => {
    const file = join(dir, 'runtime.stdout.log');
    let tapped = 0;
    const child = spawnGroup({
      argv: [process.execPath, '-e', "process.stdout.write('x'.repeat(3 * 1024 * 1024))"],
      cwd: dir,
      env: process.env,
      stdout: { file, tap: (chunk) => (tapped += chunk.length), maxBytes: 1024 * 1024 },
    });
    const result = await child.result;
    expect(result.exitCode).toBe(0);
    expect(tapped).toBe(3 * 1024 * 1024);
    const text = readFileSync(file, 'utf8');
    expect(text.startsWith('x'.repeat(1024 * 1024))).toBe(true);
    expect(text.slice(1024 * 1024)).toBe('\n[uh: log capped at 1048576 bytes; the rest was dropped]\n');
  });

  it('the marker follows even when the cap falls exactly on the end of a chunk (the next chunk is the one dropped)', async () => {
    const file = join(dir, 'runtime.aligned.log');
    const child = spawnGroup({
      // Two writes apart in time reach us as two chunks (as one, the same file must result).
      argv: [process.execPath, '-e', "process.stdout.write('a'); setTimeout(() => process.stdout.write('b'), 100)"],
      cwd: dir,
      env: process.env,
      stdout: { file, maxBytes: 1 },
    });
    expect((await child.result).exitCode).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('a\n[uh: log capped at 1 bytes; the rest was dropped]\n');
  });
});
