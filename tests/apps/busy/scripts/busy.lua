-- busy.lua — tools that hold the engine: the tests of who runs what while a
-- handler is busy (head-of-line, reads during a resumed call, cancels).
local mcp = require "mcp"

local function spin(ms)
  local t = os.clock() + ms / 1000
  while os.clock() < t do end
end

local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

mcp.tool {
  name = "busy",
  description = "Keeps the CPU busy for ms milliseconds.",
  input = { ms = mcp.number {} },
  handler = function(args)
    spin(args.ms)
    return "busy done"
  end,
}

mcp.tool {
  name = "nap_then_busy",
  description = "Sleeps nap seconds (parked), then keeps the CPU busy for ms milliseconds.",
  input = { nap = mcp.number {}, ms = mcp.number {} },
  handler = function(args, ctx)
    ctx:sleep(args.nap)
    spin(args.ms)
    return "nap and busy done"
  end,
}

mcp.tool {
  name = "echo",
  description = "Echoes the text.",
  input = { text = mcp.string {} },
  handler = function(args) return args.text end,
}

mcp.tool {
  name = "trim",
  description = "The text without leading and trailing space (the everyday idiom, quadratic on all-space text).",
  input = { text = mcp.string {} },
  handler = function(args) return args.text:match("^%s*(.-)%s*$") end,
}

-- Busy until the client, having seen a progress, creates the flag file: it
-- ends only if its progress reached the client while it ran (or after max_ms).
mcp.tool {
  name = "busy_until_seen",
  description = "Keeps the CPU busy, reporting progress, until the file flag exists.",
  input = { flag = mcp.string(), max_ms = mcp.number(), step = mcp.number() },
  handler = function(args, ctx)
    local t0 = os.clock()
    local i = 0
    while (os.clock() - t0) * 1000 < args.max_ms do
      i = i + 1
      ctx:progress(i)
      spin(args.step)
      if exists(args.flag) then return "released" end
    end
    return "never released"
  end,
}

mcp.tool {
  name = "busy_progress",
  description = "Keeps the CPU busy for ms milliseconds, reporting progress every step ms.",
  input = { ms = mcp.number {}, step = mcp.number {} },
  handler = function(args, ctx)
    local steps = math.max(1, math.floor(args.ms / args.step))
    for i = 1, steps do
      ctx:progress(i - 1, steps)
      spin(args.step)
    end
    return "busy done"
  end,
}

-- Busy until the client creates the file flag (or max_ms of CPU): it makes
-- the file started first, so a test knows by an event, not a clock, that
-- the engine is held, and decides when it is let go.
mcp.tool {
  name = "busy_until_flag",
  description = "Makes the file started, then keeps the CPU busy until the file flag exists.",
  input = { flag = mcp.string(), started = mcp.string(), max_ms = mcp.number() },
  handler = function(args)
    assert(io.open(args.started, "w")):close()
    local t0 = os.clock()
    while (os.clock() - t0) * 1000 < args.max_ms do
      spin(2)
      if exists(args.flag) then return "released" end
    end
    return "never released"
  end,
}

-- Head-of-line by events: nap_until_go_then_hold parks (ctx:sleep, 10 ms at a
-- time) until the file go exists, then holds the engine until the file flag
-- exists; go_then_busy makes go and keeps the CPU busy for ms. The slow
-- call's wake-up comes due while the quick one runs; the client makes flag
-- only once it has the quick call's answer, so the slow call ends "released"
-- only if that answer was sent before the slow call ran on (else, after
-- max_ms of CPU, "never released").
mcp.tool {
  name = "nap_until_go_then_hold",
  description = "Makes started, sleeps until go exists, then holds the engine until flag exists.",
  input = { started = mcp.string(), go = mcp.string(), flag = mcp.string(), max_ms = mcp.number() },
  handler = function(args, ctx)
    assert(io.open(args.started, "w")):close()
    while not exists(args.go) do ctx:sleep(0.01) end
    local t0 = os.clock()
    while (os.clock() - t0) * 1000 < args.max_ms do
      spin(2)
      if exists(args.flag) then return "released" end
    end
    return "never released"
  end,
}

mcp.tool {
  name = "go_then_busy",
  description = "Makes the file go, then keeps the CPU busy for ms milliseconds.",
  input = { go = mcp.string(), ms = mcp.number() },
  handler = function(args)
    assert(io.open(args.go, "w")):close()
    spin(args.ms)
    return "busy done"
  end,
}
