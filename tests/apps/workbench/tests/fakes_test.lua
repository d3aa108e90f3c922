-- Every fake of luamcp test, as an author would use them.
local test = require "mcp.test"
local app = test.app()

test("mcp.http: a route answers JSON, and the request is recorded", function()
  test.http.route("GET", "https://api.example.com/weather?city=*", { json = { temp = 21.5 } })
  local r = app:call("weather", { city = "Berlin" })
  test.eq(r.structuredContent, { city = "Berlin", temp = 21.5 })
  test.eq(#test.http.requests, 1)
  test.eq(test.http.requests[1].url, "https://api.example.com/weather?city=Berlin")
end)

test("mcp.http: a status, and a route that is a function of the request", function()
  test.http.route("GET", "https://api.example.com/weather*", { status = 404 })
  local r = app:call("weather", { city = "Atlantis" })
  test.eq(r.isError, true)
  test.eq(r.content[1].text, "no such city: Atlantis")
  test.http.route("POST", "https://api.example.com/notes", function(req)
    test.eq(req.json, { text = "hi" })
    test.eq(req.headers.authorization, "Bearer k")
    return { status = 201, json = { id = "n1" } }
  end)
  test.eq(app:call("post_note", { text = "hi" }).content[1].text, "posted as n1")
end)

test("mcp.http: a slow upstream times out on the virtual clock", function()
  test.http.route("GET", "https://api.example.com/*", { json = { temp = 1 }, delay = 30 })
  local t0 = test.clock.now()
  local r = app:call("weather", { city = "Slow" })
  test.eq(r.isError, true)
  test.match(r.content[1].text, "mcp%.http: Timeout was reached")
  test.eq(test.clock.now() - t0, 5) -- the request's timeout, not 30 s
end)

test("mcp.exec: argv patterns, exit codes, a timeout", function()
  test.exec.route({ "git", "log", "..." }, { stdout = "Fix the thing\n" })
  test.eq(app:call("last_commit").content[1].text, "Fix the thing")
  test.eq(test.exec.runs[1].argv, { "git", "log", "-1", "--format=%s" })
  test.exec.route("git log *", { code = 128, stderr = "not a git repository" })
  test.eq(app:call("last_commit").content[1].text, "git: not a git repository")
  test.exec.route({ "git", "..." }, { delay = 60 })
  test.eq(app:call("last_commit").content[1].text, "git took too long")
end)

test("mcp.socket: a scripted peer", function()
  test.socket.peer("127.0.0.1", 6379, function(data)
    if data == "PING\r\n" then return "+PONG\r\n" end
  end)
  test.eq(app:call("ping_redis").content[1].text, "+PONG")
  test.socket.peer("127.0.0.1", 6379, false)
  test.eq(app:call("ping_redis").content[1].text, "redis: connection refused")
end)

test("mcp.store: in memory, TTLs on the virtual clock", function()
  test.eq(app:call("limited").content[1].text, "call 1")
  test.eq(app:call("limited").content[1].text, "call 2")
  test.eq(app:call("limited").isError, true)
  test.eq(test.store.dump(), { limited = "3" })
  test.clock.advance(61)
  test.eq(app:call("limited").content[1].text, "call 1")
end)

test("mcp.redis: answered by the test's function, refused as served", function()
  test.redis.fake(function(cmd, ...)
    if cmd == "ZINCRBY" then return "12.5" end
    if cmd == "INCR" then return nil, "ERR value is not an integer or out of range" end
    if cmd == "ZREVRANGE" then return { "ann", "12.5", "bob", "3" } end
  end)
  local r = app:call("score", { player = "ann", points = 2.5 })
  test.eq(r.structuredContent.score, "12.5")
  test.eq(r.structuredContent.error, "ERR value is not an integer or out of range")
  test.eq(r.structuredContent.top, { "ann", "12.5", "bob", "3" })
  test.match(r.structuredContent.refused, "tools.lua:%d+: mcp.redis: BLPOP is refused")
  test.eq(test.redis.commands, { { "ZINCRBY", "top", "2.5", "ann" }, { "INCR", "not-a-counter" },
                                 { "ZREVRANGE", "top", "0", "2", "WITHSCORES" } })
end)

test("ctx:sleep and os.time: a 25 s wait takes no time", function()
  test.eq(app:call("slow", { seconds = 25 }).content[1].text, "waited 25 s")
end)

test("the virtual clock and --timeout: a handler that sleeps past it times out, as when served", function()
  local t0 = test.clock.now()
  local r = app:call("slow", { seconds = 40 })
  test.eq(r.isError, true)
  test.eq(r.content[1].text, "call timed out after 30 s") -- the engine's own words
  test.eq(test.clock.now() - t0, 40)
  test.eq(app:call("slow", { seconds = 20 }).content[1].text, "waited 20 s") -- each call has its own 30 s
  -- an upstream slower than the call may wait, with no timeout of its own
  test.http.route("POST", "https://api.example.com/notes", { json = { id = "n" }, delay = 45 })
  local w = app:call("post_note", { text = "x" })
  test.eq(w.content[1].text, "call timed out after 30 s")
end)
