#!/usr/bin/env node
// The bundled CLI (scripts/bundle.mjs); `npm run build` (run by `npm ci`) makes it.
import '../dist/bundle/main.js';
