-- app.lua — the integration test app: one small script per feature.
return {
  name = "luamcp-test-features",
  version = "1.2.3",
  title = "luamcp test features",
  description = "Tools, prompts and resources the integration suite exercises",
  websiteUrl = "https://example.org/luamcp",
  instructions = "Test fixture: every tool here exists to exercise one server feature.",
}
