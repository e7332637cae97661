/**
 * `uh doctor`: is this machine ready? Node and git versions, state and cache dirs writable,
 * Redis reachable (when configured), and each configured runtime's own check, under bwrap inside
 * the isolation a mission would give it. Exit 0 when the core
 * (node, git, dirs, and Redis if asked for) is fine, 3 otherwise; runtimes only inform.
 */
import { probeBwrap, ROOT_SANDBOX_ID, type BwrapProbe } from '../../../shared/process/bwrap-probe.js';
import { runtimeFetch } from '../../../shared/transport/http-fetch.js';
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { redisUrlFor, type UhConfig } from '../../../shared/config.js';
import { EXIT } from '../../../shared/contracts/exit-codes.js';
import { errorMessage } from '../../../shared/errors.js';
import { spawnGroup } from '../../../shared/process/spawn-group.js';
import { RUNTIME_CATALOG } from '../../../workers/operation-ports.js';
import { checkInIsolation } from '../../../workers/pipeline/isolated-check.js';
import { loadManifest, manifestPath, mergeConfig } from '../../../operation/resolve-runtime.js';
import type { AnyRuntimeAdapter } from '../../../shared/runtime/v1/index.js';
import {
  COMMON_OPTIONS,
  helpText,
  parseCommand,
  queueRedisUrl,
  resolveStateDir,
  writeJson,
  type CommandSpec,
} from '../cli-kit.js';
import { makeDir } from '../../../shared/fs/make-dir.js';
import type { Keyring } from '../../../operation/receipt-keys.js';
import { fleetKeyFindings, receiptKeyFindings } from '../receipt-doctor.js';
import { limitsFindings } from '../limits-doctor.js';
import { overlayProbeFor } from '../../../workers/sandbox/sandbox-backend.js';
import { residentStatus } from '../resident/ask.js';

const DOCTOR: CommandSpec = {
  usage: 'uh doctor [--json] [--redis url] [--state-dir dir]',
  summary:
    'Check that this machine can run missions: node, git, state and cache dirs, Redis (--redis, else $REDIS_URL, else redis://127.0.0.1:6379, where a failure is only a note), and every runtime.',
  options: { ...COMMON_OPTIONS, redis: { type: 'string' } },
  examples: ['uh doctor', 'uh doctor --redis redis://127.0.0.1:6379 --json'],
};

interface Finding {
  what: string;
  ok: boolean;
  detail: string;
  hint?: string;
  /** A runtime check under bwrap: what it could not see there (a refused program, a refused host). */
  unseen?: string[];
  core: boolean;
}

function versionAtLeast(version: string, min: number[]): boolean {
  const parts = version.split('.').map((p) => Number.parseInt(p, 10));
  for (let i = 0; i < min.length; i++) {
    const a = parts[i] ?? 0;
    const b = min[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

function writable(dir: string): string | null {
  try {
    makeDir(dir);
    accessSync(dir, constants.W_OK);
    return null;
  } catch (error) {
    return errorMessage(error);
  }
}

async function pingRedis(url: string): Promise<string | null> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 2000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  let last: string | null = null;
  redis.on('error', (error: Error) => (last = error.message)); // reported below, once
  try {
    await redis.connect();
    await redis.ping();
    return null;
  } catch (error) {
    return last ?? errorMessage(error);
  } finally {
    redis.disconnect();
  }
}

/** A Redis that answers a client with no password: anyone who reaches it (an agent too) reads and rewrites the fleet. */
async function redisAuthFinding(url: string): Promise<Finding | null> {
  const anonymous = new URL(url);
  anonymous.username = '';
  anonymous.password = '';
  const problem = await pingRedis(anonymous.toString());
  const refused = problem !== null && /NOAUTH|WRONGPASS|NOPERM|auth/i.test(problem);
  if (problem !== null && !refused) return null;
  return {
    what: 'redis auth',
    ok: refused,
    detail: refused ? 'refuses clients without a password' : 'answers clients with no password',
    hint: 'start Redis with ACL users per role and passwords from secrets (docs/deploy.md), or at least requirepass',
    core: false,
  };
}

/** The fleet behind a configured Redis (`--redis` or REDIS_URL): a runtime with queued jobs and no live worker cannot make progress (core). */
async function fleetFindings(
  config: UhConfig,
  url: string,
  keyring: Keyring | null,
  stateDir: string,
): Promise<{ findings: Finding[]; report: import('../../http/fleet-report.js').FleetReport }> {
  const { QueueClient } = await import('../../queue/queue-client.js');
  const { fleetReport } = await import('../../http/fleet-report.js');
  const client = await QueueClient.open(config.queue, url);
  try {
    const report = await fleetReport(client);
    const findings: Finding[] = report.runtimes.map((r) => ({
      what: `fleet ${r.runtime}`,
      ok: !(r.queued > 0 && r.live_workers === 0),
      detail: `${r.queued} queued, ${r.active} active, ${r.delayed} delayed, ${r.live_workers} live worker(s)`,
      hint: `no live worker serves runtime ${r.runtime}: start one (uh worker start --runtime ${r.runtime}) or check its heartbeat`,
      core: true,
    }));
    if (report.runtimes.length === 0)
      findings.push({ what: 'fleet', ok: true, detail: 'no runtime queues and no live workers', core: false });
    findings.push({
      what: 'unknown operations',
      ok: report.unknown_operations === 0,
      detail: String(report.unknown_operations),
      hint: 'GET /v1/operations?state=unknown lists them; see docs/queue.md (unknown operations)',
      core: false,
    });
    findings.push(...outboxFindings(report));
    const { liveWorkers } = await import('../../../shared/queue/live-workers.js');
    findings.push(...fleetKeyFindings(await liveWorkers(client.redis, client.store.keys), keyring));
    const { manifestDriftFindings } = await import('../manifest-doctor.js');
    findings.push(...(await manifestDriftFindings(client.redis, config.queue.prefix, stateDir)));
    return { findings, report };
  } finally {
    await client.close();
  }
}

/** The outbox and its consumers: entries waiting with no live results worker stall webhooks, batches and promotion (core). */
function outboxFindings(report: import('../../http/fleet-report.js').FleetReport): Finding[] {
  const lag = report.outbox_lag;
  const waiting = `${lag} entr${lag === 1 ? 'y' : 'ies'} not yet delivered`;
  return [
    { what: 'outbox lag', ok: true, detail: waiting, core: false },
    {
      what: 'results worker',
      ok: report.results_workers > 0 || lag === 0,
      detail: report.results_workers > 0 ? `${report.results_workers} live` : `none live; ${waiting}`,
      hint: 'start one (uh worker start --results): webhooks, batch settlement and promotion wait for it',
      core: true,
    },
  ];
}

const mib = (bytes: number): string => `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;

/** bubblewrap isolation of runtimes and checks: a core finding only when UH_ISOLATION=require. */
/**
 * Which backend makes sandboxes here (`UH_SANDBOX_BACKEND`, docs/sandboxes.md): under `auto` or
 * `overlay`, whether this host mounts overlays in a user namespace (`probeOverlay`). A core
 * finding only for `overlay` on a host that cannot (no isolated mission would start).
 */
function sandboxesFinding(config: UhConfig): Finding {
  const setting = config.core.sandboxBackend;
  const what = 'sandboxes';
  if (setting === 'worktree')
    return {
      what,
      ok: true,
      detail: 'worktree (UH_SANDBOX_BACKEND=worktree): a checkout each, warm pool',
      core: false,
    };
  const isolated = config.core.isolation !== 'off' && probeBwrap(config.childEnv.PATH).ok;
  const probe = isolated
    ? overlayProbeFor(config.core.cacheDir, config.childEnv.PATH)
    : { ok: false as const, reason: 'no bubblewrap in use here (overlay sandboxes are mounted under it)' };
  if (probe.ok)
    return {
      what,
      ok: true,
      detail: `overlay (UH_SANDBOX_BACKEND=${setting}): copy-on-write over one base checkout per commit, mounted with ${probe.unshare}; a directory of the base cannot be renamed there (EXDEV: \`git mv\` of one fails, \`mv\` copies), docs/sandboxes.md`,
      core: setting === 'overlay',
    };
  return {
    what,
    ok: setting === 'auto',
    detail: `${setting === 'auto' ? 'worktree' : 'NONE'} (UH_SANDBOX_BACKEND=${setting}): no overlay here: ${probe.reason}`,
    hint: 'overlay sandboxes need bubblewrap and Linux >= 5.11 with user namespaces; UH_SANDBOX_BACKEND=auto falls back to worktrees',
    core: setting === 'overlay',
  };
}

function isolationFinding(config: UhConfig): Finding {
  const mode = config.core.isolation;
  if (mode === 'off')
    return {
      what: 'isolation',
      ok: true,
      detail: 'off (UH_ISOLATION=off): runtimes and checks run unisolated',
      core: false,
    };
  const probe = probeBwrap(config.childEnv.PATH);
  const tmpfs = (ok: BwrapProbe & { ok: true }) =>
    ok.tmpfsSize
      ? `private /tmp and home of at most ${mib(config.core.isolationTmpfsBytes)}`
      : 'private /tmp and home UNCAPPED (this bwrap has no --size: bubblewrap 0.7 or newer caps them)';
  const asRoot =
    process.getuid?.() === 0
      ? `; as root: a user namespace, uid ${ROOT_SANDBOX_ID}, no capabilities, root-only files hidden`
      : '';
  return probe.ok
    ? {
        what: 'isolation',
        ok: true,
        detail: `bwrap (${probe.path}): runtimes and checks are isolated, ${tmpfs(probe)}${asRoot}`,
        core: mode === 'require',
      }
    : {
        what: 'isolation',
        ok: false,
        detail: `none: ${probe.reason}`,
        hint: 'install bubblewrap (apt-get install bubblewrap) and allow unprivileged user namespaces; docs/security.md "Isolation"',
        core: mode === 'require',
      };
}

/**
 * What network a mission's agent gets: egress by default (its own namespace, out only through
 * uh's proxy to the runtime's endpoints and the mission's allowlist), whether a mission may ask
 * for the host's network, and that unisolated runs have no network boundary at all.
 */
export function networkFinding(config: UhConfig): Finding {
  const host = config.policy.allowMissionNetworkHost
    ? 'a mission may ask for network: host (UH_ALLOW_MISSION_NETWORK_HOST=1)'
    : 'network: host refused (UH_ALLOW_MISSION_NETWORK_HOST unset)';
  const detail =
    config.core.isolation === 'off'
      ? 'host: unisolated runs use the host network (UH_ISOLATION=off); sandbox.network and sandbox.egress have no effect'
      : `egress by default: out only through uh's proxy to the runtime's endpoints and sandbox.egress; ${host}`;
  return { what: 'network', ok: true, detail, core: false };
}

/** Node, git, and the state and cache dirs: what every run needs. */
function hostFindings(config: UhConfig, stateDir: string): Finding[] {
  const findings: Finding[] = [];
  const node = process.versions.node;
  const nodeHint = 'install Node.js 20.18 or newer';
  findings.push({ what: 'node', ok: versionAtLeast(node, [20, 18]), detail: `v${node}`, hint: nodeHint, core: true });
  try {
    const git = /(\d+\.\d+(?:\.\d+)?)/.exec(execFileSync('git', ['--version'], { encoding: 'utf8' }))?.[1] ?? '0';
    const hint = 'install git 2.31 or newer (worktrees, rev-parse --path-format)';
    findings.push({ what: 'git', ok: versionAtLeast(git, [2, 31]), detail: git, hint, core: true });
  } catch (error) {
    findings.push({ what: 'git', ok: false, detail: errorMessage(error), hint: 'install git', core: true });
  }
  for (const [what, dir, hint] of [
    ['state dir', stateDir, 'pass --state-dir or set UH_STATE_DIR to a writable folder'],
    ['cache dir', config.core.cacheDir, 'set UH_CACHE_DIR to a writable folder'],
  ] as const) {
    const problem = writable(dir);
    findings.push({ what, ok: problem === null, detail: problem ?? dir, hint, core: true });
  }
  return findings;
}

/** The runtimes to check: every registered one (its manifest in the state dir, else its example config) and every other manifest there. */
async function configuredRuntimes(
  stateDir: string,
): Promise<Array<{ id: string; adapter: AnyRuntimeAdapter; config: Record<string, unknown>; source: string }>> {
  const out = [];
  const dir = join(stateDir, 'adapters');
  const own = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.yaml')) : [];
  const ids = [...new Set([...RUNTIME_CATALOG.ids, ...own.map((f) => f.slice(0, -5)).sort()])];
  for (const id of ids) {
    const { manifest, source } = await loadManifest(stateDir, id, RUNTIME_CATALOG);
    const adapter = await RUNTIME_CATALOG.load(manifest.runtime_kind);
    if (!adapter) continue;
    const configured = existsSync(manifestPath(stateDir, id));
    const over = configured ? manifest.runtime_config : (adapter.exampleConfig ?? {});
    out.push({ id, adapter, config: mergeConfig(adapter.defaultConfig, over), source });
  }
  return out;
}

/**
 * Each configured runtime's own check (a finding, never core). Under bwrap it runs inside the
 * isolation a mission's runtime gets (workers/pipeline/isolated-check.ts); what it could not see
 * there is said.
 */
async function runtimeFindings(config: UhConfig, stateDir: string): Promise<Finding[]> {
  const findings: Finding[] = [];
  const probe = config.core.isolation === 'off' ? null : probeBwrap(config.childEnv.PATH);
  for (const { id, adapter, config: raw, source } of await configuredRuntimes(stateDir)) {
    const what = `runtime ${id}`;
    const parsed = adapter.configSchema.safeParse(raw);
    if (!parsed.success) {
      const hint = `uh adapter add ${id}, then uh adapter check ${id} (${source})`;
      findings.push({ what, ok: false, detail: 'needs a runtime_config to check', hint, core: false });
      continue;
    }
    const io = { spawn: spawnGroup, fetch: runtimeFetch, now: () => Date.now(), env: config.childEnv };
    if (!probe?.ok) {
      const result = await adapter.check(parsed.data, io);
      findings.push({
        what,
        ok: result.ok,
        detail: result.summary,
        ...(result.hint ? { hint: result.hint } : {}),
        core: false,
      });
      continue;
    }
    const host = {
      bwrap: probe,
      cacheDir: config.core.cacheDir,
      stateDir,
      tmpfsBytes: config.core.isolationTmpfsBytes,
      readable: config.core.isolationReadable,
      ownSecrets: [config.receipts.keyFile],
      network: 'egress' as const,
      env: config.childEnv,
      fetch: runtimeFetch,
    };
    const { result, unseen } = await checkInIsolation(adapter, parsed.data, host);
    const detail = `${result.summary} (checked under bwrap, as a mission runs it)`;
    const seen =
      unseen.length === 0 ? {} : { unseen, hint: `inside the isolation it could not see: ${unseen.join('; ')}` };
    findings.push({
      what,
      ok: result.ok && unseen.length === 0,
      detail,
      ...(result.hint ? { hint: result.hint } : {}),
      ...seen,
      core: false,
    });
  }
  return findings;
}

function printFindings(findings: Finding[], ok: boolean, stalled: boolean): void {
  for (const f of findings) {
    process.stdout.write(`${f.ok ? '✔' : f.core ? '✖' : '·'} ${f.what.padEnd(26)} ${f.detail}\n`);
    if (!f.ok && f.hint) process.stdout.write(`  hint: ${f.hint}\n`);
  }
  const why = stalled ? ' (the fleet cannot make progress)' : '';
  process.stdout.write(ok ? 'ready to run missions\n' : `not ready: fix the ✖ lines above${why}\n`);
}

/** Whether a resident uh serves this cache dir (never a problem either way). */
async function residentFinding(config: UhConfig): Promise<Finding> {
  const s = await residentStatus(config.core.cacheDir);
  const detail = s
    ? `pid ${s.pid} serves uh mission run here: ${s.served} served, ${s.refused} refused${s.last_refusal ? ` (last: ${s.last_refusal})` : ''}`
    : 'none: each uh mission run starts uh (uh daemon start keeps it loaded, docs/resident.md)';
  return { what: 'resident', ok: true, detail, core: false };
}

export async function doctor(argv: string[], config: UhConfig): Promise<number> {
  const { values } = parseCommand(DOCTOR, argv);
  if (values.help) return (void process.stdout.write(`${helpText(DOCTOR)}\n`), EXIT.ok);
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const findings = hostFindings(config, stateDir);
  // Queue mode's Redis: --redis, REDIS_URL, else the default (said on stderr). Only a Redis the
  // operator configured is a core finding: inline runs need none.
  const redis = redisUrlFor(config.queue, values.redis as string | undefined);
  const redisUrl = queueRedisUrl(config, values.redis);
  const problem = await pingRedis(redisUrl);
  findings.push({
    what: 'redis',
    ok: problem === null,
    detail: problem ?? `${redisUrl.replace(/\/\/[^@]*@/, '//***@')} answers`,
    hint: 'start Redis or fix --redis / REDIS_URL (queue mode only)',
    core: !redis.defaulted,
  });
  const auth = problem === null ? await redisAuthFinding(redisUrl) : null;
  if (auth) findings.push(auth);
  const receipts = receiptKeyFindings(config, stateDir);
  findings.push(...receipts.findings);
  const fleet =
    problem === null && !redis.defaulted ? await fleetFindings(config, redisUrl, receipts.keyring, stateDir) : null;
  findings.push(...(fleet?.findings ?? []));
  findings.push(isolationFinding(config), sandboxesFinding(config), networkFinding(config), ...limitsFindings(config));
  findings.push(...(await runtimeFindings(config, stateDir)), await residentFinding(config));
  const ok = findings.filter((f) => f.core).every((f) => f.ok);
  if (values.json) writeJson({ ok, findings, ...(fleet ? { fleet: fleet.report } : {}) });
  else printFindings(findings, ok, (fleet?.report.stalled_runtimes.length ?? 0) > 0);
  return ok ? EXIT.ok : EXIT.blocked;
}
