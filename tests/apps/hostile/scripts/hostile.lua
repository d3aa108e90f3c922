-- hostile.lua — a careless (or hostile) script: registration tables and
-- results whose metamethods fail. The server must answer, never abort.
local mcp = require "mcp"

local trap = setmetatable({}, { __index = function() error("trap in __index") end })

mcp.template {
  uri = "test://trap/{name}",
  name = "trap",
  read = function(params) return "read " .. params.name end,
  complete = trap, -- any lookup into it raises
}

local bad_string = setmetatable({}, { __tostring = function() return nil end })
mcp.template {
  uri = "test://values/{name}",
  name = "values",
  read = function(params) return "read " .. params.name end,
  complete = {
    name = function(prefix)
      if prefix == "bad" then return { "ok", bad_string } end
      if prefix == "num" then return { 1, 2.5 } end
      return { prefix .. "1", prefix .. "2" }
    end,
  },
}

mcp.tool {
  name = "load_bytecode",
  description = "Loads bytecode (corrupted bytecode crashes the VM: binary chunks must be refused).",
  handler = function()
    local fn, err = load(string.dump(function() return 1 end))
    if not fn then return "refused: " .. tostring(err) end
    return "loaded: " .. tostring(fn())
  end,
}

mcp.tool {
  name = "error_table",
  description = "Raises a table as its error.",
  handler = function() error({ code = 42 }) end,
}

mcp.tool {
  name = "bad_result_index",
  description = "Returns a table whose metatable raises on any access.",
  handler = function() return trap end,
}

mcp.tool {
  name = "blocking_sleep",
  description = "Blocks the whole server in a C call (what the watchdog reports).",
  input = { seconds = mcp.number {} },
  handler = function(args)
    os.execute("sleep " .. args.seconds) -- BLOCKING LINE
    return "slept"
  end,
}

mcp.tool {
  name = "blocking_in_coroutine",
  description = "Blocks inside a coroutine the handler made.",
  handler = function()
    local co = coroutine.wrap(function() os.execute("sleep 0.5") return "done" end)
    return co()
  end,
}

mcp.tool {
  name = "escape_hook",
  description = "Tries to remove the limit hook, then loops.",
  handler = function()
    local ok, err = pcall(debug.sethook)
    if ok then while true do end end
    return "refused: " .. tostring(err)
  end,
}

mcp.tool {
  name = "stop_gc",
  description = "Tries to stop the collector.",
  handler = function()
    local ok, err = pcall(collectgarbage, "stop")
    return (ok and "stopped" or "refused: " .. tostring(err)) .. " / count " .. tostring(collectgarbage("count") > 0)
  end,
}

mcp.tool {
  name = "read_stdin",
  description = "Reads a line from stdin (which must not be the protocol stream).",
  handler = function() return "read: " .. tostring(io.read("l")) end,
}

mcp.tool {
  name = "infinite_progress",
  description = "Reports progress with an infinite total.",
  handler = function(_, ctx) ctx:progress(1, math.huge) return "sent" end,
}
