/**
 * The pure half of default-deny egress (docs/security.md "Network"): allowlist entries, what the
 * proxy admits by name and by address (a wildcard resolving to the host's loopback is refused:
 * DNS rebinding), the transparent forwarders, the bwrap argv; and the proxy itself over its Unix
 * socket with a scripted resolver (no bwrap needed here; test/security/egress.test.ts runs it all
 * under bwrap).
 */
import { createServer, request, type Server } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { EgressListSchema, egressRules, matchEgress, parseEgressEntry } from '../../src/shared/contracts/egress.js';
import { bwrapArgv } from '../../src/shared/process/bwrap-argv.js';
import { EgressPolicy, isHostInternal } from '../../src/workers/sandbox/egress-policy.js';
import { egressBridgeFor } from '../../src/workers/sandbox/egress-forwards.js';
import { startEgressProxy } from '../../src/workers/sandbox/egress-proxy.js';

describe('sandbox.egress entries', () => {
  it.each([
    ['api.example.com', { host: 'api.example.com', wildcard: false, port: null }],
    ['API.Example.com.:8443', { host: 'api.example.com', wildcard: false, port: 8443 }],
    ['*.example.com', { host: 'example.com', wildcard: true, port: null }],
    ['127.0.0.1:8080', { host: '127.0.0.1', wildcard: false, port: 8080 }],
    ['[::1]:9000', { host: '::1', wildcard: false, port: 9000 }],
  ])('%s parses', (entry, rule) => expect(parseEgressEntry(entry)).toEqual(rule));

  it.each([
    ['http://example.com/', /host, host:port or \*\.suffix/],
    ['example.com:0', /port must be 1-65535/],
    ['*.com', /at least one dot/],
    ['*.10.0.0.1', /at least one dot|not a host/],
    ['exa mple.com', /host, host:port|not a host/],
  ])('%s is refused', (entry, problem) => {
    const r = EgressListSchema.safeParse([entry]);
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toMatch(problem);
    expect(r.error?.issues[0]?.path).toEqual([0]);
  });

  it('matches exact entries by port (443 and 80 when none), wildcards strictly under the suffix', () => {
    const rules = egressRules(['api.example.com', '*.pkg.dev:8443', '127.0.0.1:5000']);
    expect(matchEgress(rules, 'API.example.com', 443)).not.toBeNull();
    expect(matchEgress(rules, 'api.example.com', 80)).not.toBeNull();
    expect(matchEgress(rules, 'api.example.com', 22)).toBeNull();
    expect(matchEgress(rules, 'a.b.pkg.dev', 8443)).not.toBeNull();
    expect(matchEgress(rules, 'pkg.dev', 8443)).toBeNull();
    expect(matchEgress(rules, 'evilpkg.dev', 8443)).toBeNull();
    expect(matchEgress(rules, '127.0.0.1', 5000)).not.toBeNull();
    expect(matchEgress(rules, '127.0.0.1', 6379)).toBeNull();
  });
});

describe('the proxy decision', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.255.0.9', true],
    ['0.0.0.0', true],
    ['169.254.169.254', true],
    ['100.100.100.200', true],
    ['::1', true],
    ['::', true],
    ['fe80::1', true],
    ['fd00:ec2::254', true],
    ['::ffff:127.0.0.1', true],
    ['93.184.216.34', false],
    ['10.0.0.5', false],
    ['2001:db8::1', false],
  ])('%s host-internal: %s', (address, internal) => expect(isHostInternal(address)).toBe(internal));

  it('refuses by name first, then a wildcard resolving to the host, and connects to the checked address', async () => {
    const lookups: string[] = [];
    const resolve = async (host: string) => {
      lookups.push(host);
      if (host === 'rebind.example.com') return [{ address: '127.0.0.1', family: 4 }];
      if (host === 'gone.example.com') throw new Error('ENOTFOUND');
      return [{ address: '93.184.216.34', family: 4 }];
    };
    const policy = new EgressPolicy(['*.example.com', 'model.local:8080', '127.0.0.1:7000'], resolve);
    expect(await policy.decide('other.org', 443)).toEqual({ ok: false, reason: 'not allowed' });
    expect(lookups).toEqual([]); // decided by name: nothing resolved, nothing connected
    expect(await policy.decide('rebind.example.com', 443)).toEqual({ ok: false, reason: 'host-internal address' });
    expect(await policy.decide('gone.example.com', 443)).toEqual({ ok: false, reason: 'unresolvable' });
    expect(await policy.decide('api.example.com', 443)).toMatchObject({ ok: true, address: '93.184.216.34' });
    expect(await policy.decide('127.0.0.1', 7000)).toMatchObject({ ok: true, address: '127.0.0.1' });
    expect(await policy.decide('127.0.0.1', 6379)).toEqual({ ok: false, reason: 'not allowed' });
  });
});

describe('the bridge', () => {
  it('forwards exact entries: loopback literals at their address, names at 127.0.0.N in a hosts file', () => {
    const bridge = egressBridgeFor(
      { socket: '/run/x/proxy.sock', dir: '/nonexistent-dir-never-written' },
      egressRules(['127.0.0.1:3128', '*.example.com', '10.1.2.3:80', 'localhost:5000', '[::1]:6000']),
      null,
    );
    // The proxy port moves off 3128, which an allowed loopback server holds.
    expect(bridge.proxyPort).toBe(3129);
    expect(bridge.forwards).toEqual([
      { listen: '127.0.0.1', port: 3128, target: '127.0.0.1:3128' },
      { listen: '127.0.0.1', port: 5000, target: 'localhost:5000' },
      { listen: '::1', port: 5000, target: 'localhost:5000' },
      { listen: '::1', port: 6000, target: '[::1]:6000' },
    ]);
    expect(bridge.hostsFile).toBeNull();
    const argv = bwrapArgv(
      {
        bwrap: 'bwrap',
        masked: [],
        home: null,
        tmpfsBytes: null,
        readable: [],
        writable: [],
        network: false,
        egress: bridge,
        env: { PATH: '/usr/bin', HTTPS_PROXY: 'http://evil:1' },
        cwd: '/w',
      },
      ['codex', 'exec'],
    );
    expect(argv).toContain('--unshare-net');
    expect(argv.join(' ')).toContain('--ro-bind /run/x/proxy.sock /run/x/proxy.sock');
    // The mission's own proxy variables never win: one HTTPS_PROXY, uh's.
    expect(argv.filter((a) => a === 'HTTPS_PROXY')).toHaveLength(1);
    expect(argv[argv.indexOf('HTTPS_PROXY') + 1]).toBe('http://127.0.0.1:3129');
    expect(argv.filter((a) => a === 'http://evil:1')).toEqual([]);
    expect(argv.slice(argv.indexOf('--') + 1, argv.indexOf('--') + 3)).toEqual([process.execPath, '-e']);
    expect(argv.slice(-2)).toEqual(['codex', 'exec']);
  });

  it('with perl, the sockets are opened first, each as family, address and port, then node and the child', () => {
    const bridge = egressBridgeFor(
      { socket: '/run/x/proxy.sock', dir: '/nonexistent-dir-never-written' },
      egressRules(['localhost:5000']),
      '/usr/bin/perl',
    );
    const plan = { bwrap: 'bwrap', masked: [], home: null, tmpfsBytes: null, readable: [], writable: [] };
    const argv = bwrapArgv({ ...plan, network: false, egress: bridge, env: {}, cwd: '/w' }, ['codex', 'exec']);
    // The read-only root shows /usr/bin/perl: no bind of its own (bwrap-argv.test.ts: one under a tmpfs is bound).
    expect(argv.join(' ')).not.toContain('--ro-bind-try /usr/bin/perl');
    const child = argv.slice(argv.indexOf('--') + 1);
    expect(child.slice(0, 2)).toEqual(['/usr/bin/perl', '-e']);
    const v6Loopback = `${'0'.repeat(30)}01`;
    expect(child.slice(3, 13)).toEqual([
      '3',
      '2',
      '7f000001',
      '3128',
      '2',
      '7f000001',
      '5000',
      '10',
      v6Loopback,
      '5000',
    ]);
    expect(child[13]).toBe(process.execPath);
    expect(child.slice(-3)).toEqual(['--', 'codex', 'exec']);
  });
});

async function withServer(fn: (port: number, hits: string[]) => Promise<void>): Promise<void> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.end('hello');
  });
  server.on('upgrade', (req, socket) => {
    hits.push(`UPGRADE ${req.url} proxy-authorization=${req.headers['proxy-authorization'] ?? 'none'}`);
    socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await fn((server.address() as { port: number }).port, hits);
  } finally {
    server.close();
  }
}

function rawOverSocket(socket: string, text: string): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(socket);
    let got = '';
    s.on('connect', () => s.write(text));
    s.on('data', (d) => {
      got += d;
      if (got.includes('\r\n\r\n')) {
        s.destroy();
        resolve(got.split('\r\n')[0]!);
      }
    });
    s.on('close', () => resolve(got.split('\r\n')[0] ?? ''));
  });
}

describe('the proxy on its Unix socket', () => {
  it('tunnels and forwards to an allowed host, refuses the rest with 403 and records both', async () => {
    await withServer(async (port, hits) => {
      // localhost answers ::1 first (nothing listens there): the checked addresses are tried in order.
      const resolve = async (host: string) =>
        host === 'localhost'
          ? [
              { address: '::1', family: 6 },
              { address: '127.0.0.1', family: 4 },
            ]
          : [{ address: '127.0.0.1', family: 4 }];
      const proxy = await startEgressProxy([`127.0.0.1:${port}`, '*.example.com', `localhost:${port}`], resolve);
      try {
        expect(await rawOverSocket(proxy.socket, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`)).toMatch(/ 200 /);
        expect(await rawOverSocket(proxy.socket, `CONNECT localhost:${port} HTTP/1.1\r\n\r\n`)).toMatch(/ 200 /);
        expect(await rawOverSocket(proxy.socket, 'CONNECT 127.0.0.1:6379 HTTP/1.1\r\n\r\n')).toMatch(/ 403 /);
        expect(await rawOverSocket(proxy.socket, 'CONNECT rebind.example.com:443 HTTP/1.1\r\n\r\n')).toMatch(/ 403 /);
        const body = await new Promise<string>((done) => {
          const req = request({ socketPath: proxy.socket, path: `http://127.0.0.1:${port}/v1/models`, method: 'GET' });
          req.on('response', (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () => done(`${res.statusCode} ${text}`));
          });
          req.end();
        });
        expect(body).toBe('200 hello');
        // A plain-HTTP upgrade (ws://) in absolute form reaches the origin with an origin-form path.
        const upgraded = await rawOverSocket(
          proxy.socket,
          `GET http://127.0.0.1:${port}/ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nProxy-Authorization: x\r\n\r\n`,
        );
        expect(upgraded).toBe('HTTP/1.1 101 Switching Protocols');
        expect(hits).toEqual(['GET /v1/models', 'UPGRADE /ws proxy-authorization=none']);
        expect(proxy.summary()).toEqual({
          allowed: [`127.0.0.1:${port}`, '*.example.com', `localhost:${port}`],
          asked: [`127.0.0.1:${port}`, `localhost:${port}`, '127.0.0.1:6379', 'rebind.example.com:443'],
          refused: ['127.0.0.1:6379 (not allowed)', 'rebind.example.com:443 (host-internal address)'],
        });
      } finally {
        await proxy.close();
      }
    });
  });
});
