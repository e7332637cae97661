/**
 * The egress allowlist (docs/security.md "Network"): the hosts an isolated agent may reach through
 * uh's proxy, as the mission's `sandbox.egress` and the runtime adapters declare them. An entry is
 *
 *   host            a name or an IP literal; ports 443 and 80
 *   host:port       that port only (`[::1]:8080` for IPv6)
 *   *.suffix[:port] any name strictly under `suffix` (never `suffix` itself, never an IP literal)
 *
 * Names compare case-insensitively, without a trailing dot. An exact entry "names" its host: only
 * an exact entry admits a loopback, link-local or metadata address (a scripted server on
 * 127.0.0.1); a wildcard never does. Pure.
 */
import { z } from 'zod';

export interface EgressRule {
  /** Lower-case host name or IP literal (IPv6 without brackets); for a wildcard, the suffix. */
  host: string;
  wildcard: boolean;
  /** null: ports 443 and 80. */
  port: number | null;
}

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;
const isName = (h: string): boolean => h.length <= 253 && h.split('.').every((l) => LABEL.test(l));
const isIpv4 = (h: string): boolean =>
  /^\d{1,3}(\.\d{1,3}){3}$/.test(h) && h.split('.').every((o) => Number(o) <= 255 && !/^0\d/.test(o));
const isIpv6 = (h: string): boolean => h.includes(':') && /^[0-9a-f:.]+$/.test(h) && h.length <= 45;

/** The host part normalised (lower case, no trailing dot, no IPv6 brackets), or null when malformed. */
export function normaliseHost(host: string): string | null {
  let h = host.trim().toLowerCase().replace(/\.$/, '');
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  return isIpv4(h) || isIpv6(h) || isName(h) ? h : null;
}

/** One entry parsed, or a problem naming what is wrong. */
export function parseEgressEntry(entry: string): EgressRule | { problem: string } {
  const m = /^(\*\.)?(\[[^\]]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(entry.trim());
  if (!m) return { problem: 'must be host, host:port or *.suffix (IPv6 as [addr]:port)' };
  const port = m[3] === undefined ? null : Number(m[3]);
  if (port !== null && (port < 1 || port > 65535)) return { problem: 'port must be 1-65535' };
  const host = normaliseHost(m[2]!);
  if (host === null) return { problem: `"${m[2]}" is not a host name or IP address` };
  const wildcard = m[1] !== undefined;
  if (wildcard && (isIpv4(host) || isIpv6(host) || !host.includes('.')))
    return { problem: '*. must be followed by a domain with at least one dot (*.example.com)' };
  return { host, wildcard, port };
}

/** `sandbox.egress`: at most 64 entries, each checked above. */
export const EgressListSchema = z
  .array(
    z
      .string()
      .max(260)
      .superRefine((entry, ctx) => {
        const parsed = parseEgressEntry(entry);
        if ('problem' in parsed) ctx.addIssue({ code: 'custom', message: parsed.problem });
      }),
  )
  .max(64, 'at most 64 entries');

/** The entries as rules (malformed ones, which the schema refuses, are dropped). */
export function egressRules(entries: readonly string[]): EgressRule[] {
  return entries.map(parseEgressEntry).filter((r): r is EgressRule => !('problem' in r));
}

/** The rule admitting `host:port`, exact entries first, or null. */
export function matchEgress(rules: readonly EgressRule[], host: string, port: number): EgressRule | null {
  const h = normaliseHost(host);
  if (h === null) return null;
  const portOk = (r: EgressRule) => (r.port === null ? port === 443 || port === 80 : r.port === port);
  const exact = rules.find((r) => !r.wildcard && r.host === h && portOk(r));
  if (exact) return exact;
  return rules.find((r) => r.wildcard && h.endsWith(`.${r.host}`) && portOk(r)) ?? null;
}

/** The `host:port` a URL reaches (its default port when it names none), as an allowlist entry; null if not http(s)/ws(s). */
export function egressEntryOfUrl(url: string): string | null {
  try {
    const u = new URL(url);
    const defaults: Record<string, string> = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443' };
    const port = u.port || defaults[u.protocol];
    return port === undefined || !u.hostname ? null : `${u.hostname}:${port}`;
  } catch {
    return null;
  }
}
