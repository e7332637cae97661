#!/usr/bin/env bash
# The demo repository of the compose quick start: examples/hello's agent and its compose mission
# (as mission.yaml) committed in a fresh git repository at <dest>. The image bakes it at /opt/uh-hello
# (infra/docker/Dockerfile), a path every container sees; test/deploy/quick-start.test.ts builds it
# on the host and runs the mission against it.
#   scripts/hello-repo.sh <dest> [<examples/hello dir>]
set -euo pipefail
dest=${1:?usage: hello-repo.sh <dest> [<examples/hello dir>]}
src=${2:-"$(cd "$(dirname "$0")/.." && pwd)/examples/hello"}
mkdir -p "$dest"
cp "$src/agent.mjs" "$dest/agent.mjs"
cp "$src/mission.compose.yaml" "$dest/mission.yaml"
git -C "$dest" init -q -b main
git -C "$dest" add agent.mjs mission.yaml
git -C "$dest" -c user.name=uh -c user.email=uh@localhost -c commit.gpgsign=false commit -q -m "hello demo"
