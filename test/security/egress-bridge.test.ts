/**
 * The egress bridge under real bubblewrap, both ways it starts (src/shared/process/egress-bridge.ts):
 * with perl, which opens the listening sockets and execs the child at once, node starting only
 * when a connection comes; and without, node listening first and then starting the child. A child
 * that connects in its first instruction (bash's /dev/tcp, well before any node could listen) is
 * answered either way, and a child that never connects never has a node started beside it.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { egressRules } from '../../src/shared/contracts/egress.js';
import { bwrapArgv } from '../../src/shared/process/bwrap-argv.js';
import { whichOnPath } from '../../src/shared/process/bwrap-probe.js';
import { egressBridgeFor } from '../../src/workers/sandbox/egress-forwards.js';
import { startEgressProxy, type EgressProxy } from '../../src/workers/sandbox/egress-proxy.js';
import { requireBwrap } from './isolation-helpers.js';

let server: Server;
let port: number;
let proxy: EgressProxy;

beforeAll(async () => {
  requireBwrap();
  server = createServer((_req, res) => res.end('hello from the model server'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
  proxy = await startEgressProxy([`127.0.0.1:${port}`]);
});

afterAll(async () => {
  await proxy.close();
  server.close();
});

/** Runs `script` (bash) in a sandbox with the bridge; stdout, and the program each process of the sandbox runs. */
function inSandbox(prelisten: string | null, script: string): Promise<{ code: number | null; out: string }> {
  const bridge = egressBridgeFor(proxy, egressRules([`127.0.0.1:${port}`]), prelisten);
  const argv = bwrapArgv(
    {
      bwrap: whichOnPath('bwrap', process.env.PATH) ?? 'bwrap',
      masked: [],
      home: null,
      tmpfsBytes: null,
      readable: [],
      writable: [],
      network: false,
      egress: bridge,
      env: { PATH: '/usr/bin:/bin' },
      cwd: '/',
    },
    ['/bin/bash', '-c', script],
  );
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}

/** What the sandbox's processes run (the first word of each cmdline), printed by the child. */
const LIST_PROCESSES = `for c in /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < "$c" | head -n 1; done; echo END`;

const ask = (p: number) =>
  `exec 3<>/dev/tcp/127.0.0.1/3128 || exit 3; printf 'GET http://127.0.0.1:${p}/ HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n' >&3; cat <&3`;

describe.each([
  ['perl opens the sockets', '/usr/bin/perl'],
  ['node opens them (no perl)', null],
])('egress bridge: %s', (_name, prelisten) => {
  it('a connection made at once through the proxy port reaches the allowed server', async () => {
    const { code, out } = await inSandbox(prelisten, ask(port));
    expect(out).toContain('HTTP/1.1 200');
    expect(out).toContain('hello from the model server');
    expect(code).toBe(0);
  });

  it('the child is the one that exits: its code is the sandbox’s', async () => {
    const { code } = await inSandbox(prelisten, 'exit 7');
    expect(code).toBe(7);
  });
});

describe('egress bridge: started only when needed', () => {
  it('with perl, a child that never connects has no node beside it; without, the bridge is node', async () => {
    const lazy = await inSandbox('/usr/bin/perl', LIST_PROCESSES);
    expect(lazy.out).toContain('END');
    expect(lazy.out.split('\n')).not.toContain(process.execPath);
    expect(lazy.out.split('\n')).toContain('/usr/bin/perl');
    const eager = await inSandbox(null, LIST_PROCESSES);
    expect(eager.out.split('\n')).toContain(process.execPath);
  });

  it('with perl, the first connection starts node, and the answer comes', async () => {
    const { out } = await inSandbox('/usr/bin/perl', `${ask(port)}; ${LIST_PROCESSES}`);
    expect(out).toContain('hello from the model server');
    expect(out.split('\n')).toContain(process.execPath);
  });
});
