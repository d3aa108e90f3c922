-- The gateway of tests/integration/client.test.mjs: its tools call the
-- upstreams mcp.client offers, named in the environment.
local mcp = require "mcp"
local function env(name, default) return os.getenv(name) or default end
local NOWHERE = "http://127.0.0.1:9/mcp"

mcp.upstream { name = "every_stdio", command = { "node", env("EVERYTHING", "server-everything"), "stdio" } }
mcp.upstream { name = "every_http", url = env("EVERYTHING_URL", NOWHERE) }
mcp.upstream { name = "up_modern", url = env("UP_URL", NOWHERE) }
mcp.upstream { name = "up_legacy", url = env("UP_URL", NOWHERE), revision = "2025-11-25" }
-- with OTLP set, the upstream exports its spans too (the trace crosses the hop)
local up_cmd = { env("LUAMCP", "luamcp"), "serve" }
if os.getenv("OTLP") then up_cmd[#up_cmd + 1] = "--otlp"; up_cmd[#up_cmd + 1] = os.getenv("OTLP") end
up_cmd[#up_cmd + 1] = env("UP_APP", ".")
mcp.upstream { name = "up_stdio", command = up_cmd,
               env = { CLIENT_MARKS = env("CLIENT_MARKS", "/nonexistent") } }
-- a raw HTTP server of the test's: /ok answers, /garbage answers no JSON, /hang never answers
local RAW = env("RAW_BASE", "http://127.0.0.1:9")
mcp.upstream { name = "raw", url = RAW .. "/ok",
               headers = { Authorization = "Bearer " .. env("UPSTREAM_TOKEN", "none") } }
mcp.upstream { name = "garbage", url = RAW .. "/garbage" }
mcp.upstream { name = "hang", url = RAW .. "/hang" }
mcp.upstream { name = "legacy", url = RAW .. "/legacy" }
mcp.upstream { name = "refused", url = env("REFUSED_URL", NOWHERE) }
mcp.upstream { name = "dies", command = { "/bin/sh", "-c", "exit 3" } } -- dies before any answer

-- run{up =, op = "list"|"call"|"read"|"prompt"|"complete", ...}: the result as JSON
mcp.tool { name = "run",
  input = { type = "object", required = { "up", "op" },
            properties = { up = { type = "string" }, op = { type = "string" }, name = { type = "string" },
                           args = { type = "object" }, ref = { type = "object" } } },
  handler = function(a, ctx)
    local c = mcp.client(a.up)
    local r
    if a.op == "list" then r = c:list(a.name)
    elseif a.op == "call" then r = c:call(a.name, a.args)
    elseif a.op == "read" then r = c:read(a.name)
    elseif a.op == "prompt" then r = c:prompt(a.name, a.args)
    elseif a.op == "complete" then r = c:complete(a.ref, a.args)
    end
    return mcp.json.encode(r)
  end }

-- the error table a failure raises, as the handler sees it under pcall
mcp.tool { name = "caught", input = { type = "object", required = { "up", "name" },
            properties = { up = { type = "string" }, name = { type = "string" }, args = { type = "object" } } },
  handler = function(a)
    local ok, e = pcall(function() return mcp.client(a.up):call(a.name, a.args) end)
    if ok then return mcp.json.encode { ok = true, result = e } end
    return mcp.json.encode { ok = false, message = e.message, upstream = e.upstream, code = e.code }
  end }

mcp.tool { name = "progress", input = { type = "object", required = { "up", "name" },
            properties = { up = { type = "string" }, name = { type = "string" }, args = { type = "object" } } },
  handler = function(a)
    local seen = {}
    local r = mcp.client(a.up):call(a.name, a.args, { progress = function(p, total, msg)
      seen[#seen + 1] = { progress = p, total = total, message = msg } end })
    return mcp.json.encode { result = r, progress = mcp.as_array(seen) }
  end }

-- an ad-hoc client of a URL the call names: nothing declared, nothing kept
mcp.tool { name = "adhoc", input = { url = mcp.string(), text = mcp.string() },
  handler = function(a)
    local c = mcp.client { url = a.url, revision = "2025-11-25" }
    return mcp.json.encode { name = tostring(c), result = c:call("echo", { text = a.text }) }
  end }
