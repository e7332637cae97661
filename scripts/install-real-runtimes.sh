#!/usr/bin/env bash
# Install the REAL coding-agent CLIs the tests drive against our scripted model servers, pinned,
# from the npm registry, into a cache folder outside node_modules (gitignored):
#
#   bash scripts/install-real-runtimes.sh            # all runtimes
#   bash scripts/install-real-runtimes.sh codex      # only the named ones
#
# Idempotent and fast when already installed: a runtime whose pinned version is present and
# whose binary answers `--version` is skipped. Each runtime gets its own folder
#   ${UH_RUNTIMES_DIR:-<repo>/.cache/runtimes}/<name>/node_modules/.bin/<bin>
# which is what test/support/real-runtimes.ts looks for. `.ci/run` calls this before the tests.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNTIMES_DIR="${UH_RUNTIMES_DIR:-$ROOT/.cache/runtimes}"

# ---------------------------------------------------------------------------------------------
# The pinned runtimes, one line each: <name> <npm package> <exact version> <bin name>.
#   codex: @openai/codex ships its linux-x64 binary as an optional dependency of the same
#          package (`@openai/codex-linux-x64` = `@openai/codex@<v>-linux-x64`); engines node>=16.
# Add a runtime here (e.g. pi: @mariozechner/pi-coding-agent <version> pi) and nowhere else.
RUNTIMES=(
  "codex @openai/codex 0.171.0 codex"
  #   pi: @mariozechner/pi-coding-agent is node only (engines node>=20.6; runs on Node 20).
  #       oh-my-pi (@oh-my-pi/pi-coding-agent, `omp`) needs bun, so it is tested with fakes only.
  "pi @mariozechner/pi-coding-agent 0.73.1 pi"
  #   qwen: @qwen-code/qwen-code 0.15.10 is the last release whose engines allow Node 20
  #         (>=20.0.0; 0.21+ need Node 22) and it has `--acp`; drives the generic `acp` runtime.
  "qwen @qwen-code/qwen-code 0.15.10 qwen"
)
# ---------------------------------------------------------------------------------------------

want=("$@")

installed_version() { # <dir> <package>
  node -e 'try{console.log(require(process.argv[1]+"/node_modules/"+process.argv[2]+"/package.json").version)}catch{}' "$1" "$2"
}

install_one() { # <name> <package> <version> <bin>
  local name=$1 pkg=$2 version=$3 bin=$4
  local dir="$RUNTIMES_DIR/$name"
  local exe="$dir/node_modules/.bin/$bin"
  if [[ "$(installed_version "$dir" "$pkg")" == "$version" ]] && "$exe" --version >/dev/null 2>&1; then
    echo "install-real-runtimes: $name $version already installed at $exe"
    return 0
  fi
  echo "install-real-runtimes: installing $pkg@$version into $dir"
  mkdir -p "$dir"
  [[ -f "$dir/package.json" ]] || echo '{"name":"uh-runtime-'"$name"'","private":true}' > "$dir/package.json"
  # --include=optional: the platform binary of codex is an optional dependency.
  npm install --prefix "$dir" --no-audit --no-fund --no-save --include=optional --loglevel=error "$pkg@$version"
  if ! "$exe" --version >/dev/null 2>&1; then
    echo "install-real-runtimes: $exe --version failed after install" >&2
    "$exe" --version >&2 || true
    return 1
  fi
  echo "install-real-runtimes: $name $version ready: $("$exe" --version 2>&1 | head -1)"
}

for line in "${RUNTIMES[@]}"; do
  read -r name pkg version bin <<<"$line"
  if [[ ${#want[@]} -gt 0 && ! " ${want[*]} " =~ " $name " ]]; then continue; fi
  install_one "$name" "$pkg" "$version" "$bin"
done
