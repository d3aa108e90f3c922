-- client.lua — mcp.upstream and mcp.client: other MCP servers, from a handler,
-- without blocking the server (docs/lua-api.md, "Other MCP servers"). Run by
-- lua/mcp.lua with (core, I, M, while_loading); the C half is core.client
-- (core/io/mcp_client.c: stdio children, spans, metrics); HTTP rides mcp.http.
--
-- Every answer is untrusted: it must be JSON-RPC 2.0 with our id, and its
-- result what the official schema of the revision spoken calls it
-- (lua/mcp-results.json). The one rule for failures: a result is returned
-- (an isError one too); anything else — a JSON-RPC error, a transport
-- failure, an answer that is not valid — raises an error table
-- { message = "upstream NAME: ...", upstream = NAME, code = (JSON-RPC code,
-- or nil), data = }, which pcall catches and a handler that lets it through
-- turns into an isError naming its line.

local core, I, M, while_loading = ...
local raise, argerr, check_fields, field, set = I.raise, I.argerr, I.check_fields, I.field, I.set
local C, http, encode, decode, validate = core.client, core.http, core.json_encode, core.json_decode, core.validate
local null, array_mt = core.null, core.array_mt
local type, pairs, ipairs, pcall, tostring, setmetatable, getmetatable, error =
      type, pairs, ipairs, pcall, tostring, setmetatable, getmetatable, error
local concat, sort = table.concat, table.sort

local REVISIONS = { ["2025-11-25"] = true, ["2026-07-28"] = true }
local MODERN = "2026-07-28"
local CLIENT_INFO = { name = "luamcp", version = core.version or "0" }
local MAX_PAGES = 1000
local RESULT_OF = {
  ["tools/call"] = "CallToolResult", ["resources/read"] = "ReadResourceResult",
  ["prompts/get"] = "GetPromptResult", ["completion/complete"] = "CompleteResult",
  ["tools/list"] = "ListToolsResult", ["resources/list"] = "ListResourcesResult",
  ["resources/templates/list"] = "ListResourceTemplatesResult", ["prompts/list"] = "ListPromptsResult",
  initialize = "InitializeResult",
}

local decls = {}   -- name -> declaration (this app version's)
local schemas      -- revision -> def -> schema table (decoded at load)

-- {====== errors

local err_mt = { __tostring = function(e) return e.message end }
local function fail(up, msg, code, data)
  error(setmetatable({ message = ("upstream %s: %s"):format(up.name, msg), upstream = up.name,
                       code = code, data = data }, err_mt), 0)
end

-- }======

-- {====== declarations (load time)

local upstream_keys = set { "name", "url", "command", "env", "cwd", "headers", "revision", "max_message" }

local function strings_map(fn, t, what)
  for k, v in pairs(t) do
    if type(k) ~= "string" or k == "" or k:find("[=%z\r\n]") then
      argerr(fn, ("%s: names must be non-empty strings without '=', NUL or line breaks"):format(what))
    end
    if type(v) ~= "string" and not (what == "env" and v == false) then
      argerr(fn, ("%s.%s must be a string%s, got %s"):format(what, k, what == "env" and " or false" or "", type(v)))
    end
    if type(v) == "string" and v:find("[%z\r\n]") then argerr(fn, ("%s.%s holds a NUL or a line break"):format(what, k)) end
  end
end

--- mcp.upstream{ name =, url = | command = {...}, env =, cwd =, headers =, revision =, max_message = }
local function declare(def, adhoc)
  local fn = adhoc and "client" or "upstream"
  local name = def.name
  if adhoc and name == nil and type(def.url) == "string" then name = def.url:match("^%a+://([%w_.%-]+)") end
  name = adhoc and name or field(fn, def, "name", "string")
  if type(name) ~= "string" or not name:match("^[%w_.%-]+$") then argerr(fn, "name must be letters, digits, '_', '.' or '-'") end
  local url, command = def.url, def.command
  if (url == nil) == (command == nil) then argerr(fn, "give url = \"https://...\" or command = {\"prog\", ...}, one of them") end
  local d = { name = name, headers = {} }
  if url ~= nil then
    if type(url) ~= "string" or not url:lower():match("^https?://[^/]") then argerr(fn, "url must be an http:// or https:// URL") end
    d.url = url
    d.target = url:match("^%a+://([^/?#]+)")
    if def.env ~= nil or def.cwd ~= nil then argerr(fn, "env and cwd are for command = upstreams") end
  else
    if type(command) ~= "table" or #command == 0 then argerr(fn, "command must be a list {\"prog\", \"arg\", ...}") end
    local n = #command
    for i = 1, n do if type(command[i]) ~= "string" then argerr(fn, ("command[%d] must be a string, got %s"):format(i, type(command[i]))) end end
    for k, v in pairs(command) do
      if math.type(k) ~= "integer" or k < 1 or k > n or type(v) ~= "string" or v:find("%z") then
        argerr(fn, "command must be a list of strings without NUL bytes")
      end
    end
    if def.headers ~= nil then argerr(fn, "headers are for url = upstreams") end
    d.command = { table.unpack(command) }
    d.target = command[1]:match("[^/]+$")
    if def.env ~= nil then
      if type(def.env) ~= "table" then argerr(fn, "env must be a table {NAME = \"value\" | false}") end
      strings_map(fn, def.env, "env")
      d.env = {}
      for k, v in pairs(def.env) do d.env[k] = v end
    end
    if def.cwd ~= nil and type(def.cwd) ~= "string" then argerr(fn, "cwd must be a string") end
    d.cwd = def.cwd
  end
  if def.headers ~= nil then
    if type(def.headers) ~= "table" then argerr(fn, "headers must be a table {Name = \"value\"}") end
    strings_map(fn, def.headers, "headers")
    for k, v in pairs(def.headers) do d.headers[k:lower()] = v end
  end
  if def.revision ~= nil and not REVISIONS[def.revision] then
    argerr(fn, "revision must be \"2025-11-25\" or \"2026-07-28\"")
  end
  d.revision = def.revision
  if def.max_message ~= nil and (math.type(def.max_message) ~= "integer" or def.max_message < 1024) then
    argerr(fn, "max_message must be a whole number of bytes >= 1024")
  end
  d.max_message = def.max_message
  if d.command then -- what makes the child another one: a change ends the old child
    local parts = { concat(d.command, "\2"), d.cwd or "", tostring(d.max_message or "") }
    local names = {}
    for k in pairs(d.env or {}) do names[#names + 1] = k end
    sort(names)
    for _, k in ipairs(names) do parts[#parts + 1] = k .. "=" .. tostring(d.env[k]) end
    d.key = concat(parts, "\1")
  end
  d.adhoc = adhoc
  if not schemas then schemas = decode(core.results_json) end
  return d
end

-- for lua/mount.lua: the declaration of upstream name, or nil
function I.upstream_decl(name) return decls[name] end

function M.upstream(def)
  while_loading("upstream")
  check_fields("upstream", def, upstream_keys)
  if type(def.name) == "string" and decls[def.name] then argerr("upstream", ("upstream '%s' is declared twice"):format(def.name)) end
  local d = declare(def, false)
  decls[d.name] = d
  return d.name
end

-- }======

-- {====== one request

-- rev: the revision this request was sent in (each request carries its own:
-- a new handshake may be under way beside it)
local function check_result(up, rev, method, result)
  if type(result) ~= "table" then fail(up, ("%s: the result is not an object"):format(method)) end
  if rev == MODERN and result.resultType == "input_required" then
    fail(up, ("%s: the upstream asks for input (multi round-trip requests are not relayed yet)"):format(method))
  end
  local def = RESULT_OF[method]
  local all = schemas[rev]
  if def and all and all["$defs"][def] then
    local s = up.schema_cache[def]
    if not s then
      s = { ["$ref"] = "#/$defs/" .. def, ["$defs"] = all["$defs"] }
      up.schema_cache[def] = s
    end
    local ok, why = validate(s, result)
    if not ok then fail(up, ("%s: not a valid %s %s: %s"):format(method, rev, def, tostring(why))) end
  end
  return result
end

-- The JSON-RPC answer to request id: its result, or a raised error.
local function answer(up, method, msg, id)
  if type(msg) ~= "table" or msg.jsonrpc ~= "2.0" or msg.id ~= id or (msg.result == nil) == (msg.error == nil) then
    fail(up, ("%s: answered something that is not a JSON-RPC response to the request"):format(method))
  end
  if msg.error ~= nil then
    local e = msg.error
    if type(e) ~= "table" or math.type(e.code) ~= "integer" or type(e.message) ~= "string" then
      fail(up, ("%s: answered a malformed JSON-RPC error"):format(method))
    end
    fail(up, ("%s: %s (%d)"):format(method, e.message, e.code), e.code, e.data)
  end
  return msg.result
end

local function safe_decode(up, method, s)
  local ok, v = pcall(decode, s)
  if not ok then fail(up, ("%s: answered something that is not JSON"):format(method)) end
  return v
end

local function progress_of(up, note, fn)
  local p = type(note) == "table" and type(note.params) == "table" and note.params
  if p and type(p.progress) == "number" then fn(p.progress, type(p.total) == "number" and p.total or nil,
                                               type(p.message) == "string" and p.message or nil) end
end

local function with_meta(rev, params, token, traceparent)
  params = params or {}
  local meta
  if rev == MODERN then
    meta = { ["io.modelcontextprotocol/protocolVersion"] = MODERN,
             ["io.modelcontextprotocol/clientCapabilities"] = {},
             ["io.modelcontextprotocol/clientInfo"] = CLIENT_INFO }
  end
  if token then meta = meta or {}; meta.progressToken = token end
  if traceparent then meta = meta or {}; meta.traceparent = traceparent end -- MCP's trace context in _meta
  if meta then
    local copy = {}
    for k, v in pairs(params) do copy[k] = v end
    copy._meta = meta
    params = copy
  end
  return params
end

-- stdio: over the link (core/io/mcp_client.c)
local function stdio_link(up)
  if not up.link then
    local d = up.decl
    up.link = C.stdio(d.name, d.key, d.command, d.env, d.cwd, d.max_message)
  end
  return up.link
end

local function stdio_exchange(up, rev, link, id, method, params, opts, sp)
  local guard <close> = setmetatable({}, { __close = function(_, e) link:forget(id, e and "the caller gave up" or nil) end })
  local msg = { jsonrpc = "2.0", id = id, method = method,
                params = with_meta(rev, params, opts.progress and id, sp and sp:traceparent()) }
  link:write(encode(msg))
  while true do
    local kind, payload = link:wait(id)
    if kind == "error" then fail(up, (payload:gsub("^upstream [^:]*: ", "")), nil, "transport") end
    local m = safe_decode(up, method, payload)
    if kind == "progress" then
      if opts.progress then progress_of(up, m, opts.progress) end
    else
      return answer(up, method, m, id)
    end
  end
end

local function stdio_handshake(up, link, gen)
  local function try(rev, method, params)
    local id = link:open()
    return pcall(stdio_exchange, up, rev, link, id, method, params, {})
  end
  local rev = up.decl.revision
  if rev ~= "2025-11-25" then
    local ok, r = try(MODERN, "server/discover", nil)
    if ok and type(r) == "table" then
      link:set_state(gen, encode { revision = MODERN, server = r })
      return
    end
    -- initialize only when the upstream answered (it does not know discover)
    if rev == MODERN or not ok and (type(r) ~= "table" or r.data == "transport") then error(r, 0) end
  end
  local ok, r = try("2025-11-25", "initialize", { protocolVersion = "2025-11-25", capabilities = {}, clientInfo = CLIENT_INFO })
  if not ok then error(r, 0) end
  check_result(up, "2025-11-25", "initialize", r)
  link:write(encode { jsonrpc = "2.0", method = "notifications/initialized" })
  link:set_state(gen, encode { revision = "2025-11-25", server = r })
end

local function stdio_request(up, method, params, opts, sp)
  local link = stdio_link(up)
  local id, gen, state = link:open()
  -- one handshake per child: the other calls that find none wait for it
  for _ = 1, 5 do
    if state then break end
    link:forget(id)
    if link:claim() then
      local done = false
      local guard <close> = setmetatable({}, { __close = function() if not done then link:release() end end })
      stdio_handshake(up, link, gen)
      done = true
    end
    id, gen, state = link:open()
  end
  if not state then link:forget(id); fail(up, "no handshake came through (the process keeps ending)") end
  local rev = decode(state).revision
  return stdio_exchange(up, rev, link, id, method, params, opts, sp), rev
end

-- Streamable HTTP, on mcp.http
local function sse_messages(body)
  local out, data = {}, {}
  for line in (body .. "\n\n"):gmatch("([^\n]*)\n") do
    line = line:gsub("\r$", "")
    if line == "" then
      local d = concat(data, "\n")
      if d ~= "" then out[#out + 1] = d end -- a priming event carries no message
      data = {}
    elseif line:sub(1, 5) == "data:" then
      data[#data + 1] = line:sub(6):gsub("^ ", "")
    end
  end
  return out
end

-- cx: the connection's revision and session, as the request was sent
local function http_post(up, cx, msg, method, opts)
  local h = {}
  for k, v in pairs(up.decl.headers) do h[k] = v end
  h["content-type"] = "application/json"
  h["accept"] = "application/json, text/event-stream"
  if cx.session then h["mcp-session-id"] = cx.session end
  if method ~= "initialize" then h["mcp-protocol-version"] = cx.rev end
  if cx.rev == MODERN then
    h["mcp-method"] = method
    local p = msg.params or {}
    local name = (method == "tools/call" or method == "prompts/get") and p.name or method == "resources/read" and p.uri
    if type(name) == "string" then
      h["mcp-name"] = name:find("[^\32-\126]") and ("=?base64?" .. core.base64_encode(name) .. "?=") or name
    end
  end
  -- the traceparent header is mcp.http's: its own CLIENT span, in the same trace
  local ok, r = pcall(http.request, { method = "POST", url = up.decl.url, headers = h, body = encode(msg),
                                      timeout = opts.timeout, follow = false })
  if not ok then
    local m = type(r) == "table" and r.message or tostring(r)
    fail(up, ("%s: %s"):format(method, (m:gsub("^.-mcp%.http: ", ""))), nil, "transport")
  end
  return r
end

local function http_exchange(up, cx, method, params, opts)
  up.next_id = (up.next_id or 0) + 1
  local id = up.next_id
  local msg = { jsonrpc = "2.0", id = id, method = method, params = with_meta(cx.rev, params, opts.progress and id) }
  -- a call that ends while it waits (timeout, cancel) drops the transfer; a
  -- 2025 session is also told (2026-07-28 has no session to tell)
  local answered = false
  local guard <close> = setmetatable({}, { __close = function()
    if answered or not cx.session or method == "initialize" then return end
    local h = { ["content-type"] = "application/json", accept = "application/json, text/event-stream",
                ["mcp-session-id"] = cx.session, ["mcp-protocol-version"] = cx.rev }
    for k, v in pairs(up.decl.headers) do h[k] = v end
    C.notify(up.decl.url, h, encode { jsonrpc = "2.0", method = "notifications/cancelled",
                                      params = { requestId = id, reason = "the caller gave up" } })
  end })
  local r = http_post(up, cx, msg, method, opts)
  answered = true
  if r.status == 404 and cx.session then fail(up, ("%s: HTTP 404: the session ended"):format(method), nil, "session") end
  local ctype = (r.headers["content-type"] or ""):lower()
  if ctype:find("text/event-stream", 1, true) then
    local reply
    for _, data in ipairs(sse_messages(r.body)) do
      local m = safe_decode(up, method, data)
      if type(m) == "table" and m.id == id and m.method == nil then reply = m
      elseif type(m) == "table" and m.method == "notifications/progress" and opts.progress then progress_of(up, m, opts.progress) end
    end
    if not reply then fail(up, ("%s: the event stream ended without the answer (HTTP %d)"):format(method, r.status)) end
    return answer(up, method, reply, id), r
  end
  if ctype:find("json", 1, true) and #r.body > 0 then
    local m = safe_decode(up, method, r.body)
    if type(m) == "table" and m.error ~= nil and m.id == null then m.id = id end -- an error before the id was read
    if r.status >= 300 and not (type(m) == "table" and m.error ~= nil) then
      fail(up, ("%s: HTTP %d"):format(method, r.status))
    end
    return answer(up, method, m, id), r
  end
  fail(up, ("%s: HTTP %d%s"):format(method, r.status, #r.body > 0 and " with a body that is not JSON-RPC" or ""))
end

local function kept_key(up)
  local d = up.decl
  local names = {}
  for k in pairs(d.headers) do names[#names + 1] = k end
  sort(names)
  local parts = { "http", d.name, d.url, d.revision or "" }
  for _, k in ipairs(names) do parts[#parts + 1] = k .. ":" .. d.headers[k] end
  return concat(parts, "\1")
end

-- A new connection: discover (2026-07-28), else initialize (2025-11-25);
-- its cx, which requests take from up.conn once it is done.
local function http_handshake(up)
  local rev = up.decl.revision
  if rev ~= "2025-11-25" then
    local cx = { rev = MODERN }
    local ok, r = pcall(http_exchange, up, cx, "server/discover", nil, {})
    if ok then return cx end
    -- initialize only when the upstream answered (it does not know discover)
    if rev == MODERN or type(r) ~= "table" or r.data == "transport" then error(r, 0) end
  end
  local cx = { rev = "2025-11-25" }
  local r, resp = http_exchange(up, cx, "initialize", { protocolVersion = "2025-11-25", capabilities = {}, clientInfo = CLIENT_INFO }, {})
  check_result(up, cx.rev, "initialize", r)
  local session = resp.headers["mcp-session-id"]
  if session and (#session > 1024 or session:find("[^\33-\126]")) then fail(up, "initialize: a malformed Mcp-Session-Id") end
  cx.session = session
  local h = http_post(up, cx, { jsonrpc = "2.0", method = "notifications/initialized" }, "notifications/initialized", {})
  if h.status >= 300 then fail(up, ("notifications/initialized: HTTP %d"):format(h.status)) end
  return cx
end

-- The connection's cx: this version's, else the one the process kept for
-- the same declaration (a reload keeps the upstream's session), else a new
-- handshake. An ad-hoc client keeps nothing.
local function http_ready(up)
  if up.conn then return up.conn end
  local key = not up.decl.adhoc and kept_key(up)
  local k = key and C.keep(key)
  if k then
    k = decode(k)
    up.conn = { rev = k.revision, session = k.session }
    return up.conn
  end
  local cx = http_handshake(up)
  if key then C.keep(key, encode { revision = cx.rev, session = cx.session }) end
  up.conn = cx
  return cx
end

local function http_request(up, method, params, opts)
  local cx = http_ready(up)
  local ok, r = pcall(http_exchange, up, cx, method, params, opts)
  -- a session the upstream forgot (it restarted): one new handshake, one retry
  if not ok and type(r) == "table" and r.data == "session" then
    if up.conn == cx then
      up.conn = nil
      if not up.decl.adhoc then C.keep(kept_key(up), false) end
    end
    cx = http_ready(up)
    return (http_exchange(up, cx, method, params, opts)), cx.rev
  end
  if not ok then error(r, 0) end
  return r, cx.rev
end

local function request(up, method, params, opts)
  opts = opts or {}
  local sp <close> = C.span(up.name, method, up.decl.target)
  local ok, r, rev
  if up.decl.url then ok, r, rev = pcall(http_request, up, method, params, opts)
  else ok, r, rev = pcall(stdio_request, up, method, params, opts, sp) end
  if ok then ok, r = pcall(check_result, up, rev, method, r) end
  if ok then
    sp:finish("ok")
    return r
  end
  if type(r) ~= "table" or getmetatable(r) ~= err_mt then
    local m, prefix = tostring(type(r) == "table" and r.message or r), ("upstream %s: "):format(up.name)
    m = m:gsub("^client%.lua:%d+: ", "") -- raised by the C half, at this file's line
    if m:sub(1, #prefix) ~= prefix then m = prefix .. m end -- the C half names the upstream itself
    r = setmetatable({ message = m, upstream = up.name }, err_mt)
  end
  sp:finish(r.code and "error" or "failed", r.message)
  error(r, 0)
end

-- }======

-- {====== the client

local client = {}
client.__index = client
client.__name = "mcp.client"

local function self_of(c, fn)
  if getmetatable(c) ~= client then raise(("mcp.client: use c:%s(...), with a colon"):format(fn)) end
  return c
end

--- c:call(name, args [, { progress = fn(progress, total, message), timeout = s }]) -> the CallToolResult
function client:call(name, args, opts)
  self_of(self, "call")
  if type(name) ~= "string" then raise("c:call: the tool name must be a string") end
  if args ~= nil and type(args) ~= "table" then raise("c:call: args must be a table") end
  if opts ~= nil and type(opts) ~= "table" then raise("c:call: opts must be a table") end
  opts = opts or {}
  if opts.progress ~= nil and type(opts.progress) ~= "function" then raise("c:call: opts.progress must be a function") end
  if opts.timeout ~= nil and not (type(opts.timeout) == "number" and opts.timeout > 0) then raise("c:call: opts.timeout must be seconds > 0") end
  return request(self, "tools/call", { name = name, arguments = args or {} }, opts)
end

local LIST = { tools = { "tools/list", "tools" }, resources = { "resources/list", "resources" },
               resourceTemplates = { "resources/templates/list", "resourceTemplates" },
               prompts = { "prompts/list", "prompts" } }

--- c:list(kind) -> every item of every page (kind: tools|resources|resourceTemplates|prompts)
function client:list(kind)
  self_of(self, "list")
  local l = LIST[kind]
  if not l then raise("c:list: kind must be \"tools\", \"resources\", \"resourceTemplates\" or \"prompts\"") end
  local out, cursor, seen = setmetatable({}, array_mt), nil, {}
  for _ = 1, MAX_PAGES do
    local r = request(self, l[1], cursor and { cursor = cursor } or nil)
    for _, it in ipairs(r[l[2]]) do out[#out + 1] = it end
    cursor = r.nextCursor
    if cursor == nil or cursor == null then return out end
    if seen[cursor] then fail(self, ("%s: the cursor %q came twice"):format(l[1], tostring(cursor))) end
    seen[cursor] = true
  end
  fail(self, ("%s: more than %d pages"):format(l[1], MAX_PAGES))
end

--- c:read(uri) -> the ReadResourceResult ({ contents = {...} })
function client:read(uri)
  self_of(self, "read")
  if type(uri) ~= "string" then raise("c:read: uri must be a string") end
  return request(self, "resources/read", { uri = uri })
end

--- c:prompt(name [, args]) -> the GetPromptResult ({ messages = {...} })
function client:prompt(name, args)
  self_of(self, "prompt")
  if type(name) ~= "string" then raise("c:prompt: name must be a string") end
  if args ~= nil and type(args) ~= "table" then raise("c:prompt: args must be a table of strings") end
  return request(self, "prompts/get", { name = name, arguments = args })
end

--- c:complete(ref, arg [, context]) -> the CompleteResult ({ completion = { values = {...} } })
function client:complete(ref, arg, context)
  self_of(self, "complete")
  if type(ref) ~= "table" or type(ref.type) ~= "string" then
    raise("c:complete: ref must be { type = \"ref/prompt\", name = } or { type = \"ref/resource\", uri = }")
  end
  if type(arg) ~= "table" or type(arg.name) ~= "string" or type(arg.value) ~= "string" then
    raise("c:complete: arg must be { name = \"...\", value = \"...\" }")
  end
  return request(self, "completion/complete", { ref = ref, argument = arg, context = context })
end

function client:__tostring() return "mcp.client(" .. self.name .. ")" end

local clients = {} -- name -> client, for this app version

--- mcp.client(name) -> the client of an upstream declared with mcp.upstream
local adhoc_keys = set { "name", "url", "headers", "revision" }

function M.client(name)
  if type(name) == "table" then -- ad hoc: url only, a client of its own, nothing kept after it
    check_fields("client", name, adhoc_keys)
    if name.url == nil then argerr("client", "an ad-hoc client takes url = (declare a command = with mcp.upstream)") end
    local d = declare(name, true)
    return setmetatable({ name = d.name, decl = d, schema_cache = {} }, client)
  end
  if type(name) ~= "string" then raise("mcp.client: give an upstream's name, or { url = ... } for an ad-hoc client") end
  local c = clients[name]
  if c then return c end
  local d = decls[name]
  if not d then raise(("mcp.client: no upstream '%s' (declare it with mcp.upstream{ name = ... })"):format(name)) end
  c = setmetatable({ name = name, decl = d, schema_cache = {} }, client)
  clients[name] = c
  return c
end

-- }======
