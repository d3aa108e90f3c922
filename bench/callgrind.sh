#!/usr/bin/env bash
# Instructions per call on the hot paths, under callgrind (a count, not a
# time: the same binary and input give the same figure on a loaded machine):
#   stdio echo   the echo tool (bench/apps/echo) over stdio, 2025-11-25
#   stdio gift   the example app's suggest_gifts over stdio
#   http echo    the echo tool over HTTP, one 2026-07-28 request per POST
#   http echo, auth   the same with --auth-resource and one bearer JWT (RS256)
#                on every request: what a verified token costs once remembered
#   http echo, metrics / traces 100 % / traces 1 % / a no-op middleware:
#                what --metrics, --otlp (to a local sink, all sampled or 1 %)
#                and one mcp.use cost a call (issue 23)
# Each is (Ir of a run with N2 calls - Ir of one with N1) / (N2 - N1), so the
# start-up and the shutdown cancel out.
#
#   bench/callgrind.sh [BINARY]        (default build/luamcp)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/luamcp}")
n1=${CALLGRIND_N1:-200}
n2=${CALLGRIND_N2:-1200}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# total Ir of a callgrind run (every thread)
ir() { awk '/^summary:/ {s += $2} /^totals:/ {t += $2} END {print (t ? t : s)}' "$@"; }

stdio_lines() { # N TOOL ARGS
  node -e '
    const [n, tool, args] = process.argv.slice(1);
    const out = [];
    out.push(JSON.stringify({jsonrpc: "2.0", id: 0, method: "initialize", params: {protocolVersion: "2025-11-25", capabilities: {}, clientInfo: {name: "cg", version: "0"}}}));
    out.push(JSON.stringify({jsonrpc: "2.0", method: "notifications/initialized"}));
    for (let i = 1; i <= Number(n); i++) out.push(JSON.stringify({jsonrpc: "2.0", id: i, method: "tools/call", params: {name: tool, arguments: JSON.parse(args)}}));
    process.stdout.write(out.join("\n") + "\n");' "$@"
}

stdio_run() { # N DIR TOOL ARGS -> Ir
  local n=$1 dir=$2 tool=$3 args=$4 out=$tmp/cg.$RANDOM
  stdio_lines "$n" "$tool" "$args" >"$tmp/in"
  valgrind --tool=callgrind --callgrind-out-file="$out.%p" "$bin" serve --no-watch "$dir" \
    <"$tmp/in" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  ir "$out".*
}

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

# an issuer's key (in a JWKS file) and one access token it signed, for --auth-resource
node -e '
  const crypto = require("crypto"), fs = require("fs"), dir = process.argv[1];
  const { publicKey, privateKey } = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
  fs.writeFileSync(dir + "/jwks.json", JSON.stringify({ keys: [{ ...publicKey.export({ format: "jwk" }), kid: "k" }] }));
  const b = (o) => Buffer.from(JSON.stringify(o)).toString("base64url"), now = Math.floor(Date.now() / 1000);
  const s = b({ alg: "RS256", typ: "at+jwt", kid: "k" }) + "." + b({ iss: "https://as.bench.example",
    aud: "https://mcp.bench.example/mcp", sub: "u", exp: now + 86400, iat: now });
  fs.writeFileSync(dir + "/token", s + "." + crypto.sign("sha256", Buffer.from(s), privateKey).toString("base64url"));' "$tmp"
AUTH_ARGS=(--auth-resource https://mcp.bench.example/mcp --auth-issuer https://as.bench.example --auth-jwks "$tmp/jwks.json")
# an OTLP/HTTP sink for the traced runs: answers every POST at once
sink_port=$(free_port)
node -e 'require("http").createServer((q, r) => { q.resume(); q.on("end", () => r.end()); }).listen(Number(process.argv[1]), "127.0.0.1")' "$sink_port" &
sink_pid=$!
trap 'kill "$sink_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
http_run() { # N [auth|metrics|trace|trace1|middleware] -> Ir
  local n=$1 out=$tmp/cg.$RANDOM port extra=() token="" app=bench/apps/echo
  local -a env=()
  case "${2:-}" in
    auth) extra=("${AUTH_ARGS[@]}"); token=$(cat "$tmp/token") ;;
    metrics) extra=(--metrics "127.0.0.1:$(free_port)") ;;
    trace) extra=(--otlp "http://127.0.0.1:$sink_port") ;;
    trace1) extra=(--otlp "http://127.0.0.1:$sink_port"); env=(OTEL_TRACES_SAMPLER=traceidratio OTEL_TRACES_SAMPLER_ARG=0.01) ;;
    middleware) app=bench/apps/echo-mw ;;
  esac
  port=$(free_port)
  env "${env[@]}" valgrind --tool=callgrind --callgrind-out-file="$out.%p" "$bin" serve --no-watch \
    --http "127.0.0.1:$port" "${extra[@]}" "$app" 2>"$tmp/err" &
  local pid=$!
  TOKEN=$token node -e '
    const [port, n] = process.argv.slice(1).map(Number);
    const meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}};
    const headers = {"Content-Type": "application/json", Accept: "application/json, text/event-stream",
                     "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"};
    if (process.env.TOKEN) headers.Authorization = "Bearer " + process.env.TOKEN;
    (async () => {
      for (let t = 0; ; t++) {
        try { await fetch(`http://127.0.0.1:${port}/mcp`, {method: "GET"}); break; }
        catch { if (t > 600) throw new Error("no server"); await new Promise((r) => setTimeout(r, 100)); }
      }
      for (let i = 1; i <= n; i++) {
        const body = JSON.stringify({jsonrpc: "2.0", id: i, method: "tools/call", params: {name: "echo", arguments: {text: "hello"}, _meta: meta}});
        const r = await fetch(`http://127.0.0.1:${port}/mcp`, {method: "POST", headers, body});
        const j = await r.json();
        if (j.result?.content?.[0]?.text !== "hello") throw new Error(JSON.stringify(j));
      }
    })().catch((e) => { console.error(e); process.exit(1); });' "$port" "$n" </dev/null
  kill -TERM "$pid"
  wait "$pid" || true
  ir "$out".*
}

per_call() { echo $(( ($2 - $1) / (n2 - n1) )); }

gift='{"occasion":"birthday","budget":50,"recipient":"a friend who loves board games"}'
a=$(stdio_run "$n1" bench/apps/echo echo '{"text":"hello"}')
b=$(stdio_run "$n2" bench/apps/echo echo '{"text":"hello"}')
echo "stdio echo: $(per_call "$a" "$b") instructions per call"
a=$(stdio_run "$n1" . suggest_gifts "$gift")
b=$(stdio_run "$n2" . suggest_gifts "$gift")
echo "stdio gift: $(per_call "$a" "$b") instructions per call"
a=$(http_run "$n1")
b=$(http_run "$n2")
echo "http echo (2026-07-28): $(per_call "$a" "$b") instructions per call"
a=$(http_run "$n1" auth)
b=$(http_run "$n2" auth)
echo "http echo (2026-07-28), bearer JWT: $(per_call "$a" "$b") instructions per call"
for mode in metrics trace trace1 middleware; do
  a=$(http_run "$n1" "$mode")
  b=$(http_run "$n2" "$mode")
  echo "http echo (2026-07-28), $mode: $(per_call "$a" "$b") instructions per call"
done
