-- test.lua — `luamcp test`: what an app's own tests get from
-- require "mcp.test". core/cli/cmd_test.c loads this into each fresh state
-- of the app, before app.lua and the scripts, with its bridge to the server
-- of that state:
--   bridge.session()                      a client session (an integer)
--   bridge.submit(session, line, subject, scopes)   one JSON-RPC message in
--   bridge.pump(session, id)              run the engine until the answer to
--                                         id, or a request to this client, came:
--                                         the lines that came (strings)
--   bridge.now()                          the real clock (seconds)
--   bridge.schemas()                      lua/mcp-results.json: the MCP schema's
--                                         result definitions of each revision
--   bridge.test_begin(), test_end()       a test's time limit (--test-timeout)
--   bridge.db_exec, db_query, db_one      test.db (core/cli/test_db.h)
-- It puts the fakes in place of mcp.http, mcp.exec, mcp.socket, mcp.store,
-- mcp.redis and ctx:sleep (the scripts capture them as they load), and keeps the tests a
-- file declares; cmd_test.c runs them with T._run.
local bridge, mcp, default_revision = ...

local debug, type, pairs, ipairs, tostring, select, error = debug, type, pairs, ipairs, tostring, select, error
local fmt, concat, sort = string.format, table.concat, table.sort
local json = mcp.json

local T = {}
local SOURCE = debug.getinfo(1, "S").source

-- {====================================================== values: show, compare

local function is_ident(k) return type(k) == "string" and k:match("^[%a_][%w_]*$") ~= nil end

local function key_order(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then return ta < tb end
  if ta == "number" or ta == "string" then return a < b end
  return tostring(a) < tostring(b)
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  sort(keys, key_order)
  return keys
end

-- A value as Lua source, one line, keys sorted (tables nested past 6 shown as {…}).
local function show(v, depth)
  depth = depth or 0
  local t = type(v)
  if t == "string" then return fmt("%q", v):gsub("\\\n", "\\n") end
  if v == mcp.null then return "mcp.null" end
  if t ~= "table" then return tostring(v) end
  if depth > 6 then return "{…}" end
  local parts, n = {}, #v
  for i = 1, n do parts[#parts + 1] = show(v[i], depth + 1) end
  for _, k in ipairs(sorted_keys(v)) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then
      local name = is_ident(k) and k or "[" .. show(k, depth + 1) .. "]"
      parts[#parts + 1] = name .. " = " .. show(v[k], depth + 1)
    end
  end
  return "{ " .. concat(parts, ", ") .. (#parts > 0 and " }" or "}")
end
T.show = show

local function path_of(base, k)
  if is_ident(k) then return base .. "." .. k end
  return base .. "[" .. show(k) .. "]"
end

-- Every place where a and b differ, as "path: actual ≠ expected" lines.
local function diff(a, b, path, out, seen)
  if #out >= 20 then return out end
  if type(a) ~= "table" or type(b) ~= "table" then
    if a ~= b and not (a ~= a and b ~= b) then
      out[#out + 1] = fmt("%s: got %s, expected %s", path == "" and "value" or path, show(a), show(b))
    end
    return out
  end
  if seen[a] == b then return out end
  seen[a] = b
  local keys = {}
  for k in pairs(a) do keys[k] = true end
  for k in pairs(b) do keys[k] = true end
  local list = {}
  for k in pairs(keys) do list[#list + 1] = k end
  sort(list, key_order)
  for _, k in ipairs(list) do
    local p = path_of(path, k)
    if a[k] == nil then out[#out + 1] = fmt("%s: missing, expected %s", p, show(b[k]))
    elseif b[k] == nil then out[#out + 1] = fmt("%s: got %s, not expected", p, show(a[k]))
    else diff(a[k], b[k], p, out, seen) end
  end
  return out
end
T.diff = function(a, b) return diff(a, b, "", {}, {}) end

-- }======================================================

-- {====================================================== assertions

-- Where the test's own code is: the first frame outside this file.
local function caller_line()
  for level = 3, 40 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if info.source ~= SOURCE and info.currentline and info.currentline > 0 then
      return info.short_src .. ":" .. info.currentline
    end
  end
  return "?"
end

local failure_mt = { __tostring = function(f) return f.where .. ": " .. f.message end }

local function fail_here(message, details)
  error(setmetatable({ message = message, details = details, where = caller_line() }, failure_mt), 0)
end
T.fail = function(message) fail_here(message or "failed") end

function T.eq(actual, expected, what)
  local d = diff(actual, expected, "", {}, {})
  if #d > 0 then
    fail_here((what and what .. ": " or "") .. "values differ", d)
  end
end

function T.ok(v, what)
  if not v then fail_here(what or ("expected a true value, got " .. show(v))) end
  return v
end

function T.match(s, pattern, what)
  if type(s) ~= "string" or not s:find(pattern) then
    fail_here((what and what .. ": " or "") .. fmt("%s does not match %s", show(s), show(pattern)))
  end
end

-- fn() must raise an error whose text finds pattern (plain = true: as is).
function T.raises(fn, pattern, plain)
  local ok, err = pcall(fn)
  if ok then fail_here("expected an error, none was raised") end
  local text = type(err) == "table" and (err.message or show(err)) or tostring(err)
  if pattern and not text:find(pattern, 1, plain) then
    fail_here(fmt("the error %s does not match %s", show(text), show(pattern)))
  end
  return text
end

-- }======================================================

-- {====================================================== the virtual clock

local clock = { now = bridge.now() }
-- Virtual time passes: inside a call it also brings the call's deadline
-- nearer, so a handler that sleeps past --timeout times out as it would.
-- Every fake of a wait (HTTP, a child, a socket, ctx:sleep) is a wait of the
-- call, as served: it parks for no real time, so a tool may become a task at its
-- first wait and other calls run, and s seconds pass on the virtual clock.
local function advance(s)
  if not (s >= 0 and s < math.huge) then s = 0 end -- a delay of NaN, negative or inf: none
  clock.now = clock.now + s
  local timed_out = bridge.spend(s)
  bridge.park() -- timed out: the engine ends the call as any call timed out while waiting
  if timed_out then error(timed_out, 0) end -- where it cannot park (a coroutine the handler made)
end
T.clock = {
  now = function() return clock.now end,
  advance = function(s)
    if type(s) ~= "number" or not (s >= 0 and s < math.huge) then fail_here("clock.advance needs seconds >= 0") end
    clock.now = clock.now + s
  end,
}
local real_time = os.time
os.time = function(t) -- scripts see the virtual clock
  if t ~= nil then return real_time(t) end
  return math.floor(clock.now)
end

-- }======================================================

-- {====================================================== fakes

local state = {} -- per test: routes, records, what went unmatched
local function reset_fakes()
  state = { http = {}, exec = {}, peers = {}, unmatched = {}, requests = {}, runs = {}, store = {},
            misused = {}, redis_commands = {}, env = {} }
  T.http.requests, T.exec.runs, T.redis.commands = state.requests, state.runs, state.redis_commands
end

-- {=== os.getenv: test.env{ NAME = "value", OTHER = false } for the test it is
-- called in (false: as if unset); the rest of the environment as it is
local real_getenv = os.getenv
os.getenv = function(name)
  local v = state.env[name]
  if v ~= nil then return v or nil end
  return real_getenv(name)
end
function T.env(t)
  if type(t) ~= "table" then fail_here("env{ NAME = value }: a table of names and strings (false: unset)") end
  for k, v in pairs(t) do
    if type(k) ~= "string" or (type(v) ~= "string" and v ~= false) then
      fail_here("env{ NAME = value }: names and values are strings (false: unset)")
    end
  end
  for k, v in pairs(t) do state.env[k] = v end
end
-- }===

-- A URL or argv pattern: * matches any run of characters, the rest as is.
local function glob(pattern, s)
  local p = "^" .. pattern:gsub("[%^%$%(%)%%%.%[%]%+%-%?]", "%%%0"):gsub("%*", ".*") .. "$"
  return s:find(p) ~= nil
end

local function lower_headers(h)
  local out = {}
  if type(h) ~= "table" then return out end
  for k, v in pairs(h) do out[tostring(k):lower()] = tostring(v) end
  return out
end

-- {=== mcp.http

T.http = {}
local function check_delay(fn, r)
  if type(r) == "table" and r.delay ~= nil and (type(r.delay) ~= "number" or not (r.delay >= 0 and r.delay < math.huge)) then
    fail_here(fn .. ": delay must be a number of seconds >= 0")
  end
end

function T.http.route(method, url, response)
  if (method ~= nil and type(method) ~= "string") or type(url) ~= "string" then
    fail_here("http.route(method or \"*\", url pattern, response): method and url are strings")
  end
  if type(response) == "table" and response.headers ~= nil and type(response.headers) ~= "table" then
    fail_here("http.route: headers must be a table of name = value")
  end
  check_delay("http.route", response)
  local t = type(response)
  if t ~= "table" and t ~= "function" and t ~= "string" then
    fail_here("http.route: the response is a table {status=, headers=, body= | json=, delay=, error=}, a string or a function(req)")
  end
  state.http[#state.http + 1] = { method = method and method:upper() or "*", url = url, response = response }
end

local function http_request(opts)
  if type(opts) ~= "table" then error("mcp.http.request expects an options table", 2) end
  local url = opts.url
  if type(url) ~= "string" or not url:match("^[Hh][Tt][Tt][Pp][Ss]?://") then
    error(fmt("mcp.http: only http:// and https:// URLs (%s)", tostring(url)), 2)
  end
  local body = opts.body
  local headers = lower_headers(opts.headers)
  if opts.json ~= nil then
    body = json.encode(opts.json)
    headers["content-type"] = headers["content-type"] or "application/json"
  end
  local method = (opts.method or (body and "POST" or "GET")):upper()
  local req = { method = method, url = url, headers = headers, body = body }
  if body and (headers["content-type"] or ""):find("json") then
    local ok, v = pcall(json.decode, body)
    if ok then req.json = v end
  end
  state.requests[#state.requests + 1] = req
  local route
  for i = #state.http, 1, -1 do -- the last declared wins
    local r = state.http[i]
    if (r.method == "*" or r.method == method) and glob(r.url, url) then route = r break end
  end
  if not route then
    state.unmatched[#state.unmatched + 1] = fmt("mcp.http %s %s: no test.http.route matches it", method, url)
    error(fmt("mcp.http: no fake route for %s %s (luamcp test)", method, url), 2)
  end
  local res = route.response
  if type(res) == "function" then res = res(req) end
  if type(res) == "string" then res = { body = res } end
  if type(res) ~= "table" then error(fmt("mcp.http: the fake route for %s returned a %s", url, type(res)), 2) end
  local timeout = opts.timeout
  if timeout and res.delay and res.delay > timeout then
    advance(timeout)
    error(fmt("mcp.http: Timeout was reached (%s)", url), 2)
  end
  advance(res.delay or 0)
  if res.error then error(fmt("mcp.http: %s (%s)", res.error, url), 2) end
  local out = { status = res.status or 200, headers = lower_headers(res.headers), url = url }
  if res.json ~= nil then
    out.body = json.encode(res.json)
    out.headers["content-type"] = out.headers["content-type"] or "application/json"
  else
    out.body = res.body or ""
  end
  local ctype = out.headers["content-type"] or ""
  if ctype:find("^application/json") or ctype:find("%+json") then
    local ok, v = pcall(json.decode, out.body)
    if ok then out.json = v end
  end
  return out
end

local function http_get(url, opts)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.url, o.method = url, o.method or "GET"
  return http_request(o)
end

local function http_post(url, body, opts)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.url, o.method = url, o.method or "POST"
  if type(body) == "table" then o.json = body else o.body = body end
  return http_request(o)
end

-- }===

-- {=== mcp.exec

T.exec = {}
-- argv: a list of patterns, one per argument ("..." last: any more), or one
-- string matched against the argv joined by spaces.
function T.exec.route(argv, result)
  if type(argv) ~= "table" and type(argv) ~= "string" then fail_here("exec.route(argv pattern, result)") end
  if type(result) ~= "table" and type(result) ~= "function" then
    fail_here("exec.route: the result is a table {code=, stdout=, stderr=, signal=, delay=} or a function(run)")
  end
  check_delay("exec.route", result)
  state.exec[#state.exec + 1] = { argv = argv, result = result }
end

local function argv_matches(pattern, argv)
  if type(pattern) == "string" then return glob(pattern, concat(argv, " ")) end
  for i, p in ipairs(pattern) do
    if p == "..." and i == #pattern then return true end
    if argv[i] == nil or not glob(p, argv[i]) then return false end
  end
  return #argv == #pattern
end

local function exec(opts)
  if type(opts) ~= "table" then error("mcp.exec expects a table: { \"program\", \"arg\", ... }", 2) end
  local argv = opts.argv or opts
  local list = {}
  for i = 1, #argv do
    if type(argv[i]) ~= "string" then error(fmt("mcp.exec: argv[%d] must be a string", i), 2) end
    list[i] = argv[i]
  end
  if #list == 0 then error("mcp.exec: the argv is empty", 2) end
  local run = { argv = list, stdin = opts.stdin, env = opts.env, cwd = opts.cwd }
  state.runs[#state.runs + 1] = run
  local route
  for i = #state.exec, 1, -1 do
    if argv_matches(state.exec[i].argv, list) then route = state.exec[i] break end
  end
  if not route then
    state.unmatched[#state.unmatched + 1] = "mcp.exec " .. show(list) .. ": no test.exec.route matches it"
    error(fmt("mcp.exec: cannot run '%s': no fake for it (luamcp test)", list[1]), 2)
  end
  local r = route.result
  if type(r) == "function" then r = r(run) end
  if type(r) ~= "table" then error("mcp.exec: the fake returned a " .. type(r), 2) end
  if r.delay and opts.timeout and r.delay > opts.timeout then
    advance(opts.timeout)
    return { signal = "SIGTERM", timed_out = true, stdout = r.stdout or "", stderr = r.stderr or "",
             stdout_truncated = false, stderr_truncated = false }
  end
  advance(r.delay or 0)
  return { code = r.signal == nil and (r.code or 0) or nil, signal = r.signal, stdout = r.stdout or "",
           stderr = r.stderr or "", timed_out = false, stdout_truncated = false, stderr_truncated = false }
end

-- }===

-- {=== mcp.socket: a scripted peer

T.socket = {}
-- peer(host, port, fn): fn(data) is called with each send and returns what the
-- peer writes back (or nil); false instead of fn: the connection is refused.
function T.socket.peer(host, port, fn)
  if type(fn) ~= "function" and fn ~= false then fail_here("socket.peer(host, port, function(data) ... end)") end
  state.peers[tostring(host) .. ":" .. tostring(port)] = fn
end

local sock_mt = {}
sock_mt.__index = sock_mt

local function new_socket() return setmetatable({ inbox = "", timeout = nil }, sock_mt) end

function sock_mt:settimeout(t) self.timeout = t return 1 end
function sock_mt:setoption() return 1 end
function sock_mt:connect(host, port)
  local key = tostring(host) .. ":" .. tostring(port)
  local peer = state.peers[key]
  if peer == nil then
    state.unmatched[#state.unmatched + 1] = "mcp.socket " .. key .. ": no test.socket.peer for it"
    return nil, "connection refused"
  end
  if peer == false then return nil, "connection refused" end
  self.peer, self.name = peer, key
  advance(0)
  return 1
end
function sock_mt:send(data, i, j)
  if not self.peer then return nil, "closed", 0 end
  data = tostring(data):sub(i or 1, j or -1)
  local reply = self.peer(data)
  if reply ~= nil then self.inbox = self.inbox .. tostring(reply) end
  advance(0)
  return #data
end
function sock_mt:receive(pattern, prefix)
  if not self.peer then return nil, "closed" end
  pattern = pattern or "*l"
  prefix = prefix or ""
  local function wait() -- nothing more will come: a timeout, on the virtual clock
    advance(self.timeout or 0)
  end
  if pattern == "*a" or pattern == "a" then
    local all = self.inbox
    self.inbox = ""
    return prefix .. all
  elseif pattern == "*l" or pattern == "l" then
    local nl = self.inbox:find("\n", 1, true)
    if not nl then
      local partial = self.inbox
      self.inbox = ""
      wait()
      return nil, "timeout", prefix .. partial
    end
    local line = self.inbox:sub(1, nl - 1):gsub("\r", "")
    self.inbox = self.inbox:sub(nl + 1)
    return prefix .. line
  elseif type(pattern) == "number" then
    if #self.inbox < pattern then
      local partial = self.inbox
      self.inbox = ""
      wait()
      return nil, "timeout", prefix .. partial
    end
    local chunk = self.inbox:sub(1, pattern)
    self.inbox = self.inbox:sub(pattern + 1)
    return prefix .. chunk
  end
  error("mcp.socket: receive pattern must be \"*l\", \"*a\" or a number", 2)
end
function sock_mt:close() self.peer = nil return 1 end
function sock_mt:shutdown() return 1 end
function sock_mt:getpeername() return self.name end
function sock_mt:getsockname() return "127.0.0.1", 0 end

local function socket_connect(host, port)
  local s = new_socket()
  local ok, err = s:connect(host, port)
  if not ok then return nil, err end
  return s
end

-- }===

-- {=== mcp.store, in memory, TTLs on the virtual clock

local function store_key(op, k)
  if type(k) ~= "string" then error(fmt("mcp.store.%s: the key must be a string, got %s", op, type(k)), 3) end
  if #k == 0 or #k > 1024 then error(fmt("mcp.store.%s: the key must have 1 to 1024 bytes", op), 3) end
  local e = state.store[k]
  if e and e.expires and e.expires <= clock.now then state.store[k] = nil end
  return k
end

local function store_ttl(op, ttl)
  if ttl == nil then return nil end
  if type(ttl) ~= "number" then error(fmt("mcp.store.%s: the ttl must be a number of seconds, got %s", op, type(ttl)), 3) end
  if not (ttl >= 0.001 and ttl <= 315360000) then
    error(fmt("mcp.store.%s: the ttl must be from 0.001 to 315360000 seconds", op), 3)
  end
  return clock.now + ttl
end

local store = {
  get = function(k)
    k = store_key("get", k)
    return state.store[k] and state.store[k].value
  end,
  set = function(k, v, ttl)
    k = store_key("set", k)
    if type(v) ~= "string" and type(v) ~= "number" then
      error(fmt("mcp.store.set: the value must be a string or a number, got %s", type(v)), 2)
    end
    state.store[k] = { value = tostring(v), expires = store_ttl("set", ttl) }
    return true
  end,
  incr = function(k, by, ttl)
    k = store_key("incr", k)
    if by ~= nil and math.type(by) ~= "integer" then error("mcp.store.incr: the increment must be an integer", 2) end
    local e = state.store[k]
    local cur = 0
    if e then
      cur = math.tointeger(tonumber(e.value))
      if not cur or not e.value:match("^%-?%d+$") then error(fmt("mcp.store.incr: the value of '%s' is not an integer", k), 2) end
    end
    cur = cur + (by or 1)
    local expires = store_ttl("incr", ttl)
    state.store[k] = { value = tostring(cur), expires = e and e.expires or expires }
    return cur
  end,
  delete = function(k)
    k = store_key("delete", k)
    local had = state.store[k] ~= nil
    state.store[k] = nil
    return had
  end,
  add = function(k, v, ttl)
    k = store_key("add", k)
    if type(v) ~= "string" and type(v) ~= "number" then
      error(fmt("mcp.store.add: the value must be a string or a number, got %s", type(v)), 2)
    end
    if state.store[k] then return false end
    state.store[k] = { value = tostring(v), expires = store_ttl("add", ttl) }
    return true
  end,
  cas = function(k, old, new, ttl)
    k = store_key("cas", k)
    for _, v in ipairs { old, new } do
      if v ~= nil and type(v) ~= "string" and type(v) ~= "number" then
        error(fmt("mcp.store.cas: the value must be a string or a number (or nil), got %s", type(v)), 2)
      end
    end
    local cur = state.store[k] and state.store[k].value
    if cur ~= (old ~= nil and tostring(old) or nil) then return false end
    state.store[k] = new ~= nil and { value = tostring(new), expires = store_ttl("cas", ttl) } or nil
    return true
  end,
  keys = function(prefix, cursor)
    if type(prefix) ~= "string" then error(fmt("mcp.store.keys: the prefix must be a string, got %s", type(prefix)), 2) end
    if cursor ~= nil then error("mcp.store.keys: the fake store answers in one page: no cursor to give", 2) end
    local out = {}
    for k, e in pairs(state.store) do
      if k:sub(1, #prefix) == prefix and not (e.expires and e.expires <= clock.now) then out[#out + 1] = k end
    end
    table.sort(out)
    return out, nil
  end,
}
T.store = {
  -- what the store holds now (expired keys left out), for assertions
  dump = function()
    local out = {}
    for k, e in pairs(state.store) do
      if not (e.expires and e.expires <= clock.now) then out[k] = e.value end
    end
    return out
  end,
}

-- }===

-- {=== test.db: the test file's database (mcp.db's), from the test's code

-- core/cli/test_db.c: a connection of its own, outside any call; errors at
-- the test's line
T.db = {}
function T.db.exec(sql, ...) return bridge.db_exec(sql, ...) end
function T.db.query(sql, ...) return bridge.db_query(sql, ...) end
function T.db.one(sql, ...) return bridge.db_one(sql, ...) end

-- }===

-- {=== mcp.redis: answered by the test's function

T.redis = {}
-- fake(fn): fn(cmd, arg...) answers each command of mcp.redis and of its
-- pipelines (cmd upper case, every argument a string as the server sends it)
-- with the reply, or nil, "ERR ..." for an error reply. Checked and refused
-- as the server checks them (core/io/io_redis.c: the same function).
function T.redis.fake(fn)
  if type(fn) ~= "function" then fail_here("redis.fake(function(cmd, ...) return reply end)") end
  state.redis = fn
end

local redis_check = getmetatable(mcp.redis).check
local function redis_text(v) -- a number as io_redis.c writes it
  if math.type(v) == "float" and v == v and v ~= math.huge and v ~= -math.huge then
    for p = 15, 17 do
      local t = fmt("%." .. p .. "g", v)
      if tonumber(t) == v then return t end
    end
  end
  if v == math.huge then return "inf" elseif v == -math.huge then return "-inf" end
  return tostring(v)
end
-- One command {name, arg...}: ok, the reply or the error's text.
local function redis_answer(cmd, level)
  local words = {}
  for i = 1, cmd.n or #cmd do words[i] = redis_text(cmd[i]) end
  words[1] = words[1]:upper()
  state.redis_commands[#state.redis_commands + 1] = words
  local fn = state.redis
  if not fn then
    state.unmatched[#state.unmatched + 1] = "mcp.redis " .. words[1] .. ": no test.redis.fake for it"
    error("mcp.redis is not faked: give test.redis.fake(function(cmd, ...) return reply end) in the test", level + 1)
  end
  local r, err = fn(table.unpack(words))
  advance(0)
  if r == nil and err ~= nil then return false, tostring(err) end
  return true, r
end
local redis_fake = {
  call = function(_, ...)
    local cmd = table.pack(...)
    redis_check("one", cmd)
    local ok, r = redis_answer(cmd, 2)
    if not ok then error("redis: " .. r, 2) end
    return r
  end,
  pipeline = function(arg)
    local list = arg
    if type(arg) == "function" then
      list = {}
      arg(function(...)
        local cmd = table.pack(...)
        redis_check("p", cmd)
        list[#list + 1] = cmd
      end)
    elseif type(arg) ~= "table" then
      error(fmt("mcp.redis.pipeline: needs a function(p) or a list of commands, got %s", type(arg)), 2)
    end
    redis_check("pipeline", list)
    local out = setmetatable({}, mcp.array_mt)
    for i, cmd in ipairs(list) do
      local ok, r = redis_answer(cmd, 2)
      if not ok then r = { err = r } elseif r == nil then r = mcp.null end
      out[i] = r
    end
    return out
  end,
}

-- }===

-- The fakes take the place of the real functions in the tables scripts see.
mcp.http.request, mcp.http.get, mcp.http.post = http_request, http_get, http_post
mcp.exec = exec
-- every function of mcp.socket: a new one would reach the network unfaked
mcp.socket.tcp, mcp.socket.tcp4, mcp.socket.tcp6 = new_socket, new_socket, new_socket
mcp.socket.unix, mcp.socket.connect = new_socket, socket_connect
mcp.socket.gettime = function() return clock.now end
mcp.now = function() return clock.now * 1000 end -- milliseconds, as the real one
for k, f in pairs(store) do mcp.store[k] = f end
getmetatable(mcp.redis).__call, mcp.redis.pipeline = redis_fake.call, redis_fake.pipeline
-- mcp.spawn / mcp.all on the virtual clock. A fake never parks a thread, so
-- a thread runs to its end inside mcp.spawn; its waits then happened on a
-- lane of its own: the clock goes back to where the spawner was (and the
-- call gets that time back), and a wait for the thread moves the waiter's
-- clock to the thread's end. Three 0.2 s fakes in mcp.all take 0.2 s.
do
  local real_spawn, real_all = mcp.spawn, mcp.all
  local ends = setmetatable({}, { __mode = "k" }) -- handle -> its end on the virtual clock
  local thread_mt = debug.getregistry()["mcp.thread"]
  local real_wait = thread_mt.__index.wait
  local function catch_up(h) -- the waiter's clock to the thread's end
    local t = ends[h]
    if t and t > clock.now then advance(t - clock.now) end
  end
  mcp.spawn = function(fn, ...)
    local t0 = clock.now
    local h = real_spawn(fn, ...)
    ends[h] = clock.now
    if clock.now > t0 then
      bridge.spend(t0 - clock.now) -- the call gets the thread's time back: it ran beside
      clock.now = t0
    end
    return h
  end
  thread_mt.__index.wait = function(h, ...)
    catch_up(h)
    return real_wait(h, ...)
  end
  mcp.all = function(fns)
    if type(fns) ~= "table" then return real_all(fns) end -- its own error
    for i = 1, #fns do
      if type(fns[i]) ~= "function" then return real_all(fns) end
    end
    local hs, first_failed = {}, nil
    for i = 1, #fns do
      hs[i] = mcp.spawn(fns[i])
      if not pcall(real_wait, hs[i]) and (not first_failed or ends[hs[i]] < ends[first_failed]) then
        first_failed = hs[i]
      end
    end
    if first_failed then -- the first to fail, on the virtual clock: the others are stopped
      catch_up(first_failed)
      return real_wait(first_failed)
    end
    local out = {}
    for i = 1, #hs do
      catch_up(hs[i])
      out[i] = (real_wait(hs[i]))
    end
    return table.unpack(out, 1, #fns)
  end
end

do -- ctx:sleep waits on the virtual clock: a 30 s wait takes no time
  local ctx_mt = debug.getregistry()["mcp.ctx"]
  local _, methods = debug.getupvalue(ctx_mt.__index, 1)
  methods.sleep = function(_, s)
    if type(s) ~= "number" then error("bad argument #1 to 'sleep' (number expected, got " .. type(s) .. ")", 2) end
    advance(s)
  end
end

-- }======================================================

-- {====================================================== the client

local REVISIONS = { ["2025-11-25"] = true, ["2026-07-28"] = true }
local client_mt = {}
client_mt.__index = client_mt

local DEFAULT_CAPS = { elicitation = {}, sampling = {}, roots = {} }

local function caps_of(opts)
  local caps = {}
  for k, v in pairs(opts.capabilities or DEFAULT_CAPS) do caps[k] = v end
  if opts.ui then
    caps.extensions = caps.extensions or {}
    caps.extensions["io.modelcontextprotocol/ui"] = { mimeTypes = mcp.as_array { "text/html;profile=mcp-app" } }
  end
  return caps
end

-- An answer to a question the handler asked, from opts.answers.
local function answer(q, answers, who)
  local method, params = q.method, q.params or {}
  local kind = method == "elicitation/create" and "elicit" or method == "sampling/createMessage" and "sample"
    or method == "roots/list" and "roots" or nil
  if method == "ping" then return {} end
  local given = kind and answers and answers[kind]
  if given == nil then
    fail_here(fmt("%s asked %s%s, and opts.answers has no %s", who, method,
      params.message and fmt(" (%s)", show(params.message)) or "", kind or "answer for it"))
  end
  if type(given) == "function" then given = given(params) end
  if kind == "elicit" then
    if given == "decline" or given == "cancel" then return { action = given } end
    if type(given) == "table" and given.action then return given end
    return { action = "accept", content = given }
  elseif kind == "sample" then
    if type(given) == "string" then
      return { role = "assistant", content = { type = "text", text = given }, model = "luamcp-test", stopReason = "endTurn" }
    end
    return given
  else
    local roots = mcp.as_array {}
    for i, r in ipairs(given.roots or given) do roots[i] = type(r) == "string" and { uri = r } or r end
    return { roots = roots }
  end
end

local next_id = 0

-- Every answer is checked against the official schema of the revision spoken:
-- what a test sees is what a strict client would accept.
local RESULT_OF = {
  ["tools/call"] = "CallToolResult", ["resources/read"] = "ReadResourceResult",
  ["prompts/get"] = "GetPromptResult", ["completion/complete"] = "CompleteResult",
  ["tools/list"] = "ListToolsResult", ["resources/list"] = "ListResourcesResult",
  ["resources/templates/list"] = "ListResourceTemplatesResult", ["prompts/list"] = "ListPromptsResult",
  initialize = "InitializeResult",
}
local schemas = {}
local function conforms(revision, def, value, what)
  local all = schemas.all or json.decode(bridge.schemas())
  schemas.all = all
  if not all[revision] or not all[revision]["$defs"][def] then
    fail_here(fmt("no %s in the %s schema luamcp test carries", tostring(def), tostring(revision)))
  end
  local key = revision .. " " .. def
  local s = schemas[key]
  if not s then
    s = { ["$ref"] = "#/$defs/" .. def, ["$defs"] = all[revision]["$defs"] }
    schemas[key] = s
  end
  local ok, err = mcp.validate(s, value)
  if not ok then
    fail_here(fmt("%s: not a valid %s %s (the MCP schema): %s", what, revision, def, tostring(err)))
  end
end

-- Send method with params; answer what the server asks; the result, or nil
-- and the JSON-RPC error. The notifications that came go to self.notifications.
function client_mt:request(method, params, opts)
  opts = opts or {}
  local as = opts.as or self.as
  local subject, scopes
  if as then
    subject = as.subject
    scopes = type(as.scopes) == "table" and concat(as.scopes, " ") or as.scopes
    if type(as) ~= "table" or (subject ~= nil and type(subject) ~= "string") or (scopes ~= nil and type(scopes) ~= "string") then
      fail_here("as = { subject = \"...\", scopes = { \"...\" } }: a string subject, scopes a list of strings or one string")
    end
  end
  self.notifications = {}
  params = params or {}
  local modern = self.revision == "2026-07-28"
  local request_state, responses
  for _ = 1, 32 do
    next_id = next_id + 1
    local id = next_id
    local p = {}
    for k, v in pairs(params) do p[k] = v end
    local meta = {}
    for k, v in pairs(p._meta or {}) do meta[k] = v end
    meta.progressToken = meta.progressToken or id -- ctx:progress then reaches self.notifications
    p._meta = meta
    if modern then
      meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
      meta["io.modelcontextprotocol/clientInfo"] = { name = "luamcp-test", version = "0" }
      meta["io.modelcontextprotocol/clientCapabilities"] = caps_of({
        capabilities = opts.capabilities or self.opts.capabilities,
        ui = (opts.ui == nil) and self.opts.ui or opts.ui,
      })
      p._meta = meta
      p.requestState, p.inputResponses = request_state, responses
    end
    local line = json.encode { jsonrpc = "2.0", id = id, method = method, params = p }
    local sent, why = pcall(bridge.submit, self.session, line, subject, scopes)
    if not sent then -- from a fake or a handler: fails the test even if caught there
      state.misused[#state.misused + 1] = tostring(why)
      error(why, 0)
    end
    local reply
    while not reply do
      for _, l in ipairs(bridge.pump(self.session, id)) do
        local m = json.decode(l)
        if m.id == id and m.method == nil then reply = m
        elseif m.method and m.id ~= nil then -- the server asks (2025-11-25)
          local ok, a = pcall(answer, m, opts.answers, method)
          local out = { jsonrpc = "2.0", id = m.id }
          if ok then out.result = a else out.error = { code = -32603, message = "no answer in the test" } end
          bridge.submit(self.session, json.encode(out))
          if not ok then error(a, 0) end
        elseif m.method then
          self.notifications[#self.notifications + 1] = m
        end
      end
    end
    if reply.error then
      conforms(self.revision, "JSONRPCErrorResponse", reply, method)
      return nil, reply.error
    end
    local r = reply.result
    if modern and r.resultType == "task" then
      -- the tasks extension's handle (tasks/get follows with app:request): the
      -- 2026-07-28 schema has no definition of it to check against
      return r
    end
    if modern and r.resultType == "input_required" then
      conforms(self.revision, "InputRequiredResult", r, method)
      responses = {}
      for key, q in pairs(r.inputRequests or {}) do responses[key] = answer(q, opts.answers, method) end
      request_state = r.requestState
    else
      if RESULT_OF[method] then conforms(self.revision, RESULT_OF[method], r, method) end
      return r
    end
  end
  fail_here(method .. " still asks after 32 rounds")
end

function client_mt:call(name, args, opts)
  return self:request("tools/call", { name = name, arguments = args or {} }, opts)
end
function client_mt:read(uri, opts) return self:request("resources/read", { uri = uri }, opts) end
function client_mt:prompt(name, args, opts)
  return self:request("prompts/get", { name = name, arguments = args }, opts)
end
-- complete({ prompt = NAME } | { resource = URI_TEMPLATE }, argument, value [, other args])
function client_mt:complete(ref, argument, value, context, opts)
  local r = ref.prompt and { type = "ref/prompt", name = ref.prompt } or { type = "ref/resource", uri = ref.resource }
  local res, err = self:request("completion/complete", { ref = r, argument = { name = argument, value = value or "" },
    context = context and { arguments = context } or nil }, opts)
  if not res then return nil, err end
  return res.completion.values, res.completion
end
-- Every page of the four lists: { tools = {...}, resources = {...}, templates = {...}, prompts = {...} }
function client_mt:list(opts)
  local out = {}
  for key, method in pairs { tools = "tools/list", resources = "resources/list",
                             templates = "resources/templates/list", prompts = "prompts/list" } do
    local items, cursor = {}, nil
    repeat
      local r, err = self:request(method, { cursor = cursor }, opts)
      if not r then
        if err.code == -32601 then break end -- the app has none of these
        fail_here(fmt("%s: %s", method, err.message))
      end
      local field = key == "templates" and "resourceTemplates" or key
      for _, it in ipairs(r[field] or {}) do items[#items + 1] = it end
      cursor = r.nextCursor
    until not cursor
    out[key] = items
  end
  return out
end

-- test.conforms(value, "CallToolResult" [, revision]): value is what the official
-- MCP schema of that revision (default: the clients' default) calls a DEF; every
-- answer a client of test.app gets is checked so.
function T.conforms(value, def, revision)
  conforms(revision or default_revision, def, value, "test.conforms")
end

-- T.app{ revision =, as = { subject =, scopes = }, capabilities =, ui = }: a client
-- of the app under test. 2025-11-25 initializes a session; 2026-07-28 sends
-- every request on its own with its capabilities (and answers questions in
-- rounds). Default: luamcp test's --revision, else 2026-07-28.
function T.app(opts)
  opts = opts or {}
  local revision = opts.revision or default_revision
  if not REVISIONS[revision] then fail_here(fmt("unknown revision %s (2025-11-25 or 2026-07-28)", show(revision))) end
  local c = setmetatable({ session = bridge.session(), revision = revision, as = opts.as, opts = opts,
                           notifications = {} }, client_mt)
  if revision == "2025-11-25" then
    next_id = next_id + 1
    bridge.submit(c.session, json.encode { jsonrpc = "2.0", id = next_id, method = "initialize", params = {
      protocolVersion = revision, capabilities = caps_of(opts), clientInfo = { name = "luamcp-test", version = "0" } } })
    for _, l in ipairs(bridge.pump(c.session, next_id)) do
      local m = json.decode(l)
      if m.error then fail_here("initialize: " .. m.error.message) end
      c.server = m.result
    end
    bridge.submit(c.session, '{"jsonrpc":"2.0","method":"notifications/initialized"}')
  end
  return c
end

-- }======================================================

-- {====================================================== running

local tests = {}
setmetatable(T, { __call = function(_, name, fn) return T.test(name, fn) end })
function T.test(name, fn)
  if type(name) ~= "string" or type(fn) ~= "function" then fail_here("test(name, function() ... end)") end
  tests[#tests + 1] = { name = name, fn = fn, where = caller_line() }
end
local before = {}
function T.before_each(fn) before[#before + 1] = fn end

local function text_of(e) -- an error value as text: its __tostring when it has one
  local mt = type(e) == "table" and getmetatable(e)
  if mt and mt.__tostring then
    local ok, s = pcall(tostring, e)
    if ok and type(s) == "string" then return s end
  end
  return type(e) == "table" and show(e) or tostring(e)
end

local function message_of(err)
  if getmetatable(err) == failure_mt then return err.where .. ": " .. err.message, err.details end
  return text_of(err)
end

-- Run the tests whose name (or file) finds filter; a result per test:
-- { name, ok, message, details, ms }.
function T._run(file, filter)
  local results = {}
  for _, t in ipairs(tests) do
    if not filter or filter == "" or t.name:find(filter, 1, true) or file:find(filter, 1, true) then
      reset_fakes()
      local started = bridge.now()
      bridge.test_begin()
      local ok, err = xpcall(function()
        for _, b in ipairs(before) do b() end
        t.fn()
      end, function(e)
        if getmetatable(e) == failure_mt then return e end
        local trace = {} -- the test's frames and the app's, not this file's
        for line in debug.traceback("", 2):gmatch("[^\n]+") do
          if not line:find("^%s*test%.lua:") and not line:find("'xpcall'", 1, true) then trace[#trace + 1] = line end
        end
        return setmetatable({ message = text_of(e), details = trace,
                              where = "error" }, failure_mt)
      end)
      local over = bridge.test_end()
      if ok and over then ok, err = false, setmetatable({ message = over, where = t.where }, failure_mt) end
      local r = { name = t.name, ok = ok, ms = (bridge.now() - started) * 1000 }
      if ok and #state.misused > 0 then
        r.ok, r.message, r.details = false, t.where .. ": " .. state.misused[1], nil
      elseif ok and #state.unmatched > 0 then
        r.ok, r.message, r.details = false, t.where .. ": the outside world was reached without a fake", state.unmatched
      elseif not ok then
        if err.where == "error" then r.message, r.details = err.message, err.details
        else r.message, r.details = message_of(err) end
      end
      results[#results + 1] = r
    end
  end
  return results
end

-- }======================================================

reset_fakes()
return T
