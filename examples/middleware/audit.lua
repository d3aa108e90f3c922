-- audit.lua — a middleware recipe: one log line per tool call — who, which
-- tool, its arguments with the sensitive ones replaced by "[redacted]", the
-- outcome and the time taken — through ctx:info: the client's log shows it
-- (stderr too, with --log-level debug). Copy it into an app's scripts/ folder
-- and name the fields to hide in SENSITIVE.
local mcp = require "mcp"

-- argument names never written out, whatever the tool
local SENSITIVE = { password = true, token = true, api_key = true, secret = true }

local function redacted(args)
  local out = {}
  for k, v in pairs(args) do out[k] = SENSITIVE[k] and "[redacted]" or v end
  return out
end

mcp.use(function(req, next)
  if req.method ~= "tools/call" then return next() end
  local started = os.clock()
  -- ctx.auth.key names the caller (issuer and subject), never two alike
  local who = req.ctx.auth and req.ctx.auth.key
  if not who then who = "(no identity)" end -- stdio, or a server without --auth-resource
  local ok, result = pcall(next) -- a handler that waits (HTTP, a child, the client) waits here too
  local outcome = not ok and "failed"
    or (type(result) == "table" and result.isError) and "isError" or "ok"
  req.ctx:info("audit: %s called %s %s: %s in %.1f ms", who, req.name,
    mcp.json.encode(redacted(req.arguments)), outcome, (os.clock() - started) * 1000)
  if not ok then error(result, 0) end -- the handler's own error, at its own line
  return result
end)
