import type { z } from 'zod';
import type { Capability } from '../../contracts/mission.js';
import type { RuntimeEventV1 } from './runtime-event.js';
import type { CheckContextV1, RuntimeContextV1 } from './runtime-context.js';
import type { RecoverContextV1, RecoveryV1 } from './runtime-recovery.js';

/** Result of `check()`: is the runtime usable on this machine, with what version. */
export interface AdapterCheckV1 {
  ok: boolean;
  /** One line: `codex 0.171.0 at /usr/bin/codex`, `proxy reachable at … (3 models available)`. */
  summary: string;
  version?: string;
  errors: string[];
  hint?: string;
  /** Extra facts for `--json` (model list, detected features). */
  details?: Record<string, unknown>;
}

/** What `prepare()` returns: everything needed to launch, plus a redacted description for dry runs. */
export interface LaunchPlanV1<Config = unknown> {
  readonly config: Config;
  /** The full prompt (objective, context, sentinel instruction). */
  readonly prompt: string;
  /** Human/JSON view of what will be run (`argv`, `POST <url>` and body), secrets already redacted. */
  readonly describe: Record<string, unknown>;
}

export interface PrepareInputV1<Config> {
  readonly config: Config;
  readonly prompt: string;
  readonly workDir: string;
  readonly mission: { readonly missionId: string; readonly operationId: string };
}

/**
 * A running session. `events` is the observe stream: it ends with exactly one `runtime.finished`,
 * even when the transport breaks; the pipeline guards that but adapters must not rely on it.
 */
export interface RuntimeSessionV1 {
  readonly events: AsyncIterable<RuntimeEventV1>;
  /** Optional interactive steering; must record the message as a `runtime.steering` event. */
  send?(message: string): Promise<void>;
}

/**
 * The runtime port, version 1. Implementations live in `src/workers/runtimes/<id>/` and register
 * once in `src/workers/runtimes/registry.ts`. No implementation imports BullMQ or touches worktrees.
 */
export interface RuntimeAdapterV1<Config = unknown> {
  readonly specificationVersion: 'v1';
  /** The runtime kind, e.g. `command`, `codex`, `hermes-proxy`. */
  readonly id: string;
  readonly displayName: string;
  /** Capabilities this runtime has; the producer refuses missions that require others. */
  readonly capabilities: readonly Capability[];
  /** Defaults for the manifest's runtime_config (before overrides). */
  readonly defaultConfig: Record<string, unknown>;
  /** A runtime_config to start from: written by `uh adapter add` into the manifest. */
  readonly exampleConfig?: Record<string, unknown>;
  /** Strict: an unknown key is an error. Parsed after overrides are merged. */
  readonly configSchema: z.ZodType<Config>;
  /** Values in the config that must never reach logs, events or receipts (tokens, header values). */
  secretsOf(config: Config): string[];
  /**
   * Optional: names of the worker's environment this runtime needs passed through (its home dir,
   * its provider keys; `PREFIX_*` allowed). Everything else is withheld. Values of secret-looking
   * names are scrubbed from every artifact.
   */
  envPassthrough?(config: Config): string[];
  /** Is the runtime usable here? Must never throw; a problem is `ok: false` with a hint. */
  check(config: Config, ctx: CheckContextV1): Promise<AdapterCheckV1>;
  /** Validate and build the launch plan; no side effects. Throws UhError for a bad config. */
  prepare(input: PrepareInputV1<Config>): Promise<LaunchPlanV1<Config>>;
  /** Start the runtime. Must honour `ctx.signal` (cancel and timeout) and end with one terminal event. */
  launch(plan: LaunchPlanV1<Config>, ctx: RuntimeContextV1): RuntimeSessionV1;
  /**
   * Optional: settle an operation left UNKNOWN (worker died, reply lost) from its journal, for
   * `uh mission recover`. Must only read the runtime's own records and must NEVER start new work
   * for the operation; must not throw for an unreadable runtime (that is `state: 'unknown'`).
   */
  recover?(config: Config, ctx: RecoverContextV1): Promise<RecoveryV1>;
  /**
   * Optional: the hosts the runtime itself must reach in `egress` mode (its model endpoint, as its
   * config names it: `host:port` entries of the allowlist, docs/security.md "Network"). Must read
   * only the config and the files it names; must not throw (an unreadable file declares nothing).
   */
  egress?(config: Config, ctx: { env: Readonly<Record<string, string | undefined>> }): string[];
  /**
   * Optional: what the runtime needs to see when the pipeline isolates it (bubblewrap, see
   * docs/security.md "Isolation"), beyond the worktree, a private home and a private /tmp:
   * `writable` its own state dirs (e.g. `CODEX_HOME`, pi's agent dir), `readable` files it only
   * reads (a binary or config under the masked home); a file in `logDir` the runtime's child
   * writes (the log dir itself stays hidden). `env` is the environment its children get.
   * Absolute paths; missing ones are skipped. `state`: the agent's own state locations as its
   * config names them (env name → configured directory, e.g. `HOME`, `XDG_DATA_HOME` set in the
   * runtime's `env`): under isolation each becomes a directory of the operation's own, seeded with a
   * copy of the configured one, writable, and the variable points there for the runtime's children;
   * the configured directory is never written. Must list only names the adapter passes in its env.
   * `persistent`: the agent keeps state across runs (a login, threads a later run resumes): each
   * name instead gets one directory per worker, runtime and tenant, seeded once and kept for that
   * tenant's next missions (never shared with another tenant's, never the configured one), and the
   * variable is set to it also when the env leaves it unset (a state location the agent defaults to).
   */
  isolation?(
    config: Config,
    ctx: { env: Readonly<Record<string, string | undefined>>; logDir: string },
  ): {
    writable: string[];
    readable?: string[];
    state?: Record<string, string>;
    persistent?: boolean;
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a registry holds adapters of every config type
export type AnyRuntimeAdapter = RuntimeAdapterV1<any>;
