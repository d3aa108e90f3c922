-- app.lua — the MCP Apps test app: views with and without metadata, and
-- tools of each visibility (tests/integration/widgets.test.mjs, tests/browser).
return {
  name = "luamcp-test-widgets",
  version = "1.0.0",
  instructions = "Test fixture for MCP Apps (widgets and tool visibility).",
}
