-- wedge.lua — plausible handlers that one client argument, or a coroutine
-- made while the app loads, used to turn into an endless loop that no limit
-- stopped (SECURITY.md: "a client cannot wedge the server").
local mcp = require "mcp"

-- made at load time: Lua gives a coroutine the hook of the thread that makes
-- it, and there is none while the app loads
local spinner = coroutine.create(function() while true do end end) -- LOAD CO
local wrapped = coroutine.wrap(function() while true do end end) -- LOAD WRAP
local closing = coroutine.create(function()
  local x <close> = setmetatable({}, { __close = function() while true do end end })
  while true do end
end)

mcp.tool {
  name = "pad",
  description = "Pads a text to a width with a fill the client chooses.",
  input = { text = mcp.string {}, fill = mcp.string {}, width = mcp.integer {} },
  handler = function(args)
    return args.text .. string.rep(args.fill, args.width - #args.text) -- PAD LINE
  end,
}

mcp.tool {
  name = "slice",
  description = "Copies items first..last of a list into a new one.",
  input = { first = mcp.integer {}, last = mcp.integer {} },
  handler = function(args)
    local out = table.move({ "a", "b", "c" }, args.first, args.last, 1, {}) -- SLICE LINE
    return #out .. " items"
  end,
}

mcp.tool {
  name = "load_coroutine",
  description = "Resumes a coroutine made while the app loaded (how: resume, wrap, close).",
  input = { how = mcp.string {} },
  handler = function(args)
    if args.how == "wrap" then return tostring(wrapped()) end -- WRAP CALL
    if args.how == "close" then
      local ok, err = coroutine.resume(closing)
      return tostring(ok) .. " " .. tostring(err)
    end
    return tostring(coroutine.resume(spinner))
  end,
}

mcp.tool {
  name = "close_stopped",
  description = "coroutine.close on the coroutine an earlier call's limit stopped.",
  handler = function()
    local ok, err = coroutine.close(closing)
    return tostring(ok) .. " " .. tostring(err)
  end,
}

mcp.tool {
  name = "gc_stuck",
  description = "A __gc finalizer that never returns: nothing in-process can stop it.",
  handler = function()
    setmetatable({}, { __gc = function() while true do end end }) -- GC STUCK
    collectgarbage()
    return "collected"
  end,
}

mcp.tool { name = "ok", description = "Answers ok.", handler = function() return "ok" end }
