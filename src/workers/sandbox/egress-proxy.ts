/**
 * uh's egress proxy: an HTTP proxy on a Unix socket outside every sandbox, the only way out of an
 * isolated agent's network namespace (the in-sandbox bridge, shared/process/egress-bridge.ts,
 * forwards loopback ports to this socket). It speaks
 *
 *   CONNECT host:port HTTP/1.1    a tunnel (HTTPS, and the bridge's transparent forwarders): TLS
 *                                 passes through untouched, the name is checked before connecting
 *   GET http://host:port/path     a plain HTTP request in absolute form, forwarded once (an
 *                                 `Upgrade` to WebSocket over `ws://` is relayed after its head)
 *
 * and decides every request by host name first (egress-policy.ts); a refusal is `403` with
 * `X-Uh-Egress: refused (<reason>)` and no connection anywhere. Every host asked for is recorded
 * (bounded) for the receipt. The socket's directory is private to the worker's user.
 */
import { chmodSync, mkdtempSync, rmdirSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type LookupFunction, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { EgressPolicy, type Resolve } from './egress-policy.js';

/** At most this many distinct hosts are recorded per list (the receipt stays bounded). */
const RECORDED = 100;
/** An upstream that has not connected by then is given up (502); once connected, no timeout. */
const CONNECT_TIMEOUT_MS = 30_000;
/** Open connections from one sandbox, at most: an agent cannot exhaust the worker's file descriptors. */
const MAX_CONNECTIONS = 256;

/** What the receipt says of one operation's egress. */
export interface EgressSummary {
  /** The allowlist in force: the runtime's hosts and the mission's `sandbox.egress`. */
  allowed: string[];
  /** Every host:port asked for (admitted or not), first asked first. */
  asked: string[];
  /** The host:port refused, with why (`api.example.com:443 (not allowed)`). */
  refused: string[];
}

export interface EgressProxy {
  /** The Unix socket the sandbox's bridge connects to. */
  readonly socket: string;
  /** The proxy's private directory (its socket, and the sandbox's hosts file). */
  readonly dir: string;
  summary(): EgressSummary;
  close(): Promise<void>;
}

/** `host:port` of a CONNECT target or an absolute URL, or null. */
function targetOf(req: IncomingMessage): { host: string; port: number } | null {
  const raw = req.url ?? '';
  if (req.method === 'CONNECT') {
    const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(raw);
    return m ? { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) } : null;
  }
  try {
    const u = new URL(raw);
    if (u.protocol !== 'http:') return null;
    return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 80) };
  } catch {
    return null;
  }
}

class Recorder {
  readonly asked = new Set<string>();
  readonly refused = new Map<string, string>();
  ask(target: string): void {
    if (this.asked.size < RECORDED) this.asked.add(target);
  }
  refuse(target: string, reason: string): void {
    if (this.refused.size < RECORDED && !this.refused.has(target)) this.refused.set(target, reason);
  }
}

function refuse(out: Duplex | ServerResponse, why: string): void {
  const head = `HTTP/1.1 403 Forbidden\r\nX-Uh-Egress: refused (${why})\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`;
  if ('writeHead' in out) {
    out.writeHead(403, { 'X-Uh-Egress': `refused (${why})`, Connection: 'close' }).end();
  } else out.end(head);
}

type Checked = { address: string; family: number }[];

/** A `lookup` that answers with the addresses the policy checked: connect tries them in order, nothing resolves again. */
function pinned(addresses: Checked): LookupFunction {
  return (_host, options, done) => {
    if (options.all) (done as (e: null, a: Checked) => void)(null, addresses);
    else done(null, addresses[0]!.address, addresses[0]!.family);
  };
}

/**
 * Connection options to the checked addresses, tried in order (happy eyeballs: `::1` refused, then
 * 127.0.0.1). The host is a name that never resolves, so `lookup` is always asked, and answers them.
 */
const upstreamOf = (addresses: Checked, port: number) => ({
  host: 'uh-egress.invalid',
  port,
  lookup: pinned(addresses),
  autoSelectFamily: true,
});

/**
 * Relay bytes between the client and the checked upstream. `request`: the head of a plain-HTTP
 * upgrade (WebSocket over `ws://`) sent upstream first; null: a CONNECT, answered with 200.
 */
function tunnel(client: Duplex, head: Buffer, addresses: Checked, port: number, request: string | null = null): void {
  const upstream: Socket = connect(upstreamOf(addresses, port));
  let connected = false;
  // A host that never answers holds nothing for long: bounded until connected, then unbounded.
  upstream.setTimeout(CONNECT_TIMEOUT_MS, () => {
    if (!connected) upstream.destroy(new Error('connect timeout'));
  });
  upstream.once('connect', () => {
    connected = true;
    upstream.setTimeout(0);
    if (request === null) client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    else upstream.write(request);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  const end = () => {
    upstream.destroy();
    client.destroy();
  };
  upstream.once('error', () => {
    if (!client.destroyed && !connected) client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
    end();
  });
  client.once('error', end);
  client.once('close', end);
}

/** An upgrade request as the origin gets it: origin-form path, the client's headers without the proxy's. */
function upgradeHead(req: IncomingMessage): string {
  const url = new URL(req.url ?? '/');
  const lines = [`${req.method} ${url.pathname}${url.search} HTTP/1.1`];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    if (!/^proxy-/i.test(name)) lines.push(`${name}: ${req.rawHeaders[i + 1]}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

const HOP = new Set(['proxy-authorization', 'proxy-connection', 'connection', 'keep-alive', 'te', 'upgrade']);

function forward(req: IncomingMessage, res: ServerResponse, addresses: Checked, port: number): void {
  const url = new URL(req.url ?? '/');
  const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !HOP.has(k.toLowerCase())));
  // agent: false: one upstream connection per request, never a pooled socket of another host.
  const out = request({
    ...upstreamOf(addresses, port),
    agent: false,
    method: req.method,
    path: `${url.pathname}${url.search}`,
    headers,
    setHost: false,
  });
  // Bounded until connected only: a model's stream may be quiet for minutes.
  out.once('socket', (socket: Socket) => {
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => out.destroy(new Error('connect timeout')));
    socket.once('connect', () => socket.setTimeout(0));
  });
  out.once('response', (upstream) => {
    res.writeHead(upstream.statusCode ?? 502, upstream.headers);
    upstream.pipe(res);
  });
  out.once('error', () => {
    if (!res.headersSent) res.writeHead(502, { Connection: 'close' });
    res.end();
  });
  req.pipe(out);
}

/** Start the proxy for one operation: `allowed` is the allowlist in force. */
export async function startEgressProxy(allowed: readonly string[], resolve?: Resolve): Promise<EgressProxy> {
  const policy = new EgressPolicy(allowed, resolve);
  const recorder = new Recorder();
  const decide = async (host: string, port: number) => {
    const target = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    recorder.ask(target);
    const decision = await policy.decide(host, port);
    if (!decision.ok) recorder.refuse(target, decision.reason);
    return decision;
  };
  const server: Server = createServer((req, res) => {
    const target = targetOf(req);
    if (!target) return refuse(res, 'not an absolute http:// URL');
    void decide(target.host, target.port).then((d) =>
      d.ok ? forward(req, res, d.addresses, target.port) : refuse(res, d.reason),
    );
  });
  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    client.on('error', () => client.destroy());
    const target = targetOf(req);
    if (!target) return refuse(client, 'malformed CONNECT target');
    void decide(target.host, target.port).then((d) =>
      d.ok ? tunnel(client, head, d.addresses, target.port) : refuse(client, d.reason),
    );
  });
  server.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    client.on('error', () => client.destroy());
    const target = req.method === 'CONNECT' ? null : targetOf(req);
    if (!target) return refuse(client, 'not an absolute http:// URL');
    void decide(target.host, target.port).then((d) =>
      d.ok ? tunnel(client, head, d.addresses, target.port, upgradeHead(req)) : refuse(client, d.reason),
    );
  });
  // Tunnels leave the HTTP server's bookkeeping once upgraded: every raw socket is tracked for close.
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  server.maxConnections = MAX_CONNECTIONS;
  const dir = mkdtempSync(join(tmpdir(), 'uh-egress-'));
  const socket = join(dir, 'proxy.sock');
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(socket, () => done());
  });
  // The agent may run as another uid (a user namespace); the directory stays 0700.
  chmodSync(socket, 0o666);
  return {
    socket,
    dir,
    summary: () => ({
      allowed: [...allowed],
      asked: [...recorder.asked],
      refused: [...recorder.refused].map(([t, why]) => `${t} (${why})`),
    }),
    close: async () => {
      const closed = new Promise<void>((done) => server.close(() => done()));
      for (const s of sockets) s.destroy();
      await closed;
      rmSync(socket, { force: true });
      rmSync(join(dir, 'hosts'), { force: true });
      rmdirSync(dir);
    },
  };
}
