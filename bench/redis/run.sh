#!/usr/bin/env bash
# mcp.redis calls per second over Streamable HTTP (2026-07-28, stateless):
# bench/apps/leaderboard's pipe3 (three commands in one mcp.redis.pipeline:
# one park) and seq3 (the same three one after another), driven by wrk
# (bench/http/echo_call.lua) at C connections for S seconds each, against a
# redis-server of its own. Every call counts itself in Redis (HINCRBY): the
# count must equal wrk's requests, so a call that failed is seen.
#   bench/redis/run.sh [BINARY] [C] [S]      (default build/luamcp 16 5)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/luamcp}
conns=${2:-16}
secs=${3:-5}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >/dev/null &
rpid=$!
hport=$(free_port)
"$bin" serve --no-watch --http "127.0.0.1:$hport" --store "redis://127.0.0.1:$rport/0" bench/apps/leaderboard 2>/dev/null &
lpid=$!
trap 'kill $lpid $rpid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  redis-cli -p "$rport" ping >/dev/null 2>&1 && curl -s -o /dev/null "http://127.0.0.1:$hport/healthz" && break
  sleep 0.05
done
for _ in $(seq 100); do
  curl -s "http://127.0.0.1:$hport/readyz" | grep -q '"ready"' && break
  sleep 0.05
done
meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
for tool in pipe3 seq3; do
  redis-cli -p "$rport" del bench:calls >/dev/null
  body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"'$tool'","arguments":{"player":"ann"},'$meta'}}'
  out=$(MCP_MODERN=1 MCP_NAME=$tool MCP_CALL_BODY=$body wrk -t2 -c"$conns" -d"${secs}s" -s bench/http/echo_call.lua \
        "http://127.0.0.1:$hport/mcp")
  reqs=$(grep -oE '[0-9]+ requests in' <<<"$out" | grep -oE '^[0-9]+')
  rps=$(grep -oE 'Requests/sec: *[0-9.]+' <<<"$out" | grep -oE '[0-9.]+$')
  lat=$(grep -E '^ +Latency' <<<"$out" | awk '{print $2}')
  counted=$(redis-cli -p "$rport" hget bench:calls ann)
  errs=$(grep -E 'Non-2xx|Socket errors' <<<"$out" || true)
  echo "$tool c=$conns: $rps calls/s (mean latency $lat), $reqs answered, $counted counted in redis${errs:+; $errs}"
done
