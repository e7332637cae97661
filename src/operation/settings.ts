/**
 * The settings of every run on this host, compiled ONCE from the parsed configuration
 * (src/shared/config.ts) and handed as one object to the inline executor, the runtime pool and
 * the pipeline (graphile-worker's `CompiledSharedOptions` is the model). No field is copied from
 * bag to bag: a caller that needs another value builds another settings object.
 */
import type { Env, IsolationMode, SandboxBackendSetting, UhConfig } from '../shared/config.js';
import { silentLogger, type Logger } from '../shared/logger.js';
import type { PriceTable } from '../shared/prices.js';
import type { MissionLimits } from '../shared/process/mission-limits.js';
import { chooseLimitBackend, type LimitBackendChoice, type LimitBackendMode } from '../shared/process/cgroup-probe.js';
import { invalidInput } from '../shared/errors.js';
import type { HostPolicy, HostSettings } from '../shared/host-policy.js';
import type { ReceiptKeySource } from './receipt-signature.js';
import { DEFAULT_PATH_BOUNDS, type PathBounds } from '../shared/path-bounds.js';

export interface OperationSettings {
  /** Operation dirs (records, events, receipts) live under it. */
  readonly stateDir: string;
  /** Mirrors, sandboxes, the bwrap probe memo and, by default, the receipt key. */
  readonly cacheDir: string;
  readonly sandbox: {
    /** How long a sandbox kept after a failure stays before the sweep removes it. */
    readonly keepHours: number;
    /** Keep every sandbox, whatever the outcome. */
    readonly keepAll: boolean;
    /** The warm pool; size 0 turns it off. */
    readonly pool: { readonly size: number; readonly idleMs: number };
    /**
     * `UH_SANDBOX_BACKEND`: `worktree`, `overlay` (copy-on-write over a shared base checkout, under
     * bubblewrap only) or `auto` (overlay where it works); chosen per operation by
     * `sandbox-backend.ts` (docs/sandboxes.md).
     */
    readonly backend: SandboxBackendSetting;
    /** The longest and deepest path a sandbox may hold; past them, a scope violation by name. */
    readonly paths: PathBounds;
  };
  readonly isolation: {
    /** `UH_ISOLATION`: the host's policy, which no mission can lower. */
    readonly mode: IsolationMode;
    /** The size cap of an isolated phase's private /tmp and home (bytes). */
    readonly tmpfsBytes: number;
    /** `UH_ISOLATION_READABLE`: paths every isolated process may read (never a secret location). */
    readonly readable: readonly string[];
  };
  /**
   * `UH_GIT_FAST_PATH`: true (the default) lets uh answer in process what git would (the diff's
   * listing, staging, tree and patch of a plain change; a local ref), where it is sure of git's
   * answer; false runs git for every one of them (src/workers/git-path.ts picks the implementation).
   */
  readonly gitFastPath: boolean;
  /**
   * `UH_DIFF_CAP_BYTES`: the most bytes of a mission's `diff.patch`; a longer patch is cut there
   * with a marker, flagged in the receipt (`diff.truncated`) and never promoted.
   */
  readonly diff: { readonly capBytes: number };
  /** `UH_LIMIT_*`: each mission's ceiling; `sandbox.limits` may only lower them (docs/security.md#limits). */
  readonly limits: MissionLimits;
  /**
   * `UH_LIMIT_BACKEND`, probed once here: the cgroup backend that holds processes and memory, or
   * rlimits with the reason (shared/process/cgroup-probe.ts).
   */
  readonly limitBackend: LimitBackendChoice;
  /** What a mission may ask of this host (`UH_ALLOW_MISSION_ISOLATION_OFF`, `UH_ENV_PASSTHROUGH_ALLOW`). */
  readonly policy: HostPolicy;
  /** Where the receipt signing key comes from; never logged. */
  readonly receiptKey: ReceiptKeySource;
  /** `UH_SECRETS_DIR`: `{secret_ref: name}` in `sandbox.env` is read from `<dir>/<name>`; null: refs are blocked. */
  readonly secretsDir: string | null;
  /** `UH_REDIS_PASSWORD_FILE`: a secret location (never exposed to a sandbox) whose value is scrubbed. */
  readonly redisPasswordFile: string | null;
  /** `UH_TENANT`: the tenant of an inline run (a queued job carries its own). */
  readonly tenant: string;
  /** Token usage priced into `usage.cost_usd` when both are known. */
  readonly prices: PriceTable;
  /** The worker's environment, filtered by the allowlist for the runtime and checks. */
  readonly env: Env;
  readonly logger: Logger;
}

/** What a caller may set beside the configuration: the state dir it resolved, its logger, flags. */
export interface SettingsOverrides {
  stateDir: string;
  logger?: Logger;
  /** `--keep-sandbox`: on top of `UH_KEEP_SANDBOX`. */
  keepSandbox?: boolean;
}

export function compileSettings(config: UhConfig, overrides: SettingsOverrides): OperationSettings {
  const { core } = config;
  return Object.freeze({
    stateDir: overrides.stateDir,
    cacheDir: core.cacheDir,
    sandbox: {
      keepHours: core.sandboxKeepHours,
      keepAll: core.keepSandbox || overrides.keepSandbox === true,
      pool: core.sandboxPool,
      backend: core.sandboxBackend,
      paths: DEFAULT_PATH_BOUNDS,
    },
    isolation: { mode: core.isolation, tmpfsBytes: core.isolationTmpfsBytes, readable: core.isolationReadable },
    gitFastPath: core.gitFastPath,
    diff: { capBytes: core.diffCapBytes },
    limits: core.limits,
    // Probed on first use (a worker's first phase, `uh doctor`), once per process: a producer never probes.
    get limitBackend() {
      return limitBackendFor(core.limitBackend);
    },
    policy: config.policy,
    receiptKey: config.receipts,
    secretsDir: core.secretsDir,
    redisPasswordFile: config.queue.passwordFile,
    tenant: core.tenant,
    prices: core.prices,
    env: config.childEnv,
    logger: overrides.logger ?? silentLogger,
  });
}

/** The host's side of its policy checks (shared/host-policy.ts): its isolation mode and what it allows. */
export function hostSettings(settings: OperationSettings): HostSettings {
  return { isolation: settings.isolation.mode, policy: settings.policy };
}

/** The backend of `mode`; `cgroup` where none can be had is a configuration error, named. */
function limitBackendFor(mode: LimitBackendMode): LimitBackendChoice {
  const choice = chooseLimitBackend(mode);
  if (mode === 'cgroup' && choice.kind === 'rlimit')
    throw invalidInput(
      `UH_LIMIT_BACKEND=cgroup, but no cgroup can be had here: ${choice.reason}`,
      [`UH_LIMIT_BACKEND: ${choice.reason}`],
      'delegate a cgroup v2 subtree to uh (systemd Delegate=yes), or set UH_LIMIT_BACKEND=auto (docs/security.md#limits)',
    );
  return choice;
}
