/**
 * The hostile-agent suite for git (issue 11): each attack is a shell script run as the agent by
 * the `command` runtime, inline (`uh mission run`) and through a worker on real Redis
 * (`uh worker start` + `uh mission submit --wait`). After each attack a LATER, benign-looking
 * mission that writes an out-of-scope file runs on the same repository and cache, and the suite
 * asserts: the later mission's out-of-scope change is caught (scope_violation), no command the
 * agent planted ran, the mirror's config/hooks/info/alternates/refs are as uh made them, the
 * user's checkout is untouched, and the temp $HOME uh runs with is untouched by uh.
 *
 * Each fleet runs as root and, isolated, as the deployment's user `uh` (test/support/fleet.ts;
 * not root: as the current user only), and twice: isolated (bwrap: the mirror is read-only to the agent, so its writes
 * there are refused) and with UH_ISOLATION=off, where every write lands and only uh's own
 * defences stand: hardened git (no config, hooks, fsmonitor or filters of the agent's), the
 * mirror check before each use (`mirrorDoubts`) and the rebuild of a mirror in doubt. The tests
 * that attack the mirror assert which of the two held: refused (isolated), or landed, doubted and
 * rebuilt by the next mission (unisolated).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  asDeployed,
  firstMission,
  fleetTable,
  runScript,
  signingKeys,
  startFleet,
  stopFleet,
  type Fleet,
} from '../support/fleet.js';
import { checkoutFingerprint, git } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { mirrorDoubts, mirrorFor } from '../../src/workers/sandbox/mirror-cache.js';

let redis: TestRedis;

const SCOPE = { allowed_change_globs: ['src/**'] };
/** Shell prelude: `$M` is the mirror (found through the agent's alternates), `$U` the user's repo. */
const PRELUDE = 'set +e; M=$(dirname "$(head -n1 .git/objects/info/alternates)"); ';

const MISSION = {
  mission_id: 'm-gitsec',
  scope: SCOPE,
  verification: [{ name: 'ok', argv: ['true'], timeout_seconds: 30 }],
};
const run = (fleet: Fleet, script: string): Promise<any> => runScript(fleet, script, MISSION);

/** Everything of the mirror an attacker would change: config, hooks, info, alternates, refs. */
function mirrorFingerprint(fleet: Fleet): string {
  const m = mirrorFor(fleet.cacheDir, fleet.repo).path;
  const read = (p: string) => (existsSync(join(m, p)) ? readFileSync(join(m, p), 'utf8') : '<none>');
  const list = (p: string) => (existsSync(join(m, p)) ? readdirSync(join(m, p)).join(',') : '<none>');
  const refs = git(m, 'for-each-ref', '--format=%(refname) %(objectname)');
  return [read('config'), list('hooks'), list('info'), read('objects/info/alternates'), refs].join('\n--\n');
}

/** What uh's check before each use finds in the mirror now, and the mirror directory's identity. */
function mirrorNow(fleet: Fleet): { doubts: string[]; identity: string } {
  const m = mirrorFor(fleet.cacheDir, fleet.repo).path;
  const listed = git(m, 'config', '--file', join(m, 'config'), '--null', '--list');
  const config = listed
    .split('\0')
    .filter(Boolean)
    .map((e) => e.replace('\n', '='));
  const st = statSync(m, { bigint: true });
  return { doubts: mirrorDoubts(m, config), identity: `${st.ino}:${st.birthtimeNs}` };
}

/**
 * The attack's writes into the mirror: refused by bwrap (isolated: nothing to doubt), or landed
 * (unisolated: uh's check names each). Returns the mirror's identity, for `laterMissionHolds`.
 */
function mirrorAfterAttack(fleet: Fleet, landed: string[]): string {
  const now = mirrorNow(fleet);
  if (fleet.isolation === 'auto') expect(now.doubts).toEqual([]);
  else expect(now.doubts).toEqual(expect.arrayContaining(landed));
  return now.identity;
}

function dirFingerprint(dir: string): string {
  const hash = createHash('sha256');
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(d, entry.name);
      hash.update(p);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile()) hash.update(readFileSync(p));
    }
  };
  walk(dir);
  return hash.digest('hex');
}

interface Baseline {
  mirror: string;
  checkout: string;
  home: string;
  keys: Record<string, string | null>;
}

const paths = (receipt: any): string[] => receipt.changed_files.map((f: { path: string }) => f.path);
const reasons = (receipt: any): string[] =>
  receipt.scope.violations.map((v: { path: string; reason: string }) => `${v.path}:${v.reason}`);

/**
 * The later mission: an out-of-scope file the checks must see; nothing planted may run. With
 * `attacked` (the mirror's identity after an attack on it): a mirror the agent wrote into
 * (unisolated) was discarded and cloned again; one bwrap kept intact was used as it was.
 */
async function laterMissionHolds(fleet: Fleet, before: Baseline, marker: string, attacked?: string): Promise<void> {
  const later = await run(
    fleet,
    'echo later > src/later.txt; echo leak > notes.txt; mkdir -p build/out && echo art > build/out/a.o',
  );
  expect(paths(later)).toEqual(expect.arrayContaining(['src/later.txt', 'notes.txt']));
  expect(paths(later)).not.toContain('build/out/a.o'); // the base commit's own ignore rules still apply
  expect(later.verdict).toBe('scope_violation');
  expect(existsSync(marker)).toBe(false);
  expect(mirrorFingerprint(fleet)).toBe(before.mirror);
  expect(checkoutFingerprint(fleet.repo)).toBe(before.checkout);
  expect(dirFingerprint(fleet.home)).toBe(before.home);
  expect(signingKeys(fleet)).toEqual(before.keys);
  if (attacked === undefined) return;
  const now = mirrorNow(fleet);
  expect(now.doubts).toEqual([]);
  expect(now.identity === attacked ? 'kept' : 'rebuilt').toBe(fleet.isolation === 'off' ? 'rebuilt' : 'kept');
}

beforeAll(async () => {
  redis = await startTestRedis('gitsec');
});

afterAll(async () => {
  await redis?.cleanup();
});

describe.each(fleetTable().filter(asDeployed))(
  'hostile agent vs git (%s, UH_ISOLATION=%s, as %s)',
  (mode, isolation, user) => {
    let fleet: Fleet;
    let before: Baseline;
    let marker: string;

    beforeAll(async () => {
      fleet = await startFleet({
        mode,
        isolation,
        user,
        redis,
        tag: 'gitsec',
        files: {
          'README.md': '# demo\n',
          'src/app.txt': 'v1\n',
          'docs/guide.md': 'guide\n',
          'build/.gitignore': 'out/\n',
        },
      });
      // A first benign mission creates the mirror and the keys; their fingerprints are the reference.
      await firstMission(fleet, MISSION);
      before = {
        mirror: mirrorFingerprint(fleet),
        checkout: checkoutFingerprint(fleet.repo),
        home: dirFingerprint(fleet.home),
        keys: signingKeys(fleet),
      };
      marker = join(fleet.tempDir('uh-gitsec-mark-'), 'pwned');
    }, 90_000);

    afterAll(async () => {
      await stopFleet(fleet);
    });

    it('core.fsmonitor and core.hooksPath written with git config (own .git and the mirror) never run in uh', async () => {
      const hooks = join(fleet.tempDir('uh-gitsec-hooks-'), 'hooks');
      const planted = `mkdir -p ${hooks}; for h in pre-commit post-checkout post-index-change reference-transaction; do printf '#!/bin/sh\\ntouch ${marker}\\n' > ${hooks}/$h; chmod +x ${hooks}/$h; done; `;
      const script = `${PRELUDE}${planted}for d in .git "$M"; do git --git-dir="$d" config core.fsmonitor "touch ${marker}"; git --git-dir="$d" config core.hooksPath ${hooks}; done; git config core.fsmonitor "touch ${marker}"; echo x > src/x.txt`;
      const attack = await run(fleet, script);
      expect(paths(attack)).toContain('src/x.txt');
      // Unisolated, the mirror's config really names them, and still none ran: uh runs no git on the
      // agent's .git (it diffs through a git dir of its own), and doubts the mirror at its next use.
      // That git ignores such config even when it reads it: test/security/hardened-git.test.ts.
      const attacked = mirrorAfterAttack(fleet, ['config core.fsmonitor', 'config core.hookspath']);
      expect(existsSync(marker)).toBe(false);
      await laterMissionHolds(fleet, before, marker, attacked);
    }, 60_000);

    it('"*" in info/exclude (the mirror\'s and its own) hides nothing, now or later', async () => {
      const attack = await run(
        fleet,
        `${PRELUDE}mkdir -p "$M/info"; echo '*' >> "$M/info/exclude"; echo '*' >> .git/info/exclude; echo s > secret.txt`,
      );
      expect(paths(attack)).toContain('secret.txt');
      expect(attack.verdict).toBe('scope_violation');
      const attacked = mirrorAfterAttack(fleet, ['info/ not empty']);
      await laterMissionHolds(fleet, before, marker, attacked);
    }, 60_000);

    it('assume-unchanged and skip-worktree bits hide no change', async () => {
      const attack = await run(
        fleet,
        'echo changed >> README.md; git update-index --assume-unchanged README.md; echo y >> docs/guide.md; git update-index --skip-worktree docs/guide.md; git status --porcelain > /dev/null',
      );
      expect(paths(attack)).toEqual(expect.arrayContaining(['README.md', 'docs/guide.md']));
      expect(reasons(attack)).toEqual(
        expect.arrayContaining(['README.md:outside_allowed', 'docs/guide.md:outside_allowed']),
      );
      await laterMissionHolds(fleet, before, marker);
    }, 60_000);

    it('a new folder with its own .gitignore of "*", and a rewritten top .gitignore, hide nothing', async () => {
      const attack = await run(
        fleet,
        "mkdir hidden; echo '*' > hidden/.gitignore; echo p > hidden/payload; printf '*\\n' > .gitignore; echo q > quiet.txt",
      );
      expect(paths(attack)).toEqual(
        expect.arrayContaining(['hidden/.gitignore', 'hidden/payload', '.gitignore', 'quiet.txt']),
      );
      expect(attack.verdict).toBe('scope_violation');
      await laterMissionHolds(fleet, before, marker);
    }, 60_000);

    it('the user checkout cannot be found through the mirror, and the mirror shares no file with it', async () => {
      const attack = await run(
        fleet,
        `${PRELUDE}U=$(git --git-dir="$M" config remote.origin.url); [ -n "$U" ] && echo pwned > "$U/pwned.txt"; echo "$U" > src/found.txt`,
      );
      expect(existsSync(join(fleet.repo, 'pwned.txt'))).toBe(false);
      expect(attack.verdict).toBe('verified');
      const mirror = mirrorFor(fleet.cacheDir, fleet.repo).path;
      expect(readFileSync(join(mirror, 'config'), 'utf8')).not.toContain(fleet.repo);
      const packs = readdirSync(join(mirror, 'objects', 'pack'));
      for (const p of packs) expect(statSync(join(mirror, 'objects', 'pack', p)).nlink).toBe(1);
      await laterMissionHolds(fleet, before, marker);
    }, 60_000);

    it('symlinks leaving the worktree are scope violations even inside allowed globs', async () => {
      const attack = await run(fleet, 'ln -s /etc/passwd src/passwd; ln -s ../../.. src/up; ln -s app.txt src/fine');
      expect(reasons(attack)).toEqual(
        expect.arrayContaining(['src/passwd:symlink_outside_worktree', 'src/up:symlink_outside_worktree']),
      );
      expect(reasons(attack).some((r) => r.startsWith('src/fine:'))).toBe(false);
      expect(attack.verdict).toBe('scope_violation');
    }, 60_000);

    it('refs written into the mirror do not move what a later mission checks out', async () => {
      const base = git(fleet.repo, 'rev-parse', 'main');
      const script = `${PRELUDE}T=$(git --git-dir="$M" mktree < /dev/null); C=$(echo evil | git -c user.name=x -c user.email=x@x --git-dir="$M" commit-tree "$T"); git --git-dir="$M" update-ref refs/heads/main "$C"; git --git-dir="$M" update-ref refs/replace/${base} "$C"; echo r > src/r.txt`;
      await run(fleet, script);
      const attacked = mirrorAfterAttack(fleet, ['refs/replace/ not empty']);
      const mirrorMain = () => git(mirrorFor(fleet.cacheDir, fleet.repo).path, 'rev-parse', 'refs/heads/main');
      if (isolation === 'off') expect(mirrorMain()).not.toBe(base);
      const later = await run(fleet, 'echo later > src/later.txt');
      expect(later.repository.base_commit).toBe(base);
      expect(later.verdict).toBe('verified');
      await laterMissionHolds(fleet, before, marker, attacked);
    }, 60_000);

    it('objects/info/alternates planted in the mirror makes uh rebuild it', async () => {
      const evil = fleet.tempDir('uh-gitsec-evil-');
      await run(
        fleet,
        `${PRELUDE}mkdir -p "$M/objects/info"; echo ${evil}/objects > "$M/objects/info/alternates"; echo '#!/bin/sh' > "$M/hooks-planted"; echo a > src/a.txt`,
      );
      const mirror = mirrorFor(fleet.cacheDir, fleet.repo).path;
      const attacked = mirrorAfterAttack(fleet, ['objects/info/alternates']);
      expect(existsSync(join(mirror, 'hooks-planted'))).toBe(isolation === 'off');
      await laterMissionHolds(fleet, before, marker, attacked);
      expect(existsSync(join(mirror, 'objects/info/alternates'))).toBe(false);
      expect(existsSync(join(mirror, 'hooks-planted'))).toBe(false);
    }, 60_000);

    it('a .git file pointing elsewhere changes nothing uh computes', async () => {
      const attack = await run(fleet, `${PRELUDE}rm -rf .git; echo "gitdir: $M" > .git; echo z > z.txt`);
      expect(paths(attack)).toContain('z.txt');
      expect(attack.verdict).toBe('scope_violation');
      await laterMissionHolds(fleet, before, marker);
    }, 60_000);

    it('a .gitattributes filter driver never runs in uh (no config from the agent)', async () => {
      const script = `${PRELUDE}printf '* filter=x diff=x\\n' > .gitattributes; for d in .git "$M"; do git --git-dir="$d" config filter.x.clean "touch ${marker}; cat"; git --git-dir="$d" config diff.x.textconv "touch ${marker}; cat"; done; git config --global filter.x.clean "touch ${marker}; cat"; echo f > src/f.txt`;
      const attack = await run(fleet, script);
      expect(existsSync(marker)).toBe(false);
      expect(paths(attack)).toEqual(expect.arrayContaining(['.gitattributes', 'src/f.txt']));
      const attacked = mirrorAfterAttack(fleet, ['config filter.x.clean', 'config diff.x.textconv']);
      if (isolation === 'off') {
        // Unisolated, the agent's `git config --global` really wrote uh's $HOME/.gitconfig; uh never
        // read it (no marker): the new HOME is the reference from here on.
        expect(readFileSync(join(fleet.home, '.gitconfig'), 'utf8')).toContain('[filter "x"]');
        before = { ...before, home: dirFingerprint(fleet.home) };
      }
      await laterMissionHolds(fleet, before, marker, attacked);
    }, 60_000);

    it('a nested repository (a gitlink) is a scope violation, its files cannot hide in it', async () => {
      const attack = await run(
        fleet,
        'mkdir -p src/sub && cd src/sub && git init -q && echo s > s && git add s && git -c user.name=a -c user.email=a@b commit -qm x',
      );
      expect(reasons(attack)).toContain('src/sub:nested_repository');
      expect(attack.verdict).toBe('scope_violation');
    }, 60_000);
  },
);
