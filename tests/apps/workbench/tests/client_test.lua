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
    test.eq(#l.tools, 12)
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

test("ctx:elicit: a table of fields is the object schema MCP asks for; anything else is the script's error", function()
  local app = test.app()
  local asked
  app:call("ask", {}, { answers = { elicit = function(p) asked = p return "decline" end } })
  test.eq(asked.requestedSchema, { type = "object", properties = { name = { type = "string" } }, required = { "name" } })
  local r = app:call("ask_bad")
  test.eq(r.isError, true)
  test.match(r.content[1].text, "scripts/tools%.lua:%d+: ctx:elicit: the schema must describe an object")
end)

test("every answer is checked against the official MCP schema; test.conforms checks any value", function()
  test.conforms({ content = { { type = "text", text = "x" } } }, "CallToolResult", "2025-11-25")
  local msg = test.raises(function()
    test.conforms({ resultType = "complete", content = { { type = "text", text = "x", annotations = { priority = 7 } } } }, "CallToolResult")
  end)
  test.match(msg, "not a valid 2026%-07%-28 CallToolResult %(the MCP schema%): content%[0%]")
  test.raises(function() test.conforms({}, "NoSuchThing") end, "no NoSuchThing in the 2026-07-28 schema", true)
end)
