// Bundle the CLI into one CommonJS module, dist/bundle/uh.cjs, that bin/uh.js compiles through a
// V8 code cache (docs/benchmarks.md "Start-up"): a run then skips parsing and compiling the code it
// ran last time. Commands are still loaded lazily: each `await import()` of a command becomes a
// function that initialises that part of the bundle on first use. Heavy or native-backed packages
// stay external and are required from node_modules only when a command needs them. `tsc` still
// type-checks and emits dist/src (the library). The bundle's digest goes into its code cache's
// key, so a cache made by another build is never used.
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

/**
 * zod's `fromJSONSchema` (JSON Schema → zod) initialises its whole keyword table when zod loads,
 * ~4 ms of every CLI run; uh never converts JSON Schema to zod (test/architecture/bundle.test.ts
 * checks src/), so the bundle gets a stub that says so. dist/src keeps the real zod.
 */
const noFromJsonSchema = {
  name: 'uh-no-zod-from-json-schema',
  setup(b) {
    b.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]classic[\\/]from-json-schema\.js$/ }, () => ({
      contents:
        "export function fromJSONSchema() { throw new Error('uh: z.fromJSONSchema is not in the uh bundle (scripts/bundle.mjs)'); }\n",
      loader: 'js',
    }));
  },
};

// Clear the old output so a stale file is never shipped.
rmSync('dist/bundle', { recursive: true, force: true });

await build({
  entryPoints: ['src/producers/cli/main.ts'],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile: 'dist/bundle/uh.cjs',
  sourcemap: true,
  external: [
    'pino',
    'bullmq',
    'ioredis',
    'undici',
    'testcontainers',
    'fastify',
    '@fastify/swagger',
    'fastify-type-provider-zod',
    'prom-client',
    '@bull-board/api',
    '@bull-board/fastify',
    // Only an S3 artifact store loads it (~1 MB with @smithy: a third of the bundle, read on every run).
    '@aws-sdk/client-s3',
  ],
  // A dynamic import() of an external package becomes a require() (bin/uh.js compiles the bundle
  // with vm.Script, which has no ESM loader of its own).
  supported: { 'dynamic-import': false },
  // The few modules that locate themselves (import.meta.url) get the bundle's own URL.
  define: { 'import.meta.url': '__uhImportMetaUrl' },
  // The file is the module wrapper itself, a function expression that bin/uh.js compiles and
  // calls with (exports, require, module, __filename, __dirname): no 2 MB string concatenation
  // per run. Strict, as the ES modules it is made of.
  banner: {
    js: "(function (exports, require, module, __filename, __dirname) { 'use strict'; var __uhImportMetaUrl = require('node:url').pathToFileURL(__filename).href;",
  },
  footer: { js: '})' },
  // No comments and no indentation: a smaller file to read and hash on every run, and one with
  // no non-ASCII comment text (below). Names are kept (no identifier minification), so stack
  // traces still name functions; dist/bundle/uh.cjs.map maps positions back to src/.
  minifyWhitespace: true,
  // Non-ASCII in strings and regexps becomes \u escapes, so the file is pure ASCII.
  charset: 'ascii',
  plugins: [noFromJsonSchema],
  logLevel: 'warning',
});

// bin/run-bundle.js reads a bundle as latin1, a byte per character: decoding 1.9 MB as UTF-8 took
// ~11 ms of every run (docs/benchmarks.md "Start-up"). That is only right for pure ASCII, so a
// non-ASCII byte (a String.raw template, which esbuild must keep as written) fails the build here.
// The digest beside it keys its code cache.
function sealBundle(file) {
  const bundled = readFileSync(file);
  const wide = bundled.findIndex((byte) => byte > 0x7f);
  if (wide !== -1) {
    const line = bundled.subarray(0, wide).toString('latin1').split('\n').length;
    throw new Error(
      `${file}: non-ASCII byte at line ${line}; write it as a \\u escape in the source (a String.raw template keeps it as written)`,
    );
  }
  writeFileSync(`${file}.sha256`, `${createHash('sha256').update(bundled).digest('hex')}\n`);
}
sealBundle('dist/bundle/uh.cjs');

// The overlay sandboxes' helper (src/workers/verification/overlay-diff-main.ts), started once per
// mission inside the sandbox's mount namespace: one file for node to read and compile instead of
// the ~100 modules of dist/src it imports (~70 ms of module loading per start on a 2-core host),
// compiled through a code cache by bin/overlay-helper.js as the CLI is by bin/uh.js: the same
// wrapper, pure ASCII, a digest beside it.
await build({
  entryPoints: ['src/workers/verification/overlay-diff-main.ts'],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile: 'dist/bundle/overlay-helper.cjs',
  define: { 'import.meta.url': '__uhImportMetaUrl' },
  banner: {
    js: "(function (exports, require, module, __filename, __dirname) { 'use strict'; var __uhImportMetaUrl = require('node:url').pathToFileURL(__filename).href;",
  },
  footer: { js: '})' },
  minifyWhitespace: true,
  charset: 'ascii',
  plugins: [noFromJsonSchema],
  logLevel: 'warning',
});
sealBundle('dist/bundle/overlay-helper.cjs');
