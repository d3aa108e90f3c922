---@meta mcp.test
-- mcp.test.d.lua — annotations for LuaLS of what `luamcp test` gives an app's
-- tests (require "mcp.test"; lua/test.lua is the code). docs/testing.md has the
-- whole story.

---@class mcp.test.Identity
---@field subject? string ctx.auth.subject
---@field scopes? string[]|string ctx.auth.scopes (a list, or space-separated)

---@class mcp.test.Answers answers to the handler's questions (ctx:elicit, ctx:sample, ctx:roots)
---@field elicit? table|"decline"|"cancel"|fun(params: table): table|string content to accept, or {action=, content=}
---@field sample? string|table|fun(params: table): string|table the model's text, or a whole CreateMessageResult
---@field roots? (string|{uri: string, name?: string})[]|fun(params: table): table

---@class mcp.test.RequestOptions
---@field answers? mcp.test.Answers
---@field as? mcp.test.Identity who calls (scopes apply)
---@field ui? boolean declare the MCP Apps extension (app-only tools)
---@field capabilities? table the client's capabilities (default: elicitation, sampling, roots)

---@class mcp.test.ClientOptions: mcp.test.RequestOptions
---@field revision? "2026-07-28"|"2025-11-25" default: luamcp test --revision, else 2026-07-28

---@class mcp.test.Error a JSON-RPC error
---@field code integer
---@field message string
---@field data? any

---@class mcp.test.Client a client of the app under test, through the real server
---@field revision string
---@field notifications table[] what came with the last request (progress, log messages)
---@field server? table the initialize result (2025-11-25)
local Client = {}
---tools/call: the CallToolResult (an isError one too), or nil and the JSON-RPC error
---@param tool string
---@param args? table
---@param opts? mcp.test.RequestOptions
---@return table? result, mcp.test.Error? err
function Client:call(tool, args, opts) end
---resources/read
---@param uri string
---@param opts? mcp.test.RequestOptions
---@return table? result, mcp.test.Error? err
function Client:read(uri, opts) end
---prompts/get
---@param name string
---@param args? table<string, string>
---@param opts? mcp.test.RequestOptions
---@return table? result, mcp.test.Error? err
function Client:prompt(name, args, opts) end
---complete({ prompt = NAME } or { resource = URI_TEMPLATE }, argument, value [, other arguments])
---@param ref {prompt?: string, resource?: string}
---@param argument string
---@param value? string
---@param context? table<string, string>
---@param opts? mcp.test.RequestOptions
---@return string[]? values, table|mcp.test.Error completion_or_err
function Client:complete(ref, argument, value, context, opts) end
---Every page of the tools, resources, templates and prompts lists
---@param opts? mcp.test.RequestOptions
---@return {tools: table[], resources: table[], templates: table[], prompts: table[]}
function Client:list(opts) end
---Any method: the result, or nil and the JSON-RPC error
---@param method string
---@param params? table
---@param opts? mcp.test.RequestOptions
---@return table? result, mcp.test.Error? err
function Client:request(method, params, opts) end

---@class mcp.test.HttpRequest
---@field method string
---@field url string
---@field headers table<string, string> lowercase names
---@field body? string
---@field json? any the body decoded, when it is JSON

---@class mcp.test.HttpResponse
---@field status? integer default 200
---@field headers? table<string, string>
---@field body? string
---@field json? any encoded as the body, with Content-Type: application/json
---@field delay? number seconds on the virtual clock; past the request's timeout: a timeout
---@field error? string a transport failure: mcp.http raises "mcp.http: ERROR (URL)"

---@class mcp.test.ExecRun
---@field argv string[]
---@field stdin? string
---@field env? table
---@field cwd? string

---@class mcp.test.ExecResult
---@field code? integer default 0
---@field signal? string
---@field stdout? string
---@field stderr? string
---@field delay? number seconds on the virtual clock; past the run's timeout: timed_out

---@class mcp.test
---@overload fun(name: string, fn: fun())
local test = {}

---Declare a test: fn runs with fresh fakes; an error or a failed check fails it
---@param name string
---@param fn fun()
function test.test(name, fn) end
---Runs before each test of the file
---@param fn fun()
function test.before_each(fn) end
---A client of the app
---@param opts? mcp.test.ClientOptions
---@return mcp.test.Client
function test.app(opts) end

---Deep equality; a failure lists each difference by path
---@param actual any
---@param expected any
---@param what? string
function test.eq(actual, expected, what) end
---@generic T
---@param v T
---@param what? string
---@return T
function test.ok(v, what) end
---s finds the Lua pattern
---@param s any
---@param pattern string
---@param what? string
function test.match(s, pattern, what) end
---fn() raises an error whose text finds pattern; returns that text
---@param fn fun()
---@param pattern? string
---@param plain? boolean
---@return string
function test.raises(fn, pattern, plain) end
---@param message? string
function test.fail(message) end
---value is what the official MCP schema of the revision (default: the clients') calls def
---(every answer a test.app() client gets is checked so)
---@param value any
---@param def "CallToolResult"|"ReadResourceResult"|"GetPromptResult"|"CompleteResult"|"ListToolsResult"|"ListResourcesResult"|"ListResourceTemplatesResult"|"ListPromptsResult"|"InitializeResult"|"InputRequiredResult"|"JSONRPCErrorResponse"|string
---@param revision? "2026-07-28"|"2025-11-25"
function test.conforms(value, def, revision) end
---A value as one line of Lua (keys sorted)
---@return string
function test.show(v) end
---Each difference of a and b, as "path: got X, expected Y" lines
---@return string[]
function test.diff(a, b) end

test.http = {
  ---@type mcp.test.HttpRequest[] every request of this test, in order
  requests = {},
}
---A fake answer for METHOD (or "*") and a URL pattern (* matches any run of characters);
---the last route declared that matches wins. A request no route matches fails the test.
---@param method string
---@param url string
---@param response mcp.test.HttpResponse|string|fun(req: mcp.test.HttpRequest): mcp.test.HttpResponse|string
function test.http.route(method, url, response) end

test.exec = {
  ---@type mcp.test.ExecRun[] every run of this test, in order
  runs = {},
}
---A fake program: argv as a list of patterns ("..." last: any more arguments), or one
---pattern for the argv joined by spaces
---@param argv string[]|string
---@param result mcp.test.ExecResult|fun(run: mcp.test.ExecRun): mcp.test.ExecResult
function test.exec.route(argv, result) end

test.socket = {}
---A scripted peer at host:port: fn(data) gets each send and returns what the peer
---writes back (or nil); false refuses the connection
---@param host string
---@param port integer|string
---@param fn fun(data: string): string?|false
function test.socket.peer(host, port, fn) end

test.redis = {
  ---@type string[][] every command of mcp.redis and its pipelines in this test, in order:
  ---{ "ZINCRBY", "top", "2.5", "ann" } (the name upper case, numbers as their text)
  commands = {},
}
---Answers mcp.redis: fn(cmd, ...) gets each command (cmd upper case, the arguments as
---strings) and returns the reply, or nil, "ERR ..." for an error reply. Commands are
---checked and refused as when served. Without it mcp.redis raises "mcp.redis is not faked".
---@param fn fun(cmd: string, ...: string): any, string?
function test.redis.fake(fn) end

---The test file's own database (mcp.db's: fresh for each file, the app's
---migrations applied), from the test's code: seed rows before a call, read
---what the tools wrote. Parameters and values as mcp.db's. (mcp.store is the
---fake above, not this database's table.)
test.db = {}
---Run sql (several statements when there are no parameters).
---@param sql string
---@param ... any values for its ? in order, or one table for its :name
---@return { changes: integer, last_id: integer }
function test.db.exec(sql, ...) end
---The rows of one statement: tables keyed by column (NULL is mcp.null).
---@param sql string
---@param ... any
---@return table[]
function test.db.query(sql, ...) end
---The first row, or nil.
---@param sql string
---@param ... any
---@return table?
function test.db.one(sql, ...) end

test.store = {}
---What mcp.store holds now (expired keys left out)
---@return table<string, string>
function test.store.dump() end

test.clock = {}
---Seconds on the virtual clock (ctx:sleep, delays, timeouts, TTLs and os.time follow it)
---@return number
function test.clock.now() end
---@param seconds number
function test.clock.advance(seconds) end

---What os.getenv answers for the test it is called in (a manifest's user_config
---reaches an app through the environment): a string, or false as if unset; other
---names read the real environment. Scripts that read it at load see the real one.
---@param vars table<string, string|false>
function test.env(vars) end

return test
