#!/usr/bin/env bash
# Many instances behind nginx (docs/SCALING.md): 2026-07-28 tools/call whoami
# at c=16 straight to one instance, through nginx to 1 and to 2 instances
# (deploy/nginx/luamcp.conf, ports replaced), then mcp.store incr per call in
# memory and in Redis, then the event fan-out latency A -> Redis -> a
# listener on B (bench/cluster/fanout.mjs). redis-server and nginx are
# started here on free loopback ports and stopped at the end.
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
  cluster_wait_port "$p"
}
pa=$(cluster_port); pb=$(cluster_port); pm=$(cluster_port)
start a "$pa" --store "$url"
start b "$pb" --store "$url"
start m "$pm" # mcp.store in memory
nport=$(cluster_port)
cluster_nginx "$nport" "$pa"
ngx=$CLUSTER_NGINX_PID

envelope='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
echo_body="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"whoami\",\"arguments\":{},$envelope}}"
count_body="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"count\",\"arguments\":{\"key\":\"bench\"},$envelope}}"
run() { # label port name body
  local out
  out=$(MCP_MODERN=1 MCP_NAME=$3 MCP_CALL_BODY=$4 wrk -t2 -c16 -d"${secs}s" --latency -s bench/http/echo_call.lua "http://127.0.0.1:$2/mcp" 2>&1)
  local j=${out##*WRK_JSON }
  node -e 'const j=JSON.parse(process.argv[1]); const bad=j.non2xx+j.err_connect+j.err_read+j.err_write+j.err_timeout;
    console.log(`${process.argv[2].padEnd(34)} ${j.rps.toFixed(0).padStart(7)} req/s  p50 ${(j.p50_us/1000).toFixed(2)} ms  p99 ${(j.p99_us/1000).toFixed(2)} ms${bad ? `  ERRORS ${bad}` : ""}`)' "${j%%$'\n'*}" "$1"
}
echo "c=16, 2 wrk threads, ${secs}s each, $(nproc) cores"
run "whoami direct (1 instance)" "$pa" whoami "$echo_body"
run "whoami via nginx (1 instance)" "$nport" whoami "$echo_body"
cluster_nginx_conf "$nport" "$pa" "$pb"; kill -HUP "$ngx"; sleep 0.5
run "whoami via nginx (2 instances)" "$nport" whoami "$echo_body"
run "store incr in memory (direct)" "$pm" count "$count_body"
run "store incr in Redis (direct)" "$pa" count "$count_body"
for p in "$pa" "$pb" "$pm"; do
  printf '%-34s %s KiB RSS\n' "instance on $p after the runs" "$(ps -o rss= -p "$(ss -ltnp | grep ":$p " | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)")"
done
node bench/cluster/fanout.mjs "127.0.0.1:$pa" "127.0.0.1:$pb"
