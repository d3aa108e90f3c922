-- luamcp test . : the gift server's own tests (scripts/gifts.lua), as an
-- author writes them. `make test` runs them (ctest luamcp-test.gift).
local mcp = require "mcp"
local test = require "mcp.test"
local app = test.app()

test("suggest_gifts: the gifts that fit, cheapest first, as text and data", function()
  local r = app:call("suggest_gifts", { occasion = "birthday", budget = 30 })
  test.eq(r.content[1].text, "2 gift ideas:\n- Dice set ($20)\n- Loose-leaf tea sampler ($28)")
  test.eq(r.structuredContent.gifts, { { id = "dice", name = "Dice set", price = 20 },
                                       { id = "tea", name = "Loose-leaf tea sampler", price = 28 } })
end)

test("suggest_gifts: nothing fits, so the model is told what to change", function()
  local r = app:call("suggest_gifts", { occasion = "wedding", budget = 5 })
  test.eq(r.isError, true)
  test.match(r.content[1].text, "try a larger budget")
end)

test("suggest_gifts: a budget below zero never reaches the handler", function()
  local r = app:call("suggest_gifts", { occasion = "birthday", budget = -1 })
  test.eq(r.isError, true)
  test.match(r.content[1].text, "budget")
end)

test("shortlist_gift: only a view may call it; the list lives in mcp.state", function()
  local _, err = app:call("shortlist_gift", { id = "tea", on = true })
  test.eq(err.code, -32602) -- a client without MCP Apps
  local view = test.app { ui = true }
  test.eq(view:call("shortlist_gift", { id = "tea", on = true }).structuredContent, { shortlist = { "tea" } })
  test.eq(view:call("shortlist_gift", { id = "dice", on = true }).structuredContent, { shortlist = { "dice", "tea" } })
  test.eq(view:call("shortlist_gift", { id = "tea", on = false }).content[1].text, "Shortlist: dice")
  test.eq(view:call("shortlist_gift", { id = "nope", on = true }).isError, true)
end)

test("the catalog, one gift by id, its completion, and the prompt", function()
  local catalog = app:read("mcp://gift-server/resources/gift_catalog")
  test.eq(#mcp.json.decode(catalog.contents[1].text), 7)
  test.eq(mcp.json.decode(app:read("mcp://gift-server/gifts/tea").contents[1].text).price, 28)
  local _, err = app:read("mcp://gift-server/gifts/nope")
  test.ok(err, "an unknown gift is an error")
  test.eq(app:complete({ resource = "mcp://gift-server/gifts/{id}" }, "id", "d"), { "dice", "dinner" })
  test.match(app:prompt("gift_congrats_style", { tone = "funny" }).messages[1].content.text, "funny tone")
end)
