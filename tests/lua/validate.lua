-- mcp.validate(schema, value [, opts]): the validator tools use; true, or
-- false and a message naming where.
local mcp = require "mcp"
local expect = require "expect"

local function valid(schema, value, opts)
  local ok, msg = mcp.validate(schema, value, opts)
  if not ok then error("refused: " .. tostring(msg), 2) end
end
local function refused(schema, value, want, opts)
  local ok, msg = mcp.validate(schema, value, opts)
  if ok then error("accepted, expected: " .. want, 2) end
  expect.equal(msg, want)
end

valid(mcp.integer { min = 1 }, 1)
refused(mcp.integer { min = 1 }, 0, "must be >= 1")
refused(mcp.integer(), 2.5, "expected integer, got number")
valid(mcp.number(), 3)
refused(mcp.string { max = 2 }, "abc", "must be at most 2 characters long")

local point = mcp.object { x = mcp.integer(), label = mcp.optional(mcp.string()) }
valid(point, { x = 1 })
valid(point, { x = 1, label = "a" })
refused(point, {}, "missing required property 'x'")
refused(point, { x = "1" }, "x: expected integer, got string")
refused(mcp.object { n = mcp.integer { min = 1 } }, { n = 0 }, "n: must be >= 1")

-- arrays: a Lua list, or mcp.as_array for an empty one; the message names the index
valid(mcp.array(mcp.integer()), { 1, 2 })
valid(mcp.array(mcp.integer()), mcp.as_array {})
refused(mcp.array(mcp.integer()), mcp.as_array { 1, 2.5 }, "[1]: expected integer, got number")

-- raw JSON Schema works the same
refused({ type = "object", required = { "x" } }, {}, "missing required property 'x'")
valid({ type = "string", pattern = "^[a-z]+$" }, "abc")
refused({ type = "string", enum = { "a", "b" } }, "c", "must be one of \"a\", \"b\"")

-- format is an annotation unless asked to assert
valid(mcp.string { format = "email" }, "nope")
refused(mcp.string { format = "email" }, "nope", "must be a valid email", { format = "assert" })
valid(mcp.string { format = "email" }, "a@example.org", { format = "assert" })
