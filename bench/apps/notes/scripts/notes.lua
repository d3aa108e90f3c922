-- notes.lua — the tools of bench/db/run.mjs: mcp.db on the writer (an insert
-- and a count, in one call) and on the readers (a row by its id).
-- The table is made by migrations/ (PostgreSQL: migrations/postgres/).
local mcp = require "mcp"

mcp.tool {
  name = "note",
  description = "Inserts a note for who, then counts who's notes.",
  input = { who = mcp.string {} },
  handler = function(args)
    mcp.db.exec("INSERT INTO notes(who, body) VALUES (?, ?)", args.who, "hello")
    return tostring(mcp.db.one("SELECT count(*) AS n FROM notes WHERE who = ?", args.who).n)
  end,
}

mcp.tool {
  name = "get",
  description = "A note by its id.",
  input = { id = mcp.integer {} },
  handler = function(args)
    local row = mcp.db.one("SELECT id, who, body FROM notes WHERE id = ?", args.id)
    return row and row.body or "none"
  end,
}
