-- ratelimit.lua — a middleware recipe: at most LIMIT tool calls per caller
-- per minute. Copy it into an app's scripts/ folder. It counts in mcp.store,
-- so with `--store redis://...` every instance behind one endpoint shares the
-- count; the caller is the access token's subject (ctx.auth), else the one
-- local user. A caller over the limit gets the tool's error (isError), which
-- the model can read, and its handler is not run.
local mcp = require "mcp"

local LIMIT, WINDOW = 5, 60 -- calls, seconds

mcp.use(function(req, next)
  if req.method ~= "tools/call" then return next() end
  local who = req.ctx.auth and req.ctx.auth.subject or "local"
  -- one key per caller and window: it expires with the window
  local window = os.time() // WINDOW
  local n = mcp.store.incr(("ratelimit:%s:%d"):format(who, window), 1, WINDOW)
  if n > LIMIT then
    return mcp.fail(("rate limit: %d calls a minute (try again in %d s)")
      :format(LIMIT, WINDOW - os.time() % WINDOW))
  end
  return next()
end)
