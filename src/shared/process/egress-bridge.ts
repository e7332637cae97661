/**
 * The inside half of default-deny egress (docs/security.md "Network"). The agent's network
 * namespace (`--unshare-net`) holds only a loopback device; uh's proxy listens on a Unix socket
 * outside (workers/sandbox/egress-proxy.ts), bind-mounted in. Each isolated child is started by a
 * small Node bridge that first listens, inside the namespace, on
 *
 *   127.0.0.1:<proxyPort>    relayed byte for byte to the socket: the agent's HTTP(S)_PROXY
 *   <forward.listen>:<port>  a transparent forwarder for one allowed host: each connection is
 *                            opened as `CONNECT <target>` on the socket and then relayed, so a
 *                            client that ignores the proxy variables (Node 20's fetch) still gets
 *                            through, and TLS passes untouched; names resolve to these addresses
 *                            through the bind-mounted `hostsFile`
 *
 * then spawns the child with the same stdio and exits as it exits (its code, or its signal). A
 * connection the proxy refuses is reset. Nothing else leaves the namespace: fail closed.
 * Pure: this module only builds the argv (node's own executable runs the script with `-e`).
 */

export interface EgressForward {
  /** A loopback address inside the namespace (127.0.0.1 for a literal, 127.0.0.N for a name). */
  listen: string;
  port: number;
  /** `host:port` asked of the proxy. */
  target: string;
}

export interface EgressBridge {
  /** The proxy's Unix socket on the host (bound read-only at the same path). */
  socket: string;
  /** The loopback port of the agent's HTTP(S)_PROXY inside the namespace. */
  proxyPort: number;
  forwards: readonly EgressForward[];
  /** Bound read-only over /etc/hosts: the forwarded names, or null to keep the host's. */
  hostsFile: string | null;
  /** The Node executable that runs the bridge (uh's own). */
  node: string;
}

/** The bridge, run as `node -e BRIDGE_SCRIPT -- <config json> <argv...>`. Plain ES2020: it is not compiled. */
export const BRIDGE_SCRIPT = String.raw`
const net = require('node:net');
const { spawn } = require('node:child_process');
const cfg = JSON.parse(process.argv[1]);
const argv = process.argv.slice(2);
const relay = (a, b) => { a.pipe(b); b.pipe(a); const end = () => { a.destroy(); b.destroy(); };
  a.on('error', end); b.on('error', end); a.on('close', end); b.on('close', end); };
const viaConnect = (client, target) => {
  const up = net.connect(cfg.socket);
  let head = Buffer.alloc(0);
  const onData = (chunk) => {
    head = Buffer.concat([head, chunk]);
    const at = head.indexOf('\r\n\r\n');
    if (at < 0) { if (head.length > 8192) up.destroy(); return; }
    up.off('data', onData);
    if (!/^HTTP\/1\.[01] 200/.test(head.toString('latin1'))) { client.resetAndDestroy(); up.destroy(); return; }
    const rest = head.subarray(at + 4);
    if (rest.length) client.write(rest);
    relay(client, up);
  };
  up.on('data', onData);
  up.on('error', () => client.destroy());
  up.write('CONNECT ' + target + ' HTTP/1.1\r\nHost: ' + target + '\r\n\r\n');
};
const listeners = [{ listen: '127.0.0.1', port: cfg.proxyPort, target: null }, ...cfg.forwards];
let pending = listeners.length;
const start = () => {
  const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit' });
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => child.kill(sig));
  child.on('error', (e) => { process.stderr.write('uh egress bridge: ' + e.message + '\n'); process.exit(127); });
  child.on('exit', (code, signal) => {
    if (signal) { process.removeAllListeners(signal); process.kill(process.pid, signal); }
    process.exit(code === null ? 1 : code);
  });
};
for (const l of listeners) {
  const server = net.createServer((client) => {
    client.on('error', () => client.destroy());
    if (l.target === null) { const up = net.connect(cfg.socket); relay(client, up); } else viaConnect(client, l.target);
  });
  const ready = () => { if (--pending === 0) start(); };
  // The proxy port is required; a forwarder that cannot listen (no IPv6 inside) is only a path less: fail closed.
  server.on('error', (e) => {
    if (l.target !== null) return ready();
    process.stderr.write('uh egress bridge: cannot listen on ' + l.listen + ':' + l.port + ': ' + e.message + '\n');
    process.exit(125);
  });
  server.listen(l.port, l.listen, ready);
}
`;

const LOOPBACK = 'localhost,127.0.0.1,::1';

/** The proxy variables of an isolated child in egress mode (whatever the mission's env said). */
export function egressEnv(bridge: EgressBridge): Record<string, string> {
  const url = `http://127.0.0.1:${bridge.proxyPort}`;
  const env: Record<string, string> = {};
  for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY']) {
    env[name] = url;
    env[name.toLowerCase()] = url;
  }
  // The namespace's loopback is its own (the host's is unreachable): a runtime's own local service
  // (opencode's server) stays direct, and an allowed loopback host is the forwarder, still decided by the proxy.
  return { ...env, NO_PROXY: LOOPBACK, no_proxy: LOOPBACK };
}

/** The bwrap arguments of egress mode (before `--clearenv`): no network but the bridged socket and hosts file. */
export function egressBwrapArgs(bridge: EgressBridge): string[] {
  const out = ['--unshare-net', '--ro-bind', bridge.socket, bridge.socket, '--ro-bind-try', bridge.node, bridge.node];
  if (bridge.hostsFile !== null) out.push('--ro-bind', bridge.hostsFile, '/etc/hosts');
  return out;
}

/** The child's argv wrapped in the bridge. */
export function bridgedArgv(bridge: EgressBridge, argv: readonly string[]): string[] {
  const config = JSON.stringify({ socket: bridge.socket, proxyPort: bridge.proxyPort, forwards: bridge.forwards });
  return [bridge.node, '-e', BRIDGE_SCRIPT, '--', config, ...argv];
}
