-- app.lua — the HTTP integration test app (tests/integration/http*.test.mjs).
return {
  name = "luamcp-test-http",
  version = "0.0.1",
  title = "luamcp HTTP test app",
  instructions = "Test fixture: tools that exercise the Streamable HTTP transport.",
}
