-- tickets.lua — the read-modify-write a team app does (a comment added to
-- a ticket), with mcp.store.update, and each atomic operation on its own.
local mcp = require "mcp"

mcp.tool {
  name = "comment",
  description = "Adds a comment to a ticket; answers how many it has.",
  input = { ticket = mcp.string(), text = mcp.string() },
  handler = function(args, ctx)
    local n = 0
    mcp.store.update("ticket:" .. args.ticket, function(old)
      local list = old and mcp.json.decode(old) or {}
      ctx:sleep(0.001) -- another call's update runs here: the cas below sees it and this runs again
      list[#list + 1] = args.text
      n = #list
      return mcp.json.encode(list)
    end)
    return tostring(n)
  end,
}

mcp.tool {
  name = "count",
  description = "How many comments a ticket has.",
  input = { ticket = mcp.string() },
  handler = function(args)
    local v = mcp.store.get("ticket:" .. args.ticket)
    return tostring(v and #mcp.json.decode(v) or 0)
  end,
}

mcp.tool {
  name = "atomics",
  description = "add, cas and update's delete, as a JSON report.",
  input = { key = mcp.string() },
  handler = function(args)
    local k = args.key
    local r = {}
    r.add_new = mcp.store.add(k, "a")
    r.add_again = mcp.store.add(k, "b")
    r.cas_wrong = mcp.store.cas(k, "b", "c")
    r.cas_right = mcp.store.cas(k, "a", "c")
    r.value = mcp.store.get(k)
    r.cas_absent = mcp.store.cas(k .. ":none", nil, "x")
    r.cas_absent_again = mcp.store.cas(k .. ":none", nil, "y")
    r.deleted = mcp.store.update(k, function() return nil end) == nil and mcp.store.get(k) == nil
    r.cas_delete = mcp.store.cas(k .. ":none", "x", nil) and mcp.store.get(k .. ":none") == nil
    r.add_ttl = mcp.store.add(k .. ":ttl", 1, 60)
    r.bad = select(2, pcall(mcp.store.cas, k, {}, "x"))
    r.bad_fn = select(2, pcall(mcp.store.update, k, 42))
    return mcp.json.encode(r)
  end,
}

mcp.tool {
  name = "fill",
  description = "Sets n keys under prefix.",
  input = { prefix = mcp.string(), n = mcp.integer() },
  handler = function(args)
    for i = 1, args.n do mcp.store.set(args.prefix .. i, "v") end
    return "filled"
  end,
}

mcp.tool {
  name = "list",
  description = "Every key under prefix, page by page: the keys and the number of pages.",
  input = { prefix = mcp.string() },
  handler = function(args)
    local all, pages, cursor = {}, 0, nil
    repeat
      local keys
      keys, cursor = mcp.store.keys(args.prefix, cursor)
      pages = pages + 1
      for _, k in ipairs(keys) do all[k] = true end
    until cursor == nil
    local list = {}
    for k in pairs(all) do list[#list + 1] = k end
    table.sort(list)
    return mcp.json.encode { keys = list, pages = pages }
  end,
}

mcp.tool {
  name = "ttl",
  description = "TTLs: keys set for 1 ms are gone 20 ms later (to get and add); one set for an hour stays.",
  input = { key = mcp.string() },
  handler = function(args, ctx)
    local k = args.key
    mcp.store.set(k .. ":short", "v", 0.001)
    mcp.store.add(k .. ":again", "v", 0.001)
    mcp.store.set(k .. ":long", "v", 3600)
    local first = mcp.store.incr(k .. ":n", 1, 3600)
    ctx:sleep(0.02) -- at least 20 ms: past the short TTLs, whatever the clock's grain
    return mcp.json.encode {
      short_gone = mcp.store.get(k .. ":short") == nil,
      added_again = mcp.store.add(k .. ":again", "w"), -- an expired key is absent
      long = mcp.store.get(k .. ":long"),
      n = first + mcp.store.incr(k .. ":n", 1, 0.001), -- the TTL of the first incr stays
      n_kept = mcp.store.get(k .. ":n"),
    }
  end,
}

mcp.tool {
  name = "get",
  description = "A key's value, or 'nil'.",
  input = { key = mcp.string() },
  handler = function(args) return tostring(mcp.store.get(args.key)) end,
}

mcp.tool {
  name = "incr_edges",
  description = "incr at the edges: the largest integer, text, a non-canonical number, a negative step.",
  input = { key = mcp.string() },
  handler = function(args)
    local k = args.key
    local function try(...)
      local ok, r = pcall(mcp.store.incr, ...)
      return ok and r or tostring(r):gsub("^.-mcp%.store", "mcp.store")
    end
    mcp.store.set(k .. ":big", "9223372036854775806")
    mcp.store.set(k .. ":text", "abc")
    mcp.store.set(k .. ":zero", "007")
    return mcp.json.encode {
      big = tostring(try(k .. ":big")), -- (JSON numbers past 2^53 are not exact in JavaScript)
      over = try(k .. ":big"),
      kept = mcp.store.get(k .. ":big"),
      text = try(k .. ":text"),
      zero = try(k .. ":zero"),
      down = try(k .. ":down", -5),
      down_again = try(k .. ":down", -5),
    }
  end,
}
