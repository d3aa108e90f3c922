-- expect.lua — what the Lua-level tests (tests/lua/*.lua) share: JSON
-- comparisons that name the caller's line. require "expect" (run.sh puts
-- this folder on the app's lib/ path).
local mcp = require "mcp"
local encode, decode = mcp.json.encode, mcp.json.decode

local M = {}

-- Same JSON value: key order aside, arrays and objects told apart (an empty
-- one too), integers and floats told apart (3 is not 3.0).
local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) == "number" then return math.type(a) == math.type(b) and a == b end
  if type(a) ~= "table" then return a == b end
  if (getmetatable(a) == mcp.array_mt) ~= (getmetatable(b) == mcp.array_mt) then return false end
  for k, v in pairs(a) do
    if not same(v, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end
M.same = same

--- json(value, text): value encodes as the JSON text says (compared as JSON).
function M.json(value, text)
  local got = encode(value)
  if not same(decode(got), decode(text)) then
    error(("encodes as\n  %s\nexpected\n  %s"):format(got, text), 2)
  end
end

--- equal(got, want): the same value (tables compared as JSON values).
function M.equal(got, want)
  if not same(got, want) then
    local show = function(v) return type(v) == "table" and encode(v) or tostring(v) end
    error(("got %s, expected %s"):format(show(got), show(want)), 2)
  end
end

--- fails(pattern, fn, ...): fn(...) raises an error whose message matches pattern.
function M.fails(pattern, fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then error("no error, expected one matching " .. pattern, 2) end
  if not tostring(err):find(pattern) then error(("error %q does not match %q"):format(tostring(err), pattern), 2) end
end

return M
