-- slow.lua — tools that take time: sleeping, spinning, reporting progress, eating memory.
local mcp = require "mcp"

mcp.tool {
  name = "sleep",
  description = "Sleeps (without blocking other calls), then answers",
  input = { seconds = mcp.number { min = 0 } },
  handler = function(args, ctx)
    ctx:info("sleeping %s s", args.seconds)
    ctx:sleep(args.seconds)
    return "slept " .. args.seconds
  end,
}

mcp.tool {
  name = "spin",
  description = "Busy-loops until the call is cancelled or times out",
  handler = function(args, ctx)
    ctx:info("spinning")
    local n = 0
    while true do n = n + 1 end
  end,
}

mcp.tool {
  name = "work",
  description = "Keeps the CPU busy for a while (no yielding), then answers",
  input = { seconds = mcp.number { min = 0 } },
  handler = function(args, ctx)
    ctx:info("working")
    local t0, n = os.clock(), 0
    while os.clock() - t0 < args.seconds do n = n + 1 end
    return "worked"
  end,
}

mcp.tool {
  name = "progress",
  description = "Reports progress in steps, optionally pausing after each",
  input = {
    steps = mcp.integer { default = 3, min = 1 },
    pause = mcp.number { default = 0, min = 0 },
  },
  handler = function(args, ctx)
    local sent
    for i = 1, args.steps do
      sent = ctx:progress(i, args.steps, ("step %d of %d"):format(i, args.steps))
      if args.pause > 0 then ctx:sleep(args.pause) end
    end
    return ("progress sent: %s"):format(sent)
  end,
}

mcp.tool {
  name = "hog",
  description = "Builds an ever larger table",
  handler = function()
    local t = {}
    for i = 1, math.maxinteger do t[i] = ("x"):rep(64) .. i end
  end,
}
