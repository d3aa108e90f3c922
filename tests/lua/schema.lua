-- Schema builders emit JSON Schema 2020-12 (README, "Tools").
local mcp = require "mcp"
local expect = require "expect"
local json = expect.json

json(mcp.string(), '{"type":"string"}')
json(mcp.number(), '{"type":"number"}')
json(mcp.integer(), '{"type":"integer"}')
json(mcp.boolean(), '{"type":"boolean"}')
json(mcp.enum { "a", "b" }, '{"type":"string","enum":["a","b"]}')
json(mcp.array(mcp.number()), '{"type":"array","items":{"type":"number"}}')

-- min/max: length for strings, items for arrays, value for numbers
json(mcp.string { min = 1, max = 3 }, '{"type":"string","minLength":1,"maxLength":3}')
json(mcp.array(mcp.string(), { min = 1, max = 2 }), '{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2}')
json(mcp.integer { min = 1, max = 5 }, '{"type":"integer","minimum":1,"maximum":5}')
-- the JSON Schema names and the descriptive options pass through
json(mcp.number { min = 0, exclusiveMaximum = 10, description = "d", title = "t" },
  '{"type":"number","minimum":0,"exclusiveMaximum":10,"description":"d","title":"t"}')
json(mcp.array(mcp.string(), { uniqueItems = true }), '{"type":"array","items":{"type":"string"},"uniqueItems":true}')
json(mcp.string { format = "email", examples = { "a@b.c" } }, '{"type":"string","format":"email","examples":["a@b.c"]}')
json(mcp.number { default = 3 }, '{"type":"number","default":3}')

-- an object: every field required unless optional = true, mcp.optional(...) or a default;
-- "optional" itself is not a JSON Schema keyword and is not emitted
json(mcp.object { a = mcp.optional(mcp.string()), b = mcp.string { optional = true },
                  c = mcp.integer { default = 1 }, d = mcp.boolean() },
  [[{"type":"object","required":["d"],"properties":{"a":{"type":"string"},"b":{"type":"string"},
     "c":{"type":"integer","default":1},"d":{"type":"boolean"}}}]])
json(mcp.enum { "x", optional = true }, '{"type":"string","enum":["x"]}')
-- nothing required: no "required" at all (not an empty list)
json(mcp.object { a = mcp.optional(mcp.string()) }, '{"type":"object","properties":{"a":{"type":"string"}}}')
-- nested
json(mcp.object { items = mcp.array(mcp.object { id = mcp.integer() }) },
  [[{"type":"object","required":["items"],"properties":{"items":{"type":"array",
     "items":{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}}}}]])

-- mcp.optional copies: the schema it was given stays required where it is used as is
local s = mcp.string()
local o = mcp.optional(s)
assert(o ~= s, "mcp.optional returns a copy")
json(mcp.object { a = o, b = s }, '{"type":"object","required":["b"],"properties":{"a":{"type":"string"},"b":{"type":"string"}}}')
json(mcp.object { b = s }, '{"type":"object","required":["b"],"properties":{"b":{"type":"string"}}}')
expect.fails("mcp.optional expects a schema", mcp.optional, "string")
