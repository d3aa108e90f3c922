-- redis.lua — mcp.redis (core/io/io_redis.c) as a leaderboard and a cart
-- use it: each tool answers JSON of what it got, for
-- tests/integration/redis.test.mjs.
local mcp = require "mcp"
local redis = mcp.redis

local function json(v) return mcp.json.encode(v) end

mcp.tool {
  name = "types",
  description = "Sorted sets, hashes, lists, nested arrays, nil.",
  input = { k = mcp.string() },
  handler = function(args)
    local k = args.k
    local out = {}
    out.zadd = redis("ZADD", k .. ":top", 10, "ann", 30, "bob", 20.5, "cy")
    out.zincr = redis("ZINCRBY", k .. ":top", 1, "ann")
    out.top = redis("ZREVRANGE", k .. ":top", 0, 9, "WITHSCORES")
    out.hset = redis("HSET", k .. ":cart", "apple", 3, "pear", "1")
    out.cart = redis("HGETALL", k .. ":cart")
    out.rpush = redis("RPUSH", k .. ":l", "x", "y", "z")
    out.list = redis("LRANGE", k .. ":l", 0, -1)
    out.empty = redis("LRANGE", k .. ":none", 0, -1)
    out.set = redis("SET", k .. ":s", "v")
    out.get_nil = redis("GET", k .. ":missing") == nil
    out.mget = redis("MGET", k .. ":s", k .. ":missing", k .. ":s")
    out.nested = redis("EVAL", "return {1, {'a', {'b', 2}}, 'c'}", 0)
    out.info = redis("COMMAND", "INFO", "get")
    return json(out)
  end,
}

mcp.tool {
  name = "raise",
  description = "An error reply at the script's line, raised and caught.",
  input = { k = mcp.string() },
  handler = function(args)
    redis("SET", args.k, "text")
    local ok, err = pcall(redis, "LPUSH", args.k, "x")   -- WRONGTYPE
    local ok2, err2 = pcall(function() return redis("NOSUCHCOMMAND", 1) end)
    return json { ok = ok, err = err, ok2 = ok2, err2 = err2 }
  end,
}

mcp.tool {
  name = "uncaught",
  description = "An error reply nobody catches.",
  handler = function()
    return redis("INCR")
  end,
}

mcp.tool {
  name = "pipeline",
  description = "INCR, RPUSH, ZINCRBY with an error in the middle; both forms.",
  input = { k = mcp.string() },
  handler = function(args)
    local k = args.k
    redis("SET", k .. ":str", "text")
    local a = redis.pipeline(function(p)
      p("INCR", k .. ":n")
      p("RPUSH", k .. ":l", "x")
      p("INCR", k .. ":str")          -- ERR value is not an integer
      p("ZINCRBY", k .. ":z", 2.5, "m")
      p("GET", k .. ":missing")
    end)
    local b = redis.pipeline {
      { "MULTI" }, { "INCR", k .. ":n" }, { "RPUSH", k .. ":l", "y" }, { "INCR", k .. ":str" }, { "EXEC" },
    }
    local empty = redis.pipeline {}
    return json { a = a, b = b, empty = empty, null_is_null = a[5] == mcp.null }
  end,
}

mcp.tool {
  name = "refused",
  description = "Commands that would break the shared connection.",
  handler = function()
    local out = {}
    for _, c in ipairs {
      { "BLPOP", "q", 0 }, { "SELECT", 1 }, { "subscribe", "ch" }, { "MULTI" }, { "CLIENT", "REPLY", "OFF" },
      { "XREAD", "BLOCK", 0, "STREAMS", "s", "$" }, { "WATCH", "k" }, { "GET", {} }, {},
    } do
      local ok, err = pcall(redis, table.unpack(c))
      out[#out + 1] = ok and "sent" or err
    end
    local ok, err = pcall(redis.pipeline, { { "MULTI" }, { "INCR", "x" } })
    out[#out + 1] = ok and "sent" or err
    ok, err = pcall(redis.pipeline, function(p) p("INCR", "x"); p("BRPOP", "q", 1) end)
    out[#out + 1] = ok and "sent" or err
    return json(out)
  end,
}

mcp.tool {
  name = "cart",
  description = "A pipeline per call: add an item, count, read the cart.",
  input = { k = mcp.string(), item = mcp.string() },
  handler = function(args)
    local r = redis.pipeline(function(p)
      p("HINCRBY", args.k, args.item, 1)
      p("ZINCRBY", args.k .. ":top", 1, args.item)
      p("HLEN", args.k)
    end)
    return tostring(r[1])
  end,
}

mcp.tool {
  name = "peek",
  description = "A key's value (nil: JSON null).",
  input = { k = mcp.string() },
  handler = function(args)
    return json { [args.k] = redis("GET", args.k) or mcp.null }
  end,
}

mcp.tool {
  name = "deep",
  description = "EVAL returning tables n deep.",
  input = { n = mcp.integer() },
  handler = function(args)
    local ok, r = pcall(redis, "EVAL", "return " .. ("{"):rep(args.n) .. "1" .. ("}"):rep(args.n), 0)
    return json { ok = ok, r = r }
  end,
}

mcp.tool {
  name = "biglist",
  description = "A list of 20,000 strings of 100 bytes, read whole.",
  input = { k = mcp.string() },
  handler = function(args)
    local chunk = {}
    for i = 1, 1000 do chunk[i] = ("x"):rep(100) end
    redis.pipeline(function(p)
      p("DEL", args.k)
      for _ = 1, 20 do p("RPUSH", args.k, table.unpack(chunk)) end
    end)
    local ok, r = pcall(redis, "LRANGE", args.k, 0, -1)
    return json { ok = ok, r = ok and #r or r }
  end,
}
