-- shop.lua — the three tools of the realistic MCP benchmark (bench/tmdev),
-- written as a user writes them with today's luamcp: each handler waits on
-- one thing at a time (the HTTP call, then Redis). Its twin with the waits
-- side by side is ../../all/scripts/shop.lua (mcp.all); the TypeScript peer
-- is ../../../ts/server.mjs. PRODUCT_API is the product service's base URL;
-- Redis is the one of --store.
local mcp = require "mcp"
local redis = mcp.redis
local api = os.getenv("PRODUCT_API") or "http://127.0.0.1:8081"
local function escape(s) return (s:gsub("[^%w%-_.~]", function(c) return ("%%%02X"):format(c:byte()) end)) end

mcp.tool {
  name = "search_products",
  description = "Searches the catalogue and lists the ten best sellers.",
  input = { query = mcp.string {}, limit = mcp.optional(mcp.integer { min = 1, max = 50 }) },
  handler = function(args)
    local r = mcp.http.get(api .. "/products/search?q=" .. escape(args.query) .. "&limit=" .. (args.limit or 10))
    local top = redis("ZREVRANGE", "bench:top", 0, 9, "WITHSCORES")
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
    local r = mcp.http.get(api .. "/products/" .. first)
    local history = redis("LRANGE", "history:" .. args.user_id, 0, 9)
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
    local r = mcp.http.post(api .. "/cart/calculate", { items = args.items })
    local first = args.items[1]
    local w = redis.pipeline(function(p)
      p("INCR", "orders:seq")
      p("RPUSH", "orders:" .. args.user_id, mcp.json.encode(args.items))
      p("ZINCRBY", "bench:top", first and first.quantity or 1, first and first.product_id or 1)
    end)
    return mcp.json.encode { order_id = w[1], user_id = args.user_id, total = r.json.total,
                             subtotal = r.json.subtotal, tax = r.json.tax }
  end,
}
