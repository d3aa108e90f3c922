#!/usr/bin/env bash
# Side-by-side Streamable HTTP benchmark: luamcp (stateless and stateful)
# against the official TypeScript SDK (stateless and stateful on node:http,
# and stateless in the SDK's express app) and the bare civetweb floor, on the same `echo` tool, driven by wrk at 1 and 16
# connections, interleaved round by round. Also idle/peak RSS and memory per
# session (1, 100, 1,000 sessions). Also the TypeScript SDK v2
# (createMcpHandler), the 2026-07-28 era (stateless, enveloped, the three
# headers) for both, and the cost of an MRTR round trip (an elicitation
# answered by a retry) against a plain call. Prints one table, writes
# bench/results/http.json. See the HTTP section of bench/README.md.
#
# Every server listens on 127.0.0.1 only, and all traffic goes there.
#
# Environment (defaults in brackets):
#   BENCH_ROUNDS         rounds [3]
#   BENCH_HTTP_SERVERS   any of: luamcp-sl luamcp-sf ts-sl ts-sf ts-express floor
#                        ts2 luamcp-modern ts2-modern luamcp-mrtr ts2-mrtr
#                        luamcp-auth (luamcp-modern with --auth-resource and
#                        a bearer RS256 JWT on every request) ts2-auth (ts2-modern
#                        behind the SDK's requireBearerAuth, the same token)
#                        luamcp-metrics luamcp-otlp luamcp-otlp1 luamcp-mw
#                        (luamcp-modern with --metrics, --otlp to a local sink
#                        all sampled or 1 %, one no-op mcp.use; issue 23)
#                        [all]
#   BENCH_HTTP_SECONDS   seconds of one measured wrk run [3]
#   BENCH_HTTP_WARMUP    seconds of the warm-up before a server's runs [1]
#   BENCH_HTTP_SESSIONS  session counts of the memory curve ["1 100 1000"];
#                        empty skips it
#   BENCH_HTTP_PORT      first port used; each server start takes the next [18400]
#   BENCH_HTTP_PIN       1: servers on CPU 0, wrk on CPU 1 (taskset) [0]
#   BENCH_LUAMCP_BIN     the luamcp binary of luamcp-sl/-sf [build/luamcp]
#   BENCH_HTTP_OUT       the summary file [bench/results/http.json]
# Exit status 1 when a run fails (non-200 answers, socket errors, a server
# that does not come up); the targets are reported, not enforced.
set -euo pipefail

cd "$(dirname "$0")/../.."

rounds=${BENCH_ROUNDS:-3}
servers=${BENCH_HTTP_SERVERS:-luamcp-sl luamcp-sf ts-sl ts-sf ts-express floor ts2 luamcp-modern ts2-modern luamcp-mrtr ts2-mrtr luamcp-auth ts2-auth luamcp-metrics luamcp-otlp luamcp-otlp1 luamcp-mw}
secs=${BENCH_HTTP_SECONDS:-3}
warm=${BENCH_HTTP_WARMUP:-1}
session_counts=${BENCH_HTTP_SESSIONS-1 100 1000}
port=${BENCH_HTTP_PORT:-18400}
pin_server=() pin_wrk=()
if [[ ${BENCH_HTTP_PIN:-0} == 1 ]]; then pin_server=(taskset -c 0) pin_wrk=(taskset -c 1); fi
host=127.0.0.1
proto=2025-06-18
luamcp=${BENCH_LUAMCP_BIN:-build/luamcp}
out_json=${BENCH_HTTP_OUT:-bench/results/http.json}
out_dir=build/bench/http
floor_bin=build/bench/civetweb_floor
wrk_script=bench/http/echo_call.lua

# {====== prerequisites: fail early, with the fix
need_luamcp=0 need_ts=0 need_ts2=0
for s in $servers; do
  case $s in
    luamcp-sl | luamcp-sf | luamcp-modern | luamcp-mrtr | luamcp-auth | luamcp-metrics | luamcp-otlp | \
      luamcp-otlp1 | luamcp-mw) need_luamcp=1 ;;
    ts-sl | ts-sf | ts-express) need_ts=1 ;;
    ts2 | ts2-modern | ts2-mrtr | ts2-auth) need_ts2=1 ;;
    floor) ;;
    *) echo "bench/http: unknown server '$s' (luamcp-sl luamcp-sf ts-sl ts-sf ts-express floor" \
      "ts2 luamcp-modern ts2-modern luamcp-mrtr ts2-mrtr luamcp-auth ts2-auth luamcp-metrics luamcp-otlp" \
      "luamcp-otlp1 luamcp-mw)" >&2; exit 1 ;;
  esac
done
if ((need_luamcp)) && [[ ! -x $luamcp ]]; then
  echo "bench/http: $luamcp not found; build it first (make)" >&2
  exit 1
fi
if ((need_ts)) && [[ ! -d tests/node_modules/@modelcontextprotocol/sdk ]]; then
  echo "bench/http: the TypeScript SDK is not installed; run: npm ci --prefix tests" >&2
  exit 1
fi
if ((need_ts2)) && [[ ! -d tests/node_modules/@modelcontextprotocol/server ]]; then
  echo "bench/http: the TypeScript SDK v2 is not installed; run: npm ci --prefix tests" >&2
  exit 1
fi
if ! command -v wrk >/dev/null; then
  # Debian's package `wrk` is the HTTP load generator.
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "bench/http: installing Debian's wrk"
    DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends wrk >/dev/null
  else
    echo "bench/http: wrk not found; install it: sudo apt-get install -y wrk" >&2
    exit 1
  fi
fi
for tool in curl node cc ${pin_wrk[0]:+taskset}; do
  command -v "$tool" >/dev/null || { echo "bench/http: $tool is needed" >&2; exit 1; }
done
# }======

mkdir -p "$out_dir" "$(dirname "$out_json")"
cc -O2 -std=c11 -Wall -Wextra -Werror -o "$floor_bin" bench/floor/civetweb_floor.c -lcivetweb -lpthread

runs=$out_dir/runs.jsonl
log=$out_dir/stderr.log
: >"$runs"
: >"$log"
failed=0

# {====== servers: start, wait, stop (only the processes started here)
started=()   # every pid this script started, reaped at exit

server_cmd() { # name port
  case $1 in
    luamcp-sl) echo "$luamcp serve --http $host:$2 --stateless bench/apps/echo" ;;
    # every session comes from 127.0.0.1 and never sends notifications/initialized:
    # the per-peer limits and the short expiry are off for this capacity measurement
    luamcp-sf) echo "$luamcp serve --http $host:$2 --max-sessions-per-peer 0 --init-rate 0 --init-timeout 3600 bench/apps/echo" ;;
    ts-sl) echo "node bench/http/ts_http_server.mjs $2" ;;
    ts-sf) echo "node bench/http/ts_http_server.mjs --stateful $2" ;;
    ts-express) echo "node bench/http/ts_http_server.mjs --express $2" ;;
    floor) echo "$floor_bin $host:$2" ;;
    ts2 | ts2-modern | ts2-mrtr) echo "node bench/ts2_echo_server.mjs --http $2" ;;
    ts2-auth) echo "node bench/ts2_echo_server.mjs --http $2 --auth $out_dir/jwks.json" ;;
    luamcp-metrics) echo "$luamcp serve --http $host:$2 --metrics $host:$(($2 + 1000)) bench/apps/echo" ;;
    luamcp-otlp | luamcp-otlp1) echo "$luamcp serve --http $host:$2 --otlp http://$host:$sink_port bench/apps/echo" ;;
    luamcp-mw) echo "$luamcp serve --http $host:$2 bench/apps/echo-mw" ;;
    luamcp-modern) echo "$luamcp serve --http $host:$2 bench/apps/echo" ;;
    luamcp-mrtr) echo "$luamcp serve --http $host:$2 bench/apps/mrtr" ;;
    luamcp-auth) echo "$luamcp serve --http $host:$2 --auth-resource https://mcp.bench.example/mcp --auth-issuer https://as.bench.example --auth-jwks $out_dir/jwks.json bench/apps/echo" ;;
  esac
}

# Starts server $1 on the next free port; sets pid and url. Returns 1 when
# it does not answer within 10 s.
start_server() {
  port=$((port + 1))
  while (echo >/dev/tcp/$host/$port) 2>/dev/null; do port=$((port + 1)); done
  local cmd
  read -r -a cmd <<<"$(server_cmd "$1" "$port")"
  local -a env=()
  [[ $1 == luamcp-otlp1 ]] && env=(OTEL_TRACES_SAMPLER=traceidratio OTEL_TRACES_SAMPLER_ARG=0.01)
  env "${env[@]}" "${pin_server[@]}" "${cmd[@]}" </dev/null >/dev/null 2>>"$log" &
  pid=$!
  started+=("$pid")
  url=http://$host:$port/mcp
  local i
  for ((i = 0; i < 200; i++)); do
    if [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$url" 2>/dev/null) != 000 ]]; then return 0; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "bench/http: $1 did not come up on $url" >&2
  return 1
}

# SIGTERM, without waiting: civetweb takes seconds to wind down its idle
# threads (no CPU), so the waiting is done once, at exit.
stop_server() { kill -TERM "$1" 2>/dev/null || true; }

reap_all() {
  local p i
  for p in "${started[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for ((i = 0; i < 100; i++)); do
    local alive=0
    for p in "${started[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for p in "${started[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap reap_all EXIT
trap 'exit 130' INT TERM

rss_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; } # pid VmRSS|VmHWM
# }======

# {====== MCP over curl
hdrs=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
auth_hdr=()
# luamcp-otlp*: an OTLP/HTTP sink that answers every POST at once
sink_port=
if [[ " $servers " == *" luamcp-otlp"* ]]; then
  sink_port=$((port + 5000))
  node -e 'require("http").createServer((q, r) => { q.resume(); q.on("end", () => r.end()); })
    .listen(Number(process.argv[1]), "127.0.0.1")' "$sink_port" &
  started+=("$!")
fi

# luamcp-auth, ts2-auth: an issuer's key (a JWKS file) and one access token it signed
bench_token=
if [[ " $servers " == *" luamcp-auth "* || " $servers " == *" ts2-auth "* ]]; then
  mkdir -p "$out_dir"
  bench_token=$(node -e '
    const crypto = require("crypto"), fs = require("fs"), dir = process.argv[1];
    const { publicKey, privateKey } = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
    fs.writeFileSync(dir + "/jwks.json", JSON.stringify({ keys: [{ ...publicKey.export({ format: "jwk" }), kid: "k" }] }));
    const b = (o) => Buffer.from(JSON.stringify(o)).toString("base64url"), now = Math.floor(Date.now() / 1000);
    const s = b({ alg: "RS256", typ: "at+jwt", kid: "k" }) + "." + b({ iss: "https://as.bench.example",
      aud: "https://mcp.bench.example/mcp", sub: "u", exp: now + 86400, iat: now });
    console.log(s + "." + crypto.sign("sha256", Buffer.from(s), privateKey).toString("base64url"));' "$out_dir")
fi
init_body='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"'$proto'","capabilities":{},"clientInfo":{"name":"bench-http","version":"1"}}}'
initialized_body='{"jsonrpc":"2.0","method":"notifications/initialized"}'
call_body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
# The 2026-07-28 era: every request carries its envelope and three headers.
meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}'
modern_hdrs=(-H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call')
modern_echo='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},'$meta'}}'
modern_ask='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{},'$meta'}}'

# Opens a session at $url: prints its Mcp-Session-Id (empty on failure).
open_session() {
  local h
  h=$(curl -s -D - -o /dev/null --max-time 5 -X POST "${hdrs[@]}" -d "$init_body" "$url") || true
  local sid
  sid=$(printf '%s\n' "$h" | tr -d '\r' | awk 'tolower($1) == "mcp-session-id:" { print $2 }')
  [[ -n $sid ]] || return 0
  curl -s -o /dev/null --max-time 5 -X POST "${hdrs[@]}" -H "Mcp-Session-Id: $sid" \
    -H "MCP-Protocol-Version: $proto" -d "$initialized_body" "$url" || true
  echo "$sid"
}

# One tools/call with curl: must be 200 with the text back.
check_call() { # [session id]
  local extra=()
  [[ -z ${1:-} ]] || extra=(-H "Mcp-Session-Id: $1" -H "MCP-Protocol-Version: $proto")
  local out
  out=$(curl -s -w '\n%{http_code}' --max-time 5 -X POST "${hdrs[@]}" "${extra[@]}" -d "$call_body" "$url") || true
  [[ ${out##*$'\n'} == 200 && $out == *'"text":"hello"'* ]]
}

# A 2026-07-28 tools/call with curl: prints the body, returns 1 unless 200.
modern_post() { # tool body
  local out
  out=$(curl -s -w '\n%{http_code}' --max-time 5 -X POST "${hdrs[@]}" "${modern_hdrs[@]}" "${auth_hdr[@]}" -H "Mcp-Name: $1" -d "$2" "$url") || true
  printf '%s\n' "${out%$'\n'*}"
  [[ ${out##*$'\n'} == 200 ]]
}

# The MRTR round trip: asks once (must be input_required with inputRequests.q0)
# and sets retry_body to the retry, which echoes the requestState (if any)
# and answers q0; the retry must then complete with "ok".
prepare_mrtr() {
  local first state
  first=$(modern_post ask "$modern_ask") || return 1
  [[ $first == *'"resultType":"input_required"'* && $first == *'"q0"'* ]] || return 1
  state=$(sed -n 's/.*"requestState":"\([^"]*\)".*/\1/p' <<<"$first")
  retry_body='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{},'
  [[ -z $state ]] || retry_body+='"requestState":"'$state'",'
  retry_body+='"inputResponses":{"q0":{"action":"accept","content":{"a":"b"}}},'$meta'}}'
  local second
  second=$(modern_post ask "$retry_body") || return 1
  [[ $second == *'"resultType":"complete"'* && $second == *'"text":"ok"'* ]]
}

# Opens $1 more sessions at $url in one curl process (keep-alive); returns 1
# unless every one was answered 200.
open_sessions() {
  local n=$1 urls=() i
  for ((i = 0; i < n; i++)); do urls+=("$url"); done
  local ok
  ok=$(curl -s -w '\n%{http_code}\n' --max-time 60 -X POST "${hdrs[@]}" -d "$init_body" "${urls[@]}" | grep -cx 200) || true
  [[ $ok == "$n" ]]
}
# }======

# wrk at $1 connections ($2 threads) for $3 seconds against $url; prints
# the WRK_JSON object, returns 1 on any non-2xx answer or socket error.
# wrk_env (set by bench_server) adds MCP_MODERN, MCP_NAME, MCP_CALL_BODY(2).
run_wrk() {
  local c=$1 t=$2 d=$3 out
  out=$(env "${wrk_env[@]}" MCP_SESSION_ID=${sid:-} MCP_PROTOCOL_VERSION=$proto \
    timeout $((d + 15)) "${pin_wrk[@]}" wrk -t"$t" -c"$c" -d"${d}s" --timeout 5s --latency -s "$wrk_script" "$url" 2>&1) || {
    echo "bench/http: wrk failed: $out" >&2
    return 1
  }
  printf '%s\n' "$out" >>"$log"
  local json
  json=$(printf '%s\n' "$out" | sed -n 's/^WRK_JSON //p')
  [[ -n $json ]] || { echo "bench/http: no WRK_JSON in wrk's output" >&2; return 1; }
  echo "$json"
  if printf '%s\n' "$out" | grep -q 'Non-2xx'; then
    echo "bench/http: non-2xx answers: $(printf '%s\n' "$out" | grep 'Non-2xx')" >&2
    return 1
  fi
  if printf '%s\n' "$out" | grep -q 'Socket errors'; then
    echo "bench/http: $(printf '%s\n' "$out" | grep 'Socket errors')" >&2
    return 1
  fi
}

field() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; } # json name

# c=1 and c=16 of one load; each run is a line of $runs under the name $1.
measure() { # name round
  local c t json status
  for c in 1 16; do
    t=1; ((c == 1)) || t=2
    status=ok
    json=$(run_wrk "$c" "$t" "$secs") || { status=failed; failed=1; }
    [[ -n $json ]] || json='{}'
    local rps
    rps=$(field "$json" rps)
    printf 'round %d/%d  %-13s c=%-2d  %8.0f req/s  p50 %5s µs  p99 %6s µs  %s\n' "$2" "$rounds" "$1" "$c" \
      "${rps:-0}" "$(field "$json" p50_us)" "$(field "$json" p99_us)" "$status"
    echo "{\"kind\":\"load\",\"round\":$2,\"server\":\"$1\",\"c\":$c,\"status\":\"$status\",${json#\{}" >>"$runs"
  done
}

# One server in one round: idle RSS, warm-up, c=1 and c=16, peak RSS.
# *-modern: 2026-07-28 tools/call echo. *-mrtr: the plain echo call and the
# round trip of ask (first call, retry), both alternating two requests through
# the same wrk hook; the round trip's runs are named <server>-rt.
bench_server() { # name round
  local s=$1 round=$2
  sid=
  wrk_env=()
  if ! start_server "$s"; then failed=1; stop_server "$pid"; return; fi
  auth_hdr=()
  case $s in
    *-modern | *-auth | luamcp-metrics | luamcp-otlp* | luamcp-mw)
      wrk_env=(MCP_MODERN=1 MCP_NAME=echo "MCP_CALL_BODY=$modern_echo")
      if [[ $s == *-auth ]]; then
        wrk_env+=("MCP_AUTHORIZATION=Bearer $bench_token")
        auth_hdr=(-H "Authorization: Bearer $bench_token")
      fi
      if ! modern_post echo "$modern_echo" | grep -q '"text":"hello"'; then
        echo "bench/http: round $round $s: 2026-07-28 tools/call echo did not answer 200 with the text" >&2
        failed=1; stop_server "$pid"; return
      fi ;;
    *-mrtr)
      if ! prepare_mrtr; then
        echo "bench/http: round $round $s: the MRTR round trip of ask did not complete" >&2
        failed=1; stop_server "$pid"; return
      fi
      wrk_env=(MCP_MODERN=1 MCP_NAME=echo "MCP_CALL_BODY=$modern_echo" "MCP_CALL_BODY2=$modern_echo") ;;
  esac
  if [[ $s == *-sf ]]; then
    sid=$(open_session)
    if [[ -z $sid ]]; then
      echo "bench/http: round $round $s: initialize gave no Mcp-Session-Id" >&2
      failed=1; stop_server "$pid"; return
    fi
  fi
  if [[ $s == luamcp-sl || $s == luamcp-sf || $s == ts-* || $s == floor || $s == ts2 ]] && ! check_call "$sid"; then
    echo "bench/http: round $round $s: tools/call echo did not answer 200 with the text" >&2
    failed=1; stop_server "$pid"; return
  fi
  sleep 0.2
  local idle
  idle=$(rss_kb "$pid" VmRSS)
  run_wrk 16 2 "$warm" >/dev/null || { failed=1; stop_server "$pid"; return; }
  measure "$s" "$round"
  if [[ $s == *-mrtr ]]; then
    wrk_env=(MCP_MODERN=1 MCP_NAME=ask "MCP_CALL_BODY=$modern_ask" "MCP_CALL_BODY2=$retry_body")
    measure "$s-rt" "$round"
  fi
  local peak
  peak=$(rss_kb "$pid" VmHWM)
  echo "{\"kind\":\"rss\",\"round\":$round,\"server\":\"$s\",\"idle_rss_kb\":$idle,\"peak_rss_kb\":$peak}" >>"$runs"
  stop_server "$pid"
}

# Memory per session: a fresh stateful server, RSS with 0 sessions, then
# after opening sessions up to each count in $session_counts.
bench_sessions() { # name round
  local s=$1 round=$2
  start_server "$s" || { failed=1; stop_server "$pid"; return; }
  sleep 0.2
  local open=0 n rss points
  points="{\"sessions\":0,\"rss_kb\":$(rss_kb "$pid" VmRSS)}"
  for n in $session_counts; do
    if ((n > open)) && ! open_sessions $((n - open)); then
      echo "bench/http: round $round $s: opening sessions $open..$n failed" >&2
      failed=1; break
    fi
    open=$n
    sleep 0.3
    rss=$(rss_kb "$pid" VmRSS)
    points+=",{\"sessions\":$n,\"rss_kb\":$rss}"
  done
  echo "round $round/$rounds  $s sessions: $(sed 's/{"sessions":\([0-9]*\),"rss_kb":\([0-9]*\)}/\1→\2 kB/g' <<<"$points")"
  echo "{\"kind\":\"sessions\",\"round\":$round,\"server\":\"$s\",\"points\":[$points]}" >>"$runs"
  stop_server "$pid"
}

read -r -a order <<<"$servers"
nserv=${#order[@]}
for ((round = 1; round <= rounds; round++)); do
  # Rotate the order each round so no server always runs first.
  for ((k = 0; k < nserv; k++)); do
    bench_server "${order[$(((k + round - 1) % nserv))]}" "$round"
  done
  if [[ -n $session_counts ]]; then
    for s in $servers; do
      [[ $s == *-sf ]] && bench_sessions "$s" "$round"
    done
  fi
done

echo
node bench/http/summarize.mjs "$runs" "$out_json" || failed=1
echo "wrote $out_json (wrk output and server stderr in $log)"
exit "$failed"
