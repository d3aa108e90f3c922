-- The JSON mapping (README, "Results"): integers stay integers, floats
-- round-trip, mcp.null is null, an empty table is {} unless mcp.as_array
-- marks it.
local mcp = require "mcp"
local expect = require "expect"
local encode, decode = mcp.json.encode, mcp.json.decode

expect.equal(encode({}), "{}")
expect.equal(encode(mcp.as_array {}), "[]")
expect.equal(encode(setmetatable({}, mcp.array_mt)), "[]")
local t = {}
assert(mcp.as_array(t) == t, "mcp.as_array marks the table it is given")
assert(getmetatable(mcp.as_array()) == mcp.array_mt, "mcp.as_array() makes a new one")
expect.equal(encode({ 1, 2, 3 }), "[1,2,3]")
expect.equal(encode({ mcp.null }), "[null]")
expect.equal(encode({ a = mcp.null }), '{"a":null}')
assert(mcp.null == require("cjson").null, "mcp.null is cjson.null")

-- numbers
expect.equal(encode(3), "3")
expect.equal(encode(-7), "-7")
expect.equal(encode(math.maxinteger), "9223372036854775807")
expect.equal(encode(2 ^ 53), "9007199254740992")  -- a float with an integral value
expect.equal(encode(0.1), "0.1")
expect.equal(encode(0.5), "0.5")
expect.equal(decode(encode(1 / 3)), 1 / 3)
expect.fails("cannot encode NaN or infinity", encode, 0 / 0)
expect.fails("cannot encode NaN or infinity", encode, { x = 1 / 0 })

-- decoding: integers as integers (every digit), floats as floats, null as mcp.null,
-- arrays marked so that they encode back as arrays
expect.equal(math.type(decode("3")), "integer")
expect.equal(math.type(decode("3.0")), "float")
expect.equal(decode("123456789012345678"), 123456789012345678)
assert(decode("null") == mcp.null)
assert(getmetatable(decode("[]")) == mcp.array_mt)
expect.equal(encode(decode("[]")), "[]")
expect.equal(encode(decode('{"a":[]}')), '{"a":[]}')
expect.json(decode('{"a":[1,2.5,null],"b":{"c":"é"}}'), '{"a":[1,2.5,null],"b":{"c":"é"}}')

-- strings: escapes and UTF-8 both ways
expect.equal(decode('"a\\"b\\u00e9\\ud83c\\udf89"'), 'a"bé🎉')
expect.equal(decode(encode('tab\tnl\n"q"\\')), 'tab\tnl\n"q"\\')

-- base64
expect.equal(mcp.base64.encode("\0\1\2\255"), "AAEC/w==")
expect.equal(mcp.base64.decode("AAEC/w=="), "\0\1\2\255")
