#!/usr/bin/env bash
# run.sh — the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in tests/package.json) against `luamcp serve --http` serving a copy of
# the fixture app in tests/conformance/app.
#
#   tests/conformance/run.sh                  every server scenario of 0.1.16 (--suite all)
#   tests/conformance/run.sh --scenario NAME  one scenario of 0.1.16 (list: --list)
#   tests/conformance/run.sh --requirements 2025-11-25|2026-07-28
#                      the frozen requirement set of that revision, with the
#                      suite 0.2.0-alpha.12 (npm alias conformance-next), each
#                      scenario at that revision's wire: scored scenarios, and
#                      those run but never scored (extension: the tasks
#                      scenarios, and the Agent Skills ones the frozen set
#                      predates, EXTRA_SCENARIOS below; pending;
#                      added-after-release)
#   tests/conformance/run.sh --requirements REV --scenario NAME
#                      one scenario of that set, at that revision's wire
#   tests/conformance/run.sh --requirements REV --list
#                      the set's server scenarios, each with its kind
#   ... --instances N  (2 or 3; with any of the above) the suite talks to
#                      Debian's nginx running deploy/nginx/luamcp.conf in
#                      front of N instances of one app folder (--instance
#                      a, b, c, one --state-key, --bus and --store on a
#                      redis-server of their own): docs/SCALING.md's
#                      deployment. Needs nginx and redis-server (exit 77
#                      when either is missing).
#
# Environment: LUAMCP_BIN (default build/luamcp of this checkout; a relative
# path is taken from the current directory), LUAMCP_CONFORMANCE_TIMEOUT
# (seconds for the whole suite, default 120; with --requirements 300, times
# LUAMCP_TIMEOUT_SCALE when that is set), LUAMCP_CONFORMANCE_KEEP=1 keeps
# the results folder even when everything passed, LUAMCP_CONFORMANCE_REPORT=FILE
# writes a Markdown table (one row per scenario: kind, checks passed/failed,
# the first failing check and its message) to FILE,
# LUAMCP_CONFORMANCE_SERVER_ARGS="--stateless ..." adds options to `luamcp serve`.
#
# Output: the runner's own output (indented), then one line per failed check,
#   FAIL <scenario> [<check-id>]: <message>
#   WARN <scenario> [<check-id>]: <message>
# (with --requirements: `FAIL <kind> <scenario> [...]`, kind = scored,
# extension, pending or added-after-release; SKIP lines for checks the suite
# skipped), with --requirements a table of scenarios and one verdict line per
# kind, and last `N passed, N failed`. "failed" counts FAILURE *and* WARNING
# checks of every kind, scored or not: the acceptance criterion is no failure
# anywhere and no warning either (the SSE scenarios, server-sse-polling above
# all, report what a server SHOULD do as WARNINGs). A missing scenario result
# or a runner that printed no summary (crashed, cut off by the timeout) is a
# failure too. Exit 1 when failed > 0.
# Needs `npm ci --prefix tests` first (Node 22 comes from the npm package `node`).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="${LUAMCP_BIN:-$ROOT/build/luamcp}"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac # relative to where run.sh was started
REPORT="${LUAMCP_CONFORMANCE_REPORT:-}"
case "$REPORT" in /*|"") ;; *) REPORT="$PWD/$REPORT" ;; esac
cd "$ROOT"

NODE="$ROOT/tests/node_modules/.bin/node"
# two versions of the one package: 0.1.16 under its own name, the
# requirement-set release under the npm alias conformance-next
SUITE_DIR="$ROOT/tests/node_modules/@modelcontextprotocol/conformance"
NEXT_DIR="$ROOT/tests/node_modules/conformance-next"
APP_SRC="tests/conformance/app"

usage() {
  sed -n '2,40p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

SCENARIO=""
INSTANCES=0
LIST=0
REQUIREMENTS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --scenario) [ $# -ge 2 ] || { echo "run.sh: --scenario needs a name" >&2; exit 2; }
                SCENARIO="$2"; shift 2 ;;
    --scenario=*) SCENARIO="${1#--scenario=}"; shift ;;
    --requirements) [ $# -ge 2 ] || { echo "run.sh: --requirements needs a revision" >&2; exit 2; }
                REQUIREMENTS="$2"; shift 2 ;;
    --requirements=*) REQUIREMENTS="${1#--requirements=}"; shift ;;
    --list) LIST=1; shift ;;
    --instances) [ $# -ge 2 ] || { echo "run.sh: --instances needs a number" >&2; exit 2; }
                INSTANCES="$2"; shift 2 ;;
    --instances=*) INSTANCES="${1#--instances=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

if [ -n "$REQUIREMENTS" ]; then
  SUITE_DIR="$NEXT_DIR"
  SUITE_TIMEOUT="${LUAMCP_CONFORMANCE_TIMEOUT:-300}"
  # the sanitizer builds are slower (tests/CMakeLists.txt sets the scale and
  # gives these tests 600 s, 1200 s under a sanitizer)
  case "${LUAMCP_TIMEOUT_SCALE:-}" in
    ''|*[!0-9]*) ;;
    *) SUITE_TIMEOUT=$((SUITE_TIMEOUT * LUAMCP_TIMEOUT_SCALE)) ;;
  esac
else
  SUITE_TIMEOUT="${LUAMCP_CONFORMANCE_TIMEOUT:-120}"
fi
SUITE="$SUITE_DIR/dist/index.js"
LABEL="conformance"
[ -z "$REQUIREMENTS" ] || LABEL="conformance $REQUIREMENTS"
case "$INSTANCES" in
  0) ;;
  2|3) LABEL="$LABEL (nginx, $INSTANCES instances)" ;;
  *) echo "run.sh: --instances takes 2 or 3 (the instances of deploy/nginx/luamcp.conf), got '$INSTANCES'" >&2; exit 2 ;;
esac

# A setup problem: say what is missing, then the closing line.
fail_setup() {
  echo "$LABEL: $*"
  [ -z "${TMP:-}" ] || echo "$LABEL: server log kept in $TMP"
  echo "0 passed, 1 failed"
  exit 1
}

# {====== prerequisites
if [ ! -x "$NODE" ]; then
  # no pinned Node 22: a system one will do if it is new enough
  NODE="$(command -v node || true)"
fi
if [ -z "$NODE" ] || [ ! -f "$SUITE" ]; then
  fail_setup "the suite is not installed ($SUITE): run 'npm ci --prefix tests' (tests/package-lock.json pins it)"
fi
NODE_MAJOR="$("$NODE" -p 'process.versions.node.split(".")[0]')"
[ "$NODE_MAJOR" -ge 22 ] ||
  fail_setup "the suite needs Node >= 22, $NODE is $("$NODE" --version); run 'npm ci --prefix tests' (it installs Node 22 into tests/node_modules/.bin)"

REQ_FILE=""
SCENARIOS=()
# Extension scenarios of the suite that the frozen sets predate (SEP-2640,
# Agent Skills, merged after their anchor release): run after the set, each
# at the set's wire, and counted as the set's own extension scenarios are.
EXTRA_SCENARIOS=(sep-2640-skills-manifest sep-2640-skills-enumeration sep-2640-skills-directory)
EXTRA_KINDS="$(printf '%s extension\n' "${EXTRA_SCENARIOS[@]}")"
if [ -n "$REQUIREMENTS" ]; then
  REQ_FILE="$SUITE_DIR/requirements/$REQUIREMENTS.yaml"
  if [ ! -f "$REQ_FILE" ]; then
    echo "run.sh: no requirement set '$REQUIREMENTS' in $(basename "$SUITE_DIR"); one of:" >&2
    for f in "$SUITE_DIR"/requirements/*.yaml; do echo "  $(basename "$f" .yaml)" >&2; done
    exit 2
  fi
  # the set's server scenarios, "<name> <kind>" (kind: scored or the not_scored reason),
  # then EXTRA_KINDS
  KINDS="$(LUAMCP_REQUIREMENTS_FILE="$REQ_FILE" LUAMCP_EXTRA_KINDS="$EXTRA_KINDS" \
    "$NODE" "$ROOT/tests/conformance/summarize.mjs" --kinds)" ||
    fail_setup "cannot read $REQ_FILE"
  while read -r s _; do SCENARIOS+=("$s"); done <<<"$KINDS"
  if [ "$LIST" = 1 ]; then
    printf '%s\n' "$KINDS"
    exit 0
  fi
else
  while IFS= read -r s; do SCENARIOS+=("$s"); done < <(
    "$NODE" "$SUITE" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p')
  if [ "$LIST" = 1 ]; then
    printf '%s\n' "${SCENARIOS[@]}"
    exit 0
  fi
fi
if [ -n "$SCENARIO" ]; then
  printf '%s\n' "${SCENARIOS[@]}" | grep -qxF -- "$SCENARIO" ||
    { echo "run.sh: unknown scenario '$SCENARIO'; one of:" >&2; printf '  %s\n' "${SCENARIOS[@]}" >&2; exit 2; }
  SCENARIOS=("$SCENARIO")
fi

[ -x "$BIN" ] || fail_setup "no luamcp binary at $BIN (build with 'make', or set LUAMCP_BIN)"
if [ "$INSTANCES" != 0 ]; then
  for tool in nginx redis-server python3; do
    if ! command -v "$tool" >/dev/null; then
      echo "$LABEL: skipped: $tool is not installed ('make test' installs it)"
      exit 77
    fi
  done
fi
# }======

TMP="$(mktemp -d "${TMPDIR:-/tmp}/luamcp-conformance.XXXXXX")"
SERVER_PIDS=() # one per instance; "" once it was waited for
SERVER_LOGS=()
STATUS=1

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  local pid
  for pid in "${SERVER_PIDS[@]}"; do
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || continue
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if declare -F cluster_stop >/dev/null; then cluster_stop; fi
  # kept on failure (and with LUAMCP_CONFORMANCE_KEEP=1); said before the closing line
  if [ "$STATUS" = 0 ] && [ "${LUAMCP_CONFORMANCE_KEEP:-0}" != 1 ]; then rm -rf "$TMP"; fi
}
trap cleanup EXIT

log_tail() {
  local log
  for log in "${SERVER_LOGS[@]}"; do
    [ "${#SERVER_LOGS[@]}" = 1 ] || echo "  $(basename "$log"):"
    if [ -s "$log" ]; then tail -n "${1:-20}" "$log" | sed 's/^/  server| /'
    else echo "  server| (no output)"; fi
  done
}

free_port() {
  "$NODE" -e '
const s = require("net").createServer();
s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# {====== the app: a copy, because fixtures write into it (test_trigger_tool_change
# saves a script so that hot reload changes the tool list) and runs in parallel
# must not see each other's changes. Instances share it, as they would a
# deployed folder: every one of them reloads the change.
APP="$TMP/app"
cp -R "$APP_SRC" "$APP"
rm -f "$APP"/scripts/zz_trigger_*.lua # left by a manual run in the checkout
# }======

# {====== start the server(s), wait (at most 10 s) until each port answers
# --shutdown-grace 3: the suite gives up on a 60 s call and leaves; the
# server then ends it at SIGTERM after the grace (an error answer to nobody)
# rather than waiting the default 10 s this script allows for the exit
read -r -a SERVER_ARGS <<<"--shutdown-grace 3 ${LUAMCP_CONFORMANCE_SERVER_ARGS:-}"
start_server() { # port log [extra args...]
  local port=$1 log=$2
  shift 2
  echo "$LABEL: $BIN serve --http 127.0.0.1:$port ${SERVER_ARGS[*]} $* $APP"
  "$BIN" serve --http "127.0.0.1:$port" "${SERVER_ARGS[@]}" "$@" "$APP" </dev/null >>"$TMP/server.out" 2>"$log" &
  local pid=$! i=${#SERVER_PIDS[@]}
  SERVER_PIDS+=("$pid")
  SERVER_LOGS+=("$log")
  for _ in $(seq 100); do
    if ! kill -0 "$pid" 2>/dev/null; then
      rc=0; wait "$pid" || rc=$?
      SERVER_PIDS[i]=""
      echo "$LABEL: server did not start (it exited with code $rc):"
      log_tail
      fail_setup "no server to test on port $port"
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "$LABEL: server did not start: nothing answers on 127.0.0.1:$port after 10 s:"
  log_tail
  fail_setup "no server to test on port $port"
}

if [ "$INSTANCES" = 0 ]; then
  PORT="$(free_port)"
  URL="http://127.0.0.1:$PORT/mcp"
  start_server "$PORT" "$TMP/server.log"
else
  # shellcheck source=tests/cluster.sh
  . "$ROOT/tests/cluster.sh"
  cluster_init "$TMP/cluster"
  cluster_redis || fail_setup "redis-server did not start"
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TMP/state.key" # one key for the service
  PORTS=()
  names=(a b c)
  for ((k = 0; k < INSTANCES; k++)); do
    PORTS+=("$(free_port)")
    # the deployment file's options: deploy/nginx/luamcp.conf's comment
    start_server "${PORTS[k]}" "$TMP/server-${names[k]}.log" --instance "${names[k]}" \
      --trust-proxy 127.0.0.2 --state-key "$TMP/state.key" --bus "$CLUSTER_REDIS_URL" \
      --store "$CLUSTER_REDIS_URL" --max-sessions-per-peer 0
  done
  cluster_nginx "$(free_port)" "${PORTS[@]}" || fail_setup "nginx did not start"
  URL="$CLUSTER_NGINX_URL"
fi
# }======

# {====== run the suite (bounded), its output indented and without colours
if [ -n "$REQUIREMENTS" ] && [ -n "$SCENARIO" ]; then
  # --requirements replaces --scenario in the suite: one scenario of the set
  # runs at the set's wire through --spec-version (--force: an extension
  # scenario, which is on no revision's timeline, runs too, as in the set)
  ARGS=(--scenario "$SCENARIO" --spec-version "$REQUIREMENTS" --force)
elif [ -n "$REQUIREMENTS" ]; then
  ARGS=(--requirements "$REQUIREMENTS")
elif [ -n "$SCENARIO" ]; then
  ARGS=(--scenario "$SCENARIO")
else
  ARGS=(--suite all)
fi
echo "$LABEL: running ${#SCENARIOS[@]} scenario(s) against $URL ($(basename "$SUITE_DIR") $("$NODE" -p "require('$SUITE_DIR/package.json').version"))"
set +e
timeout "$SUITE_TIMEOUT" "$NODE" "$SUITE" server --url "$URL" "${ARGS[@]}" -o "$TMP/results" \
  </dev/null 2>&1 | tee "$TMP/suite.log" | sed -u -e 's/\x1b\[[0-9;]*m//g' -e 's/^/  | /'
SUITE_RC=${PIPESTATUS[0]}
if [ "$SUITE_RC" = 124 ]; then echo "$LABEL: the suite was stopped after ${SUITE_TIMEOUT} s"; fi
if [ -n "$REQUIREMENTS" ] && [ -z "$SCENARIO" ]; then
  # the extension scenarios the set predates, one by one (the suite takes one
  # --scenario at a time); a missing result is a failure (summarize.mjs)
  for s in "${EXTRA_SCENARIOS[@]}"; do
    timeout 120 "$NODE" "$SUITE" server --url "$URL" --scenario "$s" --spec-version "$REQUIREMENTS" \
      --force -o "$TMP/results" </dev/null 2>&1 | tee -a "$TMP/suite.log" |
      sed -u -e 's/\x1b\[[0-9;]*m//g' -e 's/^/  | /'
    rc=${PIPESTATUS[0]}
    if [ "$rc" = 124 ]; then echo "$LABEL: $s was stopped after 120 s"; fi
  done
fi
set -e
# }======

# {====== stop the server(s): each must still be running, and exit 0 on SIGTERM
# (a crash, or a sanitizer report at exit, is a failure even if every check passed)
SERVER_PROBLEM=""
for ((k = 0; k < ${#SERVER_PIDS[@]}; k++)); do
  pid=${SERVER_PIDS[k]}
  who="the server"
  [ "$INSTANCES" = 0 ] || who="instance $(basename "${SERVER_LOGS[k]}" .log | sed 's/^server-//')"
  problem=""
  if ! kill -0 "$pid" 2>/dev/null; then
    rc=0; wait "$pid" || rc=$?
    problem="$who exited during the run (code $rc)"
  else
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      kill -9 "$pid" 2>/dev/null || true
      problem="$who did not exit within 10 s of SIGTERM"
    fi
    rc=0; wait "$pid" 2>/dev/null || rc=$?
    if [ -z "$problem" ] && [ "$rc" != 0 ]; then problem="$who exited with code $rc on SIGTERM"; fi
  fi
  SERVER_PIDS[k]=""
  [ -z "$problem" ] || SERVER_PROBLEM="${SERVER_PROBLEM:+$SERVER_PROBLEM; }$problem"
done
# }======

set +e
LUAMCP_SERVER_PROBLEM="$SERVER_PROBLEM" LUAMCP_REQUIREMENTS_FILE="$REQ_FILE" LUAMCP_EXTRA_KINDS="$EXTRA_KINDS" \
  LUAMCP_CONFORMANCE_REPORT="$REPORT" LUAMCP_CONFORMANCE_LABEL="$LABEL" \
  "$NODE" "$ROOT/tests/conformance/summarize.mjs" \
  "$TMP/results" "$TMP/suite.log" "$SUITE_RC" "${SCENARIOS[@]}" >"$TMP/summary.txt"
STATUS=$?
set -e
if [ "$STATUS" != 0 ]; then
  echo "$LABEL: server log (last lines):"
  log_tail 30
fi
if [ "$STATUS" != 0 ] || [ "${LUAMCP_CONFORMANCE_KEEP:-0}" = 1 ]; then
  echo "$LABEL: results and server log kept in $TMP"
fi
cat "$TMP/summary.txt"
exit "$STATUS"
