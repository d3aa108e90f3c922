-- mount.lua — mcp.mount: an upstream's tools served as this app's own
-- (docs/lua-api.md, "Mounting an upstream"). Run by lua/mcp.lua with
-- (core, reg, I, M, while_loading), after lua/client.lua.
--
-- A mounted tool is an ordinary tool (M.tool) whose handler forwards the call
-- with mcp.client(upstream):call, so lists, scopes, middleware, metrics and
-- both revisions apply to it unchanged. A load never waits on an upstream:
-- mcp.mount registers what the last refresh listed (kept process-wide by
-- core.client.keep, across versions); after each load the server runs
-- reg.mount_refresh as a call (core/mcp/mount.c), which lists every mounted
-- upstream again and answers "changed" when a list differs from the one this
-- version was loaded with: the app is then loaded again and our clients get
-- notifications/tools/list_changed, as for an edited script.

local core, reg, I, M, while_loading = ...
local argerr, check_fields, field, set = I.argerr, I.check_fields, I.field, I.set
local C, encode, decode = core.client, core.json_encode, core.json_decode
local type, pairs, ipairs, pcall, tostring, tonumber = type, pairs, ipairs, pcall, tostring, tonumber

local mount_keys = set { "upstream", "prefix", "include", "exclude", "transform", "scopes" }
-- what of an upstream's tool a mounted tool carries (the rest is the upstream's business)
local TOOL_FIELDS = { "title", "description", "inputSchema", "outputSchema", "annotations", "icons", "_meta" }

local mounts = {} -- this version's, in declaration order

-- "get-*" -> a Lua pattern matching the whole name ('*' any run, '?' one character)
local function glob(s)
  return "^" .. s:gsub("[%^%$%(%)%%%.%[%]%+%-]", "%%%0"):gsub("%*", ".*"):gsub("%?", ".") .. "$"
end

local function patterns(what, v)
  if v == nil then return nil end
  if type(v) == "string" then v = { v } end
  if type(v) ~= "table" or #v == 0 then argerr("mount", ("field '%s' must be a name pattern or a list of them"):format(what)) end
  local out = {}
  for i, p in ipairs(v) do
    if type(p) ~= "string" then argerr("mount", ("%s[%d] must be a string"):format(what, i)) end
    out[i] = glob(p)
  end
  return out
end

local function matches(list, name)
  for _, p in ipairs(list) do if name:find(p) then return true end end
  return false
end

-- A JSON-like value as one string with sorted keys: what tells two lists
-- apart (json_encode's key order follows the table's hash)
local function canon(v, out)
  local t = type(v)
  if t ~= "table" then out[#out + 1] = t:sub(1, 1) .. tostring(v); return end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  out[#out + 1] = "{"
  for _, k in ipairs(keys) do
    out[#out + 1] = k
    canon(v[k] == nil and v[tonumber(k)] or v[k], out)
  end
  out[#out + 1] = "}"
end
local function canonical(v)
  local out = {}
  canon(v, out)
  return table.concat(out, "\1")
end

-- where the refresh keeps an upstream's tools: one entry per declaration
local function kept_key(d)
  return table.concat({ "mount", "tools", d.name, d.url or d.key or "" }, "\1")
end

-- The handler of a mounted tool: the upstream's result, as it came.
local function forwarder(upstream, remote)
  return function(args, ctx)
    local r = M.client(upstream):call(remote, args, {
      progress = function(p, t, m) ctx:progress(p, t, m) end,
    })
    return M.result { content = r.content or {}, structured = r.structuredContent,
                      isError = r.isError, _meta = r._meta }
  end
end

-- The refresh (a call on the engine, core/mcp/mount.c): list each mounted
-- upstream; "changed" when a list differs from what this version loaded.
local function refresh()
  local changed, failed = false, {}
  local seen = {}
  for _, m in ipairs(mounts) do
    if not seen[m.key] then
      seen[m.key] = true
      local ok, tools = pcall(function() return M.client(m.upstream):list("tools") end)
      if ok then
        if canonical(tools) ~= m.loaded_with then
          C.keep(m.key, encode(tools))
          changed = true
        end
      else
        failed[#failed + 1] = tostring(type(tools) == "table" and tools.message or tools)
      end
    end
  end
  if changed then return "changed" end
  if #failed > 0 then return nil, table.concat(failed, "; ") end
  return "same"
end

--- mcp.mount{ upstream =, prefix =, include =, exclude =, transform = fn(tool) -> tool | nil, scopes = }
function M.mount(def)
  while_loading("mount")
  check_fields("mount", def, mount_keys)
  local upstream = field("mount", def, "upstream", "string")
  local d = I.upstream_decl(upstream)
  if not d then argerr("mount", ("no upstream '%s' (declare it with mcp.upstream{ name = ... } first)"):format(upstream)) end
  local prefix = field("mount", def, "prefix", "string", true) or ""
  local include, exclude = patterns("include", def.include), patterns("exclude", def.exclude)
  local transform = field("mount", def, "transform", "function", true)
  if def.scopes ~= nil and type(def.scopes) ~= "table" then argerr("mount", "field 'scopes' must be a list of scope names") end
  local key = kept_key(d)
  local listed = C.keep(key)
  local ok, tools = pcall(decode, listed or "null")
  if not ok or type(tools) ~= "table" then tools = nil end -- not listed yet: the refresh after this load lists it
  mounts[#mounts + 1] = { upstream = upstream, key = key, loaded_with = tools and canonical(tools) }
  reg.mount_refresh = refresh
  if not tools then return 0 end
  local n = 0
  for _, t in ipairs(tools) do
    local remote = type(t) == "table" and t.name
    if type(remote) == "string" and (not include or matches(include, remote))
        and not (exclude and matches(exclude, remote)) then
      local tool = { name = prefix .. remote }
      for _, k in ipairs(TOOL_FIELDS) do tool[k] = t[k] end
      if transform then tool = transform(tool) end -- an error is the script's load error, at its line
      if tool ~= nil then
        if type(tool) ~= "table" then argerr("mount", ("transform must return a tool table or nil, got %s"):format(type(tool))) end
        local reg_def = { name = tool.name, scopes = tool.scopes or def.scopes, handler = forwarder(upstream, remote) }
        for _, k in ipairs(TOOL_FIELDS) do reg_def[k] = tool[k] end
        if reg_def.inputSchema == nil then reg_def.inputSchema = { type = "object" } end
        M.tool(reg_def)
        n = n + 1
      end
    end
  end
  return n
end

