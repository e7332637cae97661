import { describe, expect, it } from 'vitest';
import { bwrapArgv } from '../../../src/shared/process/bwrap-argv.js';

const plan = {
  bwrap: '/usr/bin/bwrap',
  masked: ['/home/u/.cache/uh', '/home/u'],
  home: '/home/u',
  tmpfsBytes: 64 * 1024 * 1024,
  readable: ['/home/u/.cache/uh/mirrors/r.git'],
  writable: ['/home/u/.cache/uh/sandboxes/op-1', '/home/u/.cache/uh/mirrors/r.git/worktrees/op-1'],
  network: true,
  env: { PATH: '/usr/bin', SECRET: undefined },
  cwd: '/home/u/.cache/uh/sandboxes/op-1',
};

describe('bwrapArgv', () => {
  it('masks first (shallow before deep), then private tmp and home, then read-only, then writable binds; env explicit', () => {
    const argv = bwrapArgv({ ...plan, masked: ['/srv/cache/uh', '/srv/state'] }, ['sh', '-c', 'echo hi']);
    const at = (x: string) => argv.indexOf(x);
    expect(argv.slice(0, 8)).toEqual(['/usr/bin/bwrap', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc']);
    expect(at('/srv/state')).toBeLessThan(at('/srv/cache/uh'));
    expect(at('/tmp')).toBeGreaterThan(at('/srv/cache/uh'));
    expect(at('/home/u')).toBeGreaterThan(at('/tmp'));
    expect(at('/home/u/.cache/uh/mirrors/r.git')).toBeLessThan(at('/home/u/.cache/uh/mirrors/r.git/worktrees/op-1'));
    expect(argv).toEqual(
      expect.arrayContaining(['--unshare-pid', '--unshare-ipc', '--die-with-parent', '--new-session', '--clearenv']),
    );
    expect(argv).not.toContain('--unshare-net');
    expect(argv.join(' ')).toContain('--setenv PATH /usr/bin');
    expect(argv).not.toContain('SECRET');
    expect(argv.slice(-6)).toEqual(['--chdir', plan.cwd, '--', 'sh', '-c', 'echo hi']);
  });

  it('hidden files get a read-only /dev/null after every bind, so no bind re-exposes them', () => {
    const argv = bwrapArgv({ ...plan, readable: ['/etc'], hidden: ['/etc/shadow'] }, ['true']);
    const at = argv.indexOf('/etc/shadow');
    expect(argv.slice(at - 2, at + 1)).toEqual(['--ro-bind', '/dev/null', '/etc/shadow']);
    expect(at).toBeGreaterThan(argv.lastIndexOf('--bind-try'));
    expect(at).toBeGreaterThan(argv.indexOf('/etc'));
  });

  it('the private /tmp and home are fresh tmpfs mounts with the size cap, no host directory bound', () => {
    const argv = bwrapArgv(plan, ['true']).join(' ');
    expect(argv).toContain('--size 67108864 --tmpfs /tmp --size 67108864 --tmpfs /home/u --ro-bind-try');
    expect(argv).not.toMatch(/--bind \S+ \/tmp /);
  });

  it('without --size support the tmpfs mounts are uncapped; without a home only /tmp is private', () => {
    const argv = bwrapArgv({ ...plan, tmpfsBytes: null, home: null }, ['true']);
    expect(argv).not.toContain('--size');
    expect(argv.filter((a) => a === '--tmpfs')).toHaveLength(2); // /home/u (its cache inside needs no mount of its own) and /tmp
    expect(argv[argv.indexOf('/home/u') - 1]).toBe('--tmpfs');
    expect(argv[argv.indexOf('/tmp') - 1]).toBe('--tmpfs');
  });

  it('a mask inside another mask, the private /tmp or the home costs no mount: the later tmpfs hides it', () => {
    const argv = bwrapArgv(
      {
        ...plan,
        masked: ['/tmp/run/cache', '/tmp/run/state', '/home/u/.cache/uh', '/srv/repo', '/srv/repo/sub', '/tmpx/state'],
      },
      ['true'],
    );
    const tmpfs = argv.flatMap((a, i) => (a === '--tmpfs' ? [argv[i + 1]] : []));
    expect(tmpfs).toEqual(['/srv/repo', '/tmpx/state', '/tmp', '/home/u']);
  });

  it('network none unshares the network', () => {
    expect(bwrapArgv({ ...plan, network: false }, ['true'])).toContain('--unshare-net');
  });

  it("egress binds the bridge's node and perl only where a tmpfs of the sandbox would hide them", () => {
    const egress = (node: string, prelisten: string | null) => ({
      socket: '/run/uh-egress/proxy.sock',
      proxyPort: 3128,
      forwards: [],
      hostsFile: null,
      node,
      prelisten,
    });
    const binds = (argv: string[]) => argv.flatMap((a, i) => (a === '--ro-bind-try' ? [argv[i + 1]] : []));
    const seen = binds(bwrapArgv({ ...plan, egress: egress('/usr/bin/node', '/usr/bin/perl') }, ['true']));
    expect(seen).not.toContain('/usr/bin/node');
    expect(seen).not.toContain('/usr/bin/perl');
    // An nvm under the home, a node under /tmp or under a mask: bound, so the bridge can start.
    for (const node of ['/home/u/.nvm/versions/node/v20/bin/node', '/tmp/n/node', '/srv/cache/uh/node'])
      expect(binds(bwrapArgv({ ...plan, masked: ['/srv/cache/uh'], egress: egress(node, null) }, ['true']))).toContain(
        node,
      );
  });
});
