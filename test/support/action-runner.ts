/**
 * Runs `action.yml` the way the GitHub Actions runner runs a composite action: each `run:` step
 * under `bash -e {0}` with `INPUT_*` env, its own `GITHUB_OUTPUT` file, the shared
 * `GITHUB_STEP_SUMMARY`, `GITHUB_ACTION_PATH` at the action's checkout, and `${{ inputs.x }}` /
 * `${{ steps.id.outputs.y }}` expressions resolved in step env and the action's outputs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { tempDir } from './temp.js';

export const ACTION_PATH = fileURLToPath(new URL('../..', import.meta.url));

interface ActionStep {
  id?: string;
  run?: string;
  env?: Record<string, string>;
}
interface ActionYaml {
  inputs: Record<string, { default?: string }>;
  outputs: Record<string, { value: string }>;
  runs: { using: string; steps: ActionStep[] };
}

export interface ActionResult {
  /** Exit code of the first failing step, else 0. */
  code: number | null;
  outputs: Record<string, string>;
  summary: string;
  log: string;
  dir: string;
}

/** Parse a GITHUB_OUTPUT file: `name=value` lines and `name<<DELIM` heredocs. */
export function parseGithubOutput(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const end = lines.indexOf(heredoc[2] as string, i + 1);
      out[heredoc[1] as string] = lines.slice(i + 1, end).join('\n');
      i = end;
    } else if (line.includes('=')) out[line.slice(0, line.indexOf('='))] = line.slice(line.indexOf('=') + 1);
  }
  return out;
}

const expr = (
  text: string,
  ctx: { inputs: Record<string, string>; steps: Record<string, Record<string, string>> },
): string =>
  text.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_, path: string) => {
    const [scope, a, b, c] = path.split('.');
    if (scope === 'inputs') return ctx.inputs[a as string] ?? '';
    if (scope === 'steps' && b === 'outputs') return ctx.steps[a as string]?.[c as string] ?? '';
    throw new Error(`unsupported expression ${path}`);
  });

export async function runAction(
  inputs: Record<string, string>,
  options: {
    cwd: string;
    env?: Record<string, string | undefined>;
    onStep?: (child: ChildProcess, index: number, id: string | undefined) => void;
  },
): Promise<ActionResult> {
  const action = parse(readFileSync(join(ACTION_PATH, 'action.yml'), 'utf8')) as ActionYaml;
  if (action.runs.using !== 'composite') throw new Error('not a composite action');
  const all = Object.fromEntries(Object.entries(action.inputs).map(([k, v]) => [k, inputs[k] ?? v.default ?? '']));
  const dir = tempDir('uh-action-');
  const summaryPath = join(dir, 'summary.md');
  writeFileSync(summaryPath, '');
  const steps: Record<string, Record<string, string>> = {};
  let log = '';
  let code: number | null = 0;
  for (const [i, step] of action.runs.steps.entries()) {
    if (!step.run) continue;
    const script = join(dir, `step-${i}.sh`);
    const outputPath = join(dir, `output-${i}`);
    writeFileSync(script, step.run);
    writeFileSync(outputPath, '');
    const env: Record<string, string | undefined> = {
      ...process.env,
      UH_LOG_LEVEL: 'silent',
      ...options.env,
      ...Object.fromEntries(Object.entries(all).map(([k, v]) => [`INPUT_${k.toUpperCase()}`, v])),
      ...Object.fromEntries(
        Object.entries(step.env ?? {}).map(([k, v]) => [k, expr(String(v), { inputs: all, steps })]),
      ),
      GITHUB_ACTIONS: 'true',
      GITHUB_ACTION_PATH: ACTION_PATH,
      GITHUB_OUTPUT: outputPath,
      GITHUB_STEP_SUMMARY: summaryPath,
      GITHUB_WORKSPACE: options.cwd,
    };
    const child = spawn('bash', ['-e', script], { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (c) => (log += c));
    child.stderr?.on('data', (c) => (log += c));
    options.onStep?.(child, i, step.id);
    code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    if (step.id) steps[step.id] = parseGithubOutput(readFileSync(outputPath, 'utf8'));
    if (code !== 0) break;
  }
  const outputs = Object.fromEntries(
    Object.entries(action.outputs).map(([k, v]) => [k, expr(v.value, { inputs: all, steps })]),
  );
  return { code, outputs, summary: readFileSync(summaryPath, 'utf8'), log, dir };
}
