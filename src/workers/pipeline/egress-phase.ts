/**
 * Egress of one operation (docs/security.md "Network"): under isolation in `egress` mode, uh's
 * proxy runs outside the sandbox for the whole operation, admitting the hosts the runtime's
 * adapter declares from its config and the mission's `sandbox.egress`; the runtime and the checks
 * reach it through the bridge (shared/process/egress-bridge.ts). Closed once the operation settled;
 * what it was asked and refused goes into the receipt's `isolation.egress`.
 */
import { egressRules } from '../../shared/contracts/egress.js';
import type { EgressBridge } from '../../shared/process/egress-bridge.js';
import { egressBridgeFor } from '../sandbox/egress-forwards.js';
import { startEgressProxy, type EgressProxy } from '../sandbox/egress-proxy.js';
import type { IsolationDecision } from '../sandbox/isolation.js';
import type { PreparedOperation } from '../../operation/prepare-operation.js';

export interface OperationEgress {
  proxy: EgressProxy;
  bridge: EgressBridge;
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
  const allowed = egressAllowlist(prepared, env);
  const proxy = await startEgressProxy(allowed);
  return { proxy, bridge: egressBridgeFor(proxy, egressRules(allowed)) };
}

/** Close the proxy (idempotent by the caller: once, after the operation settled or failed). */
export async function closeEgress(egress: OperationEgress | null): Promise<void> {
  await egress?.proxy.close().catch(() => undefined);
}
