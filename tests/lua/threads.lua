-- mcp.spawn, mcp.all, mcp.now as a script sees them at load time (docs/lua-api.md,
-- "Several waits at once"): threads are a handler's, so at load each refuses
-- with a clear error before running anything; mcp.now is the wall clock in ms.
local mcp = require "mcp"
local expect = require "expect"

expect.equal(type(mcp.spawn), "function")
expect.equal(type(mcp.all), "function")
local ran = false
expect.fails("mcp.spawn: only a handler can wait", mcp.spawn, function() ran = true end)
expect.fails("mcp.all: only a handler can wait", mcp.all, { function() ran = true end })
expect.equal(ran, false)
expect.fails("function expected, got no value", mcp.spawn)
expect.fails("table expected", mcp.all, function() end)

local t0 = mcp.now()
expect.equal(math.type(t0), "float")
-- the wall clock: os.time()'s seconds, in milliseconds, with a fraction
assert(math.abs(t0 / 1000 - os.time()) < 5, ("mcp.now() = %s, os.time() = %s"):format(t0, os.time()))
assert(mcp.now() >= t0, "mcp.now() went back")
