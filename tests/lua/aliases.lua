-- Every field luamcp names differently from MCP takes either spelling, the
-- same way everywhere, and both at once is an error naming the field pair.
local mcp = require "mcp"
local expect = require "expect"
local json = expect.json

local function both(fn, def, ours, theirs)
  expect.fails(("give '%s' or '%s', not both"):format(ours, theirs), fn, def)
end
local noop = function() end

-- mcp.tool: input/inputSchema, output/outputSchema
mcp.tool { name = "by_input", input = { a = mcp.string() }, handler = noop }
mcp.tool { name = "by_inputSchema", inputSchema = { type = "object" }, handler = noop }
both(mcp.tool, { name = "t1", input = {}, inputSchema = { type = "object" }, handler = noop }, "input", "inputSchema")
both(mcp.tool, { name = "t2", output = {}, outputSchema = { type = "object" }, handler = noop }, "output", "outputSchema")
-- mcp.prompt: args/arguments
both(mcp.prompt, { name = "p1", args = {}, arguments = {}, get = noop }, "args", "arguments")
-- mcp.resource and mcp.template: mime/mimeType; mcp.template: uri/uriTemplate
mcp.resource { uri = "test://a", name = "a", mimeType = "text/plain", read = noop }
both(mcp.resource, { uri = "test://b", name = "b", mime = "text/plain", mimeType = "text/plain", read = noop }, "mime", "mimeType")
both(mcp.template, { uri = "test://t/{x}", uriTemplate = "test://t/{x}", name = "t", read = noop }, "uri", "uriTemplate")
both(mcp.template, { uri = "test://u/{x}", name = "u", mime = "a/b", mimeType = "a/b", read = noop }, "mime", "mimeType")
-- content helpers and results
json(mcp.link { uri = "test://x", name = "x", mimeType = "text/plain" },
  '{"type":"resource_link","uri":"test://x","name":"x","mimeType":"text/plain"}')
json(mcp.link { uri = "test://x", name = "x", mime = "text/plain" },
  '{"type":"resource_link","uri":"test://x","name":"x","mimeType":"text/plain"}')
both(mcp.link, { uri = "test://x", name = "x", mime = "a/b", mimeType = "a/b" }, "mime", "mimeType")
both(mcp.embed, { uri = "test://x", text = "t", mime = "a/b", mimeType = "a/b" }, "mime", "mimeType")
both(mcp.result, { structured = {}, structuredContent = {} }, "structured", "structuredContent")
-- schema builders: min/max and the keyword they stand for
json(mcp.string { min = 1 }, '{"type":"string","minLength":1}')
both(mcp.string, { min = 1, minLength = 2 }, "min", "minLength")
both(mcp.number, { max = 1, maximum = 2 }, "max", "maximum")
both(mcp.array, { min = 1, minItems = 1 }, "min", "minItems")
