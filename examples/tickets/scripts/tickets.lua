-- tickets.lua: tickets in the app's database. Every statement binds its
-- values (?), none is built from them; a comment is one INSERT, so twenty
-- at once keep twenty; closing checks the owner in the same UPDATE.
local mcp = require "mcp"

local NO_ONE = "tickets are kept per user and this request names no one: serve with "
  .. "--auth-resource, or try luamcp call --as NAME"

local function owner_of(ctx)
  return ctx.auth and ctx.auth.key
end

mcp.tool {
  name = "open_ticket",
  description = "Open a ticket; answers its number.",
  input = { title = mcp.string { min = 1, max = 200 } },
  output = { id = mcp.integer() },
  handler = function(args, ctx)
    local owner = owner_of(ctx)
    if not owner then return mcp.fail(NO_ONE) end
    local r = mcp.db.exec("INSERT INTO tickets(owner, title, opened_at) VALUES (?, ?, ?)",
      owner, args.title, os.time())
    return { id = r.last_id }
  end,
}

mcp.tool {
  name = "list_tickets",
  description = "The caller's tickets, newest first, with how many comments each has.",
  input = { state = mcp.string { enum = { "open", "closed" }, optional = true } },
  output = { tickets = mcp.array(mcp.object { id = mcp.integer(), title = mcp.string(), comments = mcp.integer() }) },
  annotations = { readOnlyHint = true },
  handler = function(args, ctx)
    local owner = owner_of(ctx)
    if not owner then return mcp.fail(NO_ONE) end
    local rows = mcp.db.query([[
      SELECT t.id, t.title, count(c.id) AS comments
      FROM tickets t LEFT JOIN comments c ON c.ticket = t.id
      WHERE t.owner = :owner AND t.state = :state
      GROUP BY t.id ORDER BY t.opened_at DESC, t.id DESC LIMIT 100]],
      { owner = owner, state = args.state or "open" })
    return { tickets = mcp.as_array(rows) }
  end,
}

mcp.tool {
  name = "comment_ticket",
  description = "Add a comment to one of the caller's tickets; answers how many it has.",
  input = { id = mcp.integer(), text = mcp.string { min = 1, max = 2000 } },
  handler = function(args, ctx)
    local owner = owner_of(ctx)
    if not owner then return mcp.fail(NO_ONE) end
    return mcp.db.tx(function() -- the count is this comment's, whatever else runs
      if not mcp.db.one("SELECT 1 AS ok FROM tickets WHERE id = ? AND owner = ?", args.id, owner) then
        return mcp.fail(("no ticket %d of yours"):format(args.id))
      end
      mcp.db.exec("INSERT INTO comments(ticket, author, body, at) VALUES (?, ?, ?, ?)",
        args.id, owner, args.text, os.time())
      local n = mcp.db.one("SELECT count(*) AS n FROM comments WHERE ticket = ?", args.id).n
      return ("%d comment(s)"):format(n)
    end)
  end,
}

mcp.tool {
  name = "close_ticket",
  description = "Close a ticket: the caller's own, or anyone's with the scope tickets:admin.",
  input = { id = mcp.integer() },
  handler = function(args, ctx)
    local owner = owner_of(ctx)
    if not owner then return mcp.fail(NO_ONE) end
    local r = mcp.db.exec([[
      UPDATE tickets SET state = 'closed', closed_at = :now
      WHERE id = :id AND state = 'open' AND (owner = :owner OR :admin = 1)]],
      { now = os.time(), id = args.id, owner = owner, admin = ctx.auth:has("tickets:admin") })
    if r.changes == 0 then return mcp.fail(("no open ticket %d you may close"):format(args.id)) end
    return ("ticket %d closed"):format(args.id)
  end,
}
