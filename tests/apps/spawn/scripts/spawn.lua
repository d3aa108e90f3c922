-- spawn.lua — tools over mcp.spawn / mcp.all for tests/integration/spawn.test.mjs:
-- three waits of three kinds at once (mcp.http to the test's origin, mcp.exec
-- of a child that waits on the test's fifo, mcp.socket to the test's server),
-- errors in threads, mcp.all failing as a whole, threads left un-waited, the
-- memory limit across threads.
local mcp = require "mcp"

-- the three waits; each returns what it got
local function fetch(url) return mcp.http.get(url).body end
local function child(pidfile, fifo)
  -- the child writes its pid, then blocks reading the fifo until the test writes
  return mcp.exec{ "sh", "-c", 'echo $$ > "$1"; read x < "$2"; echo "$x"', "sh", pidfile, fifo }.stdout
end
local function talk(port)
  local s = mcp.socket.tcp()
  assert(s:connect("127.0.0.1", port))
  assert(s:send("hello\n"))
  local line, err = s:receive("*l")
  s:close()
  return line or err
end

local three_input = { url = mcp.string(), pidfile = mcp.string(), fifo = mcp.string(), port = mcp.integer() }

mcp.tool {
  name = "three_all",
  description = "mcp.all of an HTTP GET, a child and a socket exchange",
  input = three_input,
  handler = function(a)
    local body, out, line = mcp.all {
      function() return fetch(a.url) end,
      function() return child(a.pidfile, a.fifo) end,
      function() return talk(a.port) end,
    }
    return { body = body, out = out, line = line }
  end,
}

mcp.tool {
  name = "three_spawn",
  description = "mcp.spawn of the three, waited for in reverse order",
  input = three_input,
  handler = function(a)
    local h1 = mcp.spawn(fetch, a.url)
    local h2 = mcp.spawn(child, a.pidfile, a.fifo)
    local h3 = mcp.spawn(talk, a.port)
    local line = h3:wait()
    local out = h2:wait()
    local body = h1:wait()
    return { body = body, out = out, line = line, again = h1:wait() }
  end,
}

mcp.tool {
  name = "thread_error",
  description = "a thread fails after a wait; its error is raised at h:wait()",
  input = { url = mcp.string() },
  handler = function(a)
    local h = mcp.spawn(function()
      fetch(a.url)
      error("the thread failed here")
    end)
    return h:wait()
  end,
}

mcp.tool {
  name = "thread_error_caught",
  description = "the same error, caught by pcall at the waiter",
  input = { url = mcp.string() },
  handler = function(a)
    local h = mcp.spawn(function()
      fetch(a.url)
      local t = nil
      return t.field
    end)
    local ok, err = pcall(h.wait, h)
    return { ok = ok, err = err, status = tostring(h) }
  end,
}

mcp.tool {
  name = "all_fails",
  description = "mcp.all where one fails: the others (an HTTP hold, a child) are stopped",
  input = { url = mcp.string(), pidfile = mcp.string(), fifo = mcp.string(), bad = mcp.string() },
  handler = function(a)
    local ok, err = pcall(mcp.all, {
      function() return fetch(a.url) end,
      function() return child(a.pidfile, a.fifo) end,
      function()
        local r = mcp.http.get(a.bad)  -- the test answers it once the other two started
        error("all failed: " .. r.body)
      end,
    })
    return { ok = ok, err = err }
  end,
}

mcp.tool {
  name = "unwaited",
  description = "starts an HTTP hold and a child in threads, and returns without waiting",
  input = { url = mcp.string(), pidfile = mcp.string(), fifo = mcp.string(), gate = mcp.string() },
  handler = function(a)
    mcp.spawn(fetch, a.url)
    mcp.spawn(child, a.pidfile, a.fifo)
    mcp.spawn(function() error("nobody waits for this") end)
    fetch(a.gate) -- the test answers once the two above reached the outside
    return "returned"
  end,
}

mcp.tool {
  name = "memory",
  description = "three threads each hold size bytes across a wait, then grow",
  input = { url = mcp.string(), size = mcp.integer() },
  handler = function(a)
    local hs = {}
    for i = 1, 3 do
      hs[i] = mcp.spawn(function()
        local big = string.rep(tostring(i), a.size)
        fetch(a.url)
        local bigger = big .. big
        return #bigger
      end)
    end
    local n = 0
    for i = 1, 3 do n = n + hs[i]:wait() end
    return tostring(n)
  end,
}

mcp.tool {
  name = "misuse",
  description = "what threads refuse, each as an error text",
  input = {},
  handler = function()
    local out = {}
    local function try(k, f, ...) local ok, e = pcall(f, ...); out[k] = ok and "no error" or tostring(e) end
    try("not_fn", mcp.spawn, 42)
    try("all_not_fn", mcp.all, { function() end, 7 })
    try("coroutine", function()
      local co = coroutine.wrap(function() return mcp.spawn(function() end) end)
      return co()
    end)
    out.all_empty = select("#", mcp.all {})
    out.results = table.concat({ mcp.spawn(function(...) return ... end, "a", "b", "c"):wait() }, ",")
    try("yield", function() return mcp.spawn(function() coroutine.yield(1) end):wait() end)
    try("tx", function() return mcp.spawn(function() return mcp.db.tx(function() end) end):wait() end)
    local now = mcp.now()
    out.now = type(now) == "number" and now > 1.7e12 and now < 1e14
    out.stale = mcp.state.stale_handle and select(2, pcall(mcp.state.stale_handle.wait, mcp.state.stale_handle))
    mcp.state.stale_handle = mcp.spawn(function() return 1 end)
    return out
  end,
}

mcp.tool {
  name = "stores",
  description = "mcp.redis, mcp.store and mcp.db from threads; a thread and the handler's transaction",
  input = {},
  handler = function()
    local n, v, one = mcp.all {
      function() return mcp.redis("INCR", "spawn:n") end,
      function()
        mcp.store.set("spawn:k", "v")
        return mcp.store.get("spawn:k")
      end,
      function() return mcp.db.one("select 1 as one").one end,
    }
    local refused
    mcp.db.tx(function()
      local h = mcp.spawn(function() return mcp.db.one("select 2 as two") end)
      local ok, err = pcall(h.wait, h)
      refused = ok and "no error" or err
    end)
    local three = mcp.spawn(function() return mcp.db.one("select 3 as three").three end):wait()
    return { n = n, v = v, one = one, refused = refused, three = three }
  end,
}

mcp.tool {
  name = "ctx_threads",
  description = "ctx:log, ctx:progress and ctx:sleep from threads; questions refused there",
  input = {},
  handler = function(_, ctx)
    local a, b, asked = mcp.all {
      function()
        ctx:info("from thread %d", 1)
        ctx:sleep(0.01)
        return "slept"
      end,
      function()
        ctx:progress(1, 2, "half")
        return "progressed"
      end,
      function()
        local ok, err = pcall(ctx.elicit, ctx, { message = "name?", schema = { name = mcp.string() } })
        return ok and "no error" or err
      end,
    }
    -- a thread waits for a thread it started (both resumed by the loop)
    local chain = mcp.spawn(function()
      local inner = mcp.spawn(function() ctx:sleep(0); return "inner" end)
      return inner:wait() .. "+outer"
    end):wait()
    -- mcp.all stops a thread asleep for 30 s when another fails
    local ok, err = pcall(mcp.all, {
      function() ctx:sleep(30) end,
      function() ctx:sleep(0); error("woke and failed") end,
    })
    return { a = a, b = b, asked = asked, chain = chain, all_ok = ok, all_err = err }
  end,
}

mcp.tool {
  name = "many",
  description = "n threads asleep at once; a chain of n threads each waiting for the one before",
  input = { n = mcp.integer() },
  handler = function(a, ctx)
    local fns = {}
    for i = 1, a.n do fns[i] = function() ctx:sleep(0); return i end end
    local got = { mcp.all(fns) }
    local sum = 0
    for i = 1, a.n do sum = sum + got[i] end
    -- thread i waits for thread i-1; the first sleeps: its end wakes the chain
    local prev = mcp.spawn(function() ctx:sleep(0); return 0 end)
    for _ = 1, a.n do
      local p = prev
      prev = mcp.spawn(function() return p:wait() + 1 end)
    end
    -- spawns inside spawns before any wait nest C calls: Lua's limit (about 200) is an error
    local function nest(k) if k == 0 then return 0 end return mcp.spawn(nest, k - 1):wait() + 1 end
    local ok, err = pcall(nest, 1000)
    return { sum = sum, depth = prev:wait(), nested = ok and "no error" or err }
  end,
}
