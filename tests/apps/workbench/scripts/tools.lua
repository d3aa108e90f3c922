local mcp = require "mcp"

-- mcp.http: an API that answers JSON
mcp.tool {
  name = "weather", description = "Today's weather in a city.",
  input = { city = mcp.string() },
  output = { city = mcp.string(), temp = mcp.number() },
  handler = function(args)
    local r = mcp.http.get("https://api.example.com/weather?city=" .. args.city, { timeout = 5 })
    if r.status == 404 then return nil, "no such city: " .. args.city end
    if r.status ~= 200 then return mcp.fail("the weather service answered %d", r.status) end
    return { city = args.city, temp = r.json.temp }
  end,
}

mcp.tool {
  name = "post_note", description = "Posts a note.",
  input = { text = mcp.string() },
  handler = function(args)
    local r = mcp.http.post("https://api.example.com/notes", { text = args.text }, { headers = { Authorization = "Bearer k" } })
    return "posted as " .. r.json.id
  end,
}

-- mcp.exec: a command
mcp.tool {
  name = "last_commit", description = "The last commit's subject.",
  handler = function()
    local r = mcp.exec { "git", "log", "-1", "--format=%s", timeout = 10 }
    if r.timed_out then return mcp.fail("git took too long") end
    if r.code ~= 0 then return mcp.fail("git: %s", r.stderr) end
    return (r.stdout:gsub("\n$", ""))
  end,
}

-- mcp.socket: a line protocol (Redis' inline PING)
mcp.tool {
  name = "ping_redis", description = "PING a Redis.",
  handler = function()
    local s, err = mcp.socket.connect("127.0.0.1", 6379)
    if not s then return mcp.fail("redis: %s", err) end
    s:settimeout(1)
    s:send("PING\r\n")
    local line, rerr = s:receive("*l")
    s:close()
    return line or mcp.fail("redis: %s", rerr)
  end,
}

-- mcp.store and a TTL: a rate limit of 2 calls a minute
mcp.tool {
  name = "limited", description = "At most 2 calls a minute.",
  handler = function()
    local n = mcp.store.incr("limited", 1, 60)
    if n > 2 then return mcp.fail("over the limit (%d)", n) end
    return "call " .. n
  end,
}

-- mcp.redis: a leaderboard (a command, a pipeline with an error reply)
mcp.tool {
  name = "score", description = "Adds to a player's score; the top 3.",
  input = { player = mcp.string(), points = mcp.number() },
  handler = function(args)
    local r = mcp.redis.pipeline(function(p)
      p("zincrby", "top", args.points, args.player)
      p("INCR", "not-a-counter")
    end)
    local top = mcp.redis("ZREVRANGE", "top", 0, 2, "WITHSCORES")
    local ok, err = pcall(mcp.redis, "BLPOP", "q", 0)
    return { score = r[1], error = r[2].err, top = top, refused = err }
  end,
}

-- ctx:sleep and os.time on the virtual clock
mcp.tool {
  name = "slow", description = "Waits, then says how long.",
  input = { seconds = mcp.number() },
  handler = function(args, ctx)
    local t0 = os.time()
    ctx:sleep(args.seconds)
    return ("waited %d s"):format(os.time() - t0)
  end,
}

-- questions to the client
mcp.tool {
  name = "ask", description = "Asks the user and the model.",
  handler = function(_, ctx)
    local who = ctx:elicit { message = "Your name?", schema = { name = mcp.string() } }
    if who.action ~= "accept" then return "no name" end
    local s = ctx:sample { messages = { mcp.user("A colour for " .. who.content.name) }, maxTokens = 10 }
    local roots = ctx:roots()
    return ("%s likes %s (%d roots)"):format(who.content.name, s.content.text, #roots)
  end,
}

-- who is calling
mcp.tool {
  name = "whoami", description = "The caller.", scopes = { "profile" },
  handler = function(_, ctx) return ctx.auth and ctx.auth.subject or "nobody" end,
}

mcp.tool {
  name = "revision", description = "The revision the client speaks.",
  handler = function(_, ctx) return ctx.protocol_version end,
}

mcp.state.count = mcp.state.count or 0
mcp.tool {
  name = "count", description = "Counts calls in this state.",
  handler = function() mcp.state.count = mcp.state.count + 1 return mcp.state.count end,
}

mcp.resource { uri = "mcp://workbench/readme", name = "readme", read = function() return "# workbench" end }
mcp.prompt {
  name = "greet", description = "A greeting.",
  args = { city = mcp.string { complete = function(v) return { v .. "ville", v .. "burg" } end } },
  get = function(a) return "Greet " .. a.city end,
}

mcp.tool {
  name = "ask_bad", description = "Asks with a schema that is not one.",
  handler = function(_, ctx) return ctx:elicit { message = "?", schema = mcp.string() } end,
}
