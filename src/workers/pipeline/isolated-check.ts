/**
 * A runtime's `check()` inside the isolation a mission would give its runtime (`uh doctor`): the
 * same bubblewrap plan (a private home and /tmp, the worker's home and uh's own dirs masked, the
 * program and its install prefix re-exposed read-only), the adapter's declared state copies and
 * readable paths, and in `egress` mode only the hosts the adapter declares, through uh's egress
 * proxy. The work dir is an empty scratch directory. What the check could not see is reported: a
 * program refused before launch (under /tmp or a masked directory) and every host it asked for
 * that the allowlist refused.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { BwrapProbe } from '../../shared/process/bwrap-probe.js';
import { spawnGroup, type SpawnGroup } from '../../shared/process/spawn-group.js';
import { egressRules } from '../../shared/contracts/egress.js';
import type { AnyRuntimeAdapter, AdapterCheckV1 } from '../../shared/runtime/v1/index.js';
import { makeDir } from '../../shared/fs/make-dir.js';
import { errorMessage } from '../../shared/errors.js';
import { isolatedSpawn, isolationPlan, isolationView, type IsolationScope } from '../sandbox/isolation.js';
import { egressBridgeFor } from '../sandbox/egress-forwards.js';
import { startEgressProxy, type EgressProxy } from '../sandbox/egress-proxy.js';
import type { ProgramRefusal } from '../sandbox/program-paths.js';
import { agentStateSpawn, prepareAgentState, type AgentState } from './agent-state.js';

export interface IsolatedCheckHost {
  bwrap: BwrapProbe & { ok: true };
  cacheDir: string;
  stateDir: string;
  tmpfsBytes: number;
  /** `UH_ISOLATION_READABLE`. */
  readable: readonly string[];
  /** uh's receipt key file, never shown. */
  ownSecrets: readonly string[];
  /** `egress` (the default network of a mission) or `none`. */
  network: 'egress' | 'none';
  env: Readonly<Record<string, string | undefined>>;
  fetch: typeof fetch;
}

export interface IsolatedCheckResult {
  result: AdapterCheckV1;
  /** What the check could not see inside the isolation (empty: nothing). */
  unseen: string[];
}

interface Parts {
  spawn: SpawnGroup;
  work: string;
  refusal: () => ProgramRefusal | null;
  proxy: EgressProxy | null;
  state: AgentState | null;
}

async function isolatedParts(
  adapter: AnyRuntimeAdapter,
  config: unknown,
  host: IsolatedCheckHost,
  scratch: string,
): Promise<Parts> {
  const work = join(scratch, 'work');
  const opDir = join(scratch, 'operation');
  makeDir(work, 0o700);
  makeDir(opDir, 0o700);
  const declared = adapter.isolation?.(config, { env: host.env, logDir: opDir }) ?? { writable: [] };
  const seeds = declared.state ?? {};
  const state = Object.keys(seeds).length > 0 ? prepareAgentState(opDir, seeds, [host.cacheDir, host.stateDir]) : null;
  let allowed: string[] = [];
  try {
    allowed = host.network === 'egress' ? (adapter.egress?.(config, { env: host.env }) ?? []) : [];
  } catch {
    // an adapter that throws declares nothing (as for a mission)
  }
  const proxy = host.network === 'egress' ? await startEgressProxy(allowed) : null;
  const scope: IsolationScope = {
    bwrap: host.bwrap.path,
    worktree: work,
    cacheDir: host.cacheDir,
    stateDir: host.stateDir,
    repositoryPath: null,
    home: host.env.HOME,
    tmpfsBytes: host.bwrap.tmpfsSize ? host.tmpfsBytes : null,
    gitReadable: [],
    extra: { writable: [...declared.writable, ...(state?.writable ?? [])], readable: declared.readable ?? [] },
    path: host.env.PATH,
    network: false,
    egress: proxy ? egressBridgeFor(proxy, egressRules(allowed)) : null,
    operatorReadable: host.readable,
    ownSecrets: [...host.ownSecrets],
  };
  const plan = isolationPlan(scope);
  let refused: ProgramRefusal | null = null;
  const isolated = isolatedSpawn(spawnGroup, plan, {
    view: isolationView(scope, plan),
    onRefuse: (r) => (refused ??= r),
  });
  // A persistent declaration's check gets a per-check copy too (never the tenants' homes), named for a default home as well.
  const spawn = state ? agentStateSpawn(isolated, seeds, state.env, declared.persistent === true) : isolated;
  return { spawn, work, refusal: () => refused, proxy, state };
}

/** Run `adapter.check(config)` inside a mission's isolation; what it could not see in `unseen`. */
export async function checkInIsolation(
  adapter: AnyRuntimeAdapter,
  config: unknown,
  host: IsolatedCheckHost,
): Promise<IsolatedCheckResult> {
  makeDir(host.cacheDir);
  const scratch = mkdtempSync(join(host.cacheDir, 'doctor-check-'));
  let parts: Parts | null = null;
  try {
    parts = await isolatedParts(adapter, config, host, scratch);
    const io = { spawn: parts.spawn, fetch: host.fetch, now: () => Date.now(), env: host.env, workDir: parts.work };
    const result = await adapter
      .check(config, io)
      .catch((error: unknown): AdapterCheckV1 => ({ ok: false, summary: errorMessage(error), errors: [] }));
    const unseen: string[] = [];
    const refusal = parts.refusal();
    if (refusal) unseen.push(`${refusal.message} (${refusal.hint})`);
    for (const hostPort of parts.proxy?.summary().refused ?? []) unseen.push(`egress to ${hostPort} refused`);
    return { result, unseen };
  } finally {
    await parts?.proxy?.close().catch(() => undefined);
    parts?.state?.dispose();
    rmSync(scratch, { recursive: true, force: true });
  }
}
