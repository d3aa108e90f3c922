#!/usr/bin/env bash
# Side-by-side stdio benchmark: luamcp against the official TypeScript SDK
# on the same `echo` tool, interleaved round by round so that both see the
# same machine noise. Prints one table and writes bench/results/latest.json.
#
# Environment:
#   BENCH_ROUNDS   rounds (default 3)
#   BENCH_SERVERS  which servers, any of: luamcp ts gifts (default "luamcp ts";
#                  gifts = luamcp serving this repo's gift app, suggest_gifts)
#   BENCH_N_W1     requests per run at W=1  (default 20000, ~2 s for the TS SDK)
#   BENCH_N_W32    requests per run at W=32 (default 60000, ~1.5 s for the TS SDK)
#   BENCH_MAX_S    hard time bound of one run in seconds (default 60)
set -euo pipefail

cd "$(dirname "$0")/.."

rounds=${BENCH_ROUNDS:-3}
servers=${BENCH_SERVERS:-luamcp ts}
n_w1=${BENCH_N_W1:-20000}
n_w32=${BENCH_N_W32:-60000}
max_s=${BENCH_MAX_S:-60}
out_dir=build/bench
driver=$out_dir/stdio_load

# Fail early, with the fix, rather than after minutes of partial runs.
for s in $servers; do
  case $s in
    luamcp|gifts)
      if [[ ! -x build/luamcp ]]; then
        echo "bench: build/luamcp not found; build it first (make), or run BENCH_SERVERS=ts $0" >&2
        exit 1
      fi ;;
    ts)
      if [[ ! -d tests/node_modules/@modelcontextprotocol/sdk ]]; then
        echo "bench: the TypeScript SDK is not installed; run: npm ci --prefix tests" >&2
        exit 1
      fi ;;
    *) echo "bench: unknown server '$s' in BENCH_SERVERS (luamcp, ts, gifts)" >&2; exit 1 ;;
  esac
done

mkdir -p "$out_dir" bench/results
cc -O2 -std=c11 -Wall -Wextra -Werror -o "$driver" bench/stdio_load.c

# One server's command line and tool call, by name.
server_cmd() {
  case $1 in
    luamcp) echo "--tool echo -- build/luamcp serve bench/apps/echo" ;;
    ts)     echo "--tool echo -- node bench/ts_echo_server.mjs" ;;
    gifts)  echo "--tool suggest_gifts -- build/luamcp serve ." ;;
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
node bench/summarize.mjs "$runs" bench/results/latest.json || failed=1
echo "wrote bench/results/latest.json (server stderr in $log)"
exit "$failed"
