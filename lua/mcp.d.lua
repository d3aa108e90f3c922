---@meta mcp
-- mcp.d.lua — LuaLS annotations of luamcp's `require "mcp"` (lua/mcp.lua and
-- the C functions behind it), for editors: completion, hover docs, and a
-- warning on a misspelt field (`args =` on mcp.tool, where `input =` is
-- meant). `luamcp new` points .luarc.json's workspace.library at this file's
-- folder; `make install` puts it in PREFIX/share/luamcp.
--
-- Kept in step with the runtime by tests/integration/annotations.test.mjs:
-- every field documented here is one lua/mcp.lua (or the C side) accepts, and
-- the other way round. Where a field has an MCP spelling too (input /
-- inputSchema, mime / mimeType, ...), both are here; luamcp's own name is the
-- one the docs use.

---@class mcp
local mcp = {}

-- {====== schemas

---A JSON Schema (2020-12) table, as made by the builders or written raw.
---@alias mcp.Schema table

---Options of the schema builders (`mcp.string{}`, `mcp.number{}`, ...).
---@class mcp.SchemaOptions
---@field description? string
---@field title? string
---@field default? any a default makes the field optional; it is filled in before the handler runs
---@field enum? any[]
---@field const? any
---@field examples? any[]
---@field format? string "email", "uri", "date-time", ... (checked with app.lua's schema = { format = "assert" })
---@field pattern? string an ECMA-262 regular expression
---@field minimum? number
---@field maximum? number
---@field exclusiveMinimum? number
---@field exclusiveMaximum? number
---@field multipleOf? number
---@field minLength? integer
---@field maxLength? integer
---@field minItems? integer
---@field maxItems? integer
---@field uniqueItems? boolean
---@field items? mcp.Schema
---@field min? number luamcp's name: minLength for strings, minItems for arrays, minimum for numbers
---@field max? number luamcp's name: maxLength for strings, maxItems for arrays, maximum for numbers
---@field optional? boolean not required in its object
---@field additionalProperties? boolean|mcp.Schema
---@field minProperties? integer
---@field maxProperties? integer
---@field complete? fun(value: string, args: table<string, string>, ctx: mcp.Context): string[] a prompt argument's completions (completion/complete); not for tool arguments

---A table of fields: each name to a schema. As a tool's input it names every
---argument the tool takes.
---@alias mcp.Fields table<string, mcp.Schema>

---@param opts? mcp.SchemaOptions
---@return mcp.Schema
function mcp.string(opts) end

---@param opts? mcp.SchemaOptions
---@return mcp.Schema
function mcp.number(opts) end

---@param opts? mcp.SchemaOptions
---@return mcp.Schema
function mcp.integer(opts) end

---@param opts? mcp.SchemaOptions
---@return mcp.Schema
function mcp.boolean(opts) end

---A string limited to the listed values: `mcp.enum{"a", "b", description = "..."}`.
---@param values mcp.SchemaOptions|string[]
---@return mcp.Schema
function mcp.enum(values) end

---`mcp.array(items [, opts])` or `mcp.array{items = ..., min = 1}`.
---@param items mcp.Schema|mcp.Fields|mcp.SchemaOptions
---@param opts? mcp.SchemaOptions
---@return mcp.Schema
function mcp.array(items, opts) end

---An object schema from a table of fields.
---@param fields mcp.Fields
---@param opts? mcp.SchemaOptions
---@return mcp.Schema
function mcp.object(fields, opts) end

---A copy of the schema that is not required in its object.
---@param schema mcp.Schema
---@return mcp.Schema
function mcp.optional(schema) end

---The validator tools use: `true`, or `false` and why.
---@param schema mcp.Schema
---@param value any
---@param opts? { format?: "assert"|"annotate" }
---@return boolean ok
---@return string? message
function mcp.validate(schema, value, opts) end

-- }======

-- {====== tools

---@class mcp.ToolAnnotations
---@field title? string
---@field readOnlyHint? boolean
---@field destructiveHint? boolean
---@field idempotentHint? boolean
---@field openWorldHint? boolean

---@class mcp.Icon
---@field src string
---@field mimeType? string
---@field sizes? string[]
---@field theme? "light"|"dark"

---What a handler may return: text, a record (structured output), a list of
---records, content blocks, `mcp.result{}` or `mcp.fail()`.
---@alias mcp.ToolReturn nil|string|number|boolean|table|mcp.Result

---@class mcp.ToolDef
---@field name string 1-128 characters of A-Z a-z 0-9 _ . -
---@field title? string shown to people
---@field description? string for the model
---@field input? mcp.Fields|mcp.Schema the arguments: a table of fields, a builder, or a raw JSON Schema
---@field inputSchema? mcp.Fields|mcp.Schema the MCP spelling of input
---@field output? mcp.Fields|mcp.Schema the outputSchema; results are checked against it
---@field outputSchema? mcp.Fields|mcp.Schema the MCP spelling of output
---@field annotations? mcp.ToolAnnotations
---@field icons? mcp.Icon[]
---@field _meta? table
---@field handler fun(args: table, ctx: mcp.Context): mcp.ToolReturn
---@field ui? string the ui:// URI of the widget that shows its results (MCP Apps)
---@field visibility? ("model"|"app")[] {"app"}: only views call it
---@field task? "optional"|"required"|false may (must) run as a task (2026-07-28 tasks extension)
---@field scopes? string[] what a caller's token must grant to see and call it (HTTP with --auth-resource)

---What a middleware sees of a request (mcp.use).
---@class mcp.Request
---@field method "tools/call"|"resources/read"|"prompts/get"|"completion/complete"
---@field name? string the tool's or prompt's name, the resource's URI or the template it matched
---@field arguments? table the arguments (tools/call, prompts/get), or completion's context arguments; changes reach the handler
---@field uri? string resources/read: the URI asked for
---@field variables? table<string, string> resources/read of a template: its variables
---@field value? string completion/complete: what the user typed so far
---@field ctx mcp.Context

---Middleware around every request that reaches a handler, in registration order.
---`next()` runs the rest (once) and returns its result; return something else
---to answer without it.
---@param fn fun(req: mcp.Request, next: fun(): any): any
function mcp.use(fn) end

---Register a tool (while scripts load).
---@param def mcp.ToolDef
function mcp.tool(def) end

-- }======

-- {====== resources, templates, prompts, widgets

---What a 2026-07-28 client may keep of a read.
---@class mcp.CacheHint
---@field ttl? number seconds
---@field scope? "public"|"private"

---What a `read` returns: a string (text of the resource's mime type), a table
---(its JSON), `{ blob = bytes }`, `{ text =, mime = }`, or a list of those.
---@alias mcp.ReadReturn string|table|nil

---@class mcp.ResourceDef
---@field uri string
---@field name? string default: the URI's last part
---@field title? string
---@field description? string
---@field mime? string
---@field mimeType? string the MCP spelling of mime
---@field size? integer
---@field annotations? table
---@field icons? mcp.Icon[]
---@field _meta? table
---@field read? fun(uri: string, ctx: mcp.Context): mcp.ReadReturn
---@field text? string fixed text instead of read
---@field cache? mcp.CacheHint
---@field scopes? string[] what a caller's token must grant to see and read it

---@param def mcp.ResourceDef
function mcp.resource(def) end

---@class mcp.TemplateDef
---@field uri string an RFC 6570 level 1 template: mcp://app/items/{id}
---@field uriTemplate? string the MCP spelling of uri
---@field name? string
---@field title? string
---@field description? string
---@field mime? string
---@field mimeType? string the MCP spelling of mime
---@field annotations? table
---@field icons? mcp.Icon[]
---@field _meta? table
---@field read fun(vars: table<string, string>, ctx: mcp.Context): mcp.ReadReturn nil: not found
---@field complete? table<string, fun(value: string, args: table<string, string>, ctx: mcp.Context): string[]>
---@field cache? mcp.CacheHint
---@field scopes? string[] what a caller's token must grant to see and read it

---@param def mcp.TemplateDef
function mcp.template(def) end

---A prompt argument: a schema (mcp.string{...}) or a table with these.
---@class mcp.PromptArg
---@field name? string in the list form
---@field title? string
---@field description? string
---@field required? boolean
---@field enum? string[] offered as completions
---@field complete? fun(value: string, args: table<string, string>, ctx: mcp.Context): string[]

---@class mcp.PromptDef
---@field name string
---@field title? string
---@field description? string
---@field args? table<string, mcp.Schema|mcp.PromptArg>|mcp.PromptArg[]
---@field arguments? table<string, mcp.Schema|mcp.PromptArg>|mcp.PromptArg[] the MCP spelling of args
---@field get fun(args: table<string, string>, ctx: mcp.Context): string|table a string, a message, a list of messages, or { description =, messages = }
---@field icons? mcp.Icon[]
---@field _meta? table
---@field complete? table<string, fun(value: string, args: table<string, string>, ctx: mcp.Context): string[]>
---@field scopes? string[] what a caller's token must grant to see and get it

---@param def mcp.PromptDef
function mcp.prompt(def) end

---The origins a widget may use (MCP Apps CSP).
---@class mcp.Csp
---@field connectDomains? string[]
---@field resourceDomains? string[]
---@field frameDomains? string[]
---@field baseUriDomains? string[]

---@class mcp.WidgetDef
---@field uri string ui://...
---@field name? string
---@field title? string
---@field description? string
---@field file? string a file in the app's widgets/ (or html =)
---@field html? string
---@field csp? mcp.Csp
---@field permissions? table<string, boolean|table> camera = true, ...
---@field domain? string
---@field prefersBorder? boolean
---@field _meta? table
---@field icons? mcp.Icon[]
---@field annotations? table
---@field openai? boolean also serve it as text/html+skybridge (OpenAI Apps SDK)

---@param def mcp.WidgetDef
function mcp.widget(def) end

---Runs after a reload has loaded every script, with mcp.state as carried over.
---@param fn fun(old_state: table)
function mcp.on_reload(fn) end

---Send notifications/resources/updated to the clients subscribed to uri.
---@param uri string
function mcp.notify_updated(uri) end

-- }======

-- {====== results and content

---@class mcp.Result
---@field content? string|table
---@field structured? table
---@field structuredContent? table the MCP spelling of structured
---@field isError? boolean
---@field _meta? table

---Exactly this tool result.
---@param def mcp.Result
---@return mcp.Result
function mcp.result(def) end

---A tool result with isError = true: a business failure the model sees.
---@param message string a format string when more arguments follow
---@param ... any
---@return mcp.Result
function mcp.fail(message, ...) end

---Raised or returned: the call ends as a JSON-RPC error with that code.
---@param code integer
---@param message? string
---@param data? any
---@return table
function mcp.rpc_error(code, message, data) end

---@param s any
---@param opts? table annotations =, _meta =
---@return table block
function mcp.text(s, opts) end

---@param bytes string raw bytes (base64-encoded for you)
---@param mime string
---@param opts? table
---@return table block
function mcp.image(bytes, mime, opts) end

---@param bytes string raw bytes (base64-encoded for you)
---@param mime string
---@param opts? table
---@return table block
function mcp.audio(bytes, mime, opts) end

---@class mcp.LinkDef
---@field uri string
---@field name string
---@field title? string
---@field description? string
---@field mime? string
---@field mimeType? string the MCP spelling of mime
---@field size? integer

---A resource_link block.
---@param def mcp.LinkDef
---@return table block
function mcp.link(def) end

---@class mcp.EmbedDef
---@field uri string
---@field text? string
---@field blob? string raw bytes
---@field mime? string
---@field mimeType? string the MCP spelling of mime
---@field annotations? table
---@field _meta? table

---An embedded resource block.
---@param def mcp.EmbedDef
---@return table block
function mcp.embed(def) end

---A prompt message from the user.
---@param content string|table
---@return table message
function mcp.user(content) end

---A prompt message from the assistant.
---@param content string|table
---@return table message
function mcp.assistant(content) end

---Mark t (a new table if nil) as a JSON array: {} then encodes as [].
---@generic T: table
---@param t? T
---@return T
function mcp.as_array(t) end

---The metatable that marks a JSON array.
---@type table
mcp.array_mt = {}

---JSON null (the same value as cjson.null).
---@type lightuserdata
mcp.null = nil

---A table that survives hot reloads (strings, numbers, booleans, tables).
---@type table
mcp.state = {}

---@class mcp.json
mcp.json = {}
---@param value any
---@return string
function mcp.json.encode(value) end
---@param text string
---@return any
function mcp.json.decode(text) end

---@class mcp.base64
mcp.base64 = {}
---@param bytes string
---@return string
function mcp.base64.encode(bytes) end
---@param text string
---@return string
function mcp.base64.decode(text) end

---@class mcp.path
mcp.path = {}
---base/rel, or nil and why when rel is absolute, has a ".." segment or a NUL byte.
---@param base string
---@param rel string
---@return string? path
---@return string? why
function mcp.path.join(base, rel) end
---The same under the app's folder (no rel: the folder itself).
---@param rel? string
---@return string? path
---@return string? why
function mcp.path.app(rel) end

-- }======

-- {====== ctx: the call in progress

---@alias mcp.LogLevel "debug"|"info"|"notice"|"warning"|"error"|"critical"|"alert"|"emergency"

---@class mcp.Context
---@field cancelled boolean true once the client cancelled
---@field client_capabilities { elicitation?: table, sampling?: table, roots?: table } what this request's client can answer
---@field protocol_version string what this client negotiated
---@field uri? string the URI a resource read serves
---@field auth? mcp.Auth who calls (a verified token, or luamcp call --as); nil over stdio and on an open server
local Context = {}

---Who calls: read-only.
---@class mcp.Auth
---@field subject? string the token's sub (an introspected token without sub: its client_id)
---@field key? string whose data it is: subject and issuer, escaped ("SUBJECT@ISSUER"); nil only for a made-up caller without a subject
---@field subject_is_client? boolean true when the subject is the client's own id (an introspected token without sub)
---@field client_id? string the client it was issued to
---@field issuer? string the authorization server (nil for --as)
---@field scopes string[] the scopes granted
---@field expires? integer the token's exp (seconds since the epoch)
---@field claims table every claim of the token
local Auth = {}

---Were all these scopes granted?
---@param scope string
---@param ... string
---@return boolean
function Auth:has(scope, ...) end

---Run fn inside a span of its own (OpenTelemetry, with --otlp): a child of
---the request's span; returns what fn returns. Without tracing it only runs fn.
---@param name string
---@param attributes_or_fn table<string, string|number|boolean>|fun(): any
---@param fn? fun(): any
---@return any
function Context:span(name, attributes_or_fn, fn) end

---Set an attribute on the current span (the request's, or the innermost ctx:span).
---@param key string
---@param value string|number|boolean
function Context:set_attribute(key, value) end

---notifications/message to the client (honours logging/setLevel).
---@param level mcp.LogLevel
---@param fmt string
---@param ... any
function Context:log(level, fmt, ...) end
---@param fmt string
---@param ... any
function Context:debug(fmt, ...) end
---@param fmt string
---@param ... any
function Context:info(fmt, ...) end
---@param fmt string
---@param ... any
function Context:warning(fmt, ...) end
---@param fmt string
---@param ... any
function Context:error(fmt, ...) end

---notifications/progress, when the request carried a progressToken.
---@param done number must increase
---@param total? number
---@param message? string
---@return boolean sent
function Context:progress(done, total, message) end

---Park this call (or, in a thread of mcp.spawn, that thread) for seconds;
---other calls are served meanwhile.
---@param seconds number
function Context:sleep(seconds) end

---@class mcp.ElicitRequest
---@field message string
---@field requestedSchema? table
---@field schema? table luamcp's name for requestedSchema
---@field key? string its inputRequests key (2026-07-28)

---Ask the user through the client (elicitation/create).
---@param req mcp.ElicitRequest
---@return { action: "accept"|"decline"|"cancel", content?: table }
function Context:elicit(req) end

---@class mcp.SampleRequest
---@field messages table[]
---@field maxTokens integer
---@field systemPrompt? string
---@field temperature? number
---@field modelPreferences? table
---@field key? string its inputRequests key (2026-07-28)

---Ask the client's model (sampling/createMessage).
---@param req mcp.SampleRequest
---@return { role: string, content: table, model: string, stopReason?: string }
function Context:sample(req) end

---The client's roots (roots/list).
---@param opts? { key?: string }
---@return { roots: { uri: string, name?: string }[] }
function Context:roots(opts) end

---Several questions at once: key -> { method =, params = }; the answers by key.
---@param questions table<string, { method: string, params?: table }>
---@return table<string, table>
function Context:ask(questions) end

---HTTP only: end this call's SSE response now; the client resumes it.
---@return boolean
function Context:close_stream() end

---Become a task now (the tasks extension), before any wait.
---@return boolean
function Context:as_task() end

-- }======

-- {====== waiting on the outside world

---@class mcp.HttpRequest
---@field url string http:// or https://
---@field method? string default GET, or POST with a body
---@field headers? table<string, string>
---@field body? string
---@field json? any encoded, Content-Type: application/json
---@field timeout? number seconds
---@field follow? boolean|integer redirects (default 10)
---@field max_size? integer response bytes
---@field insecure? boolean skip TLS verification

---@class mcp.HttpResponse
---@field status integer
---@field headers table<string, string>
---@field body string
---@field json? any
---@field url string after redirects

---@class mcp.http
mcp.http = {}
---@param req mcp.HttpRequest
---@return mcp.HttpResponse
function mcp.http.request(req) end
---@param url string
---@param opts? mcp.HttpRequest
---@return mcp.HttpResponse
function mcp.http.get(url, opts) end
---@param url string
---@param body string|table a table is sent as JSON
---@param opts? mcp.HttpRequest
---@return mcp.HttpResponse
function mcp.http.post(url, body, opts) end

---`mcp.exec{ "prog", "arg", ..., cwd = ... }`: the argv is the list part, or argv =.
---@class mcp.ExecOptions
---@field [integer] string
---@field argv? string[]
---@field stdin? string
---@field env? table<string, string|false>
---@field env_clear? boolean
---@field cwd? string
---@field timeout? number
---@field grace? number
---@field max_output? integer

---@class mcp.ExecResult
---@field code? integer
---@field signal? string
---@field stdout string
---@field stderr string
---@field timed_out boolean
---@field stdout_truncated boolean
---@field stderr_truncated boolean

---Run a child process (no shell); the call parks until it ends.
---@param opts mcp.ExecOptions
---@return mcp.ExecResult
function mcp.exec(opts) end

---`mcp.upstream{...}`: another MCP server the app's handlers call (docs/lua-api.md,
---"Other MCP servers"). Give url or command, not both.
---@class mcp.UpstreamDef
---@field name string letters, digits, `_`, `.`, `-`; what mcp.client(name) takes
---@field url? string a Streamable HTTP endpoint (http:// or https://)
---@field command? string[] a stdio server: the argv (no shell), started on first use
---@field env? table<string, string|false> command only: over the server's environment (false unsets)
---@field cwd? string command only
---@field headers? table<string, string> url only: sent with every request (static credentials)
---@field revision? "2025-11-25"|"2026-07-28" default: what the upstream offers
---@field max_message? integer command only: bytes of one message (default 16 MiB)

---Declare an upstream MCP server (load time only). Returns its name.
---@param def mcp.UpstreamDef
---@return string
function mcp.upstream(def) end

---`c:call(name, args, opts)`'s options.
---@class mcp.ClientCallOptions
---@field progress? fun(progress: number, total?: number, message?: string) the upstream's progress
---@field timeout? number seconds, HTTP upstreams (never past the call's own deadline)

---What a failed upstream request raises (a table; tostring gives message).
---@class mcp.ClientError
---@field message string "upstream NAME: METHOD: ..."
---@field upstream string
---@field code? integer the JSON-RPC error code, when the upstream answered one
---@field data? any the JSON-RPC error's data

---The client of an upstream: each method parks the call until the answer.
---A result is returned as it came (isError ones too); anything else raises a mcp.ClientError.
---@class mcp.Client
local Client = {}
---@param name string
---@param args? table
---@param opts? mcp.ClientCallOptions
---@return table result the CallToolResult
function Client:call(name, args, opts) end
---@param kind "tools"|"resources"|"resourceTemplates"|"prompts"
---@return table[] items every item of every page
function Client:list(kind) end
---@param uri string
---@return table result the ReadResourceResult
function Client:read(uri) end
---@param name string
---@param args? table<string, string>
---@return table result the GetPromptResult
function Client:prompt(name, args) end
---@param ref {type: "ref/prompt"|"ref/resource", name?: string, uri?: string}
---@param arg {name: string, value: string}
---@param context? table
---@return table result the CompleteResult
function Client:complete(ref, arg, context) end

---`mcp.client{...}`: an ad-hoc client of a Streamable HTTP server (nothing kept after the call).
---@class mcp.ClientDef
---@field url string
---@field headers? table<string, string>
---@field revision? "2025-11-25"|"2026-07-28"
---@field name? string default: the URL's host

---The client of an upstream declared with mcp.upstream (its name), or an ad-hoc one.
---@param name string|mcp.ClientDef
---@return mcp.Client
function mcp.client(name) end

---`mcp.mount{...}`: an upstream's tools, resources, templates and prompts served as
---this app's own (docs/lua-api.md, "Mounting an upstream").
---@class mcp.MountDef
---@field upstream string the name of an mcp.upstream declared before
---@field prefix? string put before each item's name (a resource's URI is kept)
---@field include? string|string[] name patterns (`*` any run, `?` one character) of the items to mount; default all
---@field exclude? string|string[] name patterns of the items to leave out
---@field transform? fun(item: table, kind: "tools"|"resources"|"resourceTemplates"|"prompts"): table? reshape an item (its name prefixed already; set `scopes` too), or nil to leave it out
---@field scopes? string[] what a caller's token must grant to list and use the mounted items

---Mount an upstream (load time only). Returns how many items this version registered
---(0 until the refresh after the load has listed the upstream).
---@param def mcp.MountDef
---@return integer
function mcp.mount(def) end

---A cosocket with luasocket's client API.
---@class mcp.Socket
local Socket = {}
---@return integer? ok
---@return string? err
function Socket:connect(host, port) end
---@param data string
---@param i? integer
---@param j? integer
---@return integer? last
---@return string? err
---@return integer? partial_last
function Socket:send(data, i, j) end
---@param pattern? "*l"|"*a"|"l"|"a"|integer
---@param prefix? string
---@return string? data
---@return string? err
---@return string? partial
function Socket:receive(pattern, prefix) end
---@param seconds? number
function Socket:settimeout(seconds) end
function Socket:close() end
---@param name "tcp-nodelay"|"keepalive"
---@param value boolean
function Socket:setoption(name, value) end
---@return string? host
---@return integer? port
function Socket:getpeername() end
---@return string? host
---@return integer? port
function Socket:getsockname() end
---@param how? "both"|"send"|"receive"
function Socket:shutdown(how) end
---@return boolean
function Socket:dirty() end

---@class mcp.socket
mcp.socket = {}
---@return mcp.Socket
function mcp.socket.tcp() end
---@return mcp.Socket
function mcp.socket.tcp4() end
---@return mcp.Socket
function mcp.socket.tcp6() end
---tcp() and connect() in one.
---@return mcp.Socket? sock
---@return string? err
function mcp.socket.connect(host, port) end
---@return number
function mcp.socket.gettime() end
---A unix stream socket (callable; also .stream()).
---@type fun(): mcp.Socket
mcp.socket.unix = nil

---Keys and values that last (a counter, a rate limit, a flag, a cache entry):
---by default in the app's database (the table luamcp_store of mcp.db's file:
---durable, this machine's); with --store memory this process's memory (lost on
---restart); with --store redis://HOST:PORT/N Redis, shared by the instances.
---Values are strings (numbers are kept as their decimal text). Only inside a
---handler.
---@class mcp.store
mcp.store = {}
---@param key string
---@param value string|number
---@param ttl? number seconds
function mcp.store.set(key, value, ttl) end
---@param key string
---@return string?
function mcp.store.get(key) end
---The new integer; ttl applies only when the key has none (a fixed window).
---@param key string
---@param by? integer default 1
---@param ttl? number seconds
---@return integer
function mcp.store.incr(key, by, ttl) end
---Whether the key existed.
---@param key string
---@return boolean
function mcp.store.delete(key) end
---Set only if the key is absent (atomic); whether it was.
---@param key string
---@param value string|number
---@param ttl? number seconds
---@return boolean
function mcp.store.add(key, value, ttl) end
---Compare-and-set (atomic): new (nil deletes) only if the key holds old now
---(nil: absent); whether it did. new is set as set sets it (its ttl, or none).
---@param key string
---@param old string|number|nil
---@param new string|number|nil
---@param ttl? number seconds
---@return boolean
function mcp.store.cas(key, old, new, ttl) end
---Read-modify-write without a lost update: fn(old) returns the new value
---(nil deletes). On the database fn runs inside one transaction (keep it short:
---other writes wait); in memory and on Redis the value is written only if the
---key still holds old, else fn runs again on what it holds now (at most 64
---times). Returns the new value.
---@param key string
---@param fn fun(old: string?): (string|number|nil)
---@param ttl? number seconds
---@return string?
function mcp.store.update(key, fn, ttl) end
---A page of the keys that start with prefix (no character of it is special),
---and the cursor of the next page (nil after the last). A key there the whole
---time is on some page; one may come twice (Redis, memory). On the database,
---pages are in key order and the cursor is the last key given.
---@param prefix string
---@param cursor? string
---@return string[] keys
---@return string? cursor
function mcp.store.keys(prefix, cursor) end

---Any Redis command, on the connection of --store redis://HOST:PORT/N (shared by
---every call: each command parks its call). Arguments are strings or numbers. The
---reply: status and bulk -> string, integer -> integer, nil -> nil (mcp.null inside
---an array), array -> a Lua array, nested; an error reply raises "redis: ERR ..." at
---the script's line. Commands that would change or hold the shared connection
---(SELECT, AUTH, CLIENT, WATCH, MULTI outside a pipeline, BLPOP, SUBSCRIBE, ...) are
---refused. Only inside a handler.
---@class mcp.redis
---@overload fun(cmd: string, ...: string|number): any
mcp.redis = {}
---The commands sent at once, one wait for every reply: p(cmd, ...) for each, or a
---list of {cmd, ...}. Returns the replies in order; an error reply is {err = "ERR ..."}
---in its slot, a nil one mcp.null. MULTI ... EXEC inside one pipeline is a transaction.
---@param commands fun(p: fun(cmd: string, ...: string|number))|(string|number)[][]
---@return any[]
function mcp.redis.pipeline(commands) end

---The app's SQLite database (one file in its data folder: --data DIR, else
---~/.local/share/luamcp/NAME), made at its first use, or PostgreSQL with
-----db postgres://USER@HOST:PORT/DB (a pool of connections; types other than
---integers, floats, text, bytea and bool come back as their text). Only inside a handler;
---each statement parks the call, the server answering others meanwhile.
---The values after sql bind its ? in order, or one table binds its :name
---parameters; nil and mcp.null bind NULL, booleans 1/0. NULL comes back as
---mcp.null, integers as integers.
---@class mcp.db
mcp.db = {}
---The rows: a list of tables keyed by column name.
---@param sql string one statement
---@param ... any values for its ? parameters, or one table for its :names
---@return table[]
function mcp.db.query(sql, ...) end
---The first row, or nil.
---@param sql string one statement
---@param ... any
---@return table?
function mcp.db.one(sql, ...) end
---Rows changed and the last inserted rowid (PostgreSQL: 0, or the first
---integer column of the last row INSERT … RETURNING gave). Without
---parameters, sql may be several statements (a schema).
---@param sql string
---@param ... any
---@return {changes: integer, last_id: integer}
function mcp.db.exec(sql, ...) end
---fn, atomically: BEGIN IMMEDIATE … COMMIT (PostgreSQL: BEGIN and an advisory
---lock every instance's tx takes, one at a time) (nested: a savepoint). An error
---rolls back and is raised again; a call that ends inside rolls back. Its
---statements and no other call's run until it ends.
---@generic T
---@param fn fun(): T
---@return T
function mcp.db.tx(fn) end
---(A transaction belongs to the handler: refused in a thread of mcp.spawn, and
---while it is open a thread's mcp.db statements are refused.)

-- {=== several waits at once: light threads of the call

---A light thread of the call (mcp.spawn). Bound by the call's --timeout,
---cancellation and --memory-limit; stopped when the call ends.
---@class mcp.Thread
local Thread = {}
---Wait for the thread: its results, or its error raised here as it was
---(a string keeps the thread's FILE:LINE). May be called again (the same
---results); one waiter at a time.
---@return any ...
function Thread:wait() end

---Run fn(...) as a thread of the call: at once, until it first waits (mcp.http,
---mcp.exec, mcp.socket, mcp.store, mcp.redis, mcp.db, ctx:sleep, h:wait()),
---then the caller goes on while it waits. From the handler or another thread
---only (not a coroutine either made). Threads not waited for are stopped when
---the handler returns (their waits aborted, their <close> variables closed).
---@param fn function
---@param ... any its arguments
---@return mcp.Thread
function mcp.spawn(fn, ...) end

---Run every function as a thread of the call at once and wait for all: the
---first result of each, in order (nil for one that returned nothing). The
---first to fail stops the others and its error is raised here.
---    local user, cart = mcp.all{ function() return get_user(id) end, function() return get_cart(id) end }
---@param fns function[]
---@return any ...
function mcp.all(fns) end

---Wall-clock milliseconds since the Unix epoch: a float with a fraction
---(microseconds), e.g. 1764668400123.456 (math.floor for an integer).
---Under luamcp test: the virtual clock.
---@return number
function mcp.now() end
-- }===

-- }======

-- {====== app.lua

---What app.lua returns (or sets as globals).
---@class mcp.AppInfo
---@field name? string serverInfo.name
---@field version? string serverInfo.version
---@field title? string
---@field description? string
---@field websiteUrl? string
---@field instructions? string
---@field icons? mcp.Icon[]
---@field cache? mcp.CacheHint of the lists (2026-07-28)
---@field schema? mcp.SchemaPolicy
---@field permissions? mcp.Permissions what --sandbox allows
---@field author? string "Name <email>": the bundle's author (luamcp pack)
---@field license? string
---@field user_config? table<string, mcp.UserConfigEntry> what the bundle's installer asks
---@field registry? mcp.RegistryInfo server.json (luamcp pack --server-json)
---@field scopes? string[] scopes the code checks (ctx.auth:has) besides the items' own: published in the metadata's scopes_supported, listed by check

---@class mcp.SchemaPolicy
---@field format? "assert"|"annotate"
---@field unknown_args? "reject"|"allow"

---@class mcp.Permissions
---@field exec? string[]
---@field http? string[]
---@field socket? string[]
---@field env? string[]

---@class mcp.UserConfigEntry
---@field type "string"|"number"|"boolean"|"directory"|"file"
---@field title string
---@field description string
---@field required? boolean
---@field sensitive? boolean
---@field multiple? boolean
---@field min? number
---@field max? number
---@field default? string|number|boolean|string[]
---@field env? string the environment variable the value reaches the app in (default: the key in capitals)

---@class mcp.RegistryInfo
---@field name? string reverse-DNS: io.github.you/app
---@field url? string where the .mcpb is downloaded from; {version} and {file} are filled in
---@field repository? string

-- }======

return mcp
