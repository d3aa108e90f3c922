-- views.lua — widgets and tools of every visibility.
local mcp = require "mcp"

-- Every _meta.ui field. connectDomains lets the view reach any port of
-- 127.0.0.1 (the browser test's host serves /ping there); nothing else.
mcp.widget {
  uri = "ui://probe/view.html",
  file = "probe.html",
  title = "Probe",
  description = "Shows what the host sent it",
  csp = {
    connectDomains = { "http://127.0.0.1:*" },
    resourceDomains = { "https://cdn.example.org" },
  },
  permissions = { clipboardWrite = true },
  domain = "probe.widgets.example",
  prefersBorder = false,
}

-- No metadata at all, HTML given inline.
mcp.widget {
  uri = "ui://probe/inline.html",
  html = [[<!doctype html>
<html><head><meta charset="utf-8"><title>Inline</title></head>
<body><p id="hello">inline view</p><script src="luamcp:view.js"></script></body></html>
]],
}

-- A file in a subfolder of widgets/.
mcp.widget { uri = "ui://probe/nested.html", file = "parts/nested.html", prefersBorder = true }

mcp.state.app_calls = mcp.state.app_calls or 0

mcp.tool {
  name = "show_probe",
  description = "Shows the probe view with the text it was given",
  input = { text = mcp.string { optional = true } },
  ui = "ui://probe/view.html",
  handler = function(args)
    return mcp.result { content = "probe: " .. (args.text or ""), structured = { text = args.text or "" } }
  end,
}

mcp.tool {
  name = "model_only",
  description = "For the model only: views may not call it",
  visibility = { "model" },
  handler = function() return "model_only ran" end,
}

mcp.tool {
  name = "app_only",
  description = "For views only: the model never sees it",
  visibility = { "app" },
  ui = "ui://probe/view.html",
  handler = function()
    mcp.state.app_calls = mcp.state.app_calls + 1
    return mcp.result { content = "app_only ran", structured = { calls = mcp.state.app_calls } }
  end,
}

mcp.tool {
  name = "both",
  description = "Visible to the model and to views, said explicitly",
  visibility = { "model", "app" },
  handler = function() return "both ran" end,
}

mcp.tool {
  name = "plain",
  description = "A tool without any UI",
  handler = function() return "plain ran" end,
}
