-- state.lua — mcp.state: set while loading, read and updated by a handler.
local mcp = require "mcp"

mcp.state.greeting = mcp.state.greeting or "set while loading"

mcp.tool {
  name = "visit",
  description = "Counts its calls in mcp.state",
  handler = function()
    mcp.state.visits = (mcp.state.visits or 0) + 1
    return { greeting = mcp.state.greeting, visits = mcp.state.visits }
  end,
}
