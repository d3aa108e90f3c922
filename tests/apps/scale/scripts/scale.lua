-- scale.lua — tools for tests/integration/scale.test.mjs: three instances
-- behind nginx, sharing a bus, a store and a state key. SCALE_INSTANCE
-- names the instance a tool ran on. The test adds tests/apps/modern's
-- modern.lua (echo, greet: two MRTR rounds).
local mcp = require "mcp"
local here = os.getenv("SCALE_INSTANCE") or "?"

mcp.tool {
  name = "whoami",
  description = "The instance that ran the call.",
  handler = function() return here end,
}

mcp.tool {
  name = "count",
  description = "Counts in mcp.store.",
  input = { key = mcp.string {} },
  handler = function(args) return mcp.store.incr(args.key) .. "@" .. here end,
}

mcp.tool {
  name = "store_get",
  description = "Reads mcp.store.",
  input = { key = mcp.string {} },
  handler = function(args) return tostring(mcp.store.get(args.key)) end,
}

mcp.tool {
  name = "store_ops",
  description = "set/get/incr/delete with a TTL, as one script sees them.",
  input = { key = mcp.string {} },
  handler = function(args)
    local k = args.key
    local out = {}
    out[#out + 1] = tostring(mcp.store.set(k, 41, 0.3))
    out[#out + 1] = tostring(mcp.store.incr(k))
    out[#out + 1] = mcp.store.get(k)
    out[#out + 1] = tostring(mcp.store.incr(k .. ":w", 5, 60))
    out[#out + 1] = tostring(mcp.store.set(k .. ":s", "text"))
    out[#out + 1] = tostring(pcall(mcp.store.incr, k .. ":s"))
    out[#out + 1] = tostring(pcall(mcp.store.set, k, {}))
    out[#out + 1] = tostring(mcp.store.delete(k .. ":s"))
    out[#out + 1] = tostring(mcp.store.delete(k .. ":s"))
    return table.concat(out, " ")
  end,
}

mcp.tool {
  name = "store_expired",
  description = "Whether a store_ops key has expired (after 0.3 s).",
  input = { key = mcp.string {} },
  handler = function(args, ctx)
    ctx:sleep(0.4)
    return tostring(mcp.store.get(args.key))
  end,
}

mcp.tool {
  name = "touch",
  description = "mcp.notify_updated on the document.",
  handler = function()
    mcp.notify_updated("test://scale/doc")
    return here
  end,
}

mcp.resource { uri = "test://scale/doc", name = "doc", text = "the document" }

-- tasks (2026-07-28 tasks extension): the task lives on the instance that
-- created it; the test asks about it on the others
mcp.tool {
  name = "ask_later",
  description = "A task: asks for a word, then answers with it and the instance that ran it.",
  task = "optional",
  handler = function(_, ctx)
    ctx:as_task()
    local a = ctx:elicit {
      message = "A word?",
      requestedSchema = { type = "object", properties = { word = { type = "string" } },
                          required = mcp.as_array { "word" } },
    }
    return (a.content and a.content.word or "-") .. "@" .. here
  end,
}

mcp.tool {
  name = "sleep_task",
  description = "A task that sleeps a minute (unless cancelled).",
  task = "optional",
  handler = function(_, ctx)
    ctx:sleep(60)
    return "slept@" .. here
  end,
}
