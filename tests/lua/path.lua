-- mcp.path.join(base, rel): base/rel inside base, or nil and why (README,
-- "Resources, templates, prompts"). A string function: nothing on disk.
local mcp = require "mcp"
local expect = require "expect"
local join = mcp.path.join

expect.equal(join("/srv/docs", "a.txt"), "/srv/docs/a.txt")
expect.equal(join("/srv/docs", "sub/inner.txt"), "/srv/docs/sub/inner.txt")
-- "." and empty segments are dropped
expect.equal(join("/srv/docs", "./a/./b"), "/srv/docs/a/b")
expect.equal(join("/srv/docs", "x//y/"), "/srv/docs/x/y")
-- a percent sign and a backslash are ordinary characters
expect.equal(join("/srv/docs", "sub%2Finner.txt"), "/srv/docs/sub%2Finner.txt")
expect.equal(join("/srv/docs", "a\\b"), "/srv/docs/a\\b")

-- refused: absolute, a ".." segment anywhere, a NUL byte
local function refused(rel, why)
  local p, msg = join("/srv/docs", rel)
  if p ~= nil then error(("joined %q as %q"):format(rel, p), 2) end
  if not tostring(msg):find(why, 1, true) then error(("%q refused with %q, expected %q"):format(rel, tostring(msg), why), 2) end
end
refused("../x", "'..'")
refused("a/../b", "'..'")
refused("a/..", "'..'")
refused("/etc/passwd", "absolute")
refused("a\0b", "NUL")
-- ".." inside a name is a name
expect.equal(join("/srv/docs", "a..b"), "/srv/docs/a..b")

-- mcp.path.app: the same under the app's folder
local app = mcp.path.app()
assert(type(app) == "string" and app:sub(1, 1) == "/", "mcp.path.app() is the app folder")
expect.equal(mcp.path.app("docs/a.txt"), app .. "/docs/a.txt")
assert(mcp.path.app("../x") == nil, "mcp.path.app refuses '..' too")
