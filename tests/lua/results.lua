-- The values a handler returns to say what it means: mcp.result, mcp.fail,
-- mcp.rpc_error and the content helpers (README, "Results").
local mcp = require "mcp"
local expect = require "expect"
local json = expect.json

-- mcp.result keeps what it is given, under MCP's names (structured = structuredContent)
json(mcp.result { content = "said", structured = { n = 1 } }, '{"content":"said","structuredContent":{"n":1}}')
json(mcp.result { structuredContent = { n = 2 }, isError = true, _meta = { k = "v" } },
  '{"structuredContent":{"n":2},"isError":true,"_meta":{"k":"v"}}')
-- mcp.fail formats its message, and is an isError result
json(mcp.fail("no %s today", "gifts"), '{"content":"no gifts today","isError":true}')
json(mcp.fail("100%"), '{"content":"100%","isError":true}')
assert(getmetatable(mcp.fail("x")) == getmetatable(mcp.result {}), "mcp.fail is an mcp.result")

-- mcp.rpc_error: code, message, data; its tostring says what it is
local e = mcp.rpc_error(-32001, "custom rpc", { why = "test" })
json(e, '{"code":-32001,"message":"custom rpc","data":{"why":"test"}}')
expect.equal(tostring(e), "JSON-RPC error -32001: custom rpc")
expect.fails("the code must be an integer", mcp.rpc_error, 1.5, "x")

-- content blocks
json(mcp.text("hi"), '{"type":"text","text":"hi"}')
json(mcp.text(42), '{"type":"text","text":"42"}')
json(mcp.text("hi", { annotations = { priority = 1 } }), '{"type":"text","text":"hi","annotations":{"priority":1}}')
json(mcp.image("\0\1\2\255", "image/png"), '{"type":"image","data":"AAEC/w==","mimeType":"image/png"}')
json(mcp.link { uri = "test://x", name = "x" }, '{"type":"resource_link","uri":"test://x","name":"x"}')
json(mcp.embed { uri = "test://n", text = "t", mime = "text/plain" },
  '{"type":"resource","resource":{"uri":"test://n","text":"t","mimeType":"text/plain"}}')
json(mcp.embed { uri = "test://b", blob = "\0\1\2\255" }, '{"type":"resource","resource":{"uri":"test://b","blob":"AAEC/w=="}}')

-- prompt messages
json(mcp.user("hello"), '{"role":"user","content":{"type":"text","text":"hello"}}')
json(mcp.assistant("hi"), '{"role":"assistant","content":{"type":"text","text":"hi"}}')
