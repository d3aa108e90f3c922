#!/usr/bin/env bash
# The realistic MCP benchmark (issue 30, item 4): our port of the workload of
# TM Dev Lab v2 (http4k/benchmark-mcp-servers-v2), the one public benchmark of
# MCP servers doing realistic work. Three tools, each an HTTP call to a product
# API and Redis commands; 50 virtual users, each looping initialize,
# notifications/initialized, one tools/call, 50 ms of think time. Side by side
# on one machine: luamcp (bench/tmdev/apps/seq: one wait after the other;
# apps/all with mcp.all when the binary has it), default mode and --stateless,
# against a TypeScript server built like the published Node one
# (bench/tmdev/ts/server.mjs). Prints a line per run and the tables, writes
# bench/results/tmdev.json. See bench/README.md, "bench/tmdev".
#
# Everything listens on 127.0.0.1 on free ports; Redis (Debian's
# redis-server) runs in a temp dir of its own and is seeded afresh
# (bench/tmdev/seed.mjs) before every run, so each run starts from the same data.
#
# Environment (defaults in brackets):
#   BENCH_ROUNDS           rounds, the order of the servers reversed every other one [3]
#   BENCH_TMDEV_SERVERS    any of: luamcp luamcp-sl luamcp-all luamcp-all-sl ts
#                          [all of them; the -all ones only when
#                          `luamcp check bench/tmdev/apps/all` passes (mcp.all)]
#   BENCH_TMDEV_VUS        virtual users [50]
#   BENCH_TMDEV_THINK_MS   think time after each iteration [50]
#   BENCH_TMDEV_WARMUP     seconds of load before each measured window [3]
#   BENCH_TMDEV_SECS       seconds of the measured window [10]
#   BENCH_LUAMCP_BIN       the luamcp binary [build/luamcp]
#   BENCH_TMDEV_OUT        the results file [bench/results/tmdev.json]
# Exit status 1 when a run fails (an error answer, a server that does not come up).
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=${BENCH_ROUNDS:-3}
vus=${BENCH_TMDEV_VUS:-50}
think=${BENCH_TMDEV_THINK_MS:-50}
warmup=${BENCH_TMDEV_WARMUP:-3}
secs=${BENCH_TMDEV_SECS:-10}
luamcp=${BENCH_LUAMCP_BIN:-build/luamcp}
out_json=${BENCH_TMDEV_OUT:-bench/results/tmdev.json}
out_dir=build/bench/tmdev
api_bin=$out_dir/product_api
ts_dir=bench/tmdev/ts

# {====== prerequisites: fail early, with the fix
[[ -x $luamcp ]] || { echo "bench/tmdev: $luamcp not found; build it first (make)" >&2; exit 1; }
for tool in redis-server redis-cli node cc curl; do
  command -v "$tool" >/dev/null || { echo "bench/tmdev: $tool is needed (make deps-bench)" >&2; exit 1; }
done
[[ -f /usr/include/uv.h ]] || { echo "bench/tmdev: the product API needs libuv's headers: apt-get install -y libuv1-dev" >&2; exit 1; }
mkdir -p "$out_dir" "$(dirname "$out_json")"
if [[ ! -x $api_bin || bench/tmdev/product_api.c -nt $api_bin ]]; then
  cc -O2 -std=c11 -Wall -Wextra -Werror -o "$api_bin" bench/tmdev/product_api.c -luv
fi
# the TypeScript server's packages, exactly as pinned in its lockfile (as `make npm` does for tests/)
if [[ ! -f $ts_dir/node_modules/.package-lock.json || $ts_dir/package-lock.json -nt $ts_dir/node_modules/.package-lock.json ]]; then
  (cd "$ts_dir" && ../../../tools/npm ci --no-audit --no-fund --loglevel=error)
fi
if [[ -z ${BENCH_TMDEV_SERVERS:-} ]]; then
  servers="luamcp luamcp-sl ts"
  if "$luamcp" check bench/tmdev/apps/all >/dev/null 2>&1; then
    servers="luamcp luamcp-sl luamcp-all luamcp-all-sl ts"
  else
    echo "bench/tmdev: $luamcp has no mcp.all: luamcp-all and luamcp-all-sl skipped"
  fi
else
  servers=$BENCH_TMDEV_SERVERS
fi
# }======

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
tmp=$(mktemp -d /tmp/luamcp-tmdev.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# {====== Redis and the product API, for the whole run
rport=$(free_port)
(cd "$tmp" && exec redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
   >"$tmp/redis.log" 2>&1) &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.05; done
redis_url=redis://127.0.0.1:$rport/0
seed() { node bench/tmdev/seed.mjs | redis-cli -p "$rport" --pipe >/dev/null; }
"$api_bin" >"$tmp/api.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q '^PORT ' "$tmp/api.out" && break; sleep 0.05; done
api=http://127.0.0.1:$(awk '/^PORT /{print $2}' "$tmp/api.out")
curl -sf "$api/products/1" >/dev/null || { echo "bench/tmdev: the product API does not answer" >&2; exit 1; }
# }======

load() { awk '{print $1, $2, $3}' /proc/loadavg; }
echo "bench/tmdev: $vus users, ${think} ms think, ${warmup} s warm-up + ${secs} s measured per run, $rounds rounds;" \
     "servers: $servers; load (1/5/15 min) at start: $(load) on $(nproc) cores"
: >"$tmp/runs.jsonl"
status=0
run_one() { # SERVER ROUND
  local s=$1 round=$2 port pid ready=0
  seed
  port=$(free_port)
  case $s in
    luamcp | luamcp-sl | luamcp-all | luamcp-all-sl)
      local app=bench/tmdev/apps/seq mode=()
      [[ $s == luamcp-all* ]] && app=bench/tmdev/apps/all
      [[ $s == *-sl ]] && mode=(--stateless)
      # every user comes from 127.0.0.1: the per-address limits off (docs/http.md)
      PRODUCT_API=$api "$luamcp" serve --no-watch --http "127.0.0.1:$port" "${mode[@]}" --store "$redis_url" \
        --init-rate 0 --max-sessions-per-peer 0 "$app" 2>>"$out_dir/stderr.log" &
      pid=$!
      for _ in $(seq 200); do curl -s "http://127.0.0.1:$port/readyz" | grep -q '"ready"' && { ready=1; break; }; sleep 0.05; done ;;
    ts)
      node "$ts_dir/server.mjs" "$port" "$redis_url" "$api" >"$tmp/ts.out" 2>>"$out_dir/stderr.log" &
      pid=$!
      for _ in $(seq 400); do grep -q LISTENING "$tmp/ts.out" && { ready=1; break; }; sleep 0.05; done ;;
    *) echo "bench/tmdev: unknown server '$s' (luamcp luamcp-sl luamcp-all luamcp-all-sl ts)" >&2; exit 1 ;;
  esac
  pids+=("$pid")
  if ((!ready)); then
    echo "round $round $s: did not come up (see $out_dir/stderr.log)" >&2
    status=1
  else
    local before line
    before=$(load)
    line=$(node bench/tmdev/driver.mjs "http://127.0.0.1:$port/mcp" --vus "$vus" --think "$think" \
             --warmup "$warmup" --secs "$secs" --pid "$pid" | sed -n 's/^TMDEV_JSON //p')
    node -e 'const r = JSON.parse(process.argv[1]);
      Object.assign(r, { server: process.argv[2], round: Number(process.argv[3]), load_before: process.argv[4], load_after: process.argv[5] });
      console.log(JSON.stringify(r));' "$line" "$s" "$round" "$before" "$(load)" >>"$tmp/runs.jsonl"
    node -e 'const r = JSON.parse(process.argv[1]);
      console.log(`round ${process.argv[3]} ${process.argv[2].padEnd(13)} ${r.calls_per_s.toFixed(0).padStart(5)} calls/s` +
        `  p50 ${r.p50_ms?.toFixed(1)} ms  p99 ${r.p99_ms?.toFixed(1)} ms  RSS ${(r.rss_kib / 1024).toFixed(1)} MiB (${r.procs} proc)` +
        `  CPU ${r.cpu_s_per_1k?.toFixed(2)} s/1k calls  errors ${r.errors}` + (r.first_error ? ` (first: ${r.first_error})` : ""));' \
      "$line" "$s" "$round"
    if [[ $line != *'"errors":0,'* ]]; then status=1; fi
  fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

for ((r = 1; r <= rounds; r++)); do
  order=$servers
  if ((r % 2 == 0)); then order=$(tr ' ' '\n' <<<"$servers" | tac | tr '\n' ' '); fi
  for s in $order; do run_one "$s" "$r"; done
done

echo "load (1/5/15 min) at the end: $(load)"
node bench/tmdev/summarize.mjs "$tmp/runs.jsonl" "$out_json" "$vus" "$think"
exit $status
