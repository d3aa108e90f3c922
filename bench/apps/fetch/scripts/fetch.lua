-- The tool of the I/O-bound benchmark (bench/io/run.sh): one HTTP GET per
-- call through mcp.http (the call parks while the transfer runs, so many
-- calls wait on the network at once). Its TypeScript peer is
-- bench/io/ts_fetch_server.mjs.
local mcp = require "mcp"
mcp.tool {
  name = "fetch",
  description = "GETs the URL and says what came back.",
  input = { url = mcp.string {} },
  handler = function(args)
    local r = mcp.http.get(args.url)
    return "status " .. r.status .. " bytes " .. #r.body
  end,
}
