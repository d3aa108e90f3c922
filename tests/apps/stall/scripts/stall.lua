-- stall.lua — code that holds the engine where the call's hook cannot stop
-- it, or only barely: <close> variables of calls that end early, __gc
-- finalizers (Lua runs them without hooks), collector settings.
local mcp = require "mcp"

local function closer(fn) return setmetatable({}, { __close = fn }) end

mcp.tool {
  name = "park_close_loop",
  description = "Parks with a <close> variable whose __close never returns.",
  input = { seconds = mcp.number {} },
  handler = function(args, ctx)
    local x <close> = closer(function() while true do end end) -- CLOSE LOOP
    ctx:sleep(args.seconds)
    return "woke"
  end,
}

mcp.tool {
  name = "park_close_count",
  description = "Parks with three <close> variables: one counts, one raises, one counts.",
  input = { seconds = mcp.number {} },
  handler = function(args, ctx)
    local a <close> = closer(function() mcp.state.closed = (mcp.state.closed or 0) + 1 end)
    local b <close> = closer(function() error("close failed on purpose") end)
    local c <close> = closer(function() mcp.state.closed = (mcp.state.closed or 0) + 1 end)
    ctx:sleep(args.seconds)
    return "woke"
  end,
}

mcp.tool {
  name = "closed",
  description = "How many __close handlers of ended calls ran.",
  handler = function() return tostring(mcp.state.closed or 0) end,
}

mcp.tool {
  name = "spin_close_loop",
  description = "Loops until the deadline, with a <close> variable whose __close loops too.",
  handler = function()
    local x <close> = closer(function() while true do end end)
    while true do end
  end,
}

mcp.tool {
  name = "gc_slow",
  description = "A finalizer that runs for a while (no hook reaches it).",
  input = { seconds = mcp.number {} },
  handler = function(args)
    setmetatable({}, { __gc = function()
      local t = os.clock()
      while os.clock() - t < args.seconds do end -- GC SLOW LINE
    end })
    collectgarbage()
    return "collected"
  end,
}

mcp.tool {
  name = "gc_loop",
  description = "A finalizer that never returns.",
  handler = function()
    setmetatable({}, { __gc = function() while true do end end }) -- GC LOOP LINE
    collectgarbage()
    return "never"
  end,
}

mcp.tool {
  name = "gc_escapes",
  description = "Tries every collectgarbage option that would leave garbage uncollected.",
  handler = function()
    local out = {}
    for _, args in ipairs { { "stop" }, { "step", -(1 << 31) }, { "setstepmul", 1 },
                            { "incremental", 100, 1 } } do
      local ok, err = pcall(collectgarbage, table.unpack(args))
      out[#out + 1] = args[1] .. ": " .. (ok and "allowed" or tostring(err))
    end
    -- what stays allowed
    out[#out + 1] = "step: " .. tostring(pcall(collectgarbage, "step", 10))
    out[#out + 1] = "incremental: " .. tostring(pcall(collectgarbage, "incremental", 200, 100))
    return table.concat(out, "\n")
  end,
}

mcp.tool { name = "ok", description = "Answers.", handler = function() return "ok" end }

mcp.tool { name = "fails", description = "Raises, with no <close> variable.", handler = function() error("plain failure") end }
