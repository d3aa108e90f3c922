#!/usr/bin/env bash
# Many instances behind nginx (docs/SCALING.md): 2026-07-28 tools/call whoami
# at c=16 straight to one instance, through nginx to 1 and to 2 instances
# (deploy/nginx/luamcp.conf, ports replaced), then mcp.store incr and get per
# call in memory, in Redis and on the app's database (the default backend), then the event fan-out latency A -> Redis -> a
# listener on B (bench/cluster/fanout.mjs). Each run also gives the CPU time
# per request of the instances, nginx's workers and redis-server (from
# /proc), and, on 2 or more cores, the direct and nginx runs again with the
# instance pinned to a CPU of its own. redis-server and nginx are started
# here on free loopback ports and stopped at the end.
#   BENCH_CLUSTER_SECONDS  seconds of one wrk run [5]
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${BENCH_CLUSTER_SECONDS:-5}
bin=${BENCH_LUAMCP_BIN:-build/luamcp}
app=tests/apps/scale
# shellcheck source=tests/cluster.sh
. tests/cluster.sh
dir=$(mktemp -d /tmp/luamcp-cluster.XXXXXX)
cluster_init "$dir"
trap 'cluster_stop; rm -rf "$dir"' EXIT
cluster_redis
url=$CLUSTER_REDIS_URL
printf 'k%.0s' {1..40} >"$dir/key"
start() { # name port [extra...]
  local name=$1 p=$2; shift 2
  SCALE_INSTANCE=$name "$bin" serve --http 127.0.0.1:"$p" --instance "$name" --no-watch --trust-proxy 127.0.0.2 \
    --state-key "$dir/key" --bus "$url" --max-sessions-per-peer 0 --init-rate 0 --log-level warning "$@" "$app" \
    2>>"$dir/$name.log" &
  cluster_track $!
  inst_pids+=($!)
  cluster_wait_port "$p"
}
inst_pids=()
pa=$(cluster_port); pb=$(cluster_port); pm=$(cluster_port); pd=$(cluster_port)
start a "$pa" --store "$url"
start b "$pb" --store "$url"
start m "$pm" --store memory
start d "$pd" --data "$dir/data" # mcp.store on the app's database
nport=$(cluster_port)
cluster_nginx "$nport" "$pa"
ngx=$CLUSTER_NGINX_PID

envelope='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
echo_body="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"whoami\",\"arguments\":{},$envelope}}"
get_body="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"store_get\",\"arguments\":{\"key\":\"bench\"},$envelope}}"
count_body="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"count\",\"arguments\":{\"key\":\"bench\"},$envelope}}"
# CPU time (clock ticks) of the processes given, every thread
ticks() {
  local t=0 p f
  for p in "$@"; do
    for f in /proc/"$p"/task/*/stat; do
      [ -r "$f" ] || continue
      read -r -a st < <(cut -d')' -f2 "$f" 2>/dev/null) || continue
      t=$((t + st[11] + st[12]))
    done
  done
  echo "$t"
}
# CPU time of this shell's waited-for children (wrk, in its $(...))
children_ticks() {
  read -r -a st < <(cut -d')' -f2 /proc/$$/stat)
  echo $((st[13] + st[14]))
}
hz=$(getconf CLK_TCK)
run() { # label port name body [wrk prefix...]
  local label=$1 port=$2 name=$3 body=$4 out
  shift 4
  local workers
  workers=$(pgrep -P "$ngx" | tr '\n' ' ')
  # shellcheck disable=SC2086 # the worker pids, one word each
  local l0 n0 r0 l1 n1 r1
  l0=$(ticks "${inst_pids[@]}"); n0=$(ticks $workers); r0=$(ticks "$CLUSTER_REDIS_PID")
  local w0 w1
  w0=$(children_ticks)
  out=$(MCP_MODERN=1 MCP_NAME=$name MCP_CALL_BODY=$body "$@" wrk -t2 -c16 -d"${secs}s" --latency -s bench/http/echo_call.lua "http://127.0.0.1:$port/mcp" 2>&1)
  # shellcheck disable=SC2086
  l1=$(ticks "${inst_pids[@]}"); n1=$(ticks $workers); r1=$(ticks "$CLUSTER_REDIS_PID")
  w1=$(children_ticks)
  local j=${out##*WRK_JSON }
  # per request: the CPU time of the instances, of nginx's workers and of redis-server
  node -e 'const j=JSON.parse(process.argv[1]); const bad=j.non2xx+j.err_connect+j.err_read+j.err_write+j.err_timeout;
    const n=j.rps*Number(process.argv[3]), hz=Number(process.argv[7]);
    const us=(t)=>(Number(t)/hz*1e6/n).toFixed(0).padStart(3);
    console.log(`${process.argv[2].padEnd(40)} ${j.rps.toFixed(0).padStart(7)} req/s  p50 ${(j.p50_us/1000).toFixed(2)} ms  p99 ${(j.p99_us/1000).toFixed(2)} ms` +
      `  CPU/request: luamcp ${us(process.argv[4])} µs, nginx ${us(process.argv[5])} µs, redis ${us(process.argv[6])} µs, wrk ${us(process.argv[8])} µs${bad ? `  ERRORS ${bad}` : ""}`)' \
    "${j%%$'\n'*}" "$label" "$secs" $((l1 - l0)) $((n1 - n0)) $((r1 - r0)) "$hz" $((w1 - w0))
}
# pin: instance a's threads to CPU 0, nginx's workers to CPU 1 (wrk gets
# CPU 1 too, from its prefix); unpin: every CPU again
pin() {
  taskset -a -p -c 0 "${inst_pids[0]}" >/dev/null
  for w in $(pgrep -P "$ngx"); do taskset -a -p -c 1 "$w" >/dev/null; done
}
unpin() {
  taskset -a -p -c "0-$(($(nproc) - 1))" "${inst_pids[0]}" >/dev/null
  for w in $(pgrep -P "$ngx"); do taskset -a -p -c "0-$(($(nproc) - 1))" "$w" >/dev/null; done
}
echo "c=16, 2 wrk threads, ${secs}s each, $(nproc) cores"
run "whoami direct (1 instance)" "$pa" whoami "$echo_body"
run "whoami via nginx (1 instance)" "$nport" whoami "$echo_body"
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  # the same two with the instance on a CPU of its own and the rest on
  # another: what the proxy costs the instance when nginx is not
  # competing with it for its core
  pin
  run "  direct, instance on CPU 0, wrk on 1" "$pa" whoami "$echo_body" taskset -c 1
  run "  via nginx, instance on 0, nginx+wrk on 1" "$nport" whoami "$echo_body" taskset -c 1
  unpin
fi
cluster_nginx_conf "$nport" "$pa" "$pb"; kill -HUP "$ngx"; sleep 0.5
run "whoami via nginx (2 instances)" "$nport" whoami "$echo_body"
run "store incr in memory (direct)" "$pm" count "$count_body"
run "store incr in Redis (direct)" "$pa" count "$count_body"
run "store get in memory (direct)" "$pm" store_get "$get_body"
run "store get in Redis (direct)" "$pa" store_get "$get_body"
run "store incr on the database (direct)" "$pd" count "$count_body"
run "store get on the database (direct)" "$pd" store_get "$get_body"
names=(a b m d)
for k in 0 1 2 3; do
  printf '%-34s %s KiB RSS\n' "instance ${names[k]} after the runs" "$(ps -o rss= -p "${inst_pids[k]}")"
done
# what an open stream costs: N subscriptions/listen held on instance b,
# straight and through nginx (nginx's upstream is a and b now: the second
# lot is spread over both)
rss() { local t=0 p; for p in "$@"; do t=$((t + $(ps -o rss= -p "$p"))); done; echo "$t"; }
streams=${BENCH_CLUSTER_STREAMS:-200}
hold() { # label target pids...
  local label=$1 target=$2
  shift 2
  local before fifo after
  before=$(rss "$@")
  fifo="$dir/hold.$RANDOM"
  mkfifo "$fifo"
  node bench/cluster/streams.mjs "$target" "$streams" <"$fifo" >"$fifo.out" 2>&1 &
  local holder=$!
  exec 7>"$fifo" # the holder's stdin, open until we close it
  for _ in $(seq 200); do grep -q '^open' "$fifo.out" 2>/dev/null && break; sleep 0.1; done
  sleep 0.5
  after=$(rss "$@")
  if grep -q '^open' "$fifo.out"; then
    awk -v l="$label" -v n="$streams" -v d=$((after - before)) \
      'BEGIN { printf "%-40s %5d streams  RSS +%d KiB (%.1f KiB a stream)\n", l, n, d, d / n }' </dev/null
  else
    echo "$label: the streams did not open: $(head -c 300 "$fifo.out")"
  fi
  exec 7>&-
  wait "$holder" 2>/dev/null || true
  rm -f "$fifo" "$fifo.out"
}
hold "streams on instance b (direct), b's RSS" "127.0.0.1:$pb" "${inst_pids[1]}"
# shellcheck disable=SC2046 # the worker pids
hold "streams via nginx, nginx workers' RSS" "127.0.0.1:$nport" $(pgrep -P "$ngx")
# what a store key costs Redis: 10,000 keys as mcp.store.set writes them
# (a 16-byte key, a 10-byte value, with a TTL), from INFO's used_memory
if command -v redis-cli >/dev/null; then
  rport=${CLUSTER_REDIS_URL##*:}; rport=${rport%%/*}
  used() { redis-cli -p "$rport" info memory | tr -d '\r' | sed -n 's/^used_memory://p'; }
  m0=$(used)
  redis-cli -p "$rport" eval "for i=1,10000 do redis.call('SET', string.format('bench:key:%06d', i), '1234567890', 'PX', 600000) end return 1" 0 >/dev/null
  m1=$(used)
  awk -v d=$((m1 - m0)) 'BEGIN { printf "%-40s %5d keys     +%d bytes (%.0f bytes a key)\n", "Redis memory for mcp.store keys", 10000, d, d / 10000 }' </dev/null
fi
node bench/cluster/fanout.mjs "127.0.0.1:$pa" "127.0.0.1:$pb"
