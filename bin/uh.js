#!/usr/bin/env node
// `uh`: runs the bundled CLI, dist/bundle/uh.cjs (scripts/bundle.mjs; `npm run build`, run by
// `npm ci`, makes it), compiled through a V8 code cache so a run skips parsing and compiling what
// the same command compiled last time (bin/run-bundle.js; docs/benchmarks.md "Start-up").
//
// The cache is one file per command under <cache dir>/code-cache/. The cache dir is resolved as in
// src/shared/config.ts (UH_CACHE_DIR, else $XDG_CACHE_HOME/uh, else ~/.cache/uh): the config
// module loads after this.
// CommonJS (bin/package.json), which node starts a few ms sooner than an ES module.
const { join } = require('node:path');
const { handOver } = require('./resident-client.js');

const env = process.env;
const home = () => require('node:os').homedir();
const cacheDir = env.UH_CACHE_DIR || join(env.XDG_CACHE_HOME || join(home(), '.cache'), 'uh');
const word = (w) => (w !== undefined && /^[a-z][a-z-]{0,30}$/.test(w) ? w : '_');
// The cache holds what the run compiled, so a `--help` or `--dry-run` run gets its own: made
// first, it would otherwise stand for the command's real runs (a cache V8 accepts is kept).
const args = process.argv.slice(2);
const mode = args.some((a) => a === '--help' || a === '-h') ? '-help' : args.includes('--dry-run') ? '-dry-run' : '';
const command = `${word(args[0])}-${word(args[1])}${mode}`;

const bundle = join(__dirname, '../dist/bundle/uh.cjs');
// `uh mission run` goes to a resident uh of this cache dir when one takes it (uh daemon start).
handOver(cacheDir, args, env, bundle).then((code) => {
  if (code !== null) process.exitCode = code;
  else require('./run-bundle.js').runBundle(bundle, join(cacheDir, 'code-cache'), command, (cli) => cli.runCli());
});
