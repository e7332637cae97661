/**
 * action.yml and examples/github/*.yml read with a real YAML parser (the one GitHub's own parser
 * agrees with on these files: plain YAML 1.2, no anchors), then checked as the runner would: every
 * `uses:` is a known action at a pinned major, every `with:` key is one of that action's inputs,
 * every `${{ inputs.x }}` / `${{ steps.uh.outputs.y }}` names something that exists, the scripts
 * the steps run are shipped, and uploads of paths under .harness/ say include-hidden-files. The
 * setup step itself runs in test/integration/github-action-setup.test.ts.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import picomatch from 'picomatch';
import { parse } from 'yaml';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const EXAMPLES = join(ROOT, 'examples/github');

interface Step {
  id?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
  env?: Record<string, unknown>;
  if?: string;
}
interface ActionYaml {
  inputs: Record<string, { description: string; default?: string; required?: boolean }>;
  outputs: Record<string, { value: string }>;
  runs: { using: string; steps: Step[] };
}

const action = parse(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as ActionYaml;
const OURS = Object.keys(action.inputs);

/** The inputs of the third-party actions used here (from each action's action.yml at that major). */
const KNOWN: Record<string, string[]> = {
  'actions/checkout@v4': ['repository', 'ref', 'token', 'ssh-key', 'persist-credentials', 'path', 'clean', 'filter'],
  'actions/setup-node@v4': ['node-version', 'node-version-file', 'architecture', 'check-latest', 'cache'],
  'actions/cache@v4': ['path', 'key', 'restore-keys', 'enableCrossOsArchive', 'fail-on-cache-miss', 'lookup-only'],
  'actions/upload-artifact@v4': [
    'name',
    'path',
    'if-no-files-found',
    'retention-days',
    'compression-level',
    'overwrite',
    'include-hidden-files',
  ],
  'mikepenz/action-junit-report@v5': ['report_paths', 'check_name', 'fail_on_failure', 'require_tests', 'token'],
};
KNOWN['actions/checkout@v4']?.push('fetch-depth', 'fetch-tags', 'submodules', 'lfs', 'sparse-checkout');

const isOurs = (uses: string) => uses === 'your-org/ultimate-harness@v0' || uses.startsWith('./');

function expressions(text: string): string[] {
  return [...text.matchAll(/\$\{\{\s*([^}]+?)\s*\}\}/g)].map((m) => m[1] as string);
}

describe('action.yml', () => {
  const text = readFileSync(join(ROOT, 'action.yml'), 'utf8');

  it('is a composite action whose steps all say their shell, using only known actions', () => {
    expect(action.runs.using).toBe('composite');
    for (const step of action.runs.steps) {
      if (step.uses) expect(Object.keys(KNOWN), step.uses).toContain(step.uses);
      else expect((step as { shell?: string }).shell).toBe('bash');
      for (const key of Object.keys(step.with ?? {})) expect(KNOWN[step.uses ?? '']).toContain(key);
    }
  });

  it('every ${{ inputs.x }} is declared, every input reaches a step, every output is a step output', () => {
    const used = expressions(text)
      .filter((e) => e.startsWith('inputs.'))
      .map((e) => e.slice('inputs.'.length));
    for (const name of used) expect(OURS).toContain(name);
    for (const name of OURS) expect(used, `input ${name} is never used`).toContain(name);
    for (const [name, o] of Object.entries(action.outputs)) expect(o.value).toBe(`\${{ steps.uh.outputs.${name} }}`);
    const ids = action.runs.steps.map((s) => s.id).filter(Boolean);
    for (const e of expressions(text).filter((x) => x.startsWith('steps.')))
      expect(ids).toContain(e.split('.')[1] as string);
  });

  it('the scripts the steps run exist and are in the package', () => {
    const files = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] }).files;
    const scripts = [...text.matchAll(/\$GITHUB_ACTION_PATH\/(scripts\/[\w.-]+)/g)].map((m) => m[1] as string);
    const run = readFileSync(join(ROOT, 'scripts/action-run.sh'), 'utf8');
    scripts.push(...[...run.matchAll(/\$here\/(scripts\/[\w.-]+)/g)].map((m) => m[1] as string));
    expect(scripts.length).toBeGreaterThan(3);
    for (const s of scripts) {
      expect(existsSync(join(ROOT, s)), s).toBe(true);
      const shipped = files.some((f) => !f.startsWith('!') && picomatch(f)(s));
      expect(shipped, `${s} is not in package.json "files"`).toBe(true);
    }
  });

  it('setup installs production dependencies only', () => {
    const setup = readFileSync(join(ROOT, 'scripts/action-setup.sh'), 'utf8');
    expect(setup).toContain('npm ci --omit=dev');
    expect(setup).toContain('npm prune --omit=dev');
    expect(action.runs.steps.some((s) => s.uses === 'actions/cache@v4')).toBe(true);
  });
});

describe.each(readdirSync(EXAMPLES).filter((f) => f.endsWith('.yml')))('examples/github/%s', (file) => {
  const text = readFileSync(join(EXAMPLES, file), 'utf8');
  const doc = parse(text) as { on: unknown; jobs: Record<string, { 'runs-on': string; steps: Step[] }> };

  it('is a workflow: triggers, jobs with runs-on and steps that use or run', () => {
    expect(doc.on).toBeDefined();
    for (const job of Object.values(doc.jobs)) {
      expect(job['runs-on']).toBeTruthy();
      for (const step of job.steps) expect(Boolean(step.uses) !== Boolean(step.run), JSON.stringify(step)).toBe(true);
    }
  });

  it('each uses: is a known action at a pinned major; each with: key is one of its inputs', () => {
    for (const step of Object.values(doc.jobs).flatMap((j) => j.steps)) {
      if (!step.uses) continue;
      const inputs = isOurs(step.uses) ? OURS : KNOWN[step.uses];
      expect(inputs, `unknown action ${step.uses}`).toBeDefined();
      for (const key of Object.keys(step.with ?? {})) expect(inputs, `${step.uses} has no input ${key}`).toContain(key);
      if (isOurs(step.uses) && !step.with?.prompt) expect(step.with?.mission).toBeTruthy();
    }
  });

  it('every steps.<id>.outputs.<name> is an output of that step', () => {
    const steps = Object.values(doc.jobs).flatMap((j) => j.steps);
    for (const e of expressions(text).filter((x) => x.startsWith('steps.'))) {
      const [, id, kind, name] = e.split(/[.\s]/);
      const step = steps.find((s) => s.id === id);
      expect(step, `no step ${id}`).toBeDefined();
      if (kind === 'outputs' && step?.uses && isOurs(step.uses)) expect(Object.keys(action.outputs)).toContain(name);
    }
  });

  it('an upload of uh artifacts (under .harness/) sets include-hidden-files', () => {
    for (const step of Object.values(doc.jobs).flatMap((j) => j.steps)) {
      if (step.uses !== 'actions/upload-artifact@v4') continue;
      if (/steps\.\w+\.outputs|\.harness/.test(String(step.with?.path)))
        expect(step.with?.['include-hidden-files']).toBe(true);
    }
  });
});
