/**
 * What the two Codex runtimes (`codex` = `codex exec --json`, `codex-app-server` = `codex
 * app-server` over stdio) configure the same way: the binary, `CODEX_HOME`, the model, the
 * sandbox, `-c key=value` overrides, the child's extra environment and the kill grace; and the
 * rules derived from them (TOML values, the child's env, which values are secrets).
 */
import { existsSync } from 'node:fs';
import { isAbsolute, join, resolve, sep } from 'node:path';
import { z } from 'zod';
import { SECRET_KEY, secretEnvValues } from '../../../shared/redact.js';
import { makeDir } from '../../../shared/fs/make-dir.js';
import { envEndpointEntries, tomlBaseUrlEntries, urlEntries } from '../../../shared/runtime/provider-egress.js';

/** A `-c key=value` override value; serialised to TOML by `tomlValue`. */
const CodexOverrideValue = z.union([
  z.string(),
  z.number(),
  z.boolean(),
  z.array(z.union([z.string(), z.number(), z.boolean()])),
]);

/** The fields both Codex runtimes' `runtime_config` schemas share (each spreads it into its strict object). */
export const codexCommonShape = {
  /** The codex executable: a name on PATH or a path (the npm package's `bin/codex.js` works too). */
  binary: z.string().min(1).default('codex'),
  /** `CODEX_HOME` for the child (config.toml, auth, thread rollouts). Unset: codex's default `~/.codex`. */
  codex_home: z.string().refine(isAbsolute, 'must be an absolute path').optional(),
  /** The model (`-m` / `thread/start`'s `model`); unset: the model of codex's config. */
  model: z.string().min(1).optional(),
  /** Sandbox for model-generated shell commands. */
  sandbox: z.enum(['read-only', 'workspace-write', 'danger-full-access']).default('workspace-write'),
  /** Extra `-c key=value` overrides (dotted keys, values serialised as TOML). */
  config_overrides: z
    .record(z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, 'must be a dotted config key'), CodexOverrideValue)
    .default({}),
  /** Extra environment for the child (provider API keys); values of secret-looking names are secrets. */
  env: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'), z.string())
    .default({}),
  /** After SIGTERM of the child's process group (cancel, timeout), how long before SIGKILL. */
  kill_grace_ms: z.number().int().nonnegative().max(60_000).default(2000),
};

/** The common part of either runtime's settings. */
export interface CodexCommonSettings {
  binary: string;
  codex_home?: string | undefined;
  config_overrides: Record<string, z.infer<typeof CodexOverrideValue>>;
  env: Record<string, string>;
}

/** A JSON-ish value as TOML (`"text"`, `3`, `true`, `["a", 1]`); JSON string escapes are valid TOML. */
export function tomlValue(value: z.infer<typeof CodexOverrideValue>): string {
  if (Array.isArray(value)) return `[${value.map((v) => tomlValue(v)).join(', ')}]`;
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

/** `-c key=value` for each override, in order. */
export function overrideArgs(config: CodexCommonSettings): string[] {
  return Object.entries(config.config_overrides).flatMap(([key, value]) => ['-c', `${key}=${tomlValue(value)}`]);
}

/**
 * Env for the child: the context's, the config's, and CODEX_HOME when configured. When CODEX_HOME
 * lies under the temp dir (`$TMPDIR`, else /tmp), codex refuses to create the helper its own
 * bwrap sandbox execs (`bwrap: execvp codex-linux-sandbox`, every shell call fails on hosts with
 * bubblewrap): the child's TMPDIR then becomes `$CODEX_HOME/tmp`, private to that CODEX_HOME.
 */
export function codexChildEnv(
  config: CodexCommonSettings,
  base: Readonly<Record<string, string | undefined>>,
): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...base, ...config.env };
  if (config.codex_home) env.CODEX_HOME = config.codex_home;
  const home = env.CODEX_HOME; // only an explicit one: the default ~/.codex is left alone
  const temp = resolve(env.TMPDIR || '/tmp');
  if (home && existsSync(home) && (resolve(home) === temp || resolve(home).startsWith(`${temp}${sep}`))) {
    const own = join(home, 'tmp');
    try {
      makeDir(own, 0o700);
      env.TMPDIR = own;
    } catch {
      // CODEX_HOME unwritable: codex reports that itself.
    }
  }
  return env;
}

/** Secrets: env values under secret-looking names, and overrides under secret-looking keys (raw and as TOML). */
export function codexSecrets(config: CodexCommonSettings): string[] {
  const fromOverrides = Object.entries(config.config_overrides)
    .filter(([key]) => SECRET_KEY.test(key))
    .flatMap(([, value]) => [tomlValue(value), ...(typeof value === 'string' ? [value] : [])]);
  return [...secretEnvValues(config.env), ...fromOverrides];
}

type ChildEnv = Readonly<Record<string, string | undefined>>;

/** The CODEX_HOME the child uses: the config's, the environment's, else `~/.codex`. */
export function codexHomeOf(config: CodexCommonSettings, env: ChildEnv): string | null {
  const home = config.codex_home ?? config.env.CODEX_HOME ?? env.CODEX_HOME;
  if (home) return home;
  return env.HOME ? join(env.HOME, '.codex') : null;
}

/**
 * Under uh's isolation codex needs a writable CODEX_HOME (auth, config, thread rollouts), never the
 * configured one itself (the user's config.toml and login). With `seed` (codex exec), a CODEX_HOME
 * the config names (`codex_home`, `env.CODEX_HOME`) becomes a writable copy of the operation's own.
 * Otherwise (codex-app-server, whose mission threads and recovery need the same home across
 * operations, and codex exec's default home: the worker's `CODEX_HOME` or `~/.codex`) it is
 * persistent agent state: one copy per worker, runtime and tenant, kept between that tenant's missions.
 */
export function codexIsolation(
  config: CodexCommonSettings,
  env: ChildEnv,
  extra: string[] = [],
  seed = false,
): { writable: string[]; state?: Record<string, string>; persistent?: boolean } {
  const configured = config.codex_home ?? config.env.CODEX_HOME;
  if (seed && configured && isAbsolute(configured)) {
    return { writable: extra, state: { CODEX_HOME: configured.replace(/\/+$/, '') } };
  }
  const home = codexHomeOf(config, env);
  if (!home || !isAbsolute(home)) return { writable: extra };
  return { writable: extra, state: { CODEX_HOME: home.replace(/\/+$/, '') }, persistent: true };
}

/**
 * The hosts codex reaches in egress mode: every `base_url` of its config.toml and `-c` overrides
 * (its model providers), the endpoints its env names, and OpenAI's own (api, auth, ChatGPT login).
 */
export function codexEgress(config: CodexCommonSettings, env: ChildEnv): string[] {
  const home = codexHomeOf(config, env);
  const overrides = Object.entries(config.config_overrides)
    .filter(([key, value]) => /base_url$/.test(key) && typeof value === 'string')
    .map(([, value]) => value as string);
  return [
    ...(home ? tomlBaseUrlEntries(join(home, 'config.toml')) : []),
    ...urlEntries(overrides),
    ...envEndpointEntries({ ...env, ...config.env }),
    'api.openai.com:443',
    'auth.openai.com:443',
    'chatgpt.com:443',
  ];
}

export type CodexSandboxMode = 'read-only' | 'workspace-write' | 'danger-full-access';

/**
 * The sandbox codex is asked for. Inside uh's own bubblewrap isolation (the worktree is the only
 * writable project path, PID namespace, masked home) `workspace-write` becomes
 * `danger-full-access`: codex's nested bwrap sandbox cannot start there, and ours already is the
 * sandbox. `read-only` is kept as asked.
 */
export function effectiveCodexSandbox(
  mode: CodexSandboxMode,
  isolation: 'bwrap' | 'none' | undefined,
): CodexSandboxMode {
  return isolation === 'bwrap' && mode === 'workspace-write' ? 'danger-full-access' : mode;
}
