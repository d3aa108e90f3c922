-- mcp.lua — what a script gets from require "mcp": registration of tools,
-- resources, templates, prompts and widgets, JSON Schema builders, content
-- helpers. Loaded once per app state by app.c with (core, reg, I): `core`
-- holds the C functions (lua_api.c), `reg` is the table registry.c reads
-- after every script has loaded, `I` the machinery of lua/internal.lua
-- (result shapers, app.lua's checks, widget inlining), which scripts never
-- see. Returns the module and the function that ends loading.
-- Registration is only possible while scripts load.

local core, reg, I = ...
local M = {}
local raise, argerr, check_fields, field, set, alias =
      I.raise, I.argerr, I.check_fields, I.field, I.set, I.alias
local getinfo = I.getinfo
local is_block, inline_view, read_widget_file = I.is_block, I.inline_view, I.read_widget_file

local array_mt = core.array_mt
local type, pairs, ipairs, error, tostring, setmetatable, getmetatable, select =
      type, pairs, ipairs, error, tostring, setmetatable, getmetatable, select
local sort, concat = table.sort, table.concat
local rawlen, rawget, next, pcall = rawlen, rawget, next, pcall
local math_type = math.type

M.null = core.null
M.array_mt = array_mt
M.json = { encode = core.json_encode, decode = core.json_decode }
M.base64 = { encode = core.base64_encode, decode = core.base64_decode }
--- mcp.validate(schema, value [, { format = "assert" }]) -> true | false, message: the
--- validator tools use (format is an annotation unless asked for)
M.validate = core.validate
M.state = core.state -- survives reloads (docs/lua-api.md, "State")
--- mcp.notify_updated(uri): notifications/resources/updated to subscribed clients.
M.notify_updated = core.notify_updated
--- mcp.path.join(base, rel) -> base/rel, or nil and why when rel is absolute, has a
--- ".." segment or a NUL byte (core/base/path.h); mcp.path.app([rel]): the same in the app's folder
M.path = { join = core.path_join, app = core.app_path }
-- waiting on the outside world without stopping the server (core/io/)
-- {====== I/O modules
--- mcp.http.request{method=, url=, headers=, body=, json=, timeout=, follow=, max_size=, insecure=}
--- -> {status=, headers=, body=, json=, url=}; mcp.http.get(url [, opts]), mcp.http.post(url, body [, opts])
M.http = core.http
--- mcp.exec{ "prog", "arg", ..., stdin=, env=, env_clear=, cwd=, timeout=, grace=, max_output= }
--- -> { code=, signal=, stdout=, stderr=, timed_out=, stdout_truncated=, stderr_truncated= }
M.exec = core.exec
--- mcp.socket: luasocket's tcp/unix client as cosockets (core/io/io_socket.h)
M.socket = core.socket
--- mcp.redis(cmd, ...) -> the reply; mcp.redis.pipeline(fn | {{cmd, ...}, ...}) -> the
--- replies: any Redis command on the connection of --store redis:// (core/io/io_redis.h)
M.redis = core.redis
--- mcp.db.query(sql, ...) -> rows; mcp.db.one(sql, ...) -> row or nil;
--- mcp.db.exec(sql, ...) -> {changes=, last_id=}; mcp.db.tx(fn) -> fn's results:
--- the app's SQLite database (core/io/db.h). tx: BEGIN IMMEDIATE (a savepoint
--- when nested), fn, COMMIT; an error rolls back and is raised again as it was;
--- the guard (a to-be-closed variable) rolls back what a call's end leaves open.
local db_tx
do
  local begin, commit, rollback = core.db.begin, core.db.commit, core.db.rollback
  local pack, unpack, pcall, error, type = table.pack, table.unpack, pcall, error, type
  db_tx = function(fn)
    if type(fn) ~= "function" then error("mcp.db.tx: needs a function", 2) end
    local g <close> = begin()
    local r = pack(pcall(fn))
    if not r[1] then
      rollback(g)
      error(r[2], 0)
    end
    commit(g)
    return unpack(r, 2, r.n)
  end
end
M.db = { query = core.db.query, one = core.db.one, exec = core.db.exec, tx = db_tx }
--- mcp.store.get/set/incr/delete/add/cas/keys(key, ...): keys and values that
--- last: on the app's database by default (lua/store_db.lua, durable), in memory
--- with --store memory, on Redis with --store redis:// (core/io/store.h). Which
--- one serves is asked at each operation (--store is known after the load).
local store_backend = core.store.backend
local store_db = core.store_db(core.store, M.db, raise, M.null)
M.store = {}
for _, op in ipairs { "get", "set", "incr", "delete", "add", "cas", "keys" } do
  local c, d = core.store[op], store_db[op]
  M.store[op] = function(...)
    if store_backend() == "db" then return d(...) end
    return c(...)
  end
end
--- mcp.store.update(key, fn [, ttl]) -> the new value: fn(old) (a string, or nil)
--- returns the new one (nil deletes). On the database, inside one transaction;
--- else written back only if the key still holds old (cas), fn running again on
--- what it holds now, at most STORE_TRIES times. Looked up in M.store at each
--- call, so luamcp test's fakes serve it too.
local STORE_TRIES = 64
M.store.update = function(key, fn, ttl)
  if type(fn) ~= "function" then
    raise(("mcp.store.update: fn must be a function(old) -> new, got %s"):format(type(fn)))
  end
  if store_backend() == "db" then return store_db.update(key, fn, ttl) end
  local store = M.store
  for _ = 1, STORE_TRIES do
    local old = store.get(key)
    local new = fn(old)
    local t = type(new)
    if new ~= nil and t ~= "string" and t ~= "number" then
      raise(("mcp.store.update: fn must return a string, a number or nil, got %s"):format(t))
    end
    if store.cas(key, old, new, ttl) then return new ~= nil and tostring(new) or nil end
  end
  raise(("mcp.store.update: '%s' kept changing: gave up after %d tries"):format(tostring(key), STORE_TRIES))
end
--- mcp.spawn(fn, ...) -> handle; handle:wait() -> fn's results (or its error raised
--- again); mcp.all{ f, g, ... } -> the first result of each, in order: light threads
--- of the call, so one handler waits on several things at once (core/reactor/call_threads.c)
M.spawn = core.spawn
M.all = core.all
-- }======
--- mcp.now() -> wall-clock milliseconds since the Unix epoch, a float with a fraction (µs)
M.now = core.now

--- Mark a table (a new one if nil) as a JSON array: {} then encodes as [].
M.as_array = I.as_array
local as_array = M.as_array

-- {===================================================== argument checking

-- Registration is a load-time API (as Redis' FUNCTION LOAD): app.lua and the
-- scripts run, then _check ends loading; a registration from a handler
-- would be dropped without a word, so it is an error.
local loading = true
local function while_loading(fn)
  if not loading then
    raise(("mcp.%s can only be called while scripts load (at start and on reload), not from a handler"):format(fn))
  end
end

-- {====== other MCP servers: mcp.upstream, mcp.client (lua/client.lua)
assert(load(core.client_lua, "=client.lua", "t"))(core, I, M, while_loading)
-- mcp.mount (lua/mount.lua): an upstream's tools as this app's own
assert(load(core.mount_lua, "=mount.lua", "t"))(core, reg, I, M, while_loading)
-- }======

-- The file of the first caller outside this file (the script registering).
local function caller_file()
  local level = 2
  while true do
    local info = getinfo(level, "S")
    if not info then return nil end
    if info.source ~= "=mcp.lua" and info.what ~= "C" then
      return info.source:sub(1, 1) == "@" and info.source:sub(2) or nil
    end
    level = level + 1
  end
end

-- Copy the optional descriptive fields shared by every listed primitive.
local function copy_common(out, def)
  for _, k in ipairs { "title", "description", "annotations", "icons", "_meta" } do
    if def[k] ~= nil then out[k] = def[k] end
  end
  if def.icons then as_array(def.icons) end
  return out
end

-- }=====================================================

-- {===================================================== schema builders

local builder_mt = { __name = "mcp.schema" }
local optional_of = setmetatable({}, { __mode = "k" }) -- schema -> true
local complete_of = setmetatable({}, { __mode = "k" }) -- schema -> complete function (prompt arguments)

local function is_builder(t) return getmetatable(t) == builder_mt end

-- Keyword aliases: `min`/`max` mean the bound that fits the type.
local bound_alias = {
  string = { min = "minLength", max = "maxLength" },
  array = { min = "minItems", max = "maxItems" },
  number = { min = "minimum", max = "maximum" },
  integer = { min = "minimum", max = "maximum" },
}

local builder_keys = set {
  "description", "title", "default", "enum", "const", "examples", "format", "pattern",
  "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
  "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "items",
  "min", "max", "optional", "additionalProperties", "minProperties", "maxProperties",
  "complete",
}

local function build(ty, opts, fn)
  opts = opts or {}
  if type(opts) ~= "table" then
    raise(("mcp.%s expects an options table, got %s"):format(fn, type(opts)))
  end
  local s = setmetatable({ type = ty }, builder_mt)
  for k, v in pairs(opts) do
    if not builder_keys[k] then
      raise(("mcp.%s: unknown option '%s'"):format(fn, tostring(k)))
    end
    if k == "optional" then
      if v then optional_of[s] = true end
    elseif k == "complete" then -- kept beside the schema: a function is not JSON
      if type(v) ~= "function" then
        raise(("mcp.%s: option 'complete' must be a function(value, args, ctx), got %s"):format(fn, type(v)))
      end
      complete_of[s] = v
    elseif k == "min" or k == "max" then
      local keyword = bound_alias[ty] and bound_alias[ty][k]
      if not keyword then raise(("mcp.%s: option '%s' does not apply"):format(fn, k)) end
      if opts[keyword] ~= nil then
        raise(("mcp.%s: give '%s' or '%s', not both (they are one field)"):format(fn, k, keyword))
      end
      s[keyword] = v
    else
      s[k] = v
    end
  end
  if s.enum then as_array(s.enum) end
  if s.examples then as_array(s.examples) end
  if s.default ~= nil then optional_of[s] = true end
  return s
end

function M.string(opts) return build("string", opts, "string") end
function M.number(opts) return build("number", opts, "number") end
function M.integer(opts) return build("integer", opts, "integer") end
function M.boolean(opts) return build("boolean", opts, "boolean") end

--- mcp.enum{"a", "b", description = "..."}: a string limited to those values.
function M.enum(values)
  if type(values) ~= "table" or #values == 0 then
    raise("mcp.enum expects a list of values")
  end
  local opts = {}
  for k, v in pairs(values) do
    if type(k) ~= "number" then opts[k] = v end
  end
  opts.enum = { table.unpack(values) }
  return build("string", opts, "enum")
end

local object_of -- forward

--- mcp.array(items_schema [, opts]) or mcp.array{items = ..., min = 1}
local function is_opts(t)
  if type(t) ~= "table" or is_builder(t) or t.type ~= nil then return false end
  for k in pairs(t) do
    if not builder_keys[k] then return false end
  end
  return true
end

function M.array(items, opts)
  if opts == nil and is_opts(items) then
    opts = {}
    for k, v in pairs(items) do
      if k ~= "items" then opts[k] = v end
    end
    items = items.items
  end
  local s = build("array", opts, "array")
  if items ~= nil then
    if type(items) ~= "table" then raise("mcp.array: items must be a schema") end
    s.items = object_of(items, nil)
  end
  return s
end

-- A table of fields -> an object schema; a builder or a raw schema as is.
local function is_raw_schema(t)
  return t.type ~= nil or t["$ref"] ~= nil or t.anyOf ~= nil or t.oneOf ~= nil
      or t.allOf ~= nil or t.properties ~= nil or t["$schema"] ~= nil or t.enum ~= nil
      or t.const ~= nil or next(t) == nil
end

function object_of(fields, opts)
  if is_builder(fields) then return fields end
  if is_raw_schema(fields) and next(fields) ~= nil then return fields end
  local s = build("object", opts, "object")
  local props, required = {}, as_array {}
  for name, fs in pairs(fields) do
    if type(name) ~= "string" then
      raise("mcp.object: field names must be strings")
    end
    if type(fs) ~= "table" then
      raise(("field '%s': expected a schema (e.g. mcp.string()), got %s"):format(name, type(fs)))
    end
    local optional = optional_of[fs]
    if not is_builder(fs) and not is_raw_schema(fs) then fs = object_of(fs, nil) end
    props[name] = fs
    if not (optional or optional_of[fs]) then required[#required + 1] = name end
  end
  sort(required)
  s.properties = props
  if #required > 0 then s.required = required end
  return s
end

--- mcp.object{ field = schema, ... } [, opts]
function M.object(fields, opts)
  if type(fields) ~= "table" then raise("mcp.object expects a table of fields") end
  return object_of(fields, opts)
end

--- mcp.optional(schema): a copy of the schema, not required in its object
--- (a copy: a schema shared by two fields stays required in the other).
function M.optional(s)
  if type(s) ~= "table" then raise(("mcp.optional expects a schema, got %s"):format(type(s))) end
  local c = setmetatable({}, getmetatable(s))
  for k, v in pairs(s) do c[k] = v end
  optional_of[c] = true
  complete_of[c] = complete_of[s]
  return c
end

-- Raw JSON Schema tables: mark the keywords whose value is a JSON array, so
-- an empty Lua table still encodes as [] there.
local array_keywords = set { "required", "enum", "anyOf", "oneOf", "allOf", "prefixItems", "examples" }
local schema_map_keywords = set { "properties", "$defs", "definitions", "patternProperties", "dependentSchemas" }
-- maps whose members are JSON arrays (of names), or schemas for dependencies
local array_map_keywords = set { "dependentRequired", "dependencies" }
local function mark_schema_arrays(s, seen)
  if type(s) ~= "table" or seen[s] then return end
  seen[s] = true
  for k, v in pairs(s) do
    if type(v) == "table" then
      if array_keywords[k] or (k == "type" and #v > 0) or (k == "items" and #v > 0) then
        as_array(v)
        for _, sub in ipairs(v) do mark_schema_arrays(sub, seen) end
      elseif schema_map_keywords[k] then
        for _, sub in pairs(v) do mark_schema_arrays(sub, seen) end
      elseif array_map_keywords[k] then
        for _, sub in pairs(v) do
          if type(sub) == "table" and (#sub > 0 or (k == "dependentRequired" and next(sub) == nil)) then
            as_array(sub)
          else
            mark_schema_arrays(sub, seen)
          end
        end
      else
        mark_schema_arrays(v, seen)
      end
    end
  end
end

-- Turn what a script gave as `input`/`output` into a checked object schema.
local function to_schema(fn, key, v)
  if v == nil then return nil end
  if type(v) ~= "table" then argerr(fn, ("field '%s' must be a table"):format(key)) end
  local s = object_of(v, nil)
  mark_schema_arrays(s, {})
  local ok, msg = core.schema_check(s)
  if not ok then argerr(fn, ("field '%s': %s"):format(key, msg)) end
  if s.type ~= "object" then
    -- an output that is a list (or a single value) travels as { result = ... },
    -- as the official SDKs wrap it: the schema says so
    if key ~= "output" then argerr(fn, ("field '%s' must describe an object (type = \"object\")"):format(key)) end
    s = { type = "object", properties = { result = s }, required = as_array { "result" } }
  end
  return s
end

-- }=====================================================

-- {===================================================== content helpers

local function with(block, opts)
  if opts then
    for k, v in pairs(opts) do block[k] = v end
  end
  return block
end

function M.text(s, opts) return with({ type = "text", text = tostring(s) }, opts) end
--- mcp.image(bytes, mimeType [, opts]): bytes are raw; they are base64-encoded here.
function M.image(bytes, mime, opts)
  return with({ type = "image", data = core.base64_encode(bytes), mimeType = mime }, opts)
end
function M.audio(bytes, mime, opts)
  return with({ type = "audio", data = core.base64_encode(bytes), mimeType = mime }, opts)
end
--- mcp.link{uri=, name=, title?, description?, mimeType?, size?}: a resource_link block.
function M.link(def)
  local b = { type = "resource_link" }
  for k, v in pairs(def) do b[k] = v end
  b.mimeType, b.mime = alias("link", def, "mime", "mimeType"), nil -- one name: mimeType
  return b
end
--- mcp.embed{uri=, text= | blob= (raw bytes), mimeType?}: an embedded resource block.
function M.embed(def)
  local r = { uri = def.uri, mimeType = alias("embed", def, "mime", "mimeType"), _meta = def._meta }
  if def.blob then r.blob = core.base64_encode(def.blob) else r.text = def.text or "" end
  return { type = "resource", resource = r, annotations = def.annotations }
end

local result_mt = I.result_mt

--- mcp.result{content = ..., structured = ..., isError = ..., _meta = ...}
function M.result(def)
  return setmetatable({
    content = def.content, structuredContent = alias("result", def, "structured", "structuredContent"),
    isError = def.isError, _meta = def._meta,
  }, result_mt)
end

--- return mcp.fail("message"): a tool result with isError = true.
function M.fail(msg, ...)
  if select("#", ...) > 0 then msg = msg:format(...) end
  return setmetatable({ content = tostring(msg), isError = true }, result_mt)
end

-- mcp.rpc_error(code, message [, data]): raised (error(mcp.rpc_error(...)))
-- or returned, it ends the call as a JSON-RPC error with that code, where a
-- Lua error or mcp.fail() is a tool error the model sees (isError). A task
-- ends "failed" with it. The C side knows it by its metatable's __name.
local rpc_error_mt = { __name = "mcp.rpc_error" }
rpc_error_mt.__tostring = function(e) return ("JSON-RPC error %d: %s"):format(e.code, e.message) end
function M.rpc_error(code, message, data)
  if math_type(code) ~= "integer" then argerr("rpc_error", "the code must be an integer") end
  return setmetatable({ code = code, message = tostring(message or "error"), data = data }, rpc_error_mt)
end

--- mcp.user(content) / mcp.assistant(content): prompt messages.
local function message(role, c)
  if type(c) ~= "table" then c = M.text(c) end
  return { role = role, content = c }
end
function M.user(c) return message("user", c) end
function M.assistant(c) return message("assistant", c) end

-- {===================================================== registration

local names = { tool = {}, resource = {}, template = {}, prompt = {} }

-- FILE:LINE where a script's function is defined: results.c names it in the
-- errors of what the function returned.
local function defined_at(fn)
  local info = getinfo(fn, "S")
  return ("%s:%d"):format(info.short_src, info.linedefined)
end

local function source_of(level)
  local info = getinfo(level, "Sl")
  return info and (info.short_src .. ":" .. info.currentline) or "?"
end

-- A tool's or prompt's name: what clients show and call it by.
local function name_field(fn, def)
  local name = field(fn, def, "name", "string")
  if #name < 1 or #name > 128 or name:find("[^%w_.-]") then
    argerr(fn, ("name '%s' must be 1-128 characters of A-Z a-z 0-9 _ . -"):format(name))
  end
  return name
end

local function unique(kind, key)
  if names[kind][key] then
    argerr(kind, ("duplicate %s '%s' (first registered at %s)"):format(kind, key, names[kind][key]))
  end
  names[kind][key] = source_of(4)
end

-- scopes = { "files:read", ... }: what a caller's token must grant for the
-- item to be listed for it and answered (RFC 6749 scope tokens); kept
-- space-separated, as tokens carry them
local function scopes_of(fn, def)
  local sc = def.scopes
  if sc == nil then return nil end
  if type(sc) ~= "table" or #sc == 0 then argerr(fn, "field 'scopes' must be a list of scope names") end
  for k in pairs(sc) do
    if math_type(k) ~= "integer" or k < 1 or k > #sc then
      argerr(fn, "field 'scopes' must be a list of scope names (no other keys)")
    end
  end
  for _, v in ipairs(sc) do
    if type(v) ~= "string" or v == "" or v:find('[%c "\\\128-\255]') then
      argerr(fn, ("scopes: '%s' is not a scope name (printable ASCII, no space, quote or backslash)")
        :format(tostring(v)))
    end
  end
  return table.concat(sc, " ")
end

local tool_keys = set { "name", "title", "description", "input", "output", "inputSchema",
  "outputSchema", "annotations", "icons", "_meta", "handler", "ui", "visibility", "task", "scopes" }

local UI_MIME = "text/html;profile=mcp-app"
local widgets = {}   -- uri -> true, for the check after loading
local ui_tools = {}  -- {name, ui, where} of tools that point at a widget

-- A shallow copy of t (or a new table).
local function copy(t)
  local c = {}
  for k, v in pairs(t or {}) do c[k] = v end
  return c
end

-- x-mcp-header (2026-07-28, HTTP): a property whose value clients mirror
-- into the header Mcp-Param-{Name}, which the server checks against the
-- arguments. Only on string, integer or boolean properties reached from the
-- root through `properties` alone; names unique ignoring case (clients drop
-- a tool that breaks these rules, so they are load errors here).
local function mcp_headers(schema)
  local found, seen, visited = {}, {}, {}
  local function walk(s, path, direct)
    if type(s) ~= "table" or visited[s] then return end
    visited[s] = true
    local h = rawget(s, "x-mcp-header")
    if h ~= nil then
      if not direct or #path == 0 then
        argerr("tool", "x-mcp-header is allowed only on a property reached through 'properties' alone")
      end
      if type(h) ~= "string" or not h:match("^[%w!#$%%&'*+%-.^_`|~]+$") then
        argerr("tool", "x-mcp-header must be a header name token (letters, digits, -_.!#$%&'*+^`|~)")
      end
      local t = rawget(s, "type")
      if t ~= "string" and t ~= "integer" and t ~= "boolean" then
        argerr("tool", ("x-mcp-header '%s': only on a string, integer or boolean property"):format(h))
      end
      if seen[h:lower()] then argerr("tool", ("x-mcp-header '%s' appears twice"):format(h)) end
      seen[h:lower()] = true
      local p = {}
      for i, k in ipairs(path) do p[i] = k end
      found[#found + 1] = { name = h, path = p, type = t }
    end
    for k, v in pairs(s) do
      if type(v) == "table" then
        if k == "properties" and direct then
          for pk, ps in pairs(v) do
            path[#path + 1] = pk
            walk(ps, path, true)
            path[#path] = nil
          end
        else
          walk(v, path, false) -- items, anyOf, $defs...: no longer a plain chain
        end
      end
    end
  end
  walk(schema, {}, true)
  return #found > 0 and found or nil
end

function M.tool(def)
  while_loading("tool")
  check_fields("tool", def, tool_keys)
  local name = name_field("tool", def)
  local handler = field("tool", def, "handler", "function")
  field("tool", def, "title", "string", true)
  field("tool", def, "description", "string", true)
  unique("tool", name)
  local raw_input = alias("tool", def, "input", "inputSchema")
  local input = to_schema("tool", "input", raw_input)
      or { type = "object", additionalProperties = false }
  -- a field table names every argument: others are a mistake the model
  -- corrects from the error (app.lua schema = { unknown_args = "allow" }: passed on)
  if type(raw_input) == "table" and not is_builder(raw_input) and not is_raw_schema(raw_input)
      and input.additionalProperties == nil and I.app.schema.unknown_args ~= "allow" then
    input.additionalProperties = false
  end
  for k, s in pairs(input.properties or {}) do
    if complete_of[s] then
      argerr("tool", ("field 'input': '%s' has complete, which MCP offers for prompt arguments and template variables, not for tool arguments (an enum tells the model the choices)"):format(k))
    end
  end
  local output = to_schema("tool", "output", alias("tool", def, "output", "outputSchema"))
  -- defaults of top-level fields are filled in before the handler runs
  local defaults
  for k, s in pairs(input.properties or {}) do
    if type(s) == "table" and s.default ~= nil then
      defaults = defaults or {}
      defaults[k] = s.default
    end
  end
  local run = handler
  if defaults then
    run = function(args, ctx)
      for k, v in pairs(defaults) do
        if args[k] == nil then args[k] = v end
      end
      return handler(args, ctx)
    end
  end
  local listing = copy_common({ name = name, inputSchema = input, outputSchema = output }, def)
  local app_only = false
  if def.ui ~= nil or def.visibility ~= nil then
    -- MCP Apps: the view that renders this tool's results, and who may call it
    local ui = field("tool", def, "ui", "string", true)
    if ui and not ui:match("^ui://.") then argerr("tool", "field 'ui' must be a ui:// URI") end
    local vis = def.visibility
    if vis ~= nil then
      if type(vis) ~= "table" or #vis == 0 then
        argerr("tool", "field 'visibility' must be a list of \"model\" and/or \"app\"")
      end
      app_only = true
      for _, v in ipairs(vis) do
        if v ~= "model" and v ~= "app" then
          argerr("tool", ("visibility: unknown value '%s' (\"model\" or \"app\")"):format(tostring(v)))
        end
        if v == "model" then app_only = false end
      end
      vis = as_array(copy(vis))
    end
    local meta = copy(def._meta)
    meta.ui = { resourceUri = ui, visibility = vis }
    meta["ui/resourceUri"] = ui -- the older flat key, still read by some hosts
    listing._meta = meta
    if ui then ui_tools[#ui_tools + 1] = { name = name, ui = ui, where = source_of(3), meta = meta } end
  end
  -- the tasks extension (2026-07-28): the call may (must) run as a task
  local task = def.task
  if task ~= nil and task ~= "optional" and task ~= "required" and task ~= false then
    argerr("tool", "field 'task' must be \"optional\" or \"required\"")
  end
  reg.tools[#reg.tools + 1] = { name = name, def = listing, handler = run, input = input,
    output = output, app_only = app_only, headers = mcp_headers(input), task = task or nil,
    scopes = scopes_of("tool", def), where = defined_at(handler) }
end

local widget_keys = set { "uri", "name", "title", "description", "file", "html", "csp",
  "permissions", "domain", "prefersBorder", "_meta", "icons", "annotations", "openai" }
local openai_uri = {} -- widget uri -> its OpenAI Apps SDK (skybridge) variant's uri
local csp_keys = set { "connectDomains", "resourceDomains", "frameDomains", "baseUriDomains" }

--- mcp.widget{ uri = "ui://…", file = "board.html" | html = "…", csp = {...}, … }
function M.widget(def)
  while_loading("widget")
  check_fields("widget", def, widget_keys)
  local uri = field("widget", def, "uri", "string")
  if not uri:match("^ui://.") then argerr("widget", "field 'uri' must be a ui:// URI") end
  if (def.file == nil) == (def.html == nil) then
    argerr("widget", "give exactly one of 'file' (in the app's widgets/ folder) or 'html'")
  end
  local path
  if def.file ~= nil then
    local file = field("widget", def, "file", "string")
    local resolved, err = core.widget_path(file)
    if not resolved then argerr("widget", err) end
    path = resolved
  else
    field("widget", def, "html", "string")
  end
  local ui = {}
  if def.csp ~= nil then
    if type(def.csp) ~= "table" then argerr("widget", "field 'csp' must be a table") end
    ui.csp = {}
    for k, v in pairs(def.csp) do
      if not csp_keys[k] then argerr("widget", ("csp: unknown field '%s'"):format(tostring(k))) end
      if type(v) ~= "table" then argerr("widget", ("csp.%s must be a list of origins"):format(k)) end
      ui.csp[k] = as_array(copy(v))
    end
  end
  if def.permissions ~= nil then
    if type(def.permissions) ~= "table" then argerr("widget", "field 'permissions' must be a table") end
    ui.permissions = {}
    for k, v in pairs(def.permissions) do
      ui.permissions[k] = (v == true) and {} or v -- {camera = true} means {camera = {}}
    end
  end
  ui.domain = field("widget", def, "domain", "string", true)
  if def.prefersBorder ~= nil then ui.prefersBorder = def.prefersBorder and true or false end
  unique("resource", uri)
  widgets[uri] = true
  local meta = copy(def._meta)
  meta.ui = ui
  local name = field("widget", def, "name", "string", true) or (def.file or uri):match("([^/]+)$")
  local listing = copy_common({ uri = uri, name = name, mimeType = UI_MIME }, def)
  listing._meta = meta
  -- The page as served is made once, now: like the scripts, a version that
  -- loaded keeps serving what it loaded (a save reloads the app, and a
  -- reload that fails leaves this one in place).
  local source = def.html
  if path then
    local f, err = io.open(path, "rb")
    if not f then argerr("widget", err) end
    source = f:read("a")
    f:close()
  end
  local ok, page = pcall(inline_view, source)
  if not ok then argerr("widget", page) end
  local read = function()
    return { { uri = uri, mimeType = UI_MIME, text = page, _meta = meta } }
  end
  -- the files it is made of: a change to any of them is an update
  local files = { caller_file(), path }
  for name in source:gmatch('"inline:([^"]+)"') do
    files[#files + 1] = core.widget_path(name) or nil
  end
  reg.resources[#reg.resources + 1] = { uri = uri, def = listing, read = read, mime = UI_MIME,
    files = files }
  if def.openai then
    -- hosts on the older OpenAI Apps SDK convention: the same view as a
    -- text/html+skybridge resource, named by the tool's openai/outputTemplate
    local sky = uri:gsub("%.html$", "") .. ".skybridge.html"
    unique("resource", sky)
    openai_uri[uri] = sky
    local sky_listing = copy(listing)
    sky_listing.uri, sky_listing.mimeType = sky, "text/html+skybridge"
    reg.resources[#reg.resources + 1] = { uri = sky, def = sky_listing, mime = "text/html+skybridge",
      files = files,
      read = function()
        local item = read()[1]
        return { { uri = sky, mimeType = "text/html+skybridge", text = item.text, _meta = meta } }
      end }
  end
end

-- After every script has loaded: tools must point at widgets that exist.
local function check()
  loading = false
  local problems = {}
  for _, t in ipairs(ui_tools) do
    if not widgets[t.ui] then
      problems[#problems + 1] = ("%s: mcp.tool: tool '%s' shows widget '%s', but no mcp.widget has that uri")
        :format(t.where, t.name, t.ui)
    elseif openai_uri[t.ui] then
      t.meta["openai/outputTemplate"] = openai_uri[t.ui]
    end
  end
  reg.has_widgets = next(widgets) ~= nil
  return problems
end

local resource_keys = set { "uri", "name", "title", "description", "mime", "mimeType", "size",
  "annotations", "icons", "_meta", "read", "text", "cache", "scopes" }

-- cache = { ttl = seconds, scope = "public" | "private" }: what a
-- 2026-07-28 client may keep of resources/read (ttlMs, cacheScope)
local function cache_hint(fn, def)
  local c = def.cache
  if c == nil then return nil end
  if type(c) ~= "table" then argerr(fn, "field 'cache' must be a table { ttl = seconds, scope = ... }") end
  for k in pairs(c) do
    if k ~= "ttl" and k ~= "scope" then argerr(fn, ("cache: unknown field '%s'"):format(tostring(k))) end
  end
  if c.ttl ~= nil and (type(c.ttl) ~= "number" or c.ttl < 0 or c.ttl ~= c.ttl) then
    argerr(fn, "cache.ttl must be a number of seconds >= 0")
  end
  if c.scope ~= nil and c.scope ~= "public" and c.scope ~= "private" then
    argerr(fn, "cache.scope must be \"public\" or \"private\"")
  end
  return { ttl = c.ttl or 0, scope = c.scope or "private" }
end

-- A resource's URI is an absolute URI (RFC 3986: scheme ":" ...), as clients
-- resolve and match it; "catalog" or "my file" would be a string, not a URI.
local function check_uri(fn, uri)
  if not uri:match("^%a[%w+.-]*:") or uri:find("[%s%c]") then
    argerr(fn, ("uri '%s' is not a URI: it needs a scheme and no spaces (e.g. \"mcp://app/%s\")"):format(
      uri, (uri:gsub("[^%w._~/{}-]", "-"))))
  end
end

function M.resource(def)
  while_loading("resource")
  check_fields("resource", def, resource_keys)
  local uri = field("resource", def, "uri", "string")
  if uri:find("{", 1, true) then argerr("resource", "uri has a {variable}: use mcp.template") end
  check_uri("resource", uri)
  local name = field("resource", def, "name", "string", true) or uri:match("([^/]+)/*$") or uri
  local mime = alias("resource", def, "mime", "mimeType")
  local read = def.read
  if read == nil then
    local text = field("resource", def, "text", "string")
    read = function() return text end
  elseif type(read) ~= "function" then
    argerr("resource", "field 'read' must be a function")
  end
  unique("resource", uri)
  local listing = copy_common({ uri = uri, name = name, mimeType = mime, size = def.size }, def)
  reg.resources[#reg.resources + 1] = { uri = uri, def = listing, read = read, mime = mime,
    files = { caller_file() }, cache = cache_hint("resource", def), scopes = scopes_of("resource", def),
    where = defined_at(read) }
end

local template_keys = set { "uri", "uriTemplate", "name", "title", "description", "mime", "mimeType",
  "annotations", "icons", "_meta", "read", "complete", "cache", "scopes" }

function M.template(def)
  while_loading("template")
  check_fields("template", def, template_keys)
  local uri = alias("template", def, "uri", "uriTemplate")
  if type(uri) ~= "string" then argerr("template", "field 'uri' missing") end
  check_uri("template", uri)
  local vars, seen = {}, {}
  for v in uri:gmatch("{([^}]*)}") do
    if not v:match("^[%a_][%w_]*$") then
      argerr("template", ("'{%s}': only simple {name} variables are supported"):format(v))
    end
    if seen[v] then argerr("template", ("'{%s}' appears twice"):format(v)) end
    seen[v] = true
    vars[#vars + 1] = v
  end
  if uri:gsub("{[^}]*}", ""):find("[{}]") then argerr("template", "uri has a '{' or '}' outside a {variable}") end
  if #vars == 0 then argerr("template", "uri has no {variable}: use mcp.resource") end
  local name = field("template", def, "name", "string", true) or uri
  local read = field("template", def, "read", "function")
  local complete = field("template", def, "complete", "table", true) or {}
  for k, f in pairs(complete) do
    if type(f) ~= "function" then argerr("template", ("complete.%s must be a function"):format(k)) end
  end
  unique("template", uri)
  local mime = alias("template", def, "mime", "mimeType")
  local listing = copy_common({ uriTemplate = uri, name = name, mimeType = mime }, def)
  reg.templates[#reg.templates + 1] = { uri = uri, def = listing, read = read, mime = mime,
    vars = vars, complete = complete, cache = cache_hint("template", def),
    scopes = scopes_of("template", def), where = defined_at(read) }
end

local prompt_keys = set { "name", "title", "description", "args", "arguments", "get", "icons",
  "_meta", "complete", "scopes" }

function M.prompt(def)
  while_loading("prompt")
  check_fields("prompt", def, prompt_keys)
  local name = name_field("prompt", def)
  local get = field("prompt", def, "get", "function")
  local args = alias("prompt", def, "args", "arguments") or {}
  if type(args) ~= "table" then argerr("prompt", "field 'args' must be a table") end
  local list, complete = as_array {}, {}
  local function add(aname, s)
    if type(s) ~= "table" then s = {} end
    local a = { name = aname, title = s.title, description = s.description,
                required = not (optional_of[s] or s.required == false) }
    list[#list + 1] = a
    if complete_of[s] then complete[aname] = complete_of[s]
    elseif type(s.complete) == "function" then complete[aname] = s.complete
    elseif s.enum then
      local values = s.enum
      complete[aname] = function(prefix)
        local out = {}
        for _, v in ipairs(values) do
          if tostring(v):sub(1, #prefix) == prefix then out[#out + 1] = tostring(v) end
        end
        return out
      end
    end
  end
  if #args > 0 then -- a list: { {name = "tone", ...}, ... } keeps its order
    for _, a in ipairs(args) do add(a.name, a) end
  else
    local keys = {}
    for k in pairs(args) do keys[#keys + 1] = k end
    sort(keys)
    for _, k in ipairs(keys) do add(k, args[k]) end
  end
  for k, f in pairs(def.complete or {}) do complete[k] = f end
  unique("prompt", name)
  local listing = copy_common({ name = name, arguments = list }, def)
  reg.prompts[#reg.prompts + 1] = { name = name, def = listing, get = get, args = list,
    complete = complete, scopes = scopes_of("prompt", def), where = defined_at(get) }
end

--- mcp.on_reload(function(old_state) ... end): runs after a reload loaded
--- every script, with mcp.state as carried over from the previous version.
--- mcp.use(function(req, next) ... end): middleware around every request
--- that reaches a handler (tools/call, resources/read, prompts/get,
--- completion/complete), in the order the scripts register it. req holds
--- method, name, arguments (or uri and variables, or value), ctx; next()
--- runs the rest and returns its result; not calling it answers with what
--- the middleware returns.
function M.use(fn)
  while_loading("use")
  if type(fn) ~= "function" then raise("mcp.use expects a function(req, next)") end
  local list = reg.middleware or {}
  -- method_chain.c keeps which of them called next() in 64 bits
  if #list >= 64 then raise("mcp.use: at most 64 middlewares (this would be the 65th)") end
  list[#list + 1] = fn
  reg.middleware = list
end

function M.on_reload(fn)
  while_loading("on_reload")
  if type(fn) ~= "function" then raise("mcp.on_reload expects a function") end
  reg.on_reload = fn
end

-- }=====================================================

return M, check
