-- socket.lua — tools over mcp.socket for tests/integration/io-socket.test.mjs:
-- raw exchanges with node servers, a socket shared between calls, and
-- Debian's lua-redis (written for luasocket) talking to a real redis-server.
local mcp = require "mcp"

-- lua-redis does require('socket').tcp() when it connects: hand it mcp.socket
package.loaded.socket = mcp.socket
package.loaded["socket.unix"] = mcp.socket.unix
package.path = "/usr/share/lua/5.3/?.lua;" .. package.path -- Debian ships it for 5.1-5.3
local has_redis, redis = pcall(require, "redis")

local function open(args)
  local s = args.path and mcp.socket.unix() or mcp.socket.tcp()
  if args.timeout then s:settimeout(args.timeout) end
  local ok, err
  if args.path then ok, err = s:connect(args.path)
  else ok, err = s:connect(args.host or "127.0.0.1", args.port) end
  return s, ok, err
end

mcp.tool {
  name = "sock_run",
  description = "Connects, sends, then runs receives; returns what each gave.",
  input = {
    host = mcp.optional(mcp.string()),
    port = mcp.optional(mcp.integer()),
    path = mcp.optional(mcp.string()),
    timeout = mcp.optional(mcp.number()),
    send = mcp.optional(mcp.string()),
    -- each: a pattern ("*l", "*a", "l", "a" or a byte count as a string),
    -- with its own timeout (< 0: none) and prefix
    receive = mcp.optional(mcp.array(mcp.object {
      pattern = mcp.string(),
      timeout = mcp.optional(mcp.number()),
      prefix = mcp.optional(mcp.string()),
    })),
  },
  handler = function(args)
    local s, ok, err = open(args)
    if not ok then return { connect_error = err } end
    local out = { peer = s:getpeername() }
    if args.send then out.sent = s:send(args.send) end
    out.results = mcp.as_array {}
    for _, r in ipairs(args.receive or {}) do
      if r.timeout then s:settimeout(r.timeout) end
      local t0 = mcp.socket.gettime()
      local data, rerr, partial = s:receive(tonumber(r.pattern) or r.pattern, r.prefix)
      out.results[#out.results + 1] = { data = data, err = rerr, partial = partial,
                                        seconds = mcp.socket.gettime() - t0 }
    end
    out.close = s:close()
    out.after_close = select(2, s:receive(1))
    return out
  end,
}

mcp.tool {
  name = "sock_line",
  description = "Connects to 127.0.0.1:port, sends a line, returns the reply line.",
  input = { port = mcp.integer(), text = mcp.optional(mcp.string()) },
  handler = function(args)
    local s <close> = assert(mcp.socket.connect("127.0.0.1", args.port))
    assert(s:send((args.text or "hello") .. "\n"))
    return assert(s:receive("*l"))
  end,
}

mcp.tool {
  name = "sock_bulk",
  description = "Sends `bytes` bytes (and a newline) in one send, then reads a line back.",
  input = { port = mcp.integer(), bytes = mcp.integer(), timeout = mcp.optional(mcp.number()),
            host = mcp.optional(mcp.string()) },
  handler = function(args)
    local s = mcp.socket.tcp()
    if args.timeout then s:settimeout(args.timeout) end
    local ok, cerr = s:connect(args.host or "127.0.0.1", args.port)
    if not ok then return { connect_error = cerr } end
    local data = string.rep("x", args.bytes) .. "\n"
    local sent, err, last = s:send(data)
    local out = { sent = sent, err = err, last = last }
    if sent then out.line, out.rerr = s:receive("*l") end
    s:close()
    return out
  end,
}

-- one socket kept in mcp.state: whichever call uses it parks on it
mcp.tool {
  name = "shared_open",
  input = { port = mcp.integer() },
  handler = function(args)
    mcp.state.shared = assert(mcp.socket.connect("127.0.0.1", args.port))
    return "open"
  end,
}

mcp.tool {
  name = "shared_line",
  description = "Sends text on the shared socket and reads a line.",
  input = { text = mcp.string() },
  handler = function(args)
    local s = mcp.state.shared
    if not s then return { err = "no shared socket" } end
    local sent, serr = s:send(args.text .. "\n")
    if not sent then return { err = serr } end
    local line, err = s:receive("*l")
    return { line = line, err = err }
  end,
}

-- {====== lua-redis through mcp.socket, with a pool of connections kept in
-- mcp.state between calls
local function with_redis(port, fn)
  if not has_redis then error("lua-redis is not installed: " .. tostring(redis)) end
  local pool = mcp.state.redis_pool or {}
  mcp.state.redis_pool = pool
  local key = tostring(port)
  pool[key] = pool[key] or {}
  local client = table.remove(pool[key]) or redis.connect("127.0.0.1", port)
  local r = fn(client)
  local free = pool[key]
  free[#free + 1] = client
  return r
end

mcp.tool {
  name = "redis_set",
  input = { port = mcp.integer(), key = mcp.string(), value = mcp.string() },
  handler = function(a)
    return with_redis(a.port, function(db) return tostring(db:set(a.key, a.value)) end)
  end,
}

mcp.tool {
  name = "redis_get",
  input = { port = mcp.integer(), key = mcp.string() },
  handler = function(a)
    return with_redis(a.port, function(db) return db:get(a.key) or "(nil)" end)
  end,
}

mcp.tool {
  name = "redis_incr",
  input = { port = mcp.integer(), key = mcp.string() },
  handler = function(a)
    return with_redis(a.port, function(db) return tostring(db:incr(a.key)) end)
  end,
}

mcp.tool {
  name = "redis_pool_size",
  input = { port = mcp.integer() },
  handler = function(a)
    local pool = mcp.state.redis_pool and mcp.state.redis_pool[tostring(a.port)] or {}
    return tostring(#pool)
  end,
}
-- }======
