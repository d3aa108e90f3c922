-- ratelimit.lua — a middleware recipe: at most LIMIT tool calls per caller
-- per minute. Copy it into an app's scripts/ folder. It counts in mcp.store,
-- so with `--store redis://...` every instance behind one endpoint shares the
-- count; the caller is ctx.auth.key (the token's issuer and subject). A
-- caller over the limit gets the tool's error (isError), which the model can
-- read, and its handler is not run.
local mcp = require "mcp"

local LIMIT, WINDOW = 5, 60 -- calls, seconds

mcp.use(function(req, next)
  if req.method ~= "tools/call" then return next() end
  local who = req.ctx.auth and req.ctx.auth.key
  if not who then
    -- a request that names no one (stdio, a server without --auth-resource):
    -- all such requests share this one count, on purpose. It is a limit, not
    -- anyone's data: they are only held back together. Keep data per caller
    -- under ctx.auth.key alone, and refuse a request without one.
    who = "(no identity)"
  end
  -- one key per caller and window: it expires with the window
  local window = os.time() // WINDOW
  local n = mcp.store.incr(("ratelimit:%s:%d"):format(who, window), 1, WINDOW)
  if n > LIMIT then
    return mcp.fail(("rate limit: %d calls a minute (try again in %d s)")
      :format(LIMIT, WINDOW - os.time() % WINDOW))
  end
  return next()
end)
