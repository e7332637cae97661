/**
 * The diff is bounded (issue 34), inline and through a worker:
 * - its size: past `UH_DIFF_CAP_BYTES` (a small cap here) `diff.patch` keeps the cap's bytes and
 *   a marker, the receipt says `diff.truncated` with the total, the changed files and the scope
 *   check stay complete, and promotion refuses it (a partial patch would commit a tree nobody
 *   checked);
 * - its time: the diff phase is inside `timeout_seconds` (the deadline covers the runtime and the
 *   diff): a change whose diff outlasts what the runtime left (a sparse 3 GiB file: instant to
 *   write, seconds of hashing for git) ends `failed`, `timed_out`, naming the diff, soon after the
 *   deadline, and the next mission on the same worker is verified.
 * Each as this process's user and, isolated, as the deployment's non-root user `uh`
 * (test/support/fleet.ts): the bounds are uh's own, whoever runs it.
 */
import { dirname, join } from 'node:path';
import { readFileSync, statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import {
  asDeployed,
  commandMission,
  fleetEnv,
  fleetTable,
  runMission,
  startFleet,
  stopFleet,
  type Fleet,
} from '../support/fleet.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';

const CAP = 64 * 1024;
let redis: TestRedis;

beforeAll(async () => {
  redis = await startTestRedis('dbound');
});

afterAll(async () => {
  await redis?.cleanup();
});

describe.each(fleetTable(['inline', 'worker'], ['auto']).filter(asDeployed))(
  'diff bounds (%s, UH_ISOLATION=%s, as %s)',
  (mode, isolation, user) => {
    let f: Fleet;

    beforeAll(async () => {
      f = await startFleet({
        mode,
        isolation,
        user,
        redis,
        tag: 'dbound',
        files: { 'README.md': '# demo\n', 'src/app.txt': 'v1\n' },
        env: { UH_DIFF_CAP_BYTES: String(CAP) },
      });
    }, 60_000);

    afterAll(() => stopFleet(f));

    async function run(script: string, patch: Record<string, unknown> = {}) {
      const mission = commandMission(f, script, {
        verification: [{ name: 'present', argv: ['test', '-f', 'src/small.txt'], timeout_seconds: 30 }],
        ...patch,
      });
      const started = Date.now();
      const { receipt, operationDir } = await runMission(f, mission);
      return { receipt, operationDir, wallMs: Date.now() - started, operationId: String(mission.operation_id) };
    }

    it('a diff past UH_DIFF_CAP_BYTES is cut with a marker, flagged truncated in the receipt, complete in its names, never promoted', async () => {
      // ~1.3 MB of text: its patch is ~20× the cap.
      const { receipt, operationId, operationDir } = await run(
        'seq 1 200000 > src/big.txt; echo small > src/small.txt',
      );
      expect(receipt.verdict).toBe('verified');
      expect(receipt.changed_files.map((c: { path: string }) => c.path)).toEqual(['src/big.txt', 'src/small.txt']);
      expect(receipt.diff).toMatchObject({ truncated: true, cap_bytes: CAP });
      expect(receipt.diff.bytes_total).toBeGreaterThan(1_000_000);
      expect(receipt.diff_bytes).toBeGreaterThan(CAP);
      expect(receipt.diff_bytes).toBeLessThan(CAP + 512); // the cap and the marker line, nothing more
      const patch = join(operationDir, 'diff.patch');
      expect(statSync(patch).size).toBe(receipt.diff_bytes);
      expect(readFileSync(patch, 'utf8')).toMatch(
        new RegExp(
          `uh truncated this diff at UH_DIFF_CAP_BYTES: kept the first ${CAP} of ${receipt.diff.bytes_total} bytes`,
        ),
      );
      const promote =
        mode === 'inline'
          ? ['mission', 'promote', operationId, '--state-dir', dirname(dirname(operationDir))]
          : ['mission', 'promote', operationId, '--redis', redis.url];
      const refused = await runCli(promote, { cwd: f.repo, env: fleetEnv(f), as: f.as });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/diff was truncated at 65536 of \d+ bytes/);

      // Under the cap: the receipt says so, and nothing is cut.
      const small = await run('echo small > src/small.txt');
      expect(small.receipt.diff).toEqual({ truncated: false, bytes_total: small.receipt.diff_bytes, cap_bytes: CAP });
    }, 120_000);

    it('a diff that outlasts what timeout_seconds left ends the mission timed out, naming the diff; the next mission is healthy', async () => {
      const { receipt, wallMs } = await run('echo small > src/small.txt; truncate -s 3G src/huge.bin', {
        timeout_seconds: 3,
      });
      expect(receipt.status).toBe('failed');
      expect(receipt.outcome).toMatchObject({ raw: 'timeout', timed_out: true });
      expect(receipt.outcome.message).toMatch(/the diff of the sandbox did not finish/);
      expect(receipt.verdict).not.toBe('verified');
      expect(receipt.checks).toEqual([]);
      // git hashing 3 GiB takes far longer; the mission ends near its deadline.
      expect(wallMs).toBeLessThan(30_000);
      const next = await run('echo small > src/small.txt');
      expect(next.receipt.verdict).toBe('verified');
      if (f.worker) expect(next.receipt.worker.pid).toBe(f.worker.pid);
    }, 120_000);
  },
);
