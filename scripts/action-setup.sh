#!/usr/bin/env bash
# The "Set up uh" step of action.yml: uh with its production dependencies only, once per cache key
# (the step before restores node_modules/ and dist/ with actions/cache). A release tarball (npm
# pack: dist/ built) needs no build and no devDependencies; a source checkout builds once and is
# pruned to production dependencies, which is what the cache keeps. docs/ci.md "Setup".
set -euo pipefail
cd "$GITHUB_ACTION_PATH"
quiet=(--no-audit --no-fund --ignore-scripts)
if [ -f dist/bundle/uh.cjs ] && [ -d node_modules ]; then
  echo "uh: ready ($(node -p 'require("./package.json").version'), prebuilt or cached)" >&2
  exit 0
fi
if [ -f dist/bundle/uh.cjs ]; then
  # npm pack leaves package-lock.json out: install the declared production dependencies.
  if [ -f package-lock.json ]; then npm ci --omit=dev "${quiet[@]}" >&2
  else npm install --omit=dev --no-package-lock "${quiet[@]}" >&2; fi
  exit 0
fi
npm ci "${quiet[@]}" >&2
npm run build >&2
npm prune --omit=dev "${quiet[@]}" >&2
