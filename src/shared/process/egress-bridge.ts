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
 *
 * Where the host has perl (`prelisten`), the agent does not wait for node to start: a few lines of
 * perl with no modules (~3 ms) open those listening sockets first, leave a grandchild (so the agent
 * has no child it did not make) waiting for the first connection on any of them, and exec the
 * child. The grandchild starts the bridge on those sockets when a connection comes, so an agent
 * that never connects never pays for a node start; a connection waits in the socket's backlog
 * until node accepts it, so none is lost, and a bridge that cannot serve kills every process of the
 * sandbox's PID namespace, so nothing hangs on it.
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
  /** The Node executable that runs the bridge (uh's own; its real path). */
  node: string;
  /** perl (`/usr/bin/perl`'s real path), which opens the listening sockets so the child starts at once; null: node does. */
  prelisten?: string | null;
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
// Started by PRELISTEN_SCRIPT: the sockets are open (fd -1: that forwarder could not listen) and the child runs.
const FDS = '--uh-bridge-fds=';
const fds = argv.length === 1 && argv[0].startsWith(FDS) ? argv[0].slice(FDS.length).split(',').map(Number) : null;
let pending = listeners.length;
const start = () => {
  if (fds !== null) return;
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
    if (fds !== null) process.kill(-1, 'SIGKILL');
    process.exit(125);
  });
  const fd = fds === null ? null : fds[listeners.indexOf(l)];
  if (fd === null) server.listen(l.port, l.listen, ready);
  else if (fd >= 0) server.listen({ fd }, ready);
}
`;

/**
 * The pre-listener, run as `perl -e PRELISTEN_SCRIPT <n> (<family> <packed address hex> <port>)×n
 * <node> <bridge script> <config json> -- <argv...>`: only perl's built-ins (no module loads, so it
 * starts in ~3 ms). Each socket is opened, bound and listening before the child starts; one that
 * cannot bind is -1 (the proxy's own, the first, is required: exit 125). `$^F` keeps them open
 * across exec in the bridge; the child gets none of them.
 */
export const PRELISTEN_SCRIPT = String.raw`
$^F = 1023;
my $n = shift @ARGV; my (@socks, @fds);
for my $i (1 .. $n) {
  my ($family, $hex, $port) = splice(@ARGV, 0, 3);
  my $addr = pack('H*', $hex);
  my $sa = $family == 2 ? pack('S n a4 x8', 2, $port, $addr) : pack('S n N a16 N', 10, $port, 0, $addr, 0);
  my $s;
  if (socket($s, $family, 1, 0) && bind($s, $sa) && listen($s, 511)) { push @socks, $s; push @fds, fileno($s); }
  else {
    if ($i == 1) { print STDERR "uh egress bridge: cannot listen on port $port: $!\n"; exit 125; }
    push @fds, -1;
  }
}
my ($node, $script, $config) = splice(@ARGV, 0, 3);
shift @ARGV;
my $pid = fork();
defined $pid or do { print STDERR "uh egress bridge: fork: $!\n"; exit 125; };
if ($pid == 0) {
  my $bridge = fork();
  exit(defined $bridge ? 0 : 1) if !defined $bridge || $bridge;
  open(STDIN, '<', '/dev/null'); open(STDOUT, '>', '/dev/null');
  my $ready = '';
  vec($ready, $_, 1) = 1 for grep { $_ >= 0 } @fds;
  my $n = 0;
  $n = select(my $out = $ready, undef, undef, undef) until $n > 0;
  exec { $node } $node, '-e', $script, '--', $config, '--uh-bridge-fds=' . join(',', @fds);
  print STDERR "uh egress bridge: cannot start $node: $!\n"; kill 'KILL', -1; exit 125;
}
waitpid($pid, 0);
if ($? != 0) { print STDERR "uh egress bridge: could not start the bridge\n"; exit 125; }
close($_) for @socks;
$^F = 2;
exec { $ARGV[0] } @ARGV;
print STDERR "uh egress bridge: cannot run $ARGV[0]: $!\n";
exit 127;
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

/**
 * The bwrap arguments of egress mode (before `--clearenv`): no network but the bridged socket and
 * hosts file. node and perl are bound where `shadowed` says a tmpfs of the sandbox hides them (an
 * nvm under the masked home); elsewhere the read-only root already shows them (each bind costs
 * bwrap ~0.1 ms).
 */
export function egressBwrapArgs(bridge: EgressBridge, shadowed: (path: string) => boolean): string[] {
  const out = ['--unshare-net', '--ro-bind', bridge.socket, bridge.socket];
  for (const program of [bridge.node, bridge.prelisten ?? null])
    if (program !== null && shadowed(program)) out.push('--ro-bind-try', program, program);
  if (bridge.hostsFile !== null) out.push('--ro-bind', bridge.hostsFile, '/etc/hosts');
  return out;
}

/** An address as perl's `socket` wants it: the family (2 or 10) and the packed address in hex. */
function packedAddress(address: string): [string, string] {
  if (address === '::1') return ['10', `${'0'.repeat(30)}01`];
  return [
    '2',
    address
      .split('.')
      .map((b) => Number(b).toString(16).padStart(2, '0'))
      .join(''),
  ];
}

/** The child's argv wrapped in the bridge (started by the pre-listener where there is perl). */
export function bridgedArgv(bridge: EgressBridge, argv: readonly string[]): string[] {
  const config = JSON.stringify({ socket: bridge.socket, proxyPort: bridge.proxyPort, forwards: bridge.forwards });
  const perl = bridge.prelisten ?? null;
  if (perl === null) return [bridge.node, '-e', BRIDGE_SCRIPT, '--', config, ...argv];
  const listeners = [{ listen: '127.0.0.1', port: bridge.proxyPort }, ...bridge.forwards];
  const sockets = listeners.flatMap((l) => [...packedAddress(l.listen), String(l.port)]);
  const bridgeArgs = [bridge.node, BRIDGE_SCRIPT, config];
  return [perl, '-e', PRELISTEN_SCRIPT, String(listeners.length), ...sockets, ...bridgeArgs, '--', ...argv];
}
