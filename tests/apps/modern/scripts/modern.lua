-- modern.lua — tools for tests/integration/modern.test.mjs: the same
-- handlers serve 2025-era sessions and 2026-07-28 requests.
local mcp = require "mcp"

mcp.tool {
  name = "echo",
  description = "Echoes text.",
  input = { text = mcp.string {} },
  handler = function(args) return args.text end,
}

-- two questions in a row: under 2026-07-28, two rounds of input_required
mcp.tool {
  name = "greet",
  description = "Asks a name and a mood, then greets.",
  input = { greeting = mcp.string {} },
  handler = function(args, ctx)
    local name = ctx:elicit { message = "Your name?",
      requestedSchema = { type = "object", properties = { name = { type = "string" } } } }
    local mood = ctx:elicit { message = "Your mood?",
      requestedSchema = { type = "object", properties = { mood = { type = "string" } } } }
    return ("%s, %s (%s)"):format(args.greeting, name.content.name, mood.content.mood)
  end,
}

-- asks a different question each round: a replay must refuse it
local flips = 0
mcp.tool {
  name = "fickle",
  description = "Asks something else every time.",
  handler = function(_, ctx)
    flips = flips + 1
    local r = ctx:elicit { message = "Question " .. flips,
      requestedSchema = { type = "object", properties = {} } }
    return "answered " .. tostring(r.action)
  end,
}

mcp.tool {
  name = "log_and_progress",
  description = "Logs at every level and reports progress.",
  handler = function(_, ctx)
    ctx:debug("a debug line")
    ctx:warning("a warning line")
    ctx:progress(1, 2, "half")
    return "logged"
  end,
}

mcp.tool {
  name = "roots",
  description = "Lists the client's roots.",
  handler = function(_, ctx)
    local roots = ctx:roots()
    return "roots: " .. #roots
  end,
}

mcp.resource { uri = "test://modern/a", name = "a", text = "resource a",
  cache = { ttl = 60, scope = "public" } }
mcp.resource { uri = "test://modern/b", name = "b", text = "resource b" }

-- several questions in one round, and a question under a key of its own
mcp.tool {
  name = "ask_two",
  description = "Asks a name and a sample in one round.",
  handler = function(_, ctx)
    local a = ctx:ask {
      who = { method = "elicitation/create", params = { message = "Who?",
        requestedSchema = { type = "object", properties = { name = { type = "string" } } } } },
      pick = { method = "sampling/createMessage", params = { maxTokens = 5,
        messages = mcp.as_array { { role = "user", content = { type = "text", text = "pick" } } } } },
    }
    return a.who.content.name .. " / " .. a.pick.content.text
  end,
}

mcp.tool {
  name = "keyed",
  description = "Asks under the key user_name.",
  handler = function(_, ctx)
    local r = ctx:elicit { key = "user_name", message = "Name?",
      requestedSchema = { type = "object", properties = { name = { type = "string" } } } }
    return "Hello, " .. r.content.name .. "!"
  end,
}

mcp.tool {
  name = "caps",
  description = "What the client declared.",
  handler = function(_, ctx)
    local names = {}
    for k in pairs(ctx.client_capabilities) do names[#names + 1] = k end
    table.sort(names)
    return table.concat(names, ",")
  end,
}

-- x-mcp-header: the region travels in the Mcp-Param-Region header too
mcp.tool {
  name = "route",
  description = "Routes by region.",
  input = { type = "object", properties = {
    region = { type = "string", ["x-mcp-header"] = "Region" },
    shard = { type = "integer", ["x-mcp-header"] = "Shard" },
  }, required = { "region" } },
  handler = function(args) return "routed to " .. args.region end,
}

-- optional arguments a framework sends as null
mcp.tool {
  name = "optional_null",
  description = "An optional note, and one that may be null on purpose.",
  input = { type = "object", required = { "text" }, properties = {
    text = { type = "string" },
    note = { type = "string" },
    maybe = { type = { "string", "null" } },
  } },
  handler = function(args)
    return ("%s|%s|%s"):format(args.text, tostring(args.note), args.maybe == mcp.null and "null" or tostring(args.maybe))
  end,
}

-- a result whose data reads like a JSON-RPC error: still a result (200)
mcp.tool {
  name = "error_shaped",
  description = "Returns data that holds an error object.",
  handler = function() return { error = { code = -32601, message = "only data" } } end,
}
