-- many.lua — 250 tools, to page through tools/list.
local mcp = require "mcp"

for i = 1, 250 do
  mcp.tool {
    name = ("tool_%03d"):format(i),
    description = "Tool number " .. i,
    handler = function() return tostring(i) end,
  }
end
