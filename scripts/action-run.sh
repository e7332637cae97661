#!/usr/bin/env bash
# The "Run the mission" step of action.yml. Inputs arrive as UH_MISSION and UH_ACTION_* (the action
# maps `inputs.*` into them); uh itself writes the step outputs, summary, annotations and JUnit for
# every outcome; this script reports what ends before uh can (scripts/action-report.mjs).
set -u
here="$GITHUB_ACTION_PATH"
uh=(node "$here/bin/uh.js")
output="${GITHUB_OUTPUT:-/dev/null}"
# Never a stale report: a previous run's JUnit goes before anything can fail.
[ -n "${UH_ACTION_JUNIT:-}" ] && rm -f "$UH_ACTION_JUNIT"
export GITHUB_ACTIONS="${GITHUB_ACTIONS:-true}"

# What ended without uh reporting it (a bad input or flag, a crash) is reported here: never a silent step.
report_unreported() {
  grep -q '^status' "$output" 2>/dev/null && return 0
  case "$1" in
    2) node "$here/scripts/action-report.mjs" invalid "invalid mission" "${mission:-the mission} was refused (exit 2); see the step log" ;;
    *) node "$here/scripts/action-report.mjs" error "error" "uh ended with exit $1 before reporting an outcome; see the step log" ;;
  esac
}

# The mission: the file, or one built from prompt / prompt-file (model and extra-args applied).
built=$(node "$here/scripts/action-mission.mjs") || { code=$?; report_unreported "$code"; exit "$code"; }
mission=$(printf '%s\n' "$built" | sed -n 1p)
repository_kind=$(printf '%s\n' "$built" | sed -n 2p)

# One operation per run: the PR head (else GITHUB_SHA), and an id from the mission, SHA, run and attempt.
# Only for this workflow's repository (a local path in the file): another repository keeps its ref.
ref="${UH_ACTION_REF:-}"
if [ -z "$ref" ] && [ "$repository_kind" != "remote" ]; then
  if [ -n "${GITHUB_EVENT_PATH:-}" ] && [ -f "$GITHUB_EVENT_PATH" ]; then
    ref=$(node -e 'const e=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));process.stdout.write(e.pull_request?.head?.sha??"")' "$GITHUB_EVENT_PATH" 2>/dev/null)
  fi
  [ -z "$ref" ] && ref="${GITHUB_SHA:-}"
fi
opid="${UH_ACTION_OPERATION_ID:-}"
[ -z "$opid" ] && [ -n "${GITHUB_RUN_ID:-}" ] && opid='{mission_id:80}-{sha:12}-{run_id}-{run_attempt}'
export GITHUB_RUN_ATTEMPT="${GITHUB_RUN_ATTEMPT:-1}"
fleet=""
[ -n "${UH_ACTION_API_URL:-}${UH_ACTION_REDIS_URL:-}" ] && fleet=1
repository="${UH_ACTION_REPOSITORY:-}"
# A local path means nothing on the fleet: send this workflow's repository instead (a remote URL stays).
if [ -z "$repository" ] && [ -n "$fleet" ] && [ "$repository_kind" = "local" ] \
  && [ -n "${GITHUB_SERVER_URL:-}" ] && [ -n "${GITHUB_REPOSITORY:-}" ]; then
  repository="$GITHUB_SERVER_URL/$GITHUB_REPOSITORY"
fi

args=()
[ -n "${UH_ACTION_RUNTIME:-}" ] && args+=(--runtime "$UH_ACTION_RUNTIME")
[ -n "${UH_ACTION_JUNIT:-}" ] && args+=(--junit "$UH_ACTION_JUNIT")
[ -n "$ref" ] && args+=(--ref "$ref")
[ -n "$opid" ] && args+=(--operation-id "$opid")
[ -n "$repository" ] && args+=(--repository "$repository")
if [ -z "$fleet" ]; then
  cmd=("${uh[@]}" mission run "$mission" "${args[@]}")
else
  if [ -n "${UH_ACTION_API_URL:-}" ]; then
    args+=(--api "$UH_ACTION_API_URL")
    # The token reaches uh through its environment, never argv (visible to ps).
    [ -n "${UH_ACTION_API_TOKEN:-}" ] && export UH_API_TOKEN="$UH_ACTION_API_TOKEN"
  else
    args+=(--redis "$UH_ACTION_REDIS_URL")
  fi
  [ -n "${UH_ACTION_REDIS_PREFIX:-}" ] && export UH_REDIS_PREFIX="$UH_ACTION_REDIS_PREFIX"
  [ "${UH_ACTION_REQUIRE_WORKER:-false}" = "true" ] && args+=(--require-worker)
  [ -n "${UH_ACTION_TIMEOUT:-}" ] && args+=(--timeout "$UH_ACTION_TIMEOUT")
  [ "${UH_ACTION_CANCEL_ON_ABORT:-true}" = "false" ] && args+=(--detach-on-abort)
  cmd=("${uh[@]}" mission submit "$mission" --wait "${args[@]}")
fi
# The fleet's public key: PEM text is written to a file; a path is used as it is (docs/ci.md).
if [ -n "${UH_ACTION_RECEIPT_PUBLIC_KEY:-}" ]; then
  case "$UH_ACTION_RECEIPT_PUBLIC_KEY" in
    *"-----BEGIN PUBLIC KEY-----"*)
      keys=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/uh-receipt-public-keys.XXXXXX")
      printf '%s\n' "$UH_ACTION_RECEIPT_PUBLIC_KEY" > "$keys/input.pub"
      export UH_RECEIPT_PUBLIC_KEYS="$keys" ;;
    *) export UH_RECEIPT_PUBLIC_KEYS="$UH_ACTION_RECEIPT_PUBLIC_KEY" ;;
  esac
fi

# uh runs in the background so a cancelled job's SIGTERM/SIGINT reaches it (it cancels the operation).
# The GitHub token stays out of uh's environment (it would reach the runtime's children otherwise).
env -u UH_ACTION_GITHUB_TOKEN -u UH_ACTION_API_TOKEN "${cmd[@]}" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM
trap 'kill -INT "$child" 2>/dev/null' INT
wait "$child"; code=$?
# A signal interrupts the first wait; wait again for uh's own exit code.
while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done

report_unreported "$code"
# promoted_branch: the promotion record beside the receipt (mission `promotion: branch`, docs/promotion.md).
receipt=$(sed -n 's/^receipt_path=//p' "$output" 2>/dev/null | tail -1)
branch=""
if [ -n "$receipt" ] && [ -f "$(dirname "$receipt")/promotion.json" ]; then
  branch=$(node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));if(r.decision==="promoted")process.stdout.write(r.branch)' "$(dirname "$receipt")/promotion.json" 2>/dev/null)
fi
artifacts=""
[ -n "$receipt" ] && artifacts=$(dirname "$receipt")
printf 'promoted_branch=%s\nartifacts_dir=%s\n' "$branch" "$artifacts" >> "$output"
[ "${UH_ACTION_PR_COMMENT:-false}" = "true" ] && node "$here/scripts/action-comment.mjs"
exit "$code"
