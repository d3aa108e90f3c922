-- mcp.upstream and mcp.client at load (lua/client.lua): declarations are
-- checked field by field, with the error at the author's line; a client is
-- one per name; using one needs a call.
local mcp = require "mcp"
local expect = require "expect"

expect.equal(mcp.upstream { name = "web", url = "https://example.com/mcp", headers = { Authorization = "Bearer t" } }, "web")
expect.equal(mcp.upstream { name = "kid", command = { "prog", "--flag" }, env = { A = "1", B = false }, cwd = "/tmp" }, "kid")
expect.fails("upstream 'web' is declared twice", mcp.upstream, { name = "web", url = "https://example.com/mcp" })
expect.fails("give url = ", mcp.upstream, { name = "none" })
expect.fails("give url = ", mcp.upstream, { name = "both", url = "http://x/", command = { "x" } })
expect.fails("url must be an http:// or https:// URL", mcp.upstream, { name = "ftp", url = "ftp://x/" })
expect.fails("name must be letters", mcp.upstream, { name = "a b", url = "http://x/" })
expect.fails("unknown field 'bogus'", mcp.upstream, { name = "u", url = "http://x/", bogus = 1 })
expect.fails("headers are for url = upstreams", mcp.upstream, { name = "h", command = { "x" }, headers = { A = "b" } })
expect.fails("env and cwd are for command = upstreams", mcp.upstream, { name = "e", url = "http://x/", env = { A = "b" } })
expect.fails("command%[2%] must be a string", mcp.upstream, { name = "c", command = { "x", 3 } })
expect.fails("headers.A holds a NUL or a line break", mcp.upstream, { name = "n", url = "http://x/", headers = { A = "b\r\nC: d" } })
expect.fails('revision must be "2025%-11%-25" or "2026%-07%-28"', mcp.upstream, { name = "r", url = "http://x/", revision = "2024-11-05" })
expect.fails("max_message must be a whole number", mcp.upstream, { name = "m", command = { "x" }, max_message = 10 })

local c = mcp.client("web")
expect.equal(mcp.client("web") == c, true)
expect.equal(tostring(c), "mcp.client(web)")
expect.fails("no upstream 'nope'", mcp.client, "nope")
expect.fails("an ad%-hoc client takes url =", mcp.client, { headers = {} })
expect.fails("use c:call%(...%), with a colon", c.call, "tool", {})
expect.fails("kind must be", c.list, c, "widgets")
-- a request needs a call (nothing is started at load)
local ok, err = pcall(c.call, c, "tool", {})
expect.equal(ok, false)
expect.equal(err.upstream, "web")
expect.equal(tostring(err):match("^upstream web: .*only a handler can wait") ~= nil, true)
