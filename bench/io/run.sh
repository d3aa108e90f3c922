#!/usr/bin/env bash
# The I/O-bound benchmark (issue 11): a `fetch` tool that does one HTTP GET to
# a local upstream answering after 50 ms, with N calls in flight: N = 1, 64,
# 1,000 over stdio (bench/stdio_load, W = N) and N = 256 over Streamable HTTP
# (wrk -c 256), luamcp (bench/apps/fetch, mcp.http) against the TypeScript
# SDK v2 (bench/io/ts_fetch_server.mjs, fetch), interleaved round by round.
# Prints a line per run and the tables, writes bench/results/io.json
# (bench/report.mjs turns it into rows of its target table). See the I/O
# section of bench/README.md.
#
# Every server and the upstream listen on 127.0.0.1 only.
#
# Environment (defaults in brackets):
#   BENCH_ROUNDS          rounds [3]
#   BENCH_IO_SERVERS      any of: luamcp ts ts-handler [luamcp ts]; ts-handler
#                         (HTTP only) is the SDK's createMcpHandler entry
#   BENCH_IO_N            stdio in-flight counts ["1 64 1000"]
#   BENCH_IO_REQS_<N>     tools/call requests of one stdio run at that N
#                         [1: 50, 64: 3000, 1000: 10000; others 10 N]
#   BENCH_IO_HTTP_C       HTTP connections (calls in flight); empty skips HTTP [256]
#   BENCH_IO_HTTP_SECONDS seconds of the measured wrk run [3]
#   BENCH_IO_HTTP_WARMUP  seconds of the wrk warm-up before it [1]
#   BENCH_IO_DELAY_MS     the upstream's delay [50]
#   BENCH_IO_UPSTREAM     c (bench/io/delay_server.c) or node (delay_server.mjs) [c]
#   BENCH_IO_CHECK        1: first measure the upstream alone with wrk at the
#                         largest N, 2 s [1]
#   BENCH_IO_PORT         first HTTP port tried [18600]
#   BENCH_LUAMCP_BIN      the luamcp binary [build/luamcp]
#   BENCH_IO_OUT          the results file [bench/results/io.json]
# Exit status 1 when a run fails (error replies, non-2xx, socket errors, a
# server that does not come up); the targets are reported, not enforced.
set -euo pipefail

cd "$(dirname "$0")/../.."

rounds=${BENCH_ROUNDS:-3}
servers=${BENCH_IO_SERVERS:-luamcp ts}
ns=${BENCH_IO_N-1 64 1000}
http_c=${BENCH_IO_HTTP_C-256}
http_secs=${BENCH_IO_HTTP_SECONDS:-3}
http_warm=${BENCH_IO_HTTP_WARMUP:-1}
delay_ms=${BENCH_IO_DELAY_MS:-50}
upstream_kind=${BENCH_IO_UPSTREAM:-c}
check=${BENCH_IO_CHECK:-1}
port=${BENCH_IO_PORT:-18600}
luamcp=${BENCH_LUAMCP_BIN:-build/luamcp}
out_json=${BENCH_IO_OUT:-bench/results/io.json}
host=127.0.0.1
proto=2025-06-18
out_dir=build/bench/io
driver=$out_dir/stdio_load
upstream_bin=$out_dir/delay_server
wrk_script=bench/http/echo_call.lua

reqs_for() { # N
  local v=BENCH_IO_REQS_$1
  if [[ -n ${!v:-} ]]; then echo "${!v}"; return; fi
  case $1 in 1) echo 50 ;; 64) echo 3000 ;; 1000) echo 10000 ;; *) echo $(($1 * 10)) ;; esac
}

# {====== prerequisites: fail early, with the fix
for s in $servers; do
  case $s in
    luamcp) [[ -x $luamcp ]] || { echo "bench/io: $luamcp not found; build it first (make)" >&2; exit 1; } ;;
    ts | ts-handler)
      [[ -d tests/node_modules/@modelcontextprotocol/server ]] || {
        echo "bench/io: the TypeScript SDK v2 is not installed; run: make npm" >&2; exit 1; } ;;
    *) echo "bench/io: unknown server '$s' (luamcp ts ts-handler)" >&2; exit 1 ;;
  esac
done
[[ $upstream_kind == c || $upstream_kind == node ]] || { echo "bench/io: BENCH_IO_UPSTREAM is c or node" >&2; exit 1; }
[[ -f /usr/include/uv.h ]] || { echo "bench/io: the upstream needs libuv's headers: apt-get install -y libuv1-dev" >&2; exit 1; }
if [[ -n $http_c ]] && ! command -v wrk >/dev/null; then
  echo "bench/io: wrk not found; install it: sudo apt-get install -y wrk (or make deps-bench)" >&2
  exit 1
fi
for tool in curl node cc; do
  command -v "$tool" >/dev/null || { echo "bench/io: $tool is needed" >&2; exit 1; }
done
# }======

mkdir -p "$out_dir" "$(dirname "$out_json")"
cc -O2 -std=c11 -Wall -Wextra -Werror -o "$driver" bench/stdio_load.c
cc -O2 -std=c11 -Wall -Wextra -Werror -o "$upstream_bin" bench/io/delay_server.c -luv

runs=$out_dir/runs.jsonl
log=$out_dir/stderr.log
: >"$runs"
: >"$log"
failed=0

# {====== processes: every pid started here is SIGTERMed, then SIGKILLed, at
# exit, if it is still this script's child (so a pid reused by the system
# after ours exited is never signalled).
started=()
ours() { # pid: running (not a zombie) and our child
  local st
  st=$(awk '{ print $3, $4 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ $st != Z* && ${st#* } == "$$" ]]
}
reap_all() {
  local p i alive
  for p in "${started[@]}"; do ours "$p" && kill -TERM "$p" 2>/dev/null || true; done
  for ((i = 0; i < 100; i++)); do
    alive=0
    for p in "${started[@]}"; do ours "$p" && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for p in "${started[@]}"; do ours "$p" && kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap reap_all EXIT
trap 'exit 130' INT TERM

rss_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; } # pid VmRSS|VmHWM

# The upstream: a fresh one per run (so its counts are that run's). Sets
# up_pid, up_out and up_url.
up_out=$out_dir/upstream.out
start_upstream() {
  : >"$up_out"
  if [[ $upstream_kind == c ]]; then
    "$upstream_bin" -p 0 -d "$delay_ms" >"$up_out" 2>>"$log" &
  else
    node bench/io/delay_server.mjs -p 0 -d "$delay_ms" >"$up_out" 2>>"$log" &
  fi
  up_pid=$!
  started+=("$up_pid")
  local i
  for ((i = 0; i < 200; i++)); do
    grep -q '^PORT ' "$up_out" && break
    sleep 0.02
  done
  up_url="http://$host:$(awk '/^PORT /{ print $2; exit }' "$up_out")/"
}
# Stops it and waits for it (in this shell: a $(...) could not wait for it);
# sets up_json to its DELAY_JSON object ({} from the node one, or if none).
stop_upstream() {
  kill -TERM "$up_pid" 2>/dev/null || true
  wait "$up_pid" 2>/dev/null || true
  up_json=$(sed -n 's/^DELAY_JSON //p' "$up_out" | tail -n 1)
  up_json=${up_json:-{\}}
}

call_args() { echo "{\"url\":\"$up_url\"}"; }
call_body() { echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"fetch\",\"arguments\":$(call_args)}}"; }

stdio_cmd() {
  case $1 in
    luamcp) echo "$luamcp serve bench/apps/fetch" ;;
    ts) echo "node bench/io/ts_fetch_server.mjs" ;;
  esac
}
http_cmd() { # name port
  case $1 in
    luamcp) echo "$luamcp serve --http $host:$2 --stateless bench/apps/fetch" ;;
    ts) echo "node bench/io/ts_fetch_server.mjs --http $2 --json" ;;
    ts-handler) echo "node bench/io/ts_fetch_server.mjs --http $2" ;;
  esac
}
field() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; } # json name

# One line of the progress output.
show() { # round transport server n json upstream_json
  local rps p50 p99 rss
  rps=$(field "$5" rps) p50=$(field "$5" p50_us) p99=$(field "$5" p99_us) rss=$(field "$5" peak_rss_kb)
  printf 'round %d/%d  %-6s %-10s N=%-5s %7.0f req/s  p50 %7.1f ms  p99 %7.1f ms  peak RSS %6.1f MiB  upstream p99 %5.1f ms, %s conns\n' \
    "$1" "$rounds" "$2" "$3" "$4" "${rps:-0}" "$(awk -v x="${p50:-0}" 'BEGIN{print x/1000}')" \
    "$(awk -v x="${p99:-0}" 'BEGIN{print x/1000}')" "$(awk -v x="${rss:-0}" 'BEGIN{print x/1024}')" \
    "$(awk -v x="$(field "$6" p99_us)" 'BEGIN{print x/1000}')" "$(field "$6" connections_opened)"
}
# }======

# {====== stdio: one server, one N
bench_stdio() { # server n round
  local s=$1 n=$2 round=$3 reqs line status=ok
  reqs=$(reqs_for "$n")
  start_upstream
  local cmd
  read -r -a cmd <<<"$(stdio_cmd "$s")"
  if ! line=$("$driver" -n "$reqs" -w "$n" --warmup "$n" -s 60 --json --label "$s" --tool fetch \
    --args "$(call_args)" -- "${cmd[@]}" 2>"$out_dir/last.err"); then
    status=failed failed=1
    echo "bench/io: round $round $s stdio N=$n failed; its stderr:" >&2
    tail -n 5 "$out_dir/last.err" >&2
  fi
  cat "$out_dir/last.err" >>"$log"
  stop_upstream
  [[ -n $line ]] || line='{}'
  show "$round" stdio "$s" "$n" "$line" "$up_json"
  echo "{\"transport\":\"stdio\",\"round\":$round,\"server\":\"$s\",\"inflight\":$n,\"delay_ms\":$delay_ms,\"run_status\":\"$status\",\"upstream\":$up_json,${line#\{}" >>"$runs"
}
# }======

# {====== HTTP: one server at c connections
wrk_json() { # c seconds; prints WRK_JSON's object, returns 1 on errors
  local out j
  out=$(MCP_CALL_BODY=$(call_body) timeout $(($2 + 20)) wrk -t1 -c"$1" -d"$2s" --timeout 10s --latency -s "$wrk_script" "$url" 2>&1) || {
    echo "bench/io: wrk failed: $out" >&2; return 1; }
  printf '%s\n' "$out" >>"$log"
  j=$(printf '%s\n' "$out" | sed -n 's/^WRK_JSON //p')
  [[ -n $j ]] || { echo "bench/io: no WRK_JSON in wrk's output" >&2; return 1; }
  echo "$j"
  if printf '%s\n' "$out" | grep -Eq 'Non-2xx|Socket errors'; then
    echo "bench/io: $(printf '%s\n' "$out" | grep -E 'Non-2xx|Socket errors')" >&2
    return 1
  fi
}

bench_http() { # server c round
  local s=$1 c=$2 round=$3 status=ok json='{}' idle=0 peak=0
  start_upstream
  port=$((port + 1))
  while (echo >/dev/tcp/$host/$port) 2>/dev/null; do port=$((port + 1)); done
  local cmd pid i
  read -r -a cmd <<<"$(http_cmd "$s" "$port")"
  "${cmd[@]}" </dev/null >/dev/null 2>>"$log" &
  pid=$!
  started+=("$pid")
  url=http://$host:$port/mcp
  for ((i = 0; i < 200; i++)); do
    [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$url" 2>/dev/null) != 000 ]] && break
    sleep 0.05
  done
  local answer
  answer=$(curl -s --max-time 5 -X POST -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -d "$(call_body)" "$url" 2>/dev/null) || true
  if [[ $answer != *'status 200 bytes'* ]]; then
    echo "bench/io: round $round $s HTTP: tools/call fetch did not answer 'status 200 bytes ...': ${answer:0:200}" >&2
    status=failed failed=1
  else
    sleep 0.2
    idle=$(rss_kb "$pid" VmRSS)
    wrk_json "$c" "$http_warm" >/dev/null || { status=failed failed=1; }
    kill -USR1 "$up_pid" 2>/dev/null || true # the upstream counts the measured run only
    if [[ $status == ok ]]; then
      json=$(wrk_json "$c" "$http_secs") || { status=failed failed=1; }
      [[ -n $json ]] || json='{}'
    fi
    peak=$(rss_kb "$pid" VmHWM)
  fi
  kill -TERM "$pid" 2>/dev/null || true
  stop_upstream
  local rss="\"idle_rss_kb\":${idle:-0},\"peak_rss_kb\":${peak:-0}"
  if [[ $json == '{}' ]]; then json="{$rss}"; else json="{$rss,${json#\{}"; fi
  show "$round" http "$s" "$c" "$json" "$up_json"
  echo "{\"transport\":\"http\",\"round\":$round,\"server\":\"$s\",\"inflight\":$c,\"delay_ms\":$delay_ms,\"run_status\":\"$status\",\"upstream\":$up_json,${json#\{}" >>"$runs"
}
# }======

# {====== the upstream alone, once: is it fast enough to be no part of the figures?
upstream_check='null'
if [[ $check == 1 ]]; then
  max_n=0
  for n in $ns $http_c; do ((n > max_n)) && max_n=$n; done
  if ((max_n > 0)) && command -v wrk >/dev/null; then
    start_upstream
    out=$(timeout 30 wrk -t1 -c"$max_n" -d2s --timeout 10s --latency -s "$wrk_script" "$up_url" 2>&1) || true
    stop_upstream
    j=$(printf '%s\n' "$out" | sed -n 's/^WRK_JSON //p')
    upstream_check="{\"connections\":$max_n,\"wrk\":${j:-null},\"upstream\":$up_json}"
    printf 'upstream alone (%s), wrk -c %d for 2 s: %s req/s, p99 %s µs as wrk sees it, %s µs as it gave\n' \
      "$upstream_kind" "$max_n" "$(field "$j" rps)" "$(field "$j" p99_us)" "$(field "$up_json" p99_us)"
  fi
fi
# }======

read -r -a order <<<"$servers"
for ((round = 1; round <= rounds; round++)); do
  # Reverse the order every other round so no server always runs first.
  this=("${order[@]}")
  if ((round % 2 == 0)); then
    this=()
    for ((k = ${#order[@]} - 1; k >= 0; k--)); do this+=("${order[k]}"); done
  fi
  for n in $ns; do
    for s in "${this[@]}"; do
      [[ $s == ts-handler ]] || bench_stdio "$s" "$n" "$round"
    done
  done
  if [[ -n $http_c ]]; then
    for s in "${this[@]}"; do bench_http "$s" "$http_c" "$round"; done
  fi
done

echo
node bench/io/summarize.mjs "$runs" "$out_json" "$upstream_check" || failed=1
echo "wrote $out_json (wrk output and server stderr in $log)"
exit "$failed"
