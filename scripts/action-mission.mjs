// The Action's mission (action.yml): the `mission` file as it is, or, with `prompt` / `prompt-file`,
// a mission built from the inputs (`runtime`, `checks`, `scope`, `mission-id`); `runtime-config` (a
// JSON object), `model` and `extra-args` go into runtime_config_overrides.<runtime> of either. Prints the path of the file uh
// then validates like any mission (a field at fault is named there), and on a second line whether
// its repository is a local path (`local`: fleet mode then sends this workflow's repository URL),
// `remote`, or `unknown` (uh says why it cannot read it). A bad input is reported here
// (scripts/action-report.mjs) and exits 2. Inputs arrive as UH_MISSION and UH_ACTION_*.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, extname, isAbsolute, join, resolve } from 'node:path';
import { reportStep } from './action-report.mjs';

class InputError extends Error {}

function jsonInput(name, text) {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InputError(`input ${name}: not JSON (${error.message})`);
  }
}

/** `checks`: a JSON list whose items are argv lists (`["npm","test"]`) or check objects ({name, argv, timeout_seconds}). */
function checksOf(text) {
  if (!text.trim()) return [];
  const list = jsonInput('checks', text);
  if (!Array.isArray(list)) throw new InputError('input checks: must be a JSON list of argv lists');
  return list.map((item, i) => {
    if (Array.isArray(item)) return { name: `check-${i + 1}`, argv: item };
    if (item && typeof item === 'object') return { name: `check-${i + 1}`, ...item };
    throw new InputError(`input checks[${i}]: an argv list (["npm","test"]) or an object with argv`);
  });
}

/** `extra-args`: a JSON list, or words separated by white space. */
function extraArgsOf(text) {
  if (text.trim().startsWith('[')) return jsonInput('extra-args', text);
  return text.split(/\s+/).filter(Boolean);
}

const globsOf = (text) =>
  text
    .split(/[\n,]/)
    .map((s) => s.trim())
    .filter(Boolean);

function promptOf(env) {
  if (env.UH_ACTION_PROMPT && env.UH_ACTION_PROMPT_FILE)
    throw new InputError('inputs prompt and prompt-file: give one of them');
  if (env.UH_ACTION_PROMPT) return env.UH_ACTION_PROMPT;
  try {
    return readFileSync(env.UH_ACTION_PROMPT_FILE, 'utf8');
  } catch (error) {
    throw new InputError(
      `input prompt-file: cannot read ${env.UH_ACTION_PROMPT_FILE} (${error.code ?? error.message})`,
    );
  }
}

function missionFromInputs(env) {
  const objective = promptOf(env);
  if (!objective.trim()) throw new InputError('input prompt: empty');
  if (!env.UH_ACTION_RUNTIME) throw new InputError('input runtime: needed with prompt / prompt-file');
  const allowed = globsOf(env.UH_ACTION_SCOPE ?? '');
  return {
    schema_version: 'uh.mission.v0',
    mission_id: env.UH_ACTION_MISSION_ID || 'ci',
    operation_id: '{mission_id}-{sha:12}-{run_id}-{run_attempt}',
    title: objective.trim().split('\n')[0].slice(0, 200),
    objective,
    repository: { url: env.GITHUB_WORKSPACE || process.cwd(), ref: 'HEAD' },
    runtime: env.UH_ACTION_RUNTIME,
    verification: checksOf(env.UH_ACTION_CHECKS ?? ''),
    ...(allowed.length > 0 ? { scope: { allowed_change_globs: allowed } } : {}),
  };
}

const isLocal = (url) =>
  typeof url === 'string' &&
  (url.startsWith('file://') || (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url) && !/^[^/\s]+@[^/\s]+:/.test(url)));

async function readMission(path) {
  const text = readFileSync(path, 'utf8');
  return ['.yaml', '.yml'].includes(extname(path)) ? (await import('yaml')).parse(text) : JSON.parse(text);
}

async function missionFromFile(path) {
  const doc = await readMission(path);
  const url = doc?.repository?.url;
  // The copy lives elsewhere: a relative local repository path keeps meaning the file's folder.
  if (isLocal(url) && !url.startsWith('file://'))
    doc.repository.url = isAbsolute(url) ? url : resolve(dirname(path), url);
  return doc;
}

/** `local`, `remote`, or `unknown` when the file cannot be read here (uh then names the problem). */
async function repositoryKind(path) {
  try {
    const url = (await readMission(path))?.repository?.url;
    return typeof url !== 'string' ? 'unknown' : isLocal(url) ? 'local' : 'remote';
  } catch {
    return 'unknown';
  }
}

export async function buildMission(env = process.env) {
  const prompted = Boolean(env.UH_ACTION_PROMPT || env.UH_ACTION_PROMPT_FILE);
  if (env.UH_MISSION && prompted) throw new InputError('inputs mission and prompt / prompt-file: give one of them');
  if (!env.UH_MISSION && !prompted) throw new InputError('input mission: give a mission file, or prompt / prompt-file');
  const tuned = Boolean(env.UH_ACTION_MODEL || env.UH_ACTION_EXTRA_ARGS || env.UH_ACTION_RUNTIME_CONFIG);
  if (env.UH_MISSION && !tuned) return { path: env.UH_MISSION, kind: await repositoryKind(env.UH_MISSION) };
  const doc = prompted ? missionFromInputs(env) : await missionFromFile(env.UH_MISSION);
  const runtime = env.UH_ACTION_RUNTIME || [doc.runtime].flat()[0];
  const extra = env.UH_ACTION_RUNTIME_CONFIG ? jsonInput('runtime-config', env.UH_ACTION_RUNTIME_CONFIG) : {};
  if (typeof extra !== 'object' || extra === null || Array.isArray(extra))
    throw new InputError('input runtime-config: must be a JSON object (runtime_config fields)');
  const overrides = { ...(doc.runtime_config_overrides?.[runtime] ?? {}), ...extra };
  if (env.UH_ACTION_MODEL) overrides.model = env.UH_ACTION_MODEL;
  if (env.UH_ACTION_EXTRA_ARGS) overrides.extra_args = extraArgsOf(env.UH_ACTION_EXTRA_ARGS);
  if (Object.keys(overrides).length > 0)
    doc.runtime_config_overrides = { ...(doc.runtime_config_overrides ?? {}), [runtime]: overrides };
  const out = join(mkdtempSync(join(env.RUNNER_TEMP || tmpdir(), 'uh-mission-')), 'mission.json');
  writeFileSync(out, `${JSON.stringify(doc, null, 2)}\n`);
  return { path: out, kind: prompted ? 'local' : await repositoryKind(out) };
}

try {
  const { path, kind } = await buildMission();
  process.stdout.write(`${path}\n${kind}\n`);
} catch (error) {
  if (!(error instanceof InputError)) throw error;
  process.stderr.write(`uh: ${error.message}\n`);
  reportStep('invalid', 'invalid input', error.message);
  process.exit(2);
}
