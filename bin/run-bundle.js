// Runs one of uh's bundles (dist/bundle/*.cjs, scripts/bundle.mjs) compiled through a V8 code
// cache: bin/uh.js runs the CLI with it, bin/overlay-helper.js the overlay sandboxes' helper. A run
// skips parsing and compiling what the same command compiled last time (docs/benchmarks.md
// "Start-up"). The cache is one file per command in a cache dir, keyed by the bundle's digest,
// node's version and the CPU architecture, so another build, node or machine never uses it. It is
// written (atomically: a temporary file renamed) when the command ends and there was none or V8
// rejected it; a cache that cannot be read, is corrupt or is rejected is ignored and the bundle is
// compiled from source. Nothing is written to the installation, so a read-only install works; an
// unwritable cache dir only means no cache.
const { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } = require('node:fs');
const { dirname, join } = require('node:path');
const { Script } = require('node:vm');

const STALE_MS = 7 * 24 * 3600 * 1000;

/**
 * `<dir>/<bundle name>-<digest>-<node>-<arch>-<command>.bin`, or null without a digest (a bundle
 * built without scripts/bundle.mjs) or a dir.
 */
function cacheFile(bundle, dir, command) {
  if (!dir) return null;
  let digest;
  try {
    digest = readFileSync(`${bundle}.sha256`, 'utf8').trim().slice(0, 32);
  } catch {
    return null;
  }
  const base = bundle
    .split('/')
    .pop()
    .replace(/\.cjs$/, '');
  const prefix = `${base}-${digest}-`;
  return { dir, family: `${base}-`, prefix, name: `${prefix}${process.version}-${process.arch}-${command}.bin` };
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

/** Atomically (re)writes the cache; drops this bundle's other builds' caches unused for a week. Never throws. */
function writeCache(where, data) {
  try {
    makeDir(where.dir);
    const tmp = join(where.dir, `.${where.name}.${process.pid}.tmp`);
    writeFileSync(tmp, data);
    renameSync(tmp, join(where.dir, where.name));
    for (const name of readdirSync(where.dir)) {
      const path = join(where.dir, name);
      if (
        name.startsWith(where.family) &&
        !name.startsWith(where.prefix) &&
        Date.now() - statSync(path).mtimeMs > STALE_MS
      )
        unlinkSync(path);
    }
  } catch {
    // No cache this time (read-only or full disk); the next run compiles from source again.
  }
}

/**
 * Compile `bundle` (the CommonJS wrapper function itself: scripts/bundle.mjs) with the cache of
 * `command` under `cacheDir` (none when null), call `start` with its exports, and write the cache
 * once the promise it returns resolves.
 */
function runBundle(bundle, cacheDir, command, start) {
  const where = cacheFile(bundle, cacheDir, command);
  let cachedData;
  try {
    if (where) cachedData = readFileSync(join(where.dir, where.name));
  } catch {
    cachedData = undefined;
  }
  // Pure ASCII (scripts/bundle.mjs checks): latin1 makes a one-byte string with no UTF-8 decoding.
  const source = readFileSync(bundle, 'latin1');
  const script = new Script(source, { filename: bundle, cachedData });
  const bundled = { exports: {} };
  // bin/ and dist/bundle/ resolve packages from the same node_modules: this file's own require
  // serves (node:module's createRequire would load one more module on every run).
  script.runInThisContext().call(bundled.exports, bundled.exports, require, bundled, bundle, dirname(bundle));
  return start(bundled.exports).then(() => {
    if (where && (cachedData === undefined || script.cachedDataRejected)) writeCache(where, script.createCachedData());
  });
}

module.exports = { runBundle };
