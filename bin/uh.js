#!/usr/bin/env node
// `uh`: runs the bundled CLI, dist/bundle/uh.cjs (scripts/bundle.mjs; `npm run build`, run by
// `npm ci`, makes it), compiled through a V8 code cache so a run skips parsing and compiling what
// the same command compiled last time (docs/benchmarks.md "Start-up").
//
// The cache is one file per command under <cache dir>/code-cache/, keyed by the bundle's digest,
// node's version and the CPU architecture, so another build, node or machine never uses it. It is
// written (atomically: a temporary file renamed) when the command ends and there was none or V8
// rejected it; a cache that cannot be read, is corrupt or is rejected is ignored and the bundle is
// compiled from source. Nothing is written to the installation, so a read-only install works; an
// unwritable cache dir only means no cache. The cache dir is resolved as in src/shared/config.ts
// (UH_CACHE_DIR, else $XDG_CACHE_HOME/uh, else ~/.cache/uh): the config module loads after this.
// CommonJS (bin/package.json), which node starts a few ms sooner than an ES module.
const { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } = require('node:fs');
const { homedir } = require('node:os');
const { dirname, join } = require('node:path');
const { Script } = require('node:vm');

const bundle = join(__dirname, '../dist/bundle/uh.cjs');
const STALE_MS = 7 * 24 * 3600 * 1000;

/** `<cache dir>/code-cache/uh-<digest>-<node>-<arch>-<command>.bin`, or null without a digest. */
function cacheFile() {
  let digest;
  try {
    digest = readFileSync(`${bundle}.sha256`, 'utf8').trim().slice(0, 32);
  } catch {
    return null;
  }
  const env = process.env;
  const dir = env.UH_CACHE_DIR || join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'uh');
  const word = (w) => (w !== undefined && /^[a-z][a-z-]{0,30}$/.test(w) ? w : '_');
  // The cache holds what the run compiled, so a `--help` or `--dry-run` run gets its own: made
  // first, it would otherwise stand for the command's real runs (a cache V8 accepts is kept).
  const args = process.argv.slice(2);
  const mode = args.some((a) => a === '--help' || a === '-h') ? '-help' : args.includes('--dry-run') ? '-dry-run' : '';
  const command = `${word(args[0])}-${word(args[1])}${mode}`;
  return {
    dir: join(dir, 'code-cache'),
    prefix: `uh-${digest}-`,
    name: `uh-${digest}-${process.version}-${process.arch}-${command}.bin`,
  };
}

/**
 * `mkdir -p` without node's recursive walk, which never returns when a parent exists but cannot
 * hold the child (a dangling symlink, /proc): here that throws (src/shared/fs/make-dir.ts).
 */
function makeDir(dir) {
  try {
    mkdirSync(dir);
  } catch (error) {
    if (error.code === 'EEXIST') return;
    if (error.code !== 'ENOENT' || dirname(dir) === dir) throw error;
    makeDir(dirname(dir));
    mkdirSync(dir);
  }
}

/** Atomically (re)writes the cache; drops other builds' caches unused for a week. Never throws. */
function writeCache(where, data) {
  try {
    makeDir(where.dir);
    const tmp = join(where.dir, `.${where.name}.${process.pid}.tmp`);
    writeFileSync(tmp, data);
    renameSync(tmp, join(where.dir, where.name));
    for (const name of readdirSync(where.dir)) {
      const path = join(where.dir, name);
      if (!name.startsWith(where.prefix) && Date.now() - statSync(path).mtimeMs > STALE_MS) unlinkSync(path);
    }
  } catch {
    // No cache this time (read-only or full disk); the next run compiles from source again.
  }
}

const where = cacheFile();
let cachedData;
try {
  if (where) cachedData = readFileSync(join(where.dir, where.name));
} catch {
  cachedData = undefined;
}
// Pure ASCII (scripts/bundle.mjs checks): latin1 makes a one-byte string with no UTF-8 decoding.
const source = readFileSync(bundle, 'latin1');
// The file is the CommonJS wrapper function itself (scripts/bundle.mjs).
const script = new Script(source, { filename: bundle, cachedData });
const bundled = { exports: {} };
// bin/ and dist/bundle/ resolve packages from the same node_modules: this file's own require serves
// (node:module's createRequire would load one more module on every run).
script.runInThisContext().call(bundled.exports, bundled.exports, require, bundled, bundle, dirname(bundle));
bundled.exports.runCli().then(() => {
  if (where && (cachedData === undefined || script.cachedDataRejected)) writeCache(where, script.createCachedData());
});
