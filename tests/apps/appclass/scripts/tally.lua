-- tally.lua — a counter with a view: `tally` shows a label and a count, the
-- view's button calls the app-only `bump` through the host.
local mcp = require "mcp"

local VIEW = "ui://appclass/tally.html"

-- no csp: the view runs under the spec's default policy (no network at all)
mcp.widget { uri = VIEW, file = "tally.html", title = "Tally", prefersBorder = true }

mcp.state.bumps = mcp.state.bumps or 0

mcp.tool {
  name = "tally",
  description = "Shows a labelled count",
  input = { label = mcp.string { min = 1 }, count = mcp.integer { min = 0 } },
  ui = VIEW,
  handler = function(args)
    return mcp.result {
      content = ("%s: %d"):format(args.label, args.count),
      structured = { label = args.label, count = args.count, served_by = _VERSION },
    }
  end,
}

mcp.tool {
  name = "bump",
  description = "Adds `by` to a count (called from the view)",
  input = { label = mcp.string { min = 1 }, count = mcp.integer { min = 0 }, by = mcp.integer { min = 1 } },
  visibility = { "app" },
  ui = VIEW,
  handler = function(args, ctx)
    mcp.state.bumps = mcp.state.bumps + 1
    ctx:info("bump %s: %d + %d (bump #%d)", args.label, args.count, args.by, mcp.state.bumps)
    local count = args.count + args.by
    return mcp.result {
      content = ("%s: %d"):format(args.label, count),
      structured = { label = args.label, count = count, served_by = _VERSION, bumps = mcp.state.bumps },
    }
  end,
}
