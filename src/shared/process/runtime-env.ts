/**
 * The environment a runtime or a check sees: an allowlist, never the worker's whole environment.
 * Base names every program needs (PATH, HOME, locale, terminal, time zone, user, shell, TMPDIR),
 * plus the names the adapter declares (its home dir, its provider keys), plus the names the
 * mission passes through (`sandbox.env_passthrough`) that the host allows (`UH_ENV_PASSTHROUGH_ALLOW`),
 * plus the mission's own `sandbox.env`. Everything else the worker holds (GH_TOKEN, AWS_*,
 * REDIS_URL, UH_API_TOKEN…) stays out, and a name of NEVER_PASSED (shared/host-policy.ts) never
 * comes in from the worker's environment, whatever the adapter or the lists say.
 * Checks get the same minus what only the adapter asked for (its provider keys). Pure.
 */
import { nameMatches, passthroughAllowed } from '../host-policy.js';
import { SECRET_KEY } from '../redact.js';

type Env = Readonly<Record<string, string | undefined>>;

/** Names passed to every runtime and check. `LC_*` is a prefix. */
export const BASE_ENV_NAMES = [
  'PATH',
  'HOME',
  'LANG',
  'LANGUAGE',
  'LC_*',
  'TERM',
  'TZ',
  'USER',
  'LOGNAME',
  'SHELL',
  'TMPDIR',
] as const;

function pick(from: Env, patterns: readonly string[], allowed: (name: string) => boolean = () => true) {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(from)) {
    if (value !== undefined && patterns.some((p) => nameMatches(name, p)) && allowed(name)) out[name] = value;
  }
  return out;
}

/** Names an adapter declares: anything but uh's own (NEVER_PASSED), which no adapter needs. */
const notUhs = (name: string) => passthroughAllowed(name, ['*']);

export interface RuntimeEnvInput {
  /** The worker's environment (the config's `childEnv`). */
  worker: Env;
  /** Names the adapter needs (`CODEX_HOME`, `OPENAI_API_KEY`…). */
  adapterNames: readonly string[];
  /** The mission's `sandbox.env_passthrough`. */
  passthrough: readonly string[];
  /** The host's `UH_ENV_PASSTHROUGH_ALLOW`: a passed-through name must match it too. */
  passthroughAllow: readonly string[];
  /** The mission's `sandbox.env`: set as given, over everything else. */
  missionEnv: Env;
}

export interface RuntimeEnv {
  runtime: Record<string, string>;
  checks: Record<string, string>;
  /** Values to scrub: every value the runtime gets whose name looks secret. */
  secrets: string[];
}

export function buildRuntimeEnv(input: RuntimeEnvInput): RuntimeEnv {
  const base = pick(input.worker, BASE_ENV_NAMES);
  const adapter = pick(input.worker, input.adapterNames, notUhs);
  const declared = pick(input.worker, input.passthrough, (name) => passthroughAllowed(name, input.passthroughAllow));
  const mission = Object.fromEntries(
    Object.entries(input.missionEnv).filter((e): e is [string, string] => e[1] !== undefined),
  );
  const runtime = { ...base, ...adapter, ...declared, ...mission };
  const checks = { ...base, ...declared, ...mission };
  const secrets = Object.entries(runtime)
    .filter(([name]) => SECRET_KEY.test(name))
    .map(([, value]) => value);
  return { runtime, checks, secrets: [...new Set(secrets)] };
}
