-- The upstream of tests/integration/client.test.mjs: a luamcp app that the
-- gateway (tests/apps/client-gateway) calls over HTTP and over stdio.
local mcp = require "mcp"
local MARKS = os.getenv("CLIENT_MARKS")

mcp.tool { name = "echo", description = "Echoes text", input = { text = mcp.string() }, handler = function(a) return a.text end }
mcp.tool { name = "fail", description = "Fails", input = {}, handler = function() return mcp.fail("nope") end }
mcp.tool { name = "whoami", description = "This process's id", input = {},
  handler = function()
    local f = assert(io.open("/proc/self/stat"))
    local pid = f:read("n")
    f:close()
    return { pid = pid }
  end }
-- waits until cancelled; its cleanup leaves a mark the test waits for
mcp.tool { name = "slow", description = "Waits until cancelled", input = { tag = mcp.string() },
  handler = function(a, ctx)
    if MARKS then
      local f = io.open(MARKS .. "/started-" .. a.tag, "w")
      if f then f:write("started") f:close() end
    end
    local mark <close> = setmetatable({}, { __close = function()
      if MARKS and ctx.cancelled then
        local f = io.open(MARKS .. "/cancelled-" .. a.tag, "w")
        if f then f:write("cancelled") f:close() end
      end
    end })
    ctx:sleep(120)
    return "slept"
  end }
mcp.tool { name = "steps", description = "Reports progress", input = {},
  handler = function(_, ctx)
    ctx:progress(1, 2, "half")
    ctx:progress(2, 2, "done")
    return "stepped"
  end }
mcp.resource { uri = "test://up/a", name = "a", mime = "text/plain", read = function() return "resource a" end }
mcp.template { uri = "test://up/items/{id}", name = "item",
  read = function(vars) return "item " .. vars.id end,
  complete = { id = function(prefix)
    local out = {}
    for _, v in ipairs { "1", "2", "10", "11" } do if v:sub(1, #prefix) == prefix then out[#out + 1] = v end end
    return out
  end } }
mcp.prompt { name = "greet", args = { who = mcp.string() },
  get = function(a) return { mcp.user("Hello, " .. a.who) } end }
mcp.tool { name = "big", description = "A text of n bytes", input = { n = mcp.integer { minimum = 0 } },
  handler = function(a) return string.rep("x", a.n) end }
