-- gifts.lua — the example app: gift ideas for an occasion and a budget.
local mcp = require "mcp"

local catalog = {
  { id = "catan",     name = "Board game: Catan",       price = 45, occasions = { "birthday", "anniversary" } },
  { id = "dice",      name = "Dice set",                price = 20, occasions = { "birthday" } },
  { id = "tea",       name = "Loose-leaf tea sampler",  price = 28, occasions = { "birthday", "wedding", "anniversary" } },
  { id = "frame",     name = "Engraved photo frame",    price = 35, occasions = { "wedding", "anniversary" } },
  { id = "knives",    name = "Chef's knife",            price = 90, occasions = { "wedding" } },
  { id = "dinner",    name = "Dinner for two voucher",  price = 120, occasions = { "anniversary", "wedding" } },
  { id = "plant",     name = "Potted olive tree",       price = 55, occasions = { "birthday", "wedding" } },
}

local function fits(gift, occasion, budget)
  if gift.price > budget then return false end
  for _, o in ipairs(gift.occasions) do
    if o == occasion then return true end
  end
  return false
end

mcp.tool {
  name = "suggest_gifts",
  title = "Gift ideas",
  description = "Suggests gift ideas for a given occasion within a budget (USD).",
  input = {
    occasion  = mcp.enum { "birthday", "wedding", "anniversary", description = "What the gift is for" },
    budget    = mcp.number { min = 0, description = "Maximum price in USD" },
    recipient = mcp.string { optional = true, description = "Who the gift is for, e.g. 'my sister who loves tea'" },
  },
  output = {
    gifts = mcp.array(mcp.object { id = mcp.string(), name = mcp.string(), price = mcp.number() }),
  },
  annotations = { readOnlyHint = true, openWorldHint = false },
  ui = "ui://gifts/board.html", -- hosts with MCP Apps show the results on the board below
  handler = function(args, ctx)
    ctx:info("looking for %s gifts up to $%s", args.occasion, args.budget)
    local gifts = mcp.as_array {}
    for _, g in ipairs(catalog) do
      if fits(g, args.occasion, args.budget) then
        gifts[#gifts + 1] = { id = g.id, name = g.name, price = g.price }
      end
    end
    if #gifts == 0 then
      return mcp.fail("No %s gifts fit a budget of $%s; try a larger budget.", args.occasion, args.budget)
    end
    local lines = {}
    for i, g in ipairs(gifts) do lines[i] = ("- %s ($%d)"):format(g.name, g.price) end
    local who = args.recipient and (" for " .. args.recipient) or ""
    return mcp.result {
      content = ("%d gift ideas%s:\n%s"):format(#gifts, who, table.concat(lines, "\n")),
      structured = { gifts = gifts },
    }
  end,
}

-- The board: widgets/gift_board.html, a view of suggest_gifts (MCP Apps).
mcp.widget { uri = "ui://gifts/board.html", file = "gift_board.html", prefersBorder = true }

mcp.resource {
  uri = "mcp://gift-server/resources/gift_catalog",
  name = "gift_catalog",
  description = "The whole catalog: every gift with its price and occasions",
  mime = "application/json",
  read = function() return catalog end,
}

local by_id = {}
for _, g in ipairs(catalog) do by_id[g.id] = g end

-- The board's heart button. visibility = {"app"}: only views call it, the model never sees it.
mcp.state.shortlist = mcp.state.shortlist or {}

mcp.tool {
  name = "shortlist_gift",
  title = "Shortlist a gift",
  description = "Adds a gift to the shortlist (on = true) or takes it off (on = false).",
  visibility = { "app" },
  input = { id = mcp.string(), on = mcp.boolean { default = true } },
  output = { shortlist = mcp.array(mcp.string()) },
  handler = function(args)
    if not by_id[args.id] then return mcp.fail("No gift has the id '%s'.", args.id) end
    mcp.state.shortlist[args.id] = args.on or nil
    local ids = mcp.as_array {}
    for id in pairs(mcp.state.shortlist) do ids[#ids + 1] = id end
    table.sort(ids)
    return mcp.result {
      content = ("Shortlist: %s"):format(#ids > 0 and table.concat(ids, ", ") or "empty"),
      structured = { shortlist = ids },
    }
  end,
}

mcp.template {
  uri = "mcp://gift-server/gifts/{id}",
  name = "gift",
  description = "One gift from the catalog, by id",
  mime = "application/json",
  read = function(params) return by_id[params.id] end, -- nil: resource not found
  complete = {
    id = function(prefix)
      local ids = {}
      for _, g in ipairs(catalog) do
        if g.id:sub(1, #prefix) == prefix then ids[#ids + 1] = g.id end
      end
      return ids
    end,
  },
}

mcp.prompt {
  name = "gift_congrats_style",
  title = "Congratulations note",
  description = "Writes a short, warm note to go with a gift",
  args = { tone = mcp.enum { "friendly", "formal", "funny", optional = true, description = "Tone of the note" } },
  get = function(args)
    return mcp.user(("Write a short, warm congratulations note to go with a gift, in a %s tone.")
      :format(args.tone or "friendly"))
  end,
}
