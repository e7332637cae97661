#!/usr/bin/env bash
# The "Run the mission" step of action.yml. Inputs arrive as UH_ACTION_* (the action maps
# `inputs.*` into them); uh itself writes the step outputs, summary and annotations.
set -u
uh=(node "$GITHUB_ACTION_PATH/bin/uh.js")
args=()
[ -n "${UH_ACTION_RUNTIME:-}" ] && args+=(--runtime "$UH_ACTION_RUNTIME")
[ -n "${UH_ACTION_JUNIT:-}" ] && args+=(--junit "$UH_ACTION_JUNIT")
if [ -z "${UH_ACTION_REDIS_URL:-}" ]; then
  cmd=("${uh[@]}" mission run "$UH_MISSION" "${args[@]}")
else
  args+=(--redis "$UH_ACTION_REDIS_URL" --wait)
  [ -n "${UH_ACTION_TIMEOUT:-}" ] && args+=(--timeout "$UH_ACTION_TIMEOUT")
  [ "${UH_ACTION_CANCEL_ON_ABORT:-true}" = "false" ] && args+=(--detach-on-abort)
  cmd=("${uh[@]}" mission submit "$UH_MISSION" "${args[@]}")
fi
# The fleet's public key: PEM text is written to a file; a path is used as it is (docs/ci.md).
if [ -n "${UH_ACTION_RECEIPT_PUBLIC_KEY:-}" ]; then
  case "$UH_ACTION_RECEIPT_PUBLIC_KEY" in
    *"-----BEGIN PUBLIC KEY-----"*)
      keys="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/uh-receipt-public-keys"
      mkdir -p "$keys" && printf '%s\n' "$UH_ACTION_RECEIPT_PUBLIC_KEY" > "$keys/input.pub"
      export UH_RECEIPT_PUBLIC_KEYS="$keys" ;;
    *) export UH_RECEIPT_PUBLIC_KEYS="$UH_ACTION_RECEIPT_PUBLIC_KEY" ;;
  esac
fi
export GITHUB_ACTIONS="${GITHUB_ACTIONS:-true}"
# uh runs in the background so a cancelled job's SIGTERM/SIGINT reaches it (it cancels the operation).
"${cmd[@]}" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM
trap 'kill -INT "$child" 2>/dev/null' INT
wait "$child"; code=$?
# A signal interrupts the first wait; wait again for uh's own exit code.
while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done
if [ "$code" -eq 2 ] && ! grep -q '^status' "${GITHUB_OUTPUT:-/dev/null}" 2>/dev/null; then
  echo "status=invalid" >> "$GITHUB_OUTPUT"
  echo "::error title=uh invalid mission::$UH_MISSION was refused (exit 2); see the step log"
  [ -n "${GITHUB_STEP_SUMMARY:-}" ] && printf '## ❌ uh: invalid mission\n\n`%s` was refused (exit 2); see the step log.\n' "$UH_MISSION" >> "$GITHUB_STEP_SUMMARY"
fi
# promoted_branch: the promotion record beside the receipt (mission `promotion: branch`, docs/promotion.md).
receipt=$(sed -n 's/^receipt_path=//p' "${GITHUB_OUTPUT:-/dev/null}" 2>/dev/null | tail -1)
branch=""
if [ -n "$receipt" ] && [ -f "$(dirname "$receipt")/promotion.json" ]; then
  branch=$(node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));if(r.decision==="promoted")process.stdout.write(r.branch)' "$(dirname "$receipt")/promotion.json" 2>/dev/null)
fi
[ -n "${GITHUB_OUTPUT:-}" ] && echo "promoted_branch=$branch" >> "$GITHUB_OUTPUT"
exit "$code"
