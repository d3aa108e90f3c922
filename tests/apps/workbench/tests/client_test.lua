-- The client: both revisions, questions answered, identities, every method.
local test = require "mcp.test"

for _, revision in ipairs { "2025-11-25", "2026-07-28" } do
  local app = test.app { revision = revision }

  test(revision .. ": the revision spoken", function()
    test.eq(app:call("revision").content[1].text, revision)
  end)

  test(revision .. ": questions answered from opts.answers", function()
    local r = app:call("ask", {}, { answers = {
      elicit = { name = "Ada" },
      sample = function(params) test.eq(params.maxTokens, 10) return "teal" end,
      roots = { "file:///tmp", "file:///srv" },
    } })
    test.eq(r.content[1].text, "Ada likes teal (2 roots)")
    test.eq(app:call("ask", {}, { answers = { elicit = "decline" } }).content[1].text, "no name")
  end)

  test(revision .. ": an identity with scopes", function()
    test.eq(app:call("whoami").content[1].text, "nobody") -- no identity: scopes do not apply
    local _, err = app:call("whoami", {}, { as = { subject = "bob", scopes = { "email" } } })
    test.eq(err.code, -32043)
    test.eq(err.data, { scope = "email profile" }) -- what to ask for: what it holds and what it lacks
    local r = app:call("whoami", {}, { as = { subject = "ada", scopes = { "profile" } } })
    test.eq(r.content[1].text, "ada")
  end)

  test(revision .. ": read, prompt, complete, list", function()
    test.eq(app:read("mcp://workbench/readme").contents[1].text, "# workbench")
    test.eq(app:prompt("greet", { city = "Oslo" }).messages[1].content.text, "Greet Oslo")
    test.eq(app:complete({ prompt = "greet" }, "city", "Spring"), { "Springville", "Springburg" })
    local l = app:list()
    test.eq(#l.tools, 10)
    test.eq(l.resources[1].uri, "mcp://workbench/readme")
    local _, err = app:call("nope")
    test.eq(err.code, -32602)
  end)
end

test("the state of the app lives as long as the file", function()
  local app = test.app()
  local first = tonumber(app:call("count").content[1].text)
  test.eq(tonumber(app:call("count").content[1].text), first + 1)
end)
