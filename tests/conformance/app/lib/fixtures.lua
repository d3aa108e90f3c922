-- fixtures.lua — binary payloads shared by the fixture scripts
-- (`require "fixtures"`; lib/ is on package.path). The values are the
-- suite's reference "everything" server's, base64-encoded as it sends them.
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

return M
