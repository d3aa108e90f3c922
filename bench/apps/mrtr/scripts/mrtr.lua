-- The MRTR benchmark app (bench/http/run.sh, luamcp-mrtr): the plain `echo`
-- of bench/apps/echo and `ask`, which asks the client once. Under 2026-07-28
-- a round trip of `ask` is two requests: the first answered input_required
-- (inputRequests.q0 and a signed requestState), the retry with the answer.
local mcp = require "mcp"
mcp.tool {
  name = "echo",
  description = "Echoes the given text back.",
  input = { text = mcp.string { description = "Text to echo" } },
  handler = function(args) return args.text end,
}
mcp.tool {
  name = "ask",
  description = "Asks the client once, then says ok.",
  handler = function(_, ctx)
    ctx:elicit { message = "x", requestedSchema = { type = "object", properties = { a = { type = "string" } } } }
    return "ok"
  end,
}
