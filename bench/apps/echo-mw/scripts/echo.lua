local mcp = require "mcp"
mcp.tool {
  name = "echo",
  description = "Echoes the given text back.",
  input = { text = mcp.string { description = "Text to echo" } },
  handler = function(args) return args.text end,
}
