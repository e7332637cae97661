/**
 * The transparent path of egress mode (docs/security.md "Network"): for each exact allowlist
 * entry, a loopback address and port inside the agent's namespace where the bridge forwards to
 * the proxy (`CONNECT host:port`), so clients that ignore HTTP(S)_PROXY still reach it:
 *
 *   127.x.y.z:port, localhost:port,  listened on at that address (a scripted model server)
 *   [::1]:port
 *   name[:port]                      127.0.0.<n> in the sandbox's /etc/hosts, port (or 443 and 80)
 *   other IP literals, wildcards     proxy variables only (no address inside can stand for them)
 *
 * The proxy still decides every connection by name; a forwarder widens nothing.
 */
import { existsSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EgressRule } from '../../shared/contracts/egress.js';
import type { EgressBridge, EgressForward } from '../../shared/process/egress-bridge.js';

/** The in-sandbox proxy's first choice of port; the next free one when a forward takes it. */
const PROXY_PORT = 3128;
/** Names get 127.0.0.2 … 127.0.0.(1+MAX_NAMES). */
const MAX_NAMES = 200;

const isLoopbackV4 = (h: string): boolean => /^127\.\d+\.\d+\.\d+$/.test(h);
const isIpLiteral = (h: string): boolean => /^\d+\.\d+\.\d+\.\d+$/.test(h) || h.includes(':');

function forwardsOf(rules: readonly EgressRule[]): { forwards: EgressForward[]; hosts: string[] } {
  const forwards: EgressForward[] = [];
  const hosts: string[] = [];
  const names = new Map<string, string>();
  const seen = new Set<string>();
  const add = (listen: string, port: number, target: string) => {
    if (seen.has(`${listen}:${port}`)) return;
    seen.add(`${listen}:${port}`);
    forwards.push({ listen, port, target });
  };
  for (const rule of rules) {
    if (rule.wildcard) continue;
    const ports = rule.port === null ? [443, 80] : [rule.port];
    if (isLoopbackV4(rule.host) || rule.host === 'localhost') {
      for (const p of ports) add(rule.host === 'localhost' ? '127.0.0.1' : rule.host, p, `${rule.host}:${p}`);
      if (rule.host === 'localhost') for (const p of ports) add('::1', p, `localhost:${p}`);
      continue;
    }
    if (rule.host === '::1') {
      for (const p of ports) add('::1', p, `[::1]:${p}`);
      continue;
    }
    if (isIpLiteral(rule.host)) continue;
    let address = names.get(rule.host);
    if (address === undefined) {
      if (names.size >= MAX_NAMES) continue;
      address = `127.0.0.${names.size + 2}`;
      names.set(rule.host, address);
      hosts.push(`${address} ${rule.host}`);
    }
    for (const p of ports) add(address, p, `${rule.host}:${p}`);
  }
  return { forwards, hosts };
}

/** Debian's perl-base (Essential): the bridge's pre-listener where it is there (egress-bridge.ts). */
const PERL = '/usr/bin/perl';

/**
 * The bridge of one operation: its forwards, a hosts file in the proxy's private dir when names
 * are forwarded, and perl to pre-listen with when the host has it (`prelisten` null: never).
 */
export function egressBridgeFor(
  proxy: { socket: string; dir: string },
  rules: readonly EgressRule[],
  prelisten: string | null = existsSync(PERL) ? realpathSync.native(PERL) : null,
): EgressBridge {
  const { forwards, hosts } = forwardsOf(rules);
  let proxyPort = PROXY_PORT;
  while (forwards.some((f) => f.listen === '127.0.0.1' && f.port === proxyPort)) proxyPort += 1;
  let hostsFile: string | null = null;
  if (hosts.length > 0) {
    hostsFile = join(proxy.dir, 'hosts');
    writeFileSync(hostsFile, ['127.0.0.1 localhost', '::1 localhost', ...hosts, ''].join('\n'), { mode: 0o644 });
  }
  return { socket: proxy.socket, proxyPort, forwards, hostsFile, node: process.execPath, prelisten };
}
