import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkHiddenBundle, readHiddenVerifier, readReward } from '../../src/operation/hidden-verifier.js';
import { parseTaskToml } from '../../src/producers/suite/task-toml.js';
import { parseMission } from '../../src/shared/contracts/load-mission.js';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
const dir = () => {
  const d = tempDir('uh-suiteu-');
  dirs.push(d);
  return d;
};

describe('task.toml (read by a full TOML parser, checked for the fields uh uses)', () => {
  it('reads what Harbor writes: tables, numbers with underscores, literal and multi-line strings, arrays, dates', () => {
    const toml = parseTaskToml(
      'version = "1.0"\n[metadata]\nauthor_name = \'A # B\' # who\ndescription = """\nlong\ntext"""\ntags = [\n  "x",\n  "y, z",\n]\ncreated = 1979-05-27\n[verifier]\ntimeout_sec = 120.0\n[agent]\ntimeout_sec = 1_800\n',
      'task.toml',
    );
    expect(toml.agent?.timeout_sec).toBe(1800);
    expect(toml.verifier?.timeout_sec).toBe(120);
    expect(toml.metadata).toMatchObject({ author_name: 'A # B', description: 'long\ntext', tags: ['x', 'y, z'] });
  });

  it('refuses bad TOML naming the line and column, and a field of the wrong type naming the field', () => {
    expect(() => parseTaskToml('[a]\nx = \n', 'task.toml')).toThrow(/^task.toml:2:\d+: /);
    expect(() => parseTaskToml('just words\n', 'task.toml')).toThrow(/^task.toml:1:\d+: /);
    expect(() => parseTaskToml('[agent]\ntimeout_sec = "soon"\n', 'task.toml')).toThrow(
      /task.toml: agent.timeout_sec: /,
    );
  });
});

describe('hidden verifiers', () => {
  it('reads reward.txt, else reward.json (reward, else the first number), clamped to 0..1', () => {
    const a = dir();
    expect(readReward(a)).toBeNull();
    writeFileSync(join(a, 'reward.json'), '{"accuracy": 0.25}');
    expect(readReward(a)).toBe(0.25);
    writeFileSync(join(a, 'reward.json'), '{"x": 0.1, "reward": 0.75}');
    expect(readReward(a)).toBe(0.75);
    writeFileSync(join(a, 'reward.txt'), '7\n');
    expect(readReward(a)).toBe(1);
    writeFileSync(join(a, 'reward.txt'), 'oops');
    expect(readReward(a)).toBe(0.75);
  });

  it('bundles regular files only, needs test.sh, and a tampered bundle is refused', () => {
    const d = dir();
    expect(() => readHiddenVerifier(d)).toThrow(/has no test.sh/);
    writeFileSync(join(d, 'test.sh'), 'exit 0\n');
    mkdirSync(join(d, 'data'));
    writeFileSync(join(d, 'data', 'x.txt'), 'x');
    const bundle = readHiddenVerifier(d);
    expect(bundle.files.map((f) => f.path)).toEqual(['data/x.txt', 'test.sh']);
    expect(checkHiddenBundle(bundle)).toEqual(bundle);
    const tampered = { ...bundle, files: bundle.files.map((f) => ({ ...f, content_b64: 'eA==' })) };
    expect(() => checkHiddenBundle(tampered)).toThrow(/does not match its digest/);
    symlinkSync('/etc/passwd', join(d, 'link'));
    expect(() => readHiddenVerifier(d)).toThrow(/link is not a regular file/);
  });
});

describe('verification_hidden', () => {
  const mission = {
    schema_version: 'uh.mission.v0',
    mission_id: 'm',
    operation_id: 'm-1',
    title: 't',
    objective: 'o',
    repository: { url: 'https://example.com/r.git' },
    runtime: 'command',
    verification_hidden: 'tests',
  };
  it('resolves against the mission file on a producer that allows local paths (the CLI)', () => {
    const parsed = parseMission(mission, '/suite/task');
    expect(parsed.verification_hidden).toEqual({ path: '/suite/task/tests', timeout_seconds: 300 });
  });
  it('is refused where local paths are (the HTTP API by default): it names the producer host', () => {
    expect(() => parseMission(mission, '/x', 'mission', { allowLocal: false, allowHttp: false })).toThrow(
      expect.objectContaining({
        details: [expect.stringContaining('verification_hidden: names a directory on the producer host')],
      }),
    );
  });
});
