-- db.lua — tools over mcp.db for tests/integration/db.test.mjs. Each returns
-- what the script saw as JSON text (errors as { error = message }), so the
-- test sees exactly that.
local mcp = require "mcp"
local db = mcp.db

local function schema()
  db.exec [[
    CREATE TABLE IF NOT EXISTS kv(id INTEGER PRIMARY KEY, k TEXT, v);
    CREATE TABLE IF NOT EXISTS acked(i INTEGER PRIMARY KEY);
    CREATE TABLE IF NOT EXISTS log(id INTEGER PRIMARY KEY, who TEXT)
  ]]
end

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
    schema()
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
  description = "Every type, in and out; what came back and its Lua type.",
  input = {},
  handler = function()
    schema()
    local values = { math.maxinteger, math.mininteger, 0.5, "text é", "\0\255bin", true, false, mcp.null }
    local out = {}
    for i = 1, #values + 1 do -- the last is nil
      local v = values[i]
      local r = db.one("SELECT ? AS v, typeof(?) AS t", v, v)
      out[i] = { lua = math.type(r.v) or (r.v == mcp.null and "null") or type(r.v), sql = r.t,
                 same = r.v == v or (v == true and r.v == 1) or (v == false and r.v == 0)
                        or (v == nil and r.v == mcp.null) }
    end
    local named = db.one("SELECT :a + :b AS s, :c AS c", { a = 40, b = 2, c = mcp.null })
    out.named = { s = named.s, c_is_null = named.c == mcp.null }
    out.empty = db.query("SELECT 1 WHERE 0")
    return mcp.json.encode(out)
  end,
}

mcp.tool {
  name = "bad_param",
  description = "Binds a value that cannot be bound.",
  input = { kind = mcp.string {} },
  handler = function(args)
    local ok, e = pcall(function()
      if args.kind == "table" then return db.query("SELECT ?", {}) end -- a table positional: taken as names
      if args.kind == "function" then return db.query("SELECT ?", print) end
      if args.kind == "named" then return db.query("SELECT :x", { x = print }) end
      if args.kind == "missing" then return db.query("SELECT :x", { y = 1 }) end
      if args.kind == "count" then return db.query("SELECT ?, ?", 1) end
      if args.kind == "mixed" then return db.query("SELECT :x", 1) end
      if args.kind == "two" then return db.query("SELECT 1; SELECT 2") end
      if args.kind == "sql" then return db.query(42) end
      if args.kind == "begin" then return db.exec("BEGIN") end
      if args.kind == "savepoint" then db.exec("CREATE TABLE IF NOT EXISTS z(x)"); return db.query("SAVEPOINT x") end
      if args.kind == "syntax" then return db.query("SELECT * FROM kv WHERE nonsense ===") end
    end)
    return mcp.json.encode({ ok = ok, error = e })
  end,
}

mcp.tool {
  name = "tx",
  description = "A transaction: how it ends is the case.",
  input = { case = mcp.string {}, tag = mcp.string {} },
  handler = function(args)
    schema()
    local tag = args.tag
    local ok, e = pcall(function()
      if args.case == "commit" then
        return db.tx(function()
          db.exec("INSERT INTO kv(k, v) VALUES (?, 1)", tag)
          db.exec("INSERT INTO kv(k, v) VALUES (?, 2)", tag)
          return "done"
        end)
      elseif args.case == "error" then
        return db.tx(function()
          db.exec("INSERT INTO kv(k, v) VALUES (?, 1)", tag)
          error("changed my mind")
        end)
      elseif args.case == "nested" then
        return db.tx(function()
          db.exec("INSERT INTO kv(k, v) VALUES (?, 'outer')", tag)
          local ok2, e2 = pcall(db.tx, function()
            db.exec("INSERT INTO kv(k, v) VALUES (?, 'inner')", tag)
            error({ code = 7 }) -- any value: raised again as it was
          end)
          db.tx(function() db.exec("INSERT INTO kv(k, v) VALUES (?, 'inner2')", tag) end)
          return type(e2) == "table" and e2.code
        end)
      elseif args.case == "lost" then -- an error that ends the transaction: nothing after it runs
        local r = db.tx(function() -- (not a tail call: the error is at this line)
          db.exec("INSERT INTO kv(id, k, v) VALUES (1000, ?, 1)", tag)
          local ok1, e1 = pcall(function() db.exec("INSERT OR ROLLBACK INTO kv(id, k, v) VALUES (1000, ?, 2)", tag) end)
          local ok2, e2 = pcall(function() db.exec("INSERT INTO kv(k, v) VALUES (?, 3)", tag) end)
          return { e1, e2 }
        end)
        return r
      elseif args.case == "sqlerror" then
        return db.tx(function()
          db.exec("INSERT INTO kv(k, v) VALUES (?, 1)", tag)
          db.exec("INSERT INTO nowhere VALUES (1)")
        end)
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
  description = "Counts to n in a recursive CTE (after a progress notification); in a transaction with tag.",
  input = { n = mcp.integer {}, tag = mcp.string { optional = true } },
  handler = function(args, ctx)
    schema()
    local function count()
      ctx:progress(1, 2, "started")
      return db.one([[WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?)
                      SELECT count(*) AS n FROM c]], args.n).n
    end
    if args.tag then
      return tostring(db.tx(function()
        db.exec("INSERT INTO kv(k, v) VALUES (?, 'before')", args.tag)
        return count()
      end))
    end
    return tostring(count())
  end,
}

mcp.tool {
  name = "order",
  description = "A transaction of two inserts (tagged who); between them, with flag, waits until that file exists.",
  input = { who = mcp.string {}, flag = mcp.string { optional = true } },
  handler = function(args, ctx)
    ctx:progress(0, 2, "before") -- then every statement waits for a transaction of another call
    schema()
    db.tx(function()
      db.exec("INSERT INTO log(who) VALUES (?)", args.who)
      ctx:progress(1, 2, "in")
      if args.flag then
        mcp.exec { "sh", "-c", 'while [ ! -e "$1" ]; do sleep 0.01; done', "sh", args.flag }
      end
      db.exec("INSERT INTO log(who) VALUES (?)", args.who)
    end)
    return "ok"
  end,
}

mcp.tool {
  name = "ack",
  description = "Inserts i (the kill -9 case).",
  input = { i = mcp.integer {} },
  handler = function(args)
    schema()
    db.exec("INSERT INTO acked(i) VALUES (?)", args.i)
    return tostring(args.i)
  end,
}

mcp.tool {
  name = "big",
  description = "n rows of size bytes each.",
  input = { n = mcp.integer {}, size = mcp.integer {} },
  handler = function(args)
    local rows = db.query([[WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?)
                            SELECT x, randomblob(?) AS b FROM c]], args.n, args.size)
    return tostring(#rows)
  end,
}

mcp.tool {
  name = "temp",
  description = "A temporary table (the writer's connection's), read back by query.",
  input = {},
  handler = function()
    db.exec("CREATE TEMP TABLE IF NOT EXISTS t(x); DELETE FROM t; INSERT INTO t VALUES (1), (2)")
    return mcp.json.encode(db.query("SELECT x FROM t ORDER BY x"))
  end,
}

mcp.tool {
  name = "echo",
  description = "No database: answered while the connection is busy.",
  input = { text = mcp.string {} },
  handler = function(args) return args.text end,
}
