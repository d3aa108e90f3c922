-- store_db.lua — mcp.store on the app's database, its default backend
-- (durable: it outlives restarts, as mcp.db does). app.c loads this chunk;
-- lua/mcp.lua calls what it returns with the C half of the store (for its
-- wall clock), mcp.db, raise and mcp.null, and routes mcp.store here while
-- core.store.backend() says "db".
--
-- One table of luamcp's, made at the first use (never by the app's
-- migrations, so an app that does not use the store has none):
--   luamcp_store(key TEXT PRIMARY KEY, value TEXT NOT NULL, expires BIGINT)
-- expires is NULL or the wall-clock millisecond the key goes. A row past
-- it is absent to every operation (each names the time it reads at), and
-- expired rows are deleted at the first use and every SWEEP_EVERY writes
-- (an index on expires keeps that cheap). The SQL is what SQLite and
-- PostgreSQL both run: ? placeholders, INSERT … ON CONFLICT(key) DO …,
-- substr/length, BIGINT (PostgreSQL's INTEGER is 32 bits: milliseconds and
-- counters need 64), no engine's own functions.
--
-- Atomicity: add, cas, set and delete are one statement each (a
-- conditional upsert, UPDATE or DELETE: its row count says whether it
-- acted); so is incr on a key that holds an integer (an UPDATE … RETURNING);
-- a new key's incr and update read and write inside mcp.db.tx, whose
-- transactions never interleave, so 20 concurrent updates keep 20.
-- The same checks and limits as core/io/store.c: keys of 1 to 1024 bytes,
-- values up to 16 MiB, TTLs from 0.001 s to ten years.
return function(cstore, db, raise, null)
  local type, tostring, tonumber, pcall, error = type, tostring, tonumber, pcall, error
  local math_type, tointeger, ceil = math.type, math.tointeger, math.ceil
  local maxinteger, mininteger = math.maxinteger, math.mininteger
  local now = cstore.now_ms
  local query, one, exec, tx = db.query, db.one, db.exec, db.tx

  local KEY_MAX, VALUE_MAX, TTL_MAX = 1024, 16 << 20, 10 * 365 * 86400
  local PAGE = 100        -- keys a page of keys() gives at most
  local SWEEP_EVERY = 1000 -- writes between two deletes of the expired rows
  local LIVE = "(expires IS NULL OR expires > ?)"

  local made = false -- the table exists (as far as this version of the app knows)
  local writes = 0

  -- {=== errors: mcp.db's, said as the store's, at the script's line

  local function fail(op, err)
    made = false -- (a rolled-back transaction may have taken the table with it)
    if type(err) ~= "string" then error(err, 0) end
    err = err:gsub("^[^\n]-:%d+: ", "", 1)
    err = err:gsub("^mcp%.db%.%a+: ", "", 1)
    err = err:gsub("^mcp%.store%.%a+: ", "", 1)
    raise(("mcp.store.%s: %s"):format(op, err))
  end

  -- fn(sql, ...) of mcp.db, its error raised as op's
  local function run(op, fn, sql, ...)
    local ok, r = pcall(fn, sql, ...)
    if not ok then fail(op, r) end
    return r
  end

  local function ready(op)
    if made then return end
    run(op, exec, ("CREATE TABLE IF NOT EXISTS luamcp_store(key TEXT PRIMARY KEY, value TEXT NOT NULL, expires BIGINT);"
      .. "CREATE INDEX IF NOT EXISTS luamcp_store_expires ON luamcp_store(expires);"
      .. "DELETE FROM luamcp_store WHERE expires <= %d"):format(now()))
    made = true
  end

  local function wrote(op)
    writes = writes + 1
    if writes % SWEEP_EVERY == 0 then run(op, exec, "DELETE FROM luamcp_store WHERE expires <= ?", now()) end
  end

  -- }===

  -- {=== arguments, checked as store.c checks them

  local function key_of(op, k)
    if type(k) ~= "string" then raise(("mcp.store.%s: the key must be a string, got %s"):format(op, type(k))) end
    if #k == 0 or #k > KEY_MAX then raise(("mcp.store.%s: the key must have 1 to %d bytes"):format(op, KEY_MAX)) end
    return k
  end

  local function value_of(op, v, may_be_nil)
    if v == nil and may_be_nil then return nil end
    local t = type(v)
    if t ~= "string" and t ~= "number" then
      raise(("mcp.store.%s: the value must be a string or a number%s, got %s"):format(op,
        may_be_nil and " (or nil)" or "", t))
    end
    v = tostring(v)
    if #v > VALUE_MAX then raise(("mcp.store.%s: the value is larger than %d MiB"):format(op, VALUE_MAX >> 20)) end
    return v
  end

  -- The expiry a ttl argument gives (from t), or mcp.null for none.
  local function expiry(op, ttl, t)
    if ttl == nil then return null end
    if type(ttl) ~= "number" then
      raise(("mcp.store.%s: the ttl must be a number of seconds, got %s"):format(op, type(ttl)))
    end
    if not (ttl >= 0.001 and ttl <= TTL_MAX) then
      raise(("mcp.store.%s: the ttl must be from 0.001 to %d seconds"):format(op, TTL_MAX))
    end
    return t + tointeger(ceil(ttl * 1000))
  end

  -- A decimal integer exactly, as Redis reads one for INCRBY (no sign, no
  -- leading zero, no blank; it fits 64 bits).
  local function integer_of(s)
    if not (s:match("^%-?[1-9]%d*$") or s == "0") then return nil end
    local n = tointeger(tonumber(s))
    return n and tostring(n) == s and n or nil
  end

  -- }===

  -- {=== the statements

  local UPSERT = "INSERT INTO luamcp_store(key, value, expires) VALUES (?, ?, ?) "
    .. "ON CONFLICT(key) DO UPDATE SET value = excluded.value, expires = excluded.expires"
  -- an upsert that only replaces an expired row: 1 change when the key was absent
  local ADD = UPSERT .. " WHERE luamcp_store.expires IS NOT NULL AND luamcp_store.expires <= ?"
  local GET = "SELECT value, expires FROM luamcp_store WHERE key = ? AND " .. LIVE

  local S = {}

  function S.get(k)
    k = key_of("get", k)
    ready("get")
    local row = run("get", one, GET, k, now())
    return row and row.value
  end

  function S.set(k, v, ttl)
    k, v = key_of("set", k), value_of("set", v)
    local t = now()
    local exp = expiry("set", ttl, t)
    ready("set")
    run("set", exec, UPSERT, k, v, exp)
    wrote("set")
    return true
  end

  function S.add(k, v, ttl)
    k, v = key_of("add", k), value_of("add", v)
    local t = now()
    local exp = expiry("add", ttl, t)
    ready("add")
    local r = run("add", exec, ADD, k, v, exp, t)
    wrote("add")
    return r.changes > 0
  end

  function S.cas(k, old, new, ttl)
    k = key_of("cas", k)
    old, new = value_of("cas", old, true), value_of("cas", new, true)
    local t = now()
    local exp = expiry("cas", ttl, t)
    ready("cas")
    local r
    if old == nil and new == nil then
      return run("cas", one, "SELECT 1 AS x FROM luamcp_store WHERE key = ? AND " .. LIVE, k, t) == nil
    elseif old == nil then
      r = run("cas", exec, ADD, k, new, exp, t)
    elseif new == nil then
      r = run("cas", exec, "DELETE FROM luamcp_store WHERE key = ? AND value = ? AND " .. LIVE, k, old, t)
    else
      r = run("cas", exec, "UPDATE luamcp_store SET value = ?, expires = ? WHERE key = ? AND value = ? AND " .. LIVE,
        new, exp, k, old, t)
    end
    wrote("cas")
    return r.changes > 0
  end

  function S.delete(k)
    k = key_of("delete", k)
    ready("delete")
    return run("delete", exec, "DELETE FROM luamcp_store WHERE key = ? AND " .. LIVE, k, now()).changes > 0
  end

  -- fn inside one transaction (mcp.db.tx): its result. fn raises
  -- {said = message} for a mistake of the script's (raised at its line),
  -- {as_is = value} for an error of the script's own fn (raised as it was);
  -- anything else is mcp.db's.
  local function in_tx(op, fn)
    ready(op)
    local ok, r = pcall(tx, fn)
    if ok then return r end
    if type(r) == "table" and r.said then raise(r.said) end
    if type(r) == "table" and r.as_is ~= nil then error(r.as_is, 0) end
    fail(op, r)
  end

  -- incr's one statement for a live key holding an integer that will not
  -- overflow (canonical text: CAST back gives the same; within the bounds
  -- the caller computes); anything else is the transaction's to decide
  local INCR = "UPDATE luamcp_store SET value = CAST(CAST(value AS BIGINT) + ? AS TEXT), "
    .. "expires = COALESCE(expires, ?) WHERE key = ? AND " .. LIVE
    .. " AND value = CAST(CAST(value AS BIGINT) AS TEXT) AND CAST(value AS BIGINT) BETWEEN ? AND ? RETURNING value"

  function S.incr(k, by, ttl)
    k = key_of("incr", k)
    if by ~= nil and math_type(by) ~= "integer" then raise("mcp.store.incr: the increment must be an integer") end
    by = by or 1
    local t = now()
    local exp = expiry("incr", ttl, t)
    ready("incr")
    local lo, hi = by < 0 and mininteger - by or mininteger, by > 0 and maxinteger - by or maxinteger
    local rows = run("incr", query, INCR, by, exp, k, t, lo, hi)
    if rows[1] then
      wrote("incr")
      return tointeger(tonumber(rows[1].value))
    end
    local n = in_tx("incr", function()
      local row = one(GET, k, now()) -- (now: the transaction may have waited its turn)
      local cur = 0
      if row then
        cur = integer_of(row.value)
        if not cur then error({ said = ("mcp.store.incr: the value of '%s' is not an integer"):format(k) }) end
        if row.expires ~= null then exp = row.expires end -- a TTL only for a key that has none
      end
      if (by > 0 and cur > maxinteger - by) or (by < 0 and cur < mininteger - by) then
        error({ said = ("mcp.store.incr: '%s' would overflow"):format(k) })
      end
      cur = cur + by
      exec(UPSERT, k, tostring(cur), exp)
      return cur
    end)
    wrote("incr")
    return n
  end

  -- fn(old) -> new (nil: delete), run inside the transaction: atomic with
  -- no retry, at the cost of holding the database's writer meanwhile (fn
  -- should only compute). lua/mcp.lua checked fn.
  function S.update(k, fn, ttl)
    k = key_of("update", k)
    local t = now()
    local exp = expiry("update", ttl, t)
    local new = in_tx("update", function()
      local row = one(GET, k, now()) -- (now: the transaction may have waited its turn)
      local okf, v = pcall(fn, row and row.value)
      if not okf then error({ as_is = v }) end
      local vt = type(v)
      if v ~= nil and vt ~= "string" and vt ~= "number" then
        error({ said = ("mcp.store.update: fn must return a string, a number or nil, got %s"):format(vt) })
      end
      v = v ~= nil and tostring(v) or nil
      if v and #v > VALUE_MAX then
        error({ said = ("mcp.store.update: the value is larger than %d MiB"):format(VALUE_MAX >> 20) })
      end
      if v == nil then
        if row then exec("DELETE FROM luamcp_store WHERE key = ?", k) end
      else
        exec(UPSERT, k, v, exp)
      end
      return v
    end)
    wrote("update")
    return new
  end

  -- A page of the live keys that start with prefix, in key order, and the
  -- cursor of the next page (the last key given; nil after the last page).
  -- The prefix is compared with substr, never LIKE: no character is special.
  function S.keys(prefix, cursor)
    if type(prefix) ~= "string" then
      raise(("mcp.store.keys: the prefix must be a string, got %s"):format(type(prefix)))
    end
    if #prefix > KEY_MAX then
      raise(("mcp.store.keys: the prefix is longer than a key may be (%d bytes)"):format(KEY_MAX))
    end
    if cursor ~= nil and (type(cursor) ~= "string" or #cursor > KEY_MAX) then
      raise(("mcp.store.keys: the cursor must be the string a page gave, got %s"):format(type(cursor)))
    end
    ready("keys")
    local rows = run("keys", query, "SELECT key FROM luamcp_store WHERE key " .. (cursor and ">" or ">=")
      .. " ? AND substr(key, 1, length(CAST(? AS TEXT))) = ? AND " .. LIVE .. " ORDER BY key LIMIT " .. (PAGE + 1),
      cursor or prefix, prefix, prefix, now())
    local keys = {}
    for i = 1, #rows < PAGE and #rows or PAGE do keys[i] = rows[i].key end
    return keys, #rows > PAGE and keys[PAGE] or nil
  end

  return S
end
