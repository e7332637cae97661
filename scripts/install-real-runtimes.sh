#!/usr/bin/env bash
# Install the REAL coding-agent CLIs the tests drive against our scripted model servers, pinned by
# ONE lockfile (test/real/runtimes/package.json + package-lock.json), into a cache folder outside
# node_modules (gitignored):
#
#   bash scripts/install-real-runtimes.sh
#
# The runtimes land in ${UH_RUNTIMES_DIR:-<repo>/.cache/runtimes}/node_modules/.bin/<bin>, which is
# where test/support/real-runtimes.ts looks. The cache is keyed by the hash of the lockfile: a
# stamp `.installed-<hash>` says that lockfile was installed and every binary answered `--version` (or `--help`);
# when it is present and every binary is there, nothing is done. Otherwise the folder's node_modules is replaced by a clean
# install of the lockfile, with a timeout (UH_RUNTIMES_INSTALL_TIMEOUT, seconds, default 900) and
# one retry. `npm test` runs this first (pretest).
#
# The pinned runtimes (change versions in test/real/runtimes/package.json, then run
# `npm install --package-lock-only --prefix test/real/runtimes`); each needs Node 20 (engines):
#   codex     @openai/codex 0.171.0            linux binary as an optional dependency (engines node>=16)
#   pi        @mariozechner/pi-coding-agent 0.73.1   node only (engines node>=20.6)
#   qwen      @qwen-code/qwen-code 0.15.10     last release allowing Node 20 (0.21+ need 22); has --acp
#   opencode  opencode-ai 1.18.33              native binary from an optional dependency (opencode-linux-x64),
#                                              linked by its postinstall; no download from GitHub
#   gemini    @google/gemini-cli 0.61.0        engines node>=20; `gemini --acp`
#   claude-code-acp  @zed-industries/claude-code-acp 0.16.2   Claude Code over ACP (the Claude Agent SDK
#                                              0.2.44 bundles the Claude Code CLI); ANTHROPIC_BASE_URL
#   codex-acp @zed-industries/codex-acp 0.16.0 codex over ACP, native binary from an optional dependency
#                                              (codex-acp-linux-x64); reads $CODEX_HOME/config.toml
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SPEC="$ROOT/test/real/runtimes"
RUNTIMES_DIR="${UH_RUNTIMES_DIR:-$ROOT/.cache/runtimes}"
TIMEOUT="${UH_RUNTIMES_INSTALL_TIMEOUT:-900}"
# <bin> <npm package>: every binary the tests run, checked after the install.
BINS=(
  "codex @openai/codex"
  "pi @mariozechner/pi-coding-agent"
  "qwen @qwen-code/qwen-code"
  "opencode opencode-ai"
  "gemini @google/gemini-cli"
  "claude-code-acp @zed-industries/claude-code-acp"
  "codex-acp @zed-industries/codex-acp"
)

say() { echo "install-real-runtimes: $*"; }
HASH="$(cat "$SPEC/package.json" "$SPEC/package-lock.json" | sha256sum | cut -c1-16)"
STAMP="$RUNTIMES_DIR/.installed-$HASH"

# Prints the packages whose binary answers neither --version nor --help (nothing when all do;
# codex-acp has no --version). stdin is /dev/null: an ACP agent started bare exits at its EOF.
broken_bins() {
  for line in "${BINS[@]}"; do
    read -r bin pkg <<<"$line"
    local path="$RUNTIMES_DIR/node_modules/.bin/$bin"
    timeout 60 "$path" --version </dev/null >/dev/null 2>&1 ||
      timeout 60 "$path" --help </dev/null >/dev/null 2>&1 || echo "$pkg ($bin)"
  done
}

# Prints the packages whose binary is missing or not executable (nothing when all are there).
missing_bins() {
  for line in "${BINS[@]}"; do
    read -r bin pkg <<<"$line"
    [[ -x "$RUNTIMES_DIR/node_modules/.bin/$bin" ]] || echo "$pkg ($bin)"
  done
}

if [[ -f "$STAMP" && -z "$(missing_bins)" ]]; then
  say "lockfile $HASH already installed in $RUNTIMES_DIR"
  exit 0
fi

# One clean install of the lockfile. `npm ci` first; when npm refuses the lockfile because an
# optional platform package of a dependency is not on the registry (npm/cli#9846: it records no
# entry for it, then `npm ci` calls the lockfile out of sync), the same lockfile is installed with
# `npm install --no-save`, which keeps every locked version and integrity.
install_once() {
  rm -rf "$RUNTIMES_DIR/node_modules" "$RUNTIMES_DIR"/.installed-*
  mkdir -p "$RUNTIMES_DIR"
  cp "$SPEC/package.json" "$SPEC/package-lock.json" "$RUNTIMES_DIR/"
  local common=(--prefix "$RUNTIMES_DIR" --no-audit --no-fund --include=optional --loglevel=error)
  local log="$RUNTIMES_DIR/install.log" rc=0
  timeout "$TIMEOUT" npm ci "${common[@]}" >"$log" 2>&1 || rc=$?
  if [[ $rc -ne 0 ]] && grep -q 'EUSAGE' "$log" && grep -q 'Missing: .*@ from lock file' "$log"; then
    say "npm ci refused the lockfile (an optional package missing from the registry, npm/cli#9846); installing it with npm install --no-save"
    rc=0
    timeout "$TIMEOUT" npm install --no-save "${common[@]}" >>"$log" 2>&1 || rc=$?
  fi
  [[ $rc -eq 0 ]] && return 0
  if [[ $rc -eq 124 ]]; then say "npm timed out after ${TIMEOUT}s" >&2; fi
  # npm names the package it failed on (a 404, an integrity error, a failing install script).
  grep -E 'npm error (404|code|path|command|notarget|.*integrity)' "$log" | head -8 >&2 || true
  return 1
}

start=$SECONDS
for attempt in 1 2; do
  say "installing the lockfile $HASH into $RUNTIMES_DIR (attempt $attempt, timeout ${TIMEOUT}s)"
  if install_once; then
    broken="$(broken_bins)"
    if [[ -z "$broken" ]]; then
      touch "$STAMP"
      say "ready in $((SECONDS - start)) s: $(du -sh "$RUNTIMES_DIR/node_modules" | cut -f1)"
      exit 0
    fi
    say "installed, but these do not answer --version: $(echo $broken)" >&2
  else
    say "npm failed or timed out installing test/real/runtimes/package-lock.json (packages: $(printf '%s ' "${BINS[@]#* }"))" >&2
  fi
done
say "giving up after 2 attempts; see $RUNTIMES_DIR/install.log. Broken: $(echo $(broken_bins))" >&2
exit 1
