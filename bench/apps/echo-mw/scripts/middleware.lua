-- bench/apps/echo-mw: bench/apps/echo with one middleware that does nothing
-- but pass the request on: what mcp.use costs a call (bench/callgrind.sh).
require("mcp").use(function(req, next) return next() end)
