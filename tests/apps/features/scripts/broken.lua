-- broken.lua — a handler with a bug: it indexes nil on line 7.
local mcp = require "mcp"

mcp.tool {
  name = "broken",
  handler = function(args)
    local missing = nil; return missing.field
  end,
}
