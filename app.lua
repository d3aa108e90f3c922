-- app.lua — who this app is. Every field is optional.
return {
  name = "gift-server",
  version = "0.1.0",
  title = "Gift ideas",
  instructions = "Use suggest_gifts to find presents within a budget. "
    .. "The gift catalog is the resource mcp://gift-server/resources/gift_catalog.",
  -- schema = { format = "assert" }, -- check JSON Schema `format` (email, date-time, ...);
  --                                 -- by default it is an annotation, as 2020-12 says
}
