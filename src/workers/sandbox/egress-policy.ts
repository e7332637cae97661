/**
 * What uh's egress proxy admits (docs/security.md "Network"), decided by name before any
 * connection is made, then by address before the one connect:
 *
 *   1. the host:port matches no rule of the allowlist            → refused (`not allowed`)
 *   2. resolving the name fails                                   → refused (`unresolvable`)
 *   3. an address is loopback, link-local, metadata or unspecified
 *      and the rule is not an exact entry naming this host        → refused (`host-internal address`)
 *   4. otherwise                                                  → connect to the checked address
 *
 * The proxy connects to the addresses it checked, in order (never resolving twice), so a name that
 * resolves to 127.0.0.1 the second time reaches nothing it was not allowed to.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { egressRules, matchEgress, normaliseHost, type EgressRule } from '../../shared/contracts/egress.js';

export type EgressDecision =
  | { ok: true; address: string; family: 4 | 6; addresses: { address: string; family: number }[]; rule: EgressRule }
  | { ok: false; reason: 'not allowed' | 'unresolvable' | 'host-internal address' };

/** IPv4 as a number, or null. */
const v4 = (a: string): number | null => {
  const parts = a.split('.').map(Number);
  return parts.length === 4 && parts.every((p) => p >= 0 && p <= 255)
    ? ((parts[0]! << 24) >>> 0) + (parts[1]! << 16) + (parts[2]! << 8) + parts[3]!
    : null;
};
const inV4 = (n: number, base: string, bits: number): boolean =>
  bits === 0 || n >>> (32 - bits) === v4(base)! >>> (32 - bits);

/** Loopback, link-local (the cloud metadata services live there), metadata or unspecified: the host's own. */
export function isHostInternal(address: string): boolean {
  const a = address.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return isHostInternal(mapped[1]!);
  const n = v4(a);
  if (n !== null)
    return (
      inV4(n, '127.0.0.0', 8) || inV4(n, '0.0.0.0', 8) || inV4(n, '169.254.0.0', 16) || inV4(n, '100.100.100.200', 32) // Alibaba Cloud's metadata service
    );
  if (isIP(a) !== 6) return false;
  return a === '::1' || a === '::' || /^fe[89ab]/.test(a) || a.startsWith('fd00:ec2::');
}

export type Resolve = (host: string) => Promise<{ address: string; family: number }[]>;
const systemResolve: Resolve = (host) => lookup(host, { all: true, verbatim: true });

export class EgressPolicy {
  readonly rules: EgressRule[];
  constructor(
    readonly entries: readonly string[],
    private readonly resolve: Resolve = systemResolve,
  ) {
    this.rules = egressRules(entries);
  }

  async decide(host: string, port: number): Promise<EgressDecision> {
    const rule = matchEgress(this.rules, host, port);
    if (!rule) return { ok: false, reason: 'not allowed' };
    const name = normaliseHost(host)!;
    let addresses: { address: string; family: number }[];
    try {
      addresses = isIP(name) ? [{ address: name, family: isIP(name) }] : await this.resolve(name);
    } catch {
      return { ok: false, reason: 'unresolvable' };
    }
    if (addresses.length === 0) return { ok: false, reason: 'unresolvable' };
    // Only an exact entry names its host; every address must pass, so a name cannot smuggle one in.
    if (rule.wildcard && addresses.some((a) => isHostInternal(a.address)))
      return { ok: false, reason: 'host-internal address' };
    const first = addresses[0]!;
    return { ok: true, address: first.address, family: first.family === 6 ? 6 : 4, addresses, rule };
  }
}
