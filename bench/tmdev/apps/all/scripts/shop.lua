-- shop.lua — the three tools of bench/tmdev with the waits the benchmark
-- runs in parallel side by side (mcp.all): the HTTP call beside the Redis
-- commands. The same tools one wait after the other: ../../seq/scripts/shop.lua.
-- Each branch keeps its result in a local of the handler, so nothing here
-- depends on how mcp.all hands results back.
local mcp = require "mcp"
-- bench/tmdev/run.sh runs this app only when `luamcp check` of it passes:
-- without mcp.all (issue 30, item 1) it must fail at load, not at the first call.
assert(mcp.all, "this app needs mcp.all")
local redis = mcp.redis
local api = os.getenv("PRODUCT_API") or "http://127.0.0.1:8081"
local function escape(s) return (s:gsub("[^%w%-_.~]", function(c) return ("%%%02X"):format(c:byte()) end)) end

mcp.tool {
  name = "search_products",
  description = "Searches the catalogue and lists the ten best sellers.",
  input = { query = mcp.string {}, limit = mcp.optional(mcp.integer { min = 1, max = 50 }) },
  handler = function(args)
    local r, top
    mcp.all {
      function() r = mcp.http.get(api .. "/products/search?q=" .. escape(args.query) .. "&limit=" .. (args.limit or 10)) end,
      function() top = redis("ZREVRANGE", "bench:top", 0, 9, "WITHSCORES") end,
    }
    local best = {}
    for i = 1, #top, 2 do best[#best + 1] = { product_id = tonumber(top[i]), sold = tonumber(top[i + 1]) } end
    return mcp.json.encode { query = args.query, total = r.json.total, products = r.json.products,
                             best_sellers = best }
  end,
}

mcp.tool {
  name = "get_user_cart",
  description = "A user's cart, its first product's details and what the user looked at last.",
  input = { user_id = mcp.string {} },
  handler = function(args)
    local flat = redis("HGETALL", "cart:" .. args.user_id)
    local items = {}
    for i = 1, #flat, 2 do items[#items + 1] = { product_id = tonumber(flat[i]), quantity = tonumber(flat[i + 1]) } end
    local first = items[1] and items[1].product_id or 1
    local r, history
    mcp.all {
      function() r = mcp.http.get(api .. "/products/" .. first) end,
      function() history = redis("LRANGE", "history:" .. args.user_id, 0, 9) end,
    }
    return mcp.json.encode { user_id = args.user_id, items = items, first_product = r.json,
                             recently_viewed = history }
  end,
}

mcp.tool {
  name = "checkout",
  description = "Prices a cart and records the order.",
  input = {
    user_id = mcp.string {},
    items = mcp.array(mcp.object { product_id = mcp.integer { min = 1 }, quantity = mcp.integer { min = 1 } }),
  },
  handler = function(args)
    local first = args.items[1]
    local r, w
    mcp.all {
      function() r = mcp.http.post(api .. "/cart/calculate", { items = args.items }) end,
      function()
        w = redis.pipeline(function(p)
          p("INCR", "orders:seq")
          p("RPUSH", "orders:" .. args.user_id, mcp.json.encode(args.items))
          p("ZINCRBY", "bench:top", first and first.quantity or 1, first and first.product_id or 1)
        end)
      end,
    }
    return mcp.json.encode { order_id = w[1], user_id = args.user_id, total = r.json.total,
                             subtotal = r.json.subtotal, tax = r.json.tax }
  end,
}
