#!/usr/bin/env node
// The overlay sandboxes' helper, dist/bundle/overlay-helper.cjs (src/workers/verification/
// overlay-diff-main.ts), compiled through a V8 code cache as bin/uh.js compiles the CLI
// (bin/run-bundle.js): started once per overlay mission, its modules and the functions of its
// tree step are then not parsed and compiled again each time. It reads no environment: its one
// argument is the code-cache dir (uh's <cache dir>/code-cache), `-` for none.
const { join } = require('node:path');
const { runBundle } = require('./run-bundle.js');

const dir = process.argv[2];
runBundle(join(__dirname, '../dist/bundle/overlay-helper.cjs'), dir && dir !== '-' ? dir : null, 'tree', (helper) =>
  helper.main(),
);
