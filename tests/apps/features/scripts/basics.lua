-- basics.lua — arguments in, values out.
local mcp = require "mcp"

mcp.tool {
  name = "echo",
  description = "Returns its text argument unchanged",
  input = { text = mcp.string() },
  handler = function(args) return args.text end,
}

mcp.tool {
  name = "no_params",
  description = "Takes no arguments",
  handler = function() return "no params needed" end,
}

mcp.tool {
  name = "empty",
  description = "Returns an empty list of content",
  handler = function() return mcp.as_array {} end,
}

mcp.tool {
  name = "greet",
  description = "Greets someone; both arguments have defaults",
  input = {
    name = mcp.string { default = "world" },
    times = mcp.integer { default = 1, min = 1, max = 5 },
  },
  handler = function(args)
    return ("hello %s"):format(args.name):rep(args.times, ", ")
  end,
}

mcp.tool {
  name = "strict",
  description = "Needs a positive integer count",
  input = {
    count = mcp.integer { min = 1 },
    label = mcp.string { optional = true },
  },
  handler = function(args) return ("%d x %s"):format(args.count, args.label or "item") end,
}

mcp.tool {
  name = "numbers",
  description = "Returns integers and floats as structured content",
  handler = function()
    return { n = 3, zero = 0, neg = -7, f = 0.1, half = 0.5, big = 2 ^ 53, maxint = math.maxinteger }
  end,
}

mcp.tool {
  name = "bad_output",
  description = "Declares an outputSchema, then returns something else",
  output = { n = mcp.integer() },
  handler = function() return { n = "three" } end,
}
