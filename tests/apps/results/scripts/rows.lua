local mcp = require "mcp"

-- name -> handler: each returns one kind of value of README's table
local rows = {
  nothing = function() end,
  text = function() return "hello" end,
  number = function() return 42 end,
  boolean = function() return true end,
  block = function() return mcp.text("a block") end,
  blocks = function() return { mcp.text("one"), "two", mcp.link { uri = "test://x", name = "x" } } end,
  record = function() return { id = 1, title = "a" } end,
  records = function() return { { id = 1, title = "a" }, { id = 2, title = "b" } } end,
  as_array = function() return mcp.as_array { { id = 1 } } end,
  empty = function() return {} end,
  result = function() return mcp.result { content = "said", structured = { n = 1 } } end,
  result_structured = function() return mcp.result { structured = { n = 2 } } end,
  fail = function() return mcp.fail("no %s today", "gifts") end,
  mixed = function() return { 1, 2, x = 3 } end,
  records_and_blocks = function() return { { id = 1 }, mcp.text("x") } end,
  fn = function() return print end,
  thread = function() return coroutine.create(print) end,
  nan = function() return { score = 0 / 0 } end,
  deep_nan = function() return { items = { { ok = 1 }, { score = 1 / 0 } } } end,
  cycle = function() local t = {} t.self = t return t end,
  bad_block = function() return { type = "image", data = 5 } end,
  nested_fn = function() return { f = print } end,
  nested_mixed = function() return { items = { 1, x = 2 } } end,
  err_string = function() error("went wrong") end,
  err_level0 = function() error("no position", 0) end,
  err_table = function() error({ code = 42 }) end,
  err_message = function() error({ message = "table message" }) end,
  err_tostring = function() error(setmetatable({}, { __tostring = function() return "from tostring" end })) end,
  err_tostring_loops = function() error(setmetatable({}, { __tostring = function() while true do end end })) end,
  err_nil = function() error() end,
  err_runtime = function() local t = nil; return t.x end,
  rpc = function() error(mcp.rpc_error(-32001, "custom rpc", { why = "test" })) end,
  register = function() mcp.tool { name = "late", handler = print } return "registered" end,
}
for name, handler in pairs(rows) do
  mcp.tool { name = name, description = "row " .. name, handler = handler }
end

mcp.tool {
  name = "checked",
  output = { items = mcp.array(mcp.object { id = mcp.integer() }) },
  handler = function(args) return args.bad and { items = { { id = "x" } } } or { items = { { id = 1 } } } end,
  input = { bad = mcp.optional(mcp.boolean()) },
}

-- a tool whose output is a list (issue 24, rough edge 1), declared two ways
mcp.tool {
  name = "list_out",
  description = "a list with a declared array output",
  output = mcp.array(mcp.object { id = mcp.integer() }),
  input = { bad = mcp.optional(mcp.boolean()) },
  handler = function(args) return args.bad and { { id = "x" } } or { { id = 1 }, { id = 2 } } end,
}
mcp.tool {
  name = "list_result",
  description = "a list with output = { result = array }",
  output = { result = mcp.array(mcp.integer()) },
  handler = function() return { 1, 2, 3 } end,
}
mcp.tool {
  name = "count_out",
  description = "a single number with a declared output",
  output = mcp.integer(),
  handler = function() return 7 end,
}

-- Lua's idiom for a failure (rough edge 2)
mcp.tool { name = "nil_msg", description = "return nil, msg", handler = function() return nil, "could not find it" end }
mcp.resource {
  uri = "test://nil-msg", name = "nil_msg", description = "return nil, msg",
  read = function() return nil, "the disk is gone" end,
}
