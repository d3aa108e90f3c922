local mcp = require "mcp"

mcp.tool { name = "fine", description = "Answers at once.", handler = function() return "ok" end }

mcp.tool { name = "sad", description = "Answers isError.", handler = function() return mcp.fail("sad on purpose") end }

mcp.tool {
  name = "refuse", description = "A JSON-RPC error.",
  handler = function() error(mcp.rpc_error(-32042, "refused on purpose")) end,
}

mcp.tool {
  name = "slow", description = "Sleeps past --timeout.",
  handler = function(_, ctx) ctx:sleep(30) return "never" end,
}

mcp.tool {
  name = "fetch", description = "GETs a URL (mcp.http).", input = { url = mcp.string {} },
  handler = function(args) return tostring(mcp.http.get(args.url).status) end,
}
