/**
 * The layers of `uh` (docs/architecture.md), checked by test/architecture/layers.test.ts:
 *
 *   src/shared      contracts, the runtime port, transports, queue topology: imports nothing of ours above it
 *   src/operation   what producers and workers both need (resolve runtime, prepare, records, receipts,
 *                   the settings, the one module that finishes an operation)
 *   src/promotion   commits and branches made from a receipt: imports src/shared only
 *   src/producers   CLI, HTTP API, submit, batch
 *   src/workers     pools, runtime adapters, sandbox, verification, results, the pipeline
 *
 * Type-only imports count: a type reaching across a layer couples it as much as a value does.
 */
/** The only worker modules a producer may import: what it runs or composes, nothing internal. */
const PRODUCER_ENTRY_POINTS = [
  // `uh mission run` / `uh batch run` run the inline executor in-process.
  '^src/workers/inline/run-inline\\.ts$',
  // `uh mission recover`: the inline and the queued half.
  '^src/workers/recover/recover-inline\\.ts$',
  '^src/workers/recover/recover-queued\\.ts$',
  // `uh worker start` starts one worker process (the runtime pool, the results worker).
  '^src/workers/worker-process\\.ts$',
  // `uh doctor` runs each runtime's check inside a mission's isolation.
  '^src/workers/pipeline/isolated-check\\.ts$',
  // `uh doctor` says which sandbox backend this host gives (the overlay probe).
  '^src/workers/sandbox/sandbox-backend\\.ts$',
  // `uh gc` applies the retention policy.
  '^src/workers/sandbox/gc\\.ts$',
  // `uh sandbox list|enter`: the kept sandboxes, and a command run in one.
  '^src/workers/sandbox/kept-sandboxes\\.ts$',
  // The runtime catalog, injected into src/operation (runtime_config schemas, manifests, checks).
  '^src/workers/runtimes/registry\\.ts$',
  // The real ports of src/operation (runtime catalog, ref → commit in the mirror cache).
  '^src/workers/operation-ports\\.ts$',
  // `uh mission promote` and the results worker's automatic promotion (`uh worker start --results`).
  '^src/workers/promotion/promote-from\\.ts$',
  '^src/workers/promotion/auto-promote\\.ts$',
];

module.exports = {
  forbidden: [
    {
      name: 'shared-imports-nothing-above-it',
      comment: 'src/shared is the bottom layer: it imports neither src/operation, src/producers nor src/workers.',
      severity: 'error',
      from: { path: '^src/shared/' },
      to: { path: '^src/(operation|producers|workers)/' },
    },
    {
      name: 'operation-imports-neither-side',
      comment: 'src/operation is shared by producers and workers: it imports neither (inject what it needs).',
      severity: 'error',
      from: { path: '^src/operation/' },
      to: { path: '^src/(producers|workers)/' },
    },
    {
      name: 'promotion-imports-only-shared',
      comment:
        'src/promotion (commits and branches from receipts) is used by producers and workers: it imports src/shared only.',
      severity: 'error',
      from: { path: '^src/promotion/' },
      to: { path: '^src/(operation|producers|workers)/' },
    },
    {
      name: 'no-import-cycles',
      comment: 'A module never reaches itself through its imports: the tree reads top to bottom.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'workers-never-import-producers',
      comment: 'Workers run jobs; producers submit them. What both need lives in src/operation.',
      severity: 'error',
      from: { path: '^src/workers/' },
      to: { path: '^src/producers/' },
    },
    {
      name: 'runtime-adapters-never-import-the-queue',
      comment: 'A runtime adapter runs in the directory it is given; the pool owns BullMQ and Redis.',
      severity: 'error',
      from: { path: '^src/workers/runtimes/' },
      to: { path: '(^|/)node_modules/(bullmq|ioredis)/' },
    },
    {
      name: 'producers-enter-workers-at-entry-points-only',
      comment:
        'A producer imports a worker module only to run it (inline, worker start) or to inject it into src/operation.',
      severity: 'error',
      from: { path: '^src/producers/' },
      to: { path: '^src/workers/', pathNot: PRODUCER_ENTRY_POINTS },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'] },
  },
};
