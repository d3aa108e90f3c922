-- app.lua — the fixture app for the official MCP conformance suite
-- (@modelcontextprotocol/conformance, pinned in tests/package.json).
-- Every tool, resource and prompt here is one the suite's server scenarios
-- call by name; see tests/conformance/README.md for which scenario uses what.
return {
  name = "luamcp-conformance",
  version = "1.0.0",
  title = "luamcp conformance fixtures",
  description = "The tools, resources and prompts the MCP conformance suite calls",
  instructions = "Test fixture for the MCP conformance suite; every primitive exists for one scenario.",
}
