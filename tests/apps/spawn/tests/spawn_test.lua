-- luamcp test's fakes under mcp.spawn / mcp.all: each thread's fakes answer
-- it, and waits that ran beside each other take the longest one's time on
-- the virtual clock, not the sum (run by tests/integration/spawn.test.mjs).
local test = require "mcp.test"
local app = test.app()

local function fakes(delay)
  test.http.route("GET", "http://origin/*", { body = "held", delay = delay })
  test.exec.route({ "sh", "..." }, { code = 0, stdout = "go\n", delay = delay })
  test.socket.peer("127.0.0.1", 7000, function(data)
    if data == "hello\n" then return "world\n" end
  end)
end

local function took(t0, want) -- the clock holds epoch seconds: compare to a microsecond
  local got = test.clock.now() - t0
  test.ok(math.abs(got - want) < 1e-6, ("the virtual clock moved %.6f s, not %g"):format(got, want))
end

local args = { url = "http://origin/hold", pidfile = "/nonexistent/pid", fifo = "/nonexistent/fifo", port = 7000 }

test("mcp.all of three faked waits takes the longest one's time", function()
  fakes(0.2)
  local t0 = test.clock.now()
  local r = app:call("three_all", args)
  test.eq(r.structuredContent, { body = "held", out = "go\n", line = "world" })
  took(t0, 0.2)
  test.eq(#test.http.requests, 1)
  test.eq(#test.exec.runs, 1)
end)

test("mcp.spawn and h:wait() in any order, on the virtual clock", function()
  fakes(0.5)
  local t0 = test.clock.now()
  local r = app:call("three_spawn", args)
  test.eq(r.structuredContent, { body = "held", out = "go\n", line = "world", again = "held" })
  took(t0, 0.5)
end)

test("a thread's error reaches the waiter at its FILE:LINE", function()
  fakes(0)
  local r = app:call("thread_error", { url = "http://origin/x" })
  test.eq(r.isError, true)
  test.match(r.content[1].text, "spawn%.lua:61: the thread failed here")
end)

test("threads beside each other time out at --timeout as one call", function()
  fakes(45) -- each past the call's 30 s
  local r = app:call("three_all", args)
  test.eq(r.isError, true)
  test.match(r.content[1].text, "call timed out after 30 s")
end)
