-- internal.lua — the machinery behind require "mcp" that scripts never
-- reach: what C calls (the result shapers results.c runs on what a handler
-- returns, app.lua's checks), what registration does behind the author's
-- back (widgets' includes put inline), and the helpers lua/mcp.lua shares
-- with it (errors at the author's line, field checks, aliases). app.c loads
-- it with (core) before lua/mcp.lua, which gets the table it returns;
-- nothing of it is put on the mcp module.

local core = ...
local I = {}

local array_mt = core.array_mt
local type, pairs, ipairs, error, tostring, setmetatable, getmetatable =
      type, pairs, ipairs, error, tostring, setmetatable, getmetatable
local sort, concat = table.sort, table.concat
local rawlen, rawget, next, pcall = rawlen, rawget, next, pcall
local math = { type = math.type }

-- {===================================================== errors and fields

-- the chunks of the runtime: a raise names the first line outside them
local internal_chunks = { ["=mcp.lua"] = true, ["=internal.lua"] = true, ["=client.lua"] = true,
                         ["=store_db.lua"] = true }
-- Raise msg at the first stack level outside these chunks: the script line
-- that called mcp.xxx, however deep inside them the mistake was found.
local getinfo = debug.getinfo -- a local: under --sandbox scripts have no debug.getinfo
local function raise(msg)
  local level = 2
  while true do
    local info = getinfo(level, "S")
    if not info then level = 2 break end
    if not internal_chunks[info.source] and info.what ~= "C" then break end
    level = level + 1
  end
  error(msg, level)
end

local function argerr(fn, msg)
  raise(("mcp.%s: %s"):format(fn, msg))
end

local function check_fields(fn, def, allowed)
  if type(def) ~= "table" then
    raise(("mcp.%s expects a table, got %s"):format(fn, type(def)))
  end
  for k in pairs(def) do
    if not allowed[k] then argerr(fn, ("unknown field '%s'"):format(tostring(k))) end
  end
end

local function field(fn, def, key, ty, optional)
  local v = def[key]
  if v == nil then
    if optional then return nil end
    argerr(fn, ("field '%s' missing"):format(key))
  end
  if type(v) ~= ty then
    argerr(fn, ("field '%s' must be a %s, got %s"):format(key, ty, type(v)))
  end
  return v
end

local function set(list)
  local s = {}
  for _, k in ipairs(list) do s[k] = true end
  return s
end

-- One value under two names, luamcp's (ours) and the MCP spelling (theirs):
-- either may be given, not both.
local function alias(fn, def, ours, theirs)
  local a, b = def[ours], def[theirs]
  if a ~= nil and b ~= nil then
    argerr(fn, ("give '%s' or '%s', not both (they are one field)"):format(ours, theirs))
  end
  if a ~= nil then return a end
  return b
end

I.getinfo, I.raise, I.argerr, I.check_fields, I.field, I.set, I.alias =
  getinfo, raise, argerr, check_fields, field, set, alias

--- Mark a table (a new one if nil) as a JSON array: {} then encodes as [].
function I.as_array(t)
  return setmetatable(t or {}, array_mt)
end
local as_array = I.as_array

-- what mcp.result{} and mcp.fail() make, and the content blocks
I.result_mt = { __name = "mcp.result" }
local result_mt = I.result_mt
local content_types = set { "text", "image", "audio", "resource_link", "resource" }
local function is_block(v) return type(v) == "table" and content_types[v.type] ~= nil end
I.is_block = is_block

-- }=====================================================

-- {====== what a handler returns, as a result (docs/lua-api.md, "Results")
-- The one place that decides. Every mistake raises "FILE:LINE: ..." naming
-- the handler (`where`, given by results.c), with level 0: the line inside
-- this file would tell the author nothing.

local function text_block(s) return { type = "text", text = s } end
local scalar = set { "string", "number", "boolean" }

local function fail_at(where, fmt, ...)
  error(("%s: " .. fmt):format(where, ...), 0)
end

-- A content block's required fields have the types MCP gives them (a client
-- rejects the whole result otherwise).
local block_fields = {
  text = { text = "string" },
  image = { data = "string", mimeType = "string" },
  audio = { data = "string", mimeType = "string" },
  resource_link = { uri = "string", name = "string" },
  resource = { resource = "table" },
}
local function check_block(b, where, at)
  for k, ty in pairs(block_fields[b.type]) do
    if type(rawget(b, k)) ~= ty then
      fail_at(where, "%s: a %s block needs '%s' (a %s), got %s", at, b.type, k, ty, type(rawget(b, k)))
    end
  end
  if b.type == "resource" then
    local r = b.resource
    if type(rawget(r, "uri")) ~= "string" or (type(rawget(r, "text")) ~= "string" and type(rawget(r, "blob")) ~= "string") then
      fail_at(where, "%s: an embedded resource needs 'uri' and 'text' or 'blob' (strings)", at)
    end
  end
  -- annotations as the schema has them: a client checking results refuses others
  local ann = rawget(b, "annotations")
  if ann ~= nil then
    if type(ann) ~= "table" then fail_at(where, "%s: annotations must be a table, got %s", at, type(ann)) end
    local p = rawget(ann, "priority")
    if p ~= nil and (type(p) ~= "number" or not (p >= 0 and p <= 1)) then
      fail_at(where, "%s: annotations.priority must be a number from 0 to 1, got %s", at, tostring(p))
    end
    local aud = rawget(ann, "audience")
    if aud ~= nil then
      if type(aud) ~= "table" then fail_at(where, "%s: annotations.audience must be a list of \"user\", \"assistant\"", at) end
      for i = 1, rawlen(aud) do
        if aud[i] ~= "user" and aud[i] ~= "assistant" then
          fail_at(where, "%s: annotations.audience[%d] must be \"user\" or \"assistant\", got %s", at, i, tostring(aud[i]))
        end
      end
    end
    local lm = rawget(ann, "lastModified")
    if lm ~= nil and type(lm) ~= "string" then
      fail_at(where, "%s: annotations.lastModified must be an ISO 8601 string, got %s", at, type(lm))
    end
  end
  return b
end

-- "list" (keys 1..n, or marked with mcp.as_array), "record" (no list items),
-- "empty", or "mixed" with the first named key found.
local function table_kind(t)
  if getmetatable(t) == array_mt then return "list" end
  local n = rawlen(t)
  local named
  for k in next, t do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then
      named = k
      break
    end
  end
  if n == 0 then return named == nil and "empty" or "record" end
  if named ~= nil then return "mixed", named end
  return "list"
end

-- The content array of a string, a block, or a list of blocks and text.
local function content_of(v, where, at)
  local t = type(v)
  if v == nil then return as_array {} end
  if scalar[t] then return as_array { text_block(tostring(v)) } end
  if t ~= "table" then fail_at(where, "%s is a %s; content is text or content blocks", at, t) end
  if is_block(v) then return as_array { check_block(v, where, at) } end
  local kind, named = table_kind(v)
  if kind == "empty" then return as_array {} end
  if kind ~= "list" then
    fail_at(where, "%s must be a list of content blocks or text (it has the field '%s')", at,
            tostring(named))
  end
  local out = as_array {}
  for i = 1, rawlen(v) do
    local b = v[i]
    if scalar[type(b)] then out[i] = text_block(tostring(b))
    elseif is_block(b) then out[i] = check_block(b, where, ("%s[%d]"):format(at, i))
    else fail_at(where, "%s[%d] is a %s, not a content block or text", at, i, type(b)) end
  end
  return out
end

-- Structured output with its JSON as the text fallback (the spec's advice
-- for clients that read only content). Encoding errors name the handler.
-- x as JSON (results' stricter encoding), or an error naming where and what.
local function json_or_fail(x, where, what)
  local ok, json = pcall(core.json_encode, x, true)
  if not ok then fail_at(where, "%s cannot be sent as JSON: %s", what, (tostring(json):gsub("^[^:]*:%d+: ", ""))) end
  return json
end

local function structured(x, where)
  return { content = as_array { text_block(json_or_fail(x, where, "the result")) }, structuredContent = x }
end

-- What the engine calls with a tool handler's return value (and the
-- handler's FILE:LINE, and whether the tool declares an output schema:
-- then a list or a single value is its structured output, not text).
function I.tool_result(v, where, has_output)
  where = where or "handler"
  local t = type(v)
  if v == nil then return { content = as_array {} } end
  if has_output and (scalar[t] or (t == "table" and getmetatable(v) ~= result_mt and not is_block(v))) then
    return structured(v, where)
  end
  if scalar[t] then return { content = as_array { text_block(tostring(v)) } } end
  if t ~= "table" then
    fail_at(where, "the handler returned a %s; return text, a table of data, content blocks or mcp.result{...}", t)
  end
  if getmetatable(v) == result_mt then
    local r = { content = content_of(v.content, where, "mcp.result's content"),
                structuredContent = v.structuredContent, _meta = v._meta }
    if v.isError then r.isError = true end
    if r.structuredContent ~= nil and v.content == nil then
      r.content = structured(r.structuredContent, where).content
    end
    return r
  end
  if is_block(v) then return { content = as_array { check_block(v, where, "the result") } } end
  local kind, named = table_kind(v)
  if kind == "mixed" then
    fail_at(where, "the result mixes list items (1..%d) and named fields ('%s'); return a list or a record",
            rawlen(v), tostring(named))
  end
  if kind == "record" or kind == "empty" then return structured(v, where) end
  -- a list: of records (structured output), or of content blocks and text
  local n, records, first_other = rawlen(v), 0, nil
  for i = 1, n do
    local x = v[i]
    if type(x) == "table" and not is_block(x) then records = records + 1
    elseif first_other == nil then first_other = i end
  end
  if records == 0 then return { content = content_of(v, where, "the result") } end
  if records < n then
    local x = v[first_other]
    fail_at(where, "the result mixes records with %s (item %d); return a list of one kind",
            is_block(x) and "content blocks" or type(x), first_other)
  end
  return structured(v, where)
end
-- }======

local roles = set { "user", "assistant" }

-- One prompt message: text, a content block, or mcp.user/assistant(...).
local function prompt_message(m, where, at)
  if scalar[type(m)] then return { role = "user", content = text_block(tostring(m)) } end
  if type(m) ~= "table" then
    fail_at(where, "%s is a %s; a prompt message is text, a content block or mcp.user(...)/mcp.assistant(...)", at, type(m))
  end
  if m.role == nil then
    if is_block(m) then return { role = "user", content = check_block(m, where, at) } end
    fail_at(where, "%s is neither a message (role, content) nor a content block", at)
  end
  if not roles[m.role] then fail_at(where, "%s: role must be \"user\" or \"assistant\", got %s", at, tostring(m.role)) end
  local c = m.content
  if scalar[type(c)] then c = text_block(tostring(c))
  elseif is_block(c) then check_block(c, where, at .. ".content")
  else fail_at(where, "%s.content must be text or one content block, got %s", at, type(c)) end
  return { role = m.role, content = c }
end

-- What a prompt's get returns -> GetPromptResult (where: FILE:LINE of get).
function I.prompt_result(v, def, where)
  where = where or "get"
  if v == nil then fail_at(where, "the prompt's get returned nothing; return text, a message or a list of them") end
  local description, list = def.description, v
  if type(v) == "table" and getmetatable(v) ~= array_mt and rawget(v, "messages") ~= nil then
    description = v.description or def.description
    if type(description) ~= "string" and description ~= nil then
      fail_at(where, "description must be a string, got %s", type(description))
    end
    list = v.messages
    if type(list) ~= "table" then fail_at(where, "messages must be a list, got %s", type(list)) end
  elseif type(v) ~= "table" or v.role ~= nil or is_block(v) then
    list = { v }
  end
  local kind, named = table_kind(list)
  if kind == "mixed" or kind == "record" then
    fail_at(where, "the prompt's messages must be a list (it has the field '%s')", tostring(named))
  end
  local msgs = as_array {}
  for i = 1, rawlen(list) do msgs[i] = prompt_message(list[i], where, ("message %d"):format(i)) end
  return { description = description, messages = msgs }
end

-- A resource read's return value -> the `contents` array (where: FILE:LINE of read).
function I.resource_result(v, uri, mime, where)
  where = where or "read"
  local function item(x, at)
    if type(x) == "string" then return { uri = uri, mimeType = mime, text = x } end
    if type(x) == "table" and (rawget(x, "text") ~= nil or rawget(x, "blob") ~= nil) then
      if x.mime ~= nil and x.mimeType ~= nil then fail_at(where, "%s: give 'mime' or 'mimeType', not both", at) end
      local it = { uri = x.uri or uri, mimeType = x.mime or x.mimeType or mime, _meta = x._meta }
      if type(it.uri) ~= "string" then fail_at(where, "%s: uri must be a string, got %s", at, type(it.uri)) end
      if it.mimeType ~= nil and type(it.mimeType) ~= "string" then
        fail_at(where, "%s: mimeType must be a string, got %s", at, type(it.mimeType))
      end
      if it._meta ~= nil and type(it._meta) ~= "table" then fail_at(where, "%s: _meta must be a table, got %s", at, type(it._meta)) end
      if x.blob ~= nil then
        if type(x.blob) ~= "string" then fail_at(where, "%s: blob must be a string of bytes, got %s", at, type(x.blob)) end
        it.blob = core.base64_encode(x.blob)
      elseif scalar[type(x.text)] then it.text = tostring(x.text)
      else fail_at(where, "%s: text must be a string, got %s", at, type(x.text)) end
      return it
    end
    -- any other value: its JSON
    return { uri = uri, mimeType = mime or "application/json", text = json_or_fail(x, where, at) }
  end
  if type(v) == "table" and #v > 0 and type(v[1]) == "table" and (v[1].text or v[1].blob) then
    local out = as_array {}
    for i, x in ipairs(v) do out[i] = item(x, ("content %d"):format(i)) end
    return out
  end
  return as_array { item(v, "the result") }
end

-- }=====================================================

-- {===================================================== app.lua

-- What app.lua may say, and the type of each (its permissions are
-- sandbox.c's, its cache and schema tables are looked into here).
local app_fields = {
  name = "string", version = "string", title = "string", description = "string",
  websiteUrl = "string", instructions = "string", icons = "table", cache = "table",
  schema = "table", permissions = "table",
  -- luamcp pack (lua/ship.lua): the bundle's manifest and server.json
  author = "string", license = "string", user_config = "table", registry = "table",
  -- scopes its code checks (ctx.auth:has) beyond those its items declare
  scopes = "table",
}
local app_sub = {
  cache = { ttl = "number", scope = { public = true, private = true } },
  schema = { format = { assert = true, annotate = true }, unknown_args = { reject = true, allow = true } },
  registry = { name = "string", url = "string", repository = "string" },
}
-- user_config = { key = { type =, title =, description =, ... } }: what the
-- bundle's installer asks the user; env = the variable the value reaches
-- the app in (default: the key in capitals)
local user_config_fields = {
  type = { string = true, number = true, boolean = true, directory = true, file = true },
  title = "string", description = "string", required = "boolean", sensitive = "boolean",
  multiple = "boolean", min = "number", max = "number", env = "string", default = true,
}
I.app = { schema = {} } -- app.lua's schema = {...}, once checked (mcp.tool reads unknown_args)

-- The line of app.lua where `key =` is written (tables keep no lines).
local function line_of(src, key)
  local n = 1
  for line in (src .. "\n"):gmatch("([^\n]*)\n") do
    if line:find("%f[%w_]" .. key:gsub("%p", "%%%0") .. "%s*=") then return n end
    n = n + 1
  end
end

-- C calls it with what app.lua returned (or the globals it set), its path
-- and its text; the problems come back as "app.lua:LINE: ..." lines.
function I.app_info(info, path, src)
  local problems = {}
  local function bad(key, fmt, ...)
    local line = type(key) == "string" and line_of(src, key)
    problems[#problems + 1] = { line = line or 0, text = ("%s:%s " .. fmt):format(path, line and (line .. ":") or "", ...) }
  end
  local function names(t)
    local out = {}
    for k in pairs(t) do out[#out + 1] = k end
    sort(out)
    return concat(out, ", ")
  end
  -- t's fields against spec (field -> "type" or a set of allowed values);
  -- own(f, v) may take a field over (true: checked)
  local function fields_of(t, spec, what, own)
    for f, fv in next, t do
      local want = spec[f]
      if want == nil then
        bad(f, "unknown field '%s' in app.lua's %s (known: %s)", tostring(f), what, names(spec))
      elseif own and own(f, fv) then -- checked by own
      elseif type(want) == "string" and type(fv) ~= want then
        bad(f, "app.lua's %s.%s must be a %s, got %s", what, f, want, type(fv))
      elseif type(want) == "table" and not want[fv] then
        bad(f, "app.lua's %s.%s must be one of %s, got %s", what, f, names(want), tostring(fv))
      end
    end
  end
  for k, v in next, info do
    local ty = app_fields[k]
    if not ty then
      bad(k, "unknown field '%s' in app.lua (known: %s)", tostring(k), names(app_fields))
    elseif type(v) ~= ty then
      bad(k, "app.lua's '%s' must be a %s, got %s", k, ty, type(v))
    elseif app_sub[k] then
      fields_of(v, app_sub[k], k)
    elseif k == "scopes" then
      for i, sc in ipairs(v) do
        -- RFC 6749's scope-token: %x21 / %x23-5B / %x5D-7E
        if type(sc) ~= "string" or sc == "" or sc:find("[^!-~]") or sc:find('["\\]') then
          bad(k, "app.lua's scopes[%d] must be a scope name (printable, no spaces, quotes or backslashes), got %s", i, tostring(sc))
        end
      end
      for key in next, v do
        if math.type(key) ~= "integer" or key < 1 or key > #v then
          bad(k, "app.lua's scopes must be a list of names like { \"reports:read\" }, got the key %s", tostring(key))
          break
        end
      end
    elseif k == "user_config" then
      for key, entry in next, v do
        if type(key) ~= "string" or not key:match("^[%a_][%w_]*$") then
          bad(k, "app.lua's user_config keys must be names (letters, digits, _), got %s", tostring(key))
        elseif type(entry) ~= "table" then
          bad(key, "app.lua's user_config.%s must be a table { type =, title =, description = }", key)
        else
          fields_of(entry, user_config_fields, "user_config." .. key, function(f, fv)
            if f ~= "default" then return false end
            local t = type(fv)
            if t ~= "string" and t ~= "number" and t ~= "boolean" and t ~= "table" then
              bad(f, "app.lua's user_config.%s.default must be a string, number, boolean or list", key)
            end
            return true
          end)
          for _, f in ipairs { "type", "title", "description" } do
            if entry[f] == nil then bad(key, "app.lua's user_config.%s needs '%s'", key, f) end
          end
        end
      end
    end
  end
  if type(info.name) == "string" and info.name == "" then bad("name", "app.lua's name must not be empty") end
  if #problems == 0 and type(info.schema) == "table" then I.app.schema = info.schema end
  sort(problems, function(a, b) return a.line < b.line or (a.line == b.line and a.text < b.text) end)
  for i, p in ipairs(problems) do problems[i] = p.text end
  return problems
end

-- }=====================================================

-- {===================================================== widgets

-- Put the view helper inline where a widget asks for it, so the widget
-- works under the spec's default CSP (no network).
local VIEW_TAG = '<script src="luamcp:view.js"></script>'
-- "</script" inside inline code would end the element early
local function script_text(code) return (code:gsub("</script", "<\\/script")) end
local VIEW_INLINE = "<script>\n" .. script_text(core.view_js) .. "\n</script>"

-- A widget is one HTML document (the spec's default CSP allows no network),
-- so what it includes is put inline when it is served:
--   <script src="luamcp:view.js"></script>   the view helper (lua/view.js)
--   <script src="inline:lib.js"></script>    a script from widgets/
--   <script type="module" src="inline:app.js"></script>
--   <link rel="stylesheet" href="inline:style.css">
local function read_widget_file(name)
  local path, err = core.widget_path(name)
  if not path then error(err, 0) end
  local f, ferr = io.open(path, "rb")
  if not f then error(ferr, 0) end
  local text = f:read("a")
  f:close()
  return text
end

local function inline_view(html)
  -- any other luamcp: reference would reach the browser as a URL that loads nothing
  local other = html:gsub(VIEW_TAG:gsub("%p", "%%%0"), ""):match('["\']luamcp:([^"\']*)["\']')
  if other then
    error(("unknown include 'luamcp:%s' (the one there is: %s)"):format(other, VIEW_TAG), 0)
  end
  local at = html:find(VIEW_TAG, 1, true)
  if at then html = html:sub(1, at - 1) .. VIEW_INLINE .. html:sub(at + #VIEW_TAG) end
  html = html:gsub('<script([^>]-)%s+src="inline:([^"]+)"([^>]*)>%s*</script>', function(a, name, b)
    return "<script" .. a .. b .. ">\n" .. script_text(read_widget_file(name)) .. "\n</script>"
  end)
  html = html:gsub('<link%s+rel="stylesheet"%s+href="inline:([^"]+)"%s*/?>', function(name)
    return "<style>\n" .. read_widget_file(name) .. "\n</style>"
  end)
  return html
end
I.read_widget_file, I.inline_view = read_widget_file, inline_view

-- }=====================================================

return I
