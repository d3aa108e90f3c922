-- noisy.lua — writes to stdout the Lua way; none of it may reach the protocol stream.
local mcp = require "mcp"

print("PRINT-AT-LOAD")

mcp.tool {
  name = "noisy",
  description = "Calls print() and io.write()",
  handler = function()
    print("PRINT-IN-HANDLER")
    io.write("IO-WRITE-IN-HANDLER\n")
    io.stdout:write("IO-STDOUT-IN-HANDLER\n")
    io.stdout:flush()
    return "noisy done"
  end,
}
