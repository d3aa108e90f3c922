-- app.lua — a view written against the official App class of
-- @modelcontextprotocol/ext-apps (not luamcp's view helper), inlined as the
-- README says (tests/browser/appclass.test.mjs). widgets/ext-apps.js is not
-- in the repository: the test makes it in a temp copy of this folder with
-- make-ext-apps.mjs (node tests/apps/appclass/make-ext-apps.mjs DIR), which
-- also explains the one line it adds to the README's recipe.
return {
  name = "luamcp-test-appclass",
  version = "1.0.0",
  instructions = "Test fixture: a view built on the App class of @modelcontextprotocol/ext-apps.",
}
