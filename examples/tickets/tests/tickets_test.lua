-- tests/tickets_test.lua: each caller sees their own tickets; comments are
-- counted; only the owner or an admin closes one. test.db seeds and reads
-- this file's own database (fresh, migrations/ applied).
local test = require "mcp.test"
local app = test.app()
local ann = { subject = "ann" }
local bob = { subject = "bob" }
local admin = { subject = "root", scopes = { "tickets:admin" } }

test("open, list, comment: each caller sees their own", function()
  local id = app:call("open_ticket", { title = "printer on fire" }, { as = ann }).structuredContent.id
  app:call("open_ticket", { title = "bob's laptop" }, { as = bob })
  test.eq(app:call("comment_ticket", { id = id, text = "still burning" }, { as = ann }).content[1].text, "1 comment(s)")
  test.eq(app:call("comment_ticket", { id = id, text = "mine now" }, { as = bob }).isError, true)
  test.eq(app:call("list_tickets", {}, { as = ann }).structuredContent.tickets,
    { { id = id, title = "printer on fire", comments = 1 } })
end)

test("only the owner or an admin closes a ticket", function()
  local id = app:call("open_ticket", { title = "door squeaks" }, { as = ann }).structuredContent.id
  test.eq(app:call("close_ticket", { id = id }, { as = bob }).isError, true)
  test.eq(app:call("close_ticket", { id = id }, { as = admin }).content[1].text, ("ticket %d closed"):format(id))
  local row = test.db.one("SELECT state, closed_at FROM tickets WHERE id = ?", id)
  test.eq(row.state, "closed")
  test.ok(row.closed_at > 0)
end)

test("a ticket seeded with test.db is listed, newest first", function()
  local key = test.db.one("SELECT owner FROM tickets WHERE title = ?", "bob's laptop").owner
  test.db.exec("INSERT INTO tickets(owner, title, opened_at) VALUES (?, ?, ?)", key, "old one", 0)
  local titles = {}
  for i, t in ipairs(app:call("list_tickets", {}, { as = bob }).structuredContent.tickets) do titles[i] = t.title end
  test.eq(titles, { "bob's laptop", "old one" })
end)

test("no identity, no tickets", function()
  test.match(app:call("list_tickets", {}).content[1].text, "names no one")
end)
