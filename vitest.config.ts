/**
 * Four projects, all run by `npm test`:
 * - `unit`: in-process tests, no child process. No Redis (its URL points at a closed port, so a
 *   test that needs one fails at once), no bwrap (test/support/unit.setup.ts fails a file that
 *   runs it), no git, CLI or fake agent (test/architecture/test-projects.test.ts). Seconds:
 *   `npx vitest run --project unit` is the loop to run while editing.
 * - `integration`: everything else that runs here: real Redis, real git, bwrap, the built CLI,
 *   fake agents and servers in their own processes.
 * - `real`: installed runtimes (test/real/) against scripted local model servers.
 * - `host-sweep`: files whose `uh gc` sweeps the whole host's cgroups, run after the others.
 * - `overlay`: the pipeline's security suites once more on copy-on-write sandboxes (`OVERLAY`).
 * Files are placed by the lists below, never by moving them: a new test file lands in
 * `integration` until it is listed in UNIT. Every project loads test/support/test-dirs.setup.ts,
 * which points uh's cache at a temp dir (test/architecture/test-dirs.test.ts checks the wiring).
 */
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Test files of the `unit` project: in-process only, no child process of any kind (no git, no
 * fake agent, no node child), so the loop stays fast on a loaded machine. Globs relative to the
 * repository root.
 */
export const UNIT = [
  'src/**/*.test.ts',
  'test/unit/**/*.test.ts',
  'test/architecture/env-reads.test.ts',
  'test/architecture/function-length.test.ts',
  'test/architecture/recursive-mkdir.test.ts',
  'test/architecture/runtime-coverage.test.ts',
  'test/architecture/test-dirs.test.ts',
  'test/architecture/test-projects.test.ts',
  'test/operation/build-receipt-cost.test.ts',
  'test/shared/load-file.test.ts',
  'test/shared/redact-stream.test.ts',
  'test/shared/sentinel-long-lines.test.ts',
  'test/shared/process/bwrap-argv.test.ts',
  'test/shared/process/bwrap-probe-cache.test.ts',
  'test/shared/runtime/**/*.test.ts',
  'test/shared/transport/jsonrpc-framing.test.ts',
  'test/shared/transport/sse.test.ts',
  'test/workers/runtimes/registry.test.ts',
  // Per adapter: the pure parts (classification tables, event translation, protocol, settings).
  'test/workers/runtimes/*/classify-*.test.ts',
  'test/workers/runtimes/*/*-events.test.ts',
  'test/workers/runtimes/*/*-protocol.test.ts',
  'test/workers/runtimes/*/*-settings.test.ts',
  'test/workers/runtimes/acp/acp-auth.test.ts',
  'test/workers/runtimes/acp/acp-early-updates.test.ts',
  'test/workers/runtimes/acp/acp-permissions.test.ts',
  'test/workers/runtimes/acp/acp-run-support.test.ts',
  'test/workers/runtimes/codex-app-server/codex-app-server-adapter.test.ts',
  'test/workers/runtimes/codex-app-server/codex-app-server-identity.test.ts',
  'test/workers/verification/raw-patch-split.test.ts',
  'test/workers/sandbox/isolation-decision.test.ts',
  'test/workers/sandbox/isolation-tmpfs-config.test.ts',
  'test/workers/sandbox/root-only-paths.test.ts',
];

/** Test files of the `real` project: real runtimes, installed by scripts/install-real-runtimes.sh. */
export const REAL = ['test/real/**/*.test.ts'];

/**
 * Test files of the `host-sweep` project, run after every other project has finished
 * (`sequence.groupOrder`): they run `uh gc`, whose cgroup sweep ends every dead owner's cgroups
 * on the host, whatever cache they belong to, so alongside them another file's orphaned agent
 * (the kill -9 tests of test/integration/fleet.test.ts) could be killed by the sweep before the
 * watch that those tests assert on.
 */
export const HOST_SWEEP = [
  'test/security/cgroups.test.ts',
  'test/integration/gc.test.ts',
  'test/security/checked-is-shipped.test.ts',
  'test/integration/overlay-pipeline.test.ts',
];

/**
 * The security suites that run hostile agents and checks through the pipeline, run a second time
 * in the `overlay` project with `UH_SANDBOX_BACKEND=auto`: their isolated rows then get
 * copy-on-write sandboxes (docs/sandboxes.md), and `fleetTable` keeps only those rows (the
 * unisolated ones make worktrees whatever the variable says, and run in `integration`). After
 * the other projects, with `host-sweep` (checked-is-shipped runs `uh gc`).
 */
export const OVERLAY = [
  'test/security/isolation.test.ts',
  'test/security/git-attacks.test.ts',
  'test/security/hostile-check.test.ts',
  'test/security/egress.test.ts',
  'test/security/limits.test.ts',
  'test/security/root-capabilities.test.ts',
  'test/security/processes.test.ts',
  'test/security/isolation-programs.test.ts',
  'test/security/secret-env.test.ts',
  'test/security/checked-is-shipped.test.ts',
];

/** Every test file; `integration` is what none of the lists above claims. */
const ALL = ['test/**/*.test.ts', 'src/**/*.test.ts'];

/** Loaded in every project before each test file. */
export const SETUP_FILES = ['test/support/test-dirs.setup.ts'];

/** Unit project only: a recording `bwrap` first on PATH; a file that ran it fails. */
export const UNIT_SETUP = 'test/support/unit.setup.ts';

/** Redis URL of the unit project: a port nothing listens on. */
export const UNIT_REDIS_URL = 'redis://127.0.0.1:9';

const timeouts = { testTimeout: 60_000, hookTimeout: 60_000 };

export default defineConfig({
  test: {
    pool: 'forks',
    // Two cores on CI: integration files spawn git and child processes, keep parallelism modest.
    maxWorkers: 2,
    globalSetup: ['test/support/test-dirs.global-setup.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: UNIT,
          setupFiles: [...SETUP_FILES, UNIT_SETUP],
          env: { REDIS_URL: UNIT_REDIS_URL },
          ...timeouts,
        },
      },
      {
        test: {
          name: 'integration',
          include: ALL,
          exclude: [...configDefaults.exclude, ...UNIT, ...REAL, ...HOST_SWEEP],
          setupFiles: SETUP_FILES,
          ...timeouts,
        },
      },
      { test: { name: 'real', include: REAL, setupFiles: SETUP_FILES, ...timeouts } },
      {
        test: {
          name: 'host-sweep',
          include: HOST_SWEEP,
          setupFiles: SETUP_FILES,
          sequence: { groupOrder: 1 },
          ...timeouts,
        },
      },
      {
        test: {
          name: 'overlay',
          include: OVERLAY,
          setupFiles: SETUP_FILES,
          env: { UH_SANDBOX_BACKEND: 'auto' },
          sequence: { groupOrder: 1 },
          ...timeouts,
        },
      },
    ],
  },
});
