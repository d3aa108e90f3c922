-- db.lua — tools over mcp.db on PostgreSQL for tests/integration/db-pg.test.mjs.
-- Each returns what the script saw as JSON text (errors as { error = message }).
local mcp = require "mcp"
local db = mcp.db

local function result(ok, v)
  if ok then return mcp.json.encode({ value = v }) end
  return mcp.json.encode({ error = tostring(v) })
end

mcp.tool {
  name = "sql",
  description = "mcp.db[op](sql, params...) with params from JSON (an array: positional; an object: by name).",
  input = { op = mcp.string { enum = { "query", "one", "exec" } }, sql = mcp.string {},
            params = mcp.string { optional = true, description = "JSON" } },
  handler = function(args)
    local p = args.params and mcp.json.decode(args.params) or {}
    return result(pcall(function()
      if getmetatable(p) == mcp.array_mt or #p > 0 or next(p) == nil then
        return db[args.op](args.sql, table.unpack(p, 1, p.n or #p))
      end
      return db[args.op](args.sql, p)
    end))
  end,
}

mcp.tool {
  name = "types",
  description = "Every type, in and out.",
  input = {},
  handler = function()
    local values = { math.maxinteger, math.mininteger, 0.5, "text é", "\0\255bin", true, false, mcp.null }
    local out = {}
    for i = 1, #values + 1 do -- the last is nil
      local v = values[i]
      local r = db.one("SELECT ? AS v", v)
      out[i] = { lua = math.type(r.v) or (r.v == mcp.null and "null") or type(r.v),
                 same = r.v == v or (v == true and r.v == 1) or (v == false and r.v == 0)
                        or (v == nil and r.v == mcp.null) }
    end
    local named = db.one("SELECT :a + :b AS s, :c::text AS c, :a AS a2", { a = 40, b = 2, c = mcp.null })
    out.named = { s = named.s, c_is_null = named.c == mcp.null, a2 = named.a2 }
    local cols = db.one([[SELECT 1::int2 AS i2, 2::int4 AS i4, 3::int8 AS i8, 1.5::float4 AS f4, 2.5::float8 AS f8,
      true AS t, false AS f, 'v'::varchar AS vc, 'x'::text AS tx, '\x00ff'::bytea AS by, NULL::int AS nul,
      12.50::numeric AS num, DATE '2024-01-02' AS d, '{"a":1}'::jsonb AS j]])
    local shown = {}
    for k, v in pairs(cols) do shown[k] = { type = math.type(v) or (v == mcp.null and "null") or type(v),
                                           value = type(v) == "string" and #v or v } end
    shown.by.hex = (cols.by:gsub(".", function(c) return string.format("%02x", c:byte()) end))
    shown.num.text, shown.d.text, shown.j.text = cols.num, cols.d, cols.j
    out.cols = shown
    local id = db.exec("INSERT INTO blobs(b) VALUES (?) RETURNING id", "\1\0\2")
    out.blob = { changes = id.changes, last_id = id.last_id,
                 back = db.one("SELECT b FROM blobs WHERE id = ?", id.last_id).b == "\1\0\2" }
    out.empty = db.query("SELECT 1 WHERE false")
    return mcp.json.encode(out)
  end,
}

mcp.tool {
  name = "bad",
  description = "A misuse: the error it raises.",
  input = { kind = mcp.string {} },
  handler = function(args)
    local ok, e = pcall(function()
      if args.kind == "function" then return db.query("SELECT ?", print) end
      if args.kind == "named" then return db.query("SELECT :x", { x = print }) end
      if args.kind == "missing" then return db.query("SELECT :x::int", { y = 1 }) end
      if args.kind == "count" then return db.query("SELECT ?::int, ?::int", 1) end
      if args.kind == "mixed" then return db.query("SELECT :x", 1) end
      if args.kind == "two" then return db.query("SELECT 1; SELECT 2") end
      if args.kind == "begin" then return db.exec("BEGIN") end
      if args.kind == "syntax" then return db.query("SELECT * FROM kv WHERE nonsense ===") end
      if args.kind == "nowhere" then return db.one("SELECT * FROM nowhere") end
    end)
    return mcp.json.encode({ ok = ok, error = e })
  end,
}

mcp.tool {
  name = "tx",
  description = "A transaction: how it ends is the case.",
  input = { case = mcp.string {}, tag = mcp.string {} },
  handler = function(args)
    local tag = args.tag
    local ok, e = pcall(function()
      if args.case == "commit" then
        return db.tx(function()
          db.exec("INSERT INTO kv(id, k, v) VALUES ((SELECT coalesce(max(id), 0) + 1 FROM kv), ?, '1')", tag)
          db.exec("INSERT INTO kv(id, k, v) VALUES ((SELECT coalesce(max(id), 0) + 1 FROM kv), ?, '2')", tag)
          return "done"
        end)
      elseif args.case == "error" then
        return db.tx(function()
          db.exec("INSERT INTO kv(id, k, v) VALUES ((SELECT coalesce(max(id), 0) + 1 FROM kv), ?, '1')", tag)
          error("changed my mind")
        end)
      elseif args.case == "nested" then
        return db.tx(function()
          db.exec("INSERT INTO kv(id, k, v) VALUES ((SELECT coalesce(max(id), 0) + 1 FROM kv), ?, 'outer')", tag)
          local ok2, e2 = pcall(db.tx, function()
            db.exec("INSERT INTO kv(id, k, v) VALUES ((SELECT coalesce(max(id), 0) + 1 FROM kv), ?, 'inner')", tag)
            db.exec("INSERT INTO nowhere VALUES (1)") -- an SQL error inside the savepoint: only it rolls back
          end)
          db.tx(function()
            db.exec("INSERT INTO kv(id, k, v) VALUES ((SELECT coalesce(max(id), 0) + 1 FROM kv), ?, 'inner2')", tag)
          end)
          return tostring(e2):match("nowhere") and "inner failed"
        end)
      elseif args.case == "sqlerror" then
        return db.tx(function()
          db.exec("INSERT INTO kv(id, k, v) VALUES ((SELECT coalesce(max(id), 0) + 1 FROM kv), ?, '1')", tag)
          db.exec("INSERT INTO nowhere VALUES (1)")
        end)
      elseif args.case == "lost" then -- an SQL error caught inside the transaction: nothing after it runs
        local r = db.tx(function()
          db.exec("INSERT INTO kv(id, k, v) VALUES ((SELECT coalesce(max(id), 0) + 1 FROM kv), ?, '1')", tag)
          local ok1, e1 = pcall(db.exec, "INSERT INTO nowhere VALUES (1)")
          local ok2, e2 = pcall(db.exec, "INSERT INTO kv(id, k, v) VALUES (-1, ?, '3')", tag)
          return { e1, e2 }
        end)
        return r
      end
    end)
    local rows = db.query("SELECT v FROM kv WHERE k = ? ORDER BY id", tag)
    local vs = {}
    for i, r in ipairs(rows) do vs[i] = r.v end
    return mcp.json.encode({ ok = ok, value = e, rows = vs })
  end,
}

mcp.tool {
  name = "slow",
  description = "pg_sleep(seconds) after a progress notification; in a transaction with tag.",
  input = { seconds = mcp.number {}, tag = mcp.string { optional = true } },
  handler = function(args, ctx)
    local function sleep()
      ctx:progress(1, 2, "started")
      return db.one("SELECT pg_sleep(?) AS s, 'slept' AS done", args.seconds).done
    end
    if args.tag then
      return db.tx(function()
        db.exec("INSERT INTO kv(id, k, v) VALUES ((SELECT coalesce(max(id), 0) + 1 FROM kv), ?, 'before')", args.tag)
        return sleep()
      end)
    end
    return sleep()
  end,
}

mcp.tool {
  name = "rmw",
  description = "Read the counter, add one, write it back, in mcp.db.tx.",
  input = {},
  handler = function()
    return tostring(db.tx(function()
      local n = db.one("SELECT n FROM counter WHERE id = 1").n
      db.exec("UPDATE counter SET n = ? WHERE id = 1", n + 1)
      return n + 1
    end))
  end,
}
