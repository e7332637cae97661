/**
 * Egress of one operation (docs/security.md "Network"): under isolation in `egress` mode, uh's
 * proxies run outside the sandbox for the whole operation, reached through the bridge
 * (shared/process/egress-bridge.ts):
 *
 *   runtime   the hosts the runtime's adapter declares from its config, and the mission's `sandbox.egress`
 *   checks    the mission's `sandbox.egress` only (a check has no use for the model endpoint);
 *             none listed: no proxy, no bridge, the checks get no network at all
 *
 * Closed once the operation settled; what they were asked and refused goes into the receipt's
 * `isolation.egress`.
 */
import { egressRules } from '../../shared/contracts/egress.js';
import type { EgressBridge } from '../../shared/process/egress-bridge.js';
import { egressBridgeFor } from '../sandbox/egress-forwards.js';
import { startEgressProxy, type EgressProxy, type EgressSummary } from '../sandbox/egress-proxy.js';
import type { IsolationDecision } from '../sandbox/isolation.js';
import type { PreparedOperation } from '../../operation/prepare-operation.js';

export interface PhaseEgress {
  proxy: EgressProxy;
  bridge: EgressBridge;
}

export interface OperationEgress {
  runtime: PhaseEgress;
  /** null: the mission lists no host, so its checks get no network. */
  checks: PhaseEgress | null;
}

async function phaseEgress(allowed: string[]): Promise<PhaseEgress> {
  const proxy = await startEgressProxy(allowed);
  return { proxy, bridge: egressBridgeFor(proxy, egressRules(allowed)) };
}

/** The allowlist in force: what the runtime declares, then the mission's entries, each once. */
export function egressAllowlist(
  prepared: PreparedOperation,
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  const { mission, runtime } = prepared;
  let declared: string[] = [];
  try {
    declared = runtime.adapter.egress?.(runtime.config, { env }) ?? [];
  } catch {
    // an adapter that throws declares nothing: its runtime then gets no network beyond the mission's list
  }
  return [...new Set([...declared, ...mission.sandbox.egress])];
}

export async function egressFor(
  prepared: PreparedOperation,
  isolation: IsolationDecision,
  env: Readonly<Record<string, string | undefined>>,
): Promise<OperationEgress | null> {
  if (!isolation.use || isolation.status.network !== 'egress') return null;
  const runtime = await phaseEgress(egressAllowlist(prepared, env));
  const listed = prepared.mission.sandbox.egress;
  return { runtime, checks: listed.length > 0 ? await phaseEgress([...listed]) : null };
}

/** What the receipt says: the runtime's allowlist (the checks' is a part of it), every host asked for and refused. */
export function egressSummary(egress: OperationEgress): EgressSummary {
  const [a, b] = [egress.runtime.proxy.summary(), egress.checks?.proxy.summary()];
  const union = (x: string[], y: string[] = []) => [...new Set([...x, ...y])];
  return { allowed: a.allowed, asked: union(a.asked, b?.asked), refused: union(a.refused, b?.refused) };
}

/** Close the proxies (once, after the operation settled or failed). */
export async function closeEgress(egress: OperationEgress | null): Promise<void> {
  for (const phase of [egress?.runtime, egress?.checks]) await phase?.proxy.close().catch(() => undefined);
}
