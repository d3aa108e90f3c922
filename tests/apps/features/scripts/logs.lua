-- logs.lua — one log message at each of five levels.
local mcp = require "mcp"

mcp.tool {
  name = "log_levels",
  description = "Logs at debug, info, notice, warning and error",
  handler = function(args, ctx)
    ctx:debug("debug message")
    ctx:info("info message %d", 2)
    ctx:log("notice", "notice message")
    ctx:warning("warning message")
    ctx:error("error message")
    return "logged"
  end,
}
