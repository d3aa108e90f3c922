#!/usr/bin/env bash
# Side-by-side stdio benchmark: luamcp against the official TypeScript SDK
# and two bare floors (C + Lua + lua-cjson; C alone) on the same `echo` tool,
# interleaved round by round so that all see the same machine noise. Prints
# the tables and writes bench/results/stdio.json (bench/report.mjs folds it
# into bench/results/latest.json with the other benchmarks).
#
# Environment:
#   BENCH_ROUNDS   rounds (default 3)
#   BENCH_SERVERS  which servers, any of: luamcp ts ts2 floor-lua floor-c gifts
#                  (default "luamcp ts ts2 floor-lua floor-c gifts"; ts2 = the
#                  TypeScript SDK v2's serveStdio; gifts = luamcp
#                  serving this repo's gift app, suggest_gifts); also
#                  luamcp-metrics, luamcp-otlp, luamcp-otlp1, luamcp-mw: luamcp
#                  with --metrics, with --otlp to a local sink (every call
#                  sampled, or 1 %), with one no-op mcp.use middleware, each
#                  compared with luamcp (issue 23's costs)
#   BENCH_N_W1     requests per run at W=1  (default 20000, ~2 s for the TS SDK)
#   BENCH_N_W32    requests per run at W=32 (default 60000, ~1.5 s for the TS SDK)
#   BENCH_MAX_S    hard time bound of one run in seconds (default 60)
#   BENCH_LUAMCP_BIN  the luamcp binary of the luamcp and gifts servers
#                  (default build/luamcp; bench/before_after.sh sets it)
#   BENCH_OUT      the summary file (default bench/results/stdio.json)
set -euo pipefail

cd "$(dirname "$0")/.."

rounds=${BENCH_ROUNDS:-3}
servers=${BENCH_SERVERS:-luamcp ts ts2 floor-lua floor-c gifts}
n_w1=${BENCH_N_W1:-20000}
n_w32=${BENCH_N_W32:-60000}
max_s=${BENCH_MAX_S:-60}
luamcp=${BENCH_LUAMCP_BIN:-build/luamcp}
out_json=${BENCH_OUT:-bench/results/stdio.json}
out_dir=build/bench
driver=$out_dir/stdio_load
lua_inc=/usr/include/lua5.4

# Fail early, with the fix, rather than after minutes of partial runs.
for s in $servers; do
  case $s in
    luamcp|gifts|luamcp-metrics|luamcp-otlp|luamcp-otlp1|luamcp-mw)
      if [[ ! -x $luamcp ]]; then
        echo "bench: $luamcp not found; build it first (make), or run BENCH_SERVERS=ts $0" >&2
        exit 1
      fi ;;
    ts)
      if [[ ! -d tests/node_modules/@modelcontextprotocol/sdk ]]; then
        echo "bench: the TypeScript SDK is not installed; run: npm ci --prefix tests" >&2
        exit 1
      fi ;;
    ts2)
      if [[ ! -d tests/node_modules/@modelcontextprotocol/server ]]; then
        echo "bench: the TypeScript SDK v2 is not installed; run: npm ci --prefix tests" >&2
        exit 1
      fi ;;
    floor-lua)
      if [[ ! -f $lua_inc/lua.h || ! -f $lua_inc/lua-cjson.h ]]; then
        echo "bench: floor-lua needs Lua 5.4 and lua-cjson headers; run: sudo apt-get install -y liblua5.4-dev lua-cjson-dev" >&2
        exit 1
      fi ;;
    floor-c) ;;
    *) echo "bench: unknown server '$s' in BENCH_SERVERS (luamcp, ts, ts2, floor-lua, floor-c, gifts," \
            "luamcp-metrics, luamcp-otlp, luamcp-otlp1, luamcp-mw)" >&2; exit 1 ;;
  esac
done

mkdir -p "$out_dir" "$(dirname "$out_json")"
cc -O2 -std=c11 -Wall -Wextra -Werror -o "$driver" bench/stdio_load.c
for s in $servers; do
  case $s in
    floor-lua) cc -O2 -std=c11 -Wall -Wextra -Werror -I"$lua_inc" -o "$out_dir/lua_floor" \
                 bench/floor/lua_floor.c -llua5.4-cjson -llua5.4 ;;
    floor-c) cc -O2 -std=c11 -Wall -Wextra -Werror -o "$out_dir/c_floor" bench/floor/c_floor.c ;;
  esac
done

# luamcp-metrics: a free loopback port for its listener (one server runs at a
# time); luamcp-otlp*: an OTLP/HTTP sink that answers every POST at once
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
metrics_port=$(free_port)
sink_port=
sink_pid=
if [[ " $servers " == *" luamcp-otlp"* ]]; then
  sink_port=$(free_port)
  node -e 'require("http").createServer((q, r) => { q.resume(); q.on("end", () => r.end()); })
    .listen(Number(process.argv[1]), "127.0.0.1")' "$sink_port" &
  sink_pid=$!
  trap '[[ -n $sink_pid ]] && kill "$sink_pid" 2>/dev/null' EXIT
fi

# One server's command line and tool call, by name.
server_cmd() {
  case $1 in
    luamcp) echo "--tool echo -- $luamcp serve bench/apps/echo" ;;
    ts)     echo "--tool echo -- node bench/ts_echo_server.mjs" ;;
    ts2)    echo "--tool echo -- node bench/ts2_echo_server.mjs" ;;
    gifts)  echo "--tool suggest_gifts -- $luamcp serve ." ;;
    luamcp-metrics) echo "--tool echo -- $luamcp serve --metrics 127.0.0.1:$metrics_port bench/apps/echo" ;;
    luamcp-otlp) echo "--tool echo -- $luamcp serve --otlp http://127.0.0.1:$sink_port bench/apps/echo" ;;
    luamcp-otlp1) echo "--tool echo -- env OTEL_TRACES_SAMPLER=traceidratio OTEL_TRACES_SAMPLER_ARG=0.01 $luamcp serve --otlp http://127.0.0.1:$sink_port bench/apps/echo" ;;
    luamcp-mw) echo "--tool echo -- $luamcp serve bench/apps/echo-mw" ;;
    floor-lua) echo "--tool echo -- $out_dir/lua_floor" ;;
    floor-c)   echo "--tool echo -- $out_dir/c_floor" ;;
  esac
}
gift_args='{"occasion":"birthday","budget":50}'

runs=$out_dir/runs.jsonl
log=$out_dir/stderr.log
: >"$runs"
: >"$log"
failed=0

for ((round = 1; round <= rounds; round++)); do
  # Alternate the order each round so no server always runs first.
  order=$servers
  if ((round % 2 == 0)); then order=$(echo "$servers" | tr ' ' '\n' | tac | tr '\n' ' '); fi
  for w in 1 32; do
    n=$n_w1; ((w == 1)) || n=$n_w32
    for s in $order; do
      read -r -a cmd <<<"$(server_cmd "$s")"
      extra=()
      [[ $s == gifts ]] && extra=(--args "$gift_args")
      # The driver's stderr (its human line last, the server's stderr before
      # it) goes to the log, so a chatty server cannot clutter the table.
      if line=$("$driver" -n "$n" -w "$w" -s "$max_s" --json --label "$s" "${extra[@]}" "${cmd[@]}" 2>"$out_dir/last.err"); then
        :
      else
        failed=1
        echo "bench: round $round $s W=$w failed; its stderr:" >&2
        tail -n 20 "$out_dir/last.err" >&2
      fi
      cat "$out_dir/last.err" >>"$log"
      echo "round $round/$rounds  $(tail -n 1 "$out_dir/last.err")"
      # Tag each run with its server and round for the pairing in summarize.mjs.
      if [[ -n $line ]]; then echo "{\"round\":$round,\"server\":\"$s\",${line#\{}" >>"$runs"; fi
    done
  done
done

echo
node bench/summarize.mjs "$runs" "$out_json" || failed=1
echo "wrote $out_json (server stderr in $log)"
exit "$failed"
