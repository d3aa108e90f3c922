-- fixtures.lua — what the fixture scripts share (`require "fixtures"`; lib/
-- is on package.path): the binary payloads (the suite's reference
-- "everything" server's, base64-encoded as it sends them), and a way to change
-- the app's lists at run time.
local mcp = require "mcp"

local M = {}

-- a 1x1 PNG
M.IMG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
-- a minimal WAV file
M.WAV_B64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

-- raw bytes: the content helpers (mcp.image, mcp.audio, {blob = ...}) take
-- raw bytes and base64-encode them again on the way out
M.IMG = mcp.base64.decode(M.IMG_B64)
M.WAV = mcp.base64.decode(M.WAV_B64)

-- Hot reload is how a luamcp app's lists change: save a script into the
-- app's scripts/ folder and the reload that follows publishes what it
-- defines (and tells clients which lists changed). Written to a temporary
-- name first and renamed, so that the reload never reads half a file.
-- run.sh serves a copy of the app, so the checkout is never written to.
function M.save_script(name, text)
  local path = assert(mcp.path.app("scripts/" .. name))
  local tmp = path .. ".tmp" -- not *.lua: the loader skips it
  local f = assert(io.open(tmp, "wb"))
  assert(f:write(text))
  assert(f:close())
  assert(os.rename(tmp, path))
end

return M
