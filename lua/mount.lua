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
local type, pairs, ipairs, pcall, tostring, tonumber, next = type, pairs, ipairs, pcall, tostring, tonumber, next

local mount_keys = set { "upstream", "prefix", "include", "exclude", "transform", "scopes" }
-- what of an upstream's item a mounted one carries (the rest is the upstream's business)
local FIELDS = {
  tools = { "title", "description", "inputSchema", "outputSchema", "annotations", "icons", "_meta" },
  resources = { "uri", "title", "description", "mimeType", "size", "annotations", "icons", "_meta" },
  resourceTemplates = { "uriTemplate", "title", "description", "mimeType", "annotations", "icons", "_meta" },
  prompts = { "title", "description", "arguments", "icons", "_meta" },
}
local KINDS = { "tools", "resources", "resourceTemplates", "prompts" }

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
-- a list of items, whatever their order (an upstream that lists them in
-- another order each time must not reload the app each time)
local function canonical_set(items)
  local each = {}
  for i, it in ipairs(items) do each[i] = canonical(it) end
  table.sort(each)
  return table.concat(each, "\2")
end

-- where the refresh keeps an upstream's tools: one entry per declaration
local function kept_key(d, kind)
  return table.concat({ "mount", kind, d.name, d.url or d.key or "" }, "\1")
end

-- {====== forwarding: each mounted item's handler

local function forward_tool(upstream, remote)
  return function(args, ctx)
    local r = M.client(upstream):call(remote, args, {
      progress = function(p, t, m) ctx:progress(p, t, m) end,
    })
    return M.result { content = r.content or {}, structured = r.structuredContent,
                      isError = r.isError, _meta = r._meta }
  end
end

-- The upstream's contents as a read returns them (blob: bytes again; the
-- read's result shaping encodes them back)
local function contents_of(r)
  local out = {}
  for i, c in ipairs(r.contents or {}) do
    out[i] = { uri = c.uri, mimeType = c.mimeType, _meta = c._meta, text = c.text,
               blob = c.blob and core.base64_decode(c.blob) or nil }
  end
  if #out == 0 then return nil end -- nothing: not found
  return out
end

local function forward_read(upstream, uri)
  return function() return contents_of(M.client(upstream):read(uri)) end
end

-- RFC 6570 level 1 again: the URI a template's read was asked for, from its
-- variables (percent-encoded but for unreserved characters)
local function expand(template, vars)
  return (template:gsub("{([^}]+)}", function(k)
    return (tostring(vars[k] or ""):gsub("[^%w%-%._~]", function(c) return ("%%%02X"):format(c:byte()) end))
  end))
end

local function forward_template(upstream, template)
  return function(vars) return contents_of(M.client(upstream):read(expand(template, vars))) end
end

local function forward_prompt(upstream, remote)
  return function(args)
    local r = M.client(upstream):prompt(remote, args)
    return { description = r.description, messages = r.messages or {} }
  end
end

-- completion of an argument (a template's variable), asked of the upstream
local function forward_complete(upstream, ref, name)
  return function(value, args)
    local r = M.client(upstream):complete(ref, { name = name, value = value },
                                          next(args or {}) and { arguments = args } or nil)
    return r.completion and r.completion.values or {}
  end
end

-- }======

-- {====== registering one upstream item as ours

local function register(kind, upstream, it, remote, scopes)
  if kind == "tools" then
    local d = { name = it.name, scopes = it.scopes or scopes, handler = forward_tool(upstream, remote.name) }
    for _, k in ipairs(FIELDS.tools) do d[k] = it[k] end
    if d.inputSchema == nil then d.inputSchema = { type = "object" } end
    return M.tool(d)
  end
  if kind == "resources" then
    local d = { uri = it.uri, name = it.name, scopes = it.scopes or scopes, title = it.title,
                description = it.description, mime = it.mimeType, size = it.size,
                annotations = it.annotations, icons = it.icons, _meta = it._meta,
                read = forward_read(upstream, remote.uri) }
    return M.resource(d)
  end
  if kind == "resourceTemplates" then
    local complete = {}
    for var in tostring(remote.uriTemplate):gmatch("{([^}]+)}") do
      complete[var] = forward_complete(upstream, { type = "ref/resource", uri = remote.uriTemplate }, var)
    end
    local d = { uri = it.uriTemplate, name = it.name, scopes = it.scopes or scopes, title = it.title,
                description = it.description, mime = it.mimeType, annotations = it.annotations,
                icons = it.icons, _meta = it._meta, complete = complete,
                read = forward_template(upstream, remote.uriTemplate) }
    return M.template(d)
  end
  local args, complete = {}, {}
  for i, a in ipairs(type(it.arguments) == "table" and it.arguments or {}) do
    if type(a) == "table" and type(a.name) == "string" then
      args[#args + 1] = { name = a.name, title = a.title, description = a.description, required = a.required == true }
      complete[a.name] = forward_complete(upstream, { type = "ref/prompt", name = remote.name }, a.name)
    else
      argerr("mount", ("prompt '%s': argument %d has no name"):format(tostring(remote.name), i))
    end
  end
  return M.prompt { name = it.name, scopes = it.scopes or scopes, title = it.title, description = it.description,
                    icons = it.icons, _meta = it._meta, args = args, complete = complete,
                    get = forward_prompt(upstream, remote.name) }
end

-- }======

-- The refresh (a call on the engine, core/mcp/mount.c): list each mounted
-- upstream, every kind; "changed" when a list differs from what this
-- version loaded. A kind the upstream does not serve (-32601) is empty.
local function refresh()
  local changed, failed, seen = false, {}, {}
  for _, m in ipairs(mounts) do
    for _, kind in ipairs(KINDS) do
      local key = m.keys[kind]
      if not seen[key] then
        seen[key] = true
        local ok, list = pcall(function() return M.client(m.upstream):list(kind) end)
        if not ok and type(list) == "table" and list.code == -32601 then ok, list = true, {} end
        if ok then
          if canonical_set(list) ~= m.loaded_with[kind] then
            C.keep(key, encode(list))
            changed = true
          end
        else
          failed[#failed + 1] = tostring(type(list) == "table" and list.message or list)
        end
      end
    end
  end
  if changed then return "changed" end
  if #failed > 0 then return nil, table.concat(failed, "; ") end
  return "same"
end

--- mcp.mount{ upstream =, prefix =, include =, exclude =, transform = fn(item, kind) -> item | nil, scopes = }
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
  local m = { upstream = upstream, keys = {}, loaded_with = {} }
  mounts[#mounts + 1] = m
  reg.mount_refresh = refresh
  local n = 0
  for _, kind in ipairs(KINDS) do
    m.keys[kind] = kept_key(d, kind)
    local listed = C.keep(m.keys[kind])
    local ok, items = pcall(decode, listed or "null")
    if not ok or type(items) ~= "table" then items = nil end -- not listed yet: the refresh after this load lists it
    m.loaded_with[kind] = items and canonical_set(items)
    for _, t in ipairs(items or {}) do
      local remote = type(t) == "table" and t.name
      if type(remote) == "string" and (not include or matches(include, remote))
          and not (exclude and matches(exclude, remote)) then
        local it = { name = prefix .. remote }
        for _, k in ipairs(FIELDS[kind]) do it[k] = t[k] end
        if transform then it = transform(it, kind) end -- an error is the script's load error, at its line
        if it ~= nil then
          if type(it) ~= "table" then argerr("mount", ("transform must return the item (a table) or nil, got %s"):format(type(it))) end
          register(kind, upstream, it, t, def.scopes)
          n = n + 1
        end
      end
    end
  end
  return n
end
