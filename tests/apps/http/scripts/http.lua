-- http.lua — tools for the Streamable HTTP tests: side effects a test can
-- observe (a marker file), resource updates, stream detaching (resumption),
-- questions to the client (sampling, elicitation), tagged concurrent calls.
local mcp = require "mcp"

mcp.resource {
  uri = "mcp://test-http/counter",
  name = "counter",
  mime = "text/plain",
  read = function() return tostring(mcp.state.counter or 0) end,
}

mcp.tool {
  name = "touch_marker",
  description = "Creates the file named by $LUAMCP_HTTP_MARKER: proof the request reached Lua",
  handler = function()
    local path = os.getenv("LUAMCP_HTTP_MARKER")
    if not path or path == "" then return mcp.fail("LUAMCP_HTTP_MARKER is not set") end
    local f = assert(io.open(path, "w"))
    f:write("touched\n")
    f:close()
    return "touched"
  end,
}

mcp.tool {
  name = "bump",
  description = "Increments the counter resource and notifies its subscribers",
  input = { uri = mcp.string { default = "mcp://test-http/counter" } },
  handler = function(args)
    mcp.state.counter = (mcp.state.counter or 0) + 1
    mcp.notify_updated(args.uri)
    return ("counter is %d"):format(mcp.state.counter)
  end,
}

mcp.tool {
  name = "resumable",
  description = "Optionally logs, ends its SSE response (ctx:close_stream), sleeps, logs, answers",
  input = {
    seconds = mcp.number { default = 0.3, min = 0 },
    before = mcp.string { optional = true },
  },
  handler = function(args, ctx)
    if args.before then ctx:info("%s", args.before) end
    local closed = ctx:close_stream()
    ctx:sleep(args.seconds)
    ctx:info("after the stream closed")
    return { closed = closed, text = "resumed result" }
  end,
}

mcp.tool {
  name = "tagged",
  description = "Logs its tag, sleeps, answers with the tag",
  input = { tag = mcp.string(), seconds = mcp.number { default = 0.2, min = 0 } },
  handler = function(args, ctx)
    ctx:info("tag %s", args.tag)
    ctx:sleep(args.seconds)
    return "tag " .. args.tag
  end,
}

mcp.tool {
  name = "ask_sample",
  description = "Asks the client's model (sampling/createMessage)",
  input = { question = mcp.string() },
  handler = function(args, ctx)
    local r = ctx:sample {
      messages = { { role = "user", content = { type = "text", text = args.question } } },
      maxTokens = 50,
    }
    return ("model %s said: %s"):format(r.model, r.content.text)
  end,
}

mcp.tool {
  name = "ask_elicit",
  description = "Asks the user for a name (elicitation/create)",
  input = { question = mcp.string() },
  handler = function(args, ctx)
    -- schema: luamcp's name for requestedSchema; the request carries
    -- requestedSchema, and the table given stays as it was
    local q = {
      message = args.question,
      schema = {
        type = "object",
        properties = { name = { type = "string" } },
        required = { "name" },
      },
    }
    local r = ctx:elicit(q)
    assert(q.schema and q.requestedSchema == nil, "ctx:elicit changed the caller's table")
    return { action = r.action, name = r.content and r.content.name or mcp.null }
  end,
}
