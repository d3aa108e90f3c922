-- The gateway of tests/integration/mount.test.mjs: server-everything (stdio)
-- and a luamcp upstream (HTTP) mounted, renamed, filtered, reshaped; a
-- middleware that wraps every call, mounted ones too.
local mcp = require "mcp"
local function env(name, default) return os.getenv(name) or default end

mcp.upstream { name = "every", command = { "node", env("EVERYTHING", "server-everything"), "stdio" } }
mcp.upstream { name = "up", url = env("UP_URL", "http://127.0.0.1:9/mcp") }

-- server-everything: echo and get-sum only, as ev_*, described as ours
-- (its documents but features.md, its templates and prompts: names are matched as they come)
mcp.mount { upstream = "every", prefix = "ev_", include = { "echo", "get-*", "*-prompt", "*.md", "Dynamic *" },
  exclude = { "get-env", "features.md" },
  transform = function(t, kind)
    if kind ~= "tools" then return t end
    if t.name == "ev_get-sum" then t.name = "ev_sum" end
    t.description = "[everything] " .. (t.description or "")
    return t
  end }
-- the luamcp upstream: every tool but fail and big, under up_; whoami only for admins
mcp.mount { upstream = "up", prefix = "up_", exclude = { "fail", "big" }, scopes = { "tools:up" },
  transform = function(t, kind)
    if t.name == "up_whoami" then t.scopes = { "admin" } end
    if t.name == "up_slow" then return nil end
    return t
  end }

mcp.tool { name = "local_echo", description = "A local tool", input = { text = mcp.string() },
  handler = function(a) return a.text end }

-- every call, mounted or local: its name goes into the result's _meta
mcp.use(function(req, next)
  local r = next()
  if type(r) == "string" then r = mcp.result { content = r } end
  if type(r) == "table" and r.content then
    r._meta = r._meta or {}
    r._meta.wrapped = req.name
  end
  return r
end)
