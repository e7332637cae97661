// Bundle the CLI into dist/bundle/ (ESM, code-split at each lazily imported command) so `uh`
// starts with a handful of files instead of hundreds of modules: about 60-70 ms less per run
// (docs/benchmarks.md). Heavy or native-backed packages stay external and load from
// node_modules only when a command needs them. `tsc` still type-checks and emits dist/src.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

// Chunk names carry content hashes: clear the old ones so a stale chunk is never shipped.
rmSync('dist/bundle', { recursive: true, force: true });

await build({
  entryPoints: ['src/producers/cli/main.ts'],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  splitting: true,
  outdir: 'dist/bundle',
  sourcemap: true,
  external: ['pino', 'bullmq', 'ioredis', 'undici', 'testcontainers', 'fastify', '@fastify/swagger', 'fastify-type-provider-zod', 'prom-client', '@bull-board/api', '@bull-board/fastify'],
  // Some bundled CommonJS packages call require(); give ESM chunks one.
  banner: { js: "import { createRequire as __uhCreateRequire } from 'node:module'; const require = __uhCreateRequire(import.meta.url);" },
  logLevel: 'warning',
});
