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

mcp.tool {
  name = "child_and_question",
  description = "Runs a child that fails, then asks the user.",
  handler = function(_, ctx)
    local r = mcp.exec { "/bin/sh", "-c", "exit 3" }
    local a = ctx:elicit { message = "Name?", requestedSchema = { type = "object", properties = { n = { type = "string" } } } }
    return ("child %d, %s"):format(r.code, a.action)
  end,
}

mcp.tool {
  name = "count",
  description = "Counts in mcp.store.",
  handler = function() return tostring(mcp.store.incr("traces:count", 1)) end,
}

mcp.tool {
  name = "sockets",
  description = "Connects to a port, then to a closed one.",
  input = { port = mcp.integer(), closed = mcp.integer() },
  handler = function(args)
    local s = assert(mcp.socket.connect("127.0.0.1", args.port))
    s:close()
    local none, err = mcp.socket.connect("127.0.0.1", args.closed)
    return ("%s, %s"):format(none and "connected" or "refused", tostring(err))
  end,
}

mcp.tool {
  name = "tasked",
  description = "Works a little, as a task when the client can take one.",
  task = "optional",
  handler = function(_, ctx)
    ctx:sleep(0.01) -- its first wait: here it becomes a task (the client is answered)
    ctx:span("work", { ["app.step"] = 1 }, function() ctx:sleep(0.05) end)
    return "done"
  end,
}

mcp.tool {
  name = "fetch_two",
  description = "Two GETs at once, in threads of mcp.all.",
  input = { url = mcp.string {} },
  handler = function(args)
    local a, b = mcp.all {
      function() return mcp.http.get(args.url .. "?n=1").status end,
      function() return mcp.http.get(args.url .. "?n=2").status end,
    }
    return a .. " " .. b
  end,
}
