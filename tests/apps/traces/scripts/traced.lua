local mcp = require "mcp"

mcp.tool {
  name = "fetch_traced",
  description = "GETs url inside a span of its own.",
  input = { url = mcp.string {} },
  handler = function(args, ctx)
    ctx:set_attribute("app.customer", "acme")
    local status = ctx:span("fetch upstream", { ["app.try"] = 1, ["app.cached"] = false }, function()
      return mcp.http.get(args.url).status
    end)
    return "status " .. status
  end,
}

mcp.tool {
  name = "fails_in_span",
  description = "An error inside ctx:span.",
  handler = function(_, ctx)
    ctx:span("doomed", function() error("no luck here") end)
  end,
}

mcp.tool { name = "plain", description = "Nothing traced of its own.", handler = function() return "ok" end }
