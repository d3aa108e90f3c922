-- prompts.lua — a prompt with a required and an optional (completable) argument.
local mcp = require "mcp"

mcp.prompt {
  name = "code_review",
  title = "Code review",
  description = "Asks for a review of a piece of code",
  args = {
    code = mcp.string { description = "The code to review" },
    language = mcp.enum { "lua", "c", "javascript", optional = true },
  },
  get = function(args)
    return mcp.user(("Review this %s code:\n%s"):format(args.language or "unknown", args.code))
  end,
}
