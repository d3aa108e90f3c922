-- wrk script of the HTTP benchmark (bench/http/run.sh): every request is
--   POST /mcp  tools/call echo {"text":"hello"}
-- with the Streamable HTTP headers a client sends. For a stateful server the
-- session comes from the environment (MCP_SESSION_ID, and MCP_PROTOCOL_VERSION).
-- MCP_CALL_BODY, when set, replaces the body (bench/io/run.sh posts its
-- tools/call fetch that way).
-- MCP_MODERN=1 sends the 2026-07-28 headers instead of a session's:
-- MCP-Protocol-Version: 2026-07-28, Mcp-Method: tools/call, Mcp-Name: MCP_NAME
-- (default echo); the body must then carry the params._meta envelope.
-- MCP_CALL_BODY2, when set, makes every connection alternate between the two
-- bodies (the MRTR round trip: the first call, then the retry with the
-- answers), through a request() hook that returns one of two requests
-- built once; with MCP_CALL_BODY2 = MCP_CALL_BODY it is the plain call
-- through the same hook.
-- Otherwise no request()/response() hooks: wrk then sends one pre-built
-- request and spends no Lua per request. done() prints one machine-readable line:
--   WRK_JSON {"requests":..,"duration_us":..,"rps":..,"p50_us":..,...}
wrk.method = "POST"
wrk.body = os.getenv("MCP_CALL_BODY") or '{"jsonrpc":"2.0","id":1,"method":"tools/call",'
  .. '"params":{"name":"echo","arguments":{"text":"hello"}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
local sid = os.getenv("MCP_SESSION_ID")
if sid and sid ~= "" then
  wrk.headers["Mcp-Session-Id"] = sid
  wrk.headers["MCP-Protocol-Version"] = os.getenv("MCP_PROTOCOL_VERSION") or "2025-06-18"
end
if os.getenv("MCP_MODERN") == "1" then
  wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
  wrk.headers["Mcp-Method"] = "tools/call"
  wrk.headers["Mcp-Name"] = os.getenv("MCP_NAME") or "echo"
end

-- MCP_AUTHORIZATION, when set, is sent as the Authorization header
-- (luamcp-auth: a bearer JWT)
local authz = os.getenv("MCP_AUTHORIZATION")
if authz and authz ~= "" then wrk.headers["Authorization"] = authz end

local body2 = os.getenv("MCP_CALL_BODY2")
if body2 and body2 ~= "" then
  local reqs, turn
  function init()
    reqs = { wrk.format(nil, nil, nil, wrk.body), wrk.format(nil, nil, nil, body2) }
    turn = 0
  end
  function request()
    turn = turn % 2 + 1
    return reqs[turn]
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"rps":%.1f,"bytes":%d,'
      .. '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f,'
      .. '"err_connect":%d,"err_read":%d,"err_write":%d,"err_timeout":%d,"non2xx":%d}\n',
    summary.requests, summary.duration, summary.requests / secs, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    e.connect, e.read, e.write, e.timeout, e.status))
end
