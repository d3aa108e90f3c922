/* methods.c — the MCP methods a client calls: initialize, the lists,
 * tools/call, resources/read, prompts/get, completion/complete,
 * logging/setLevel, subscriptions. Lists and initialize come from the
 * registry snapshot; the rest start calls (engine.c runs them). ping is
 * answered before any method, in server.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>
#include <lua.h>

#include "access_log.h"
#include "cursor.h"
#include "server_internal.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "lua_api.h"
#include "http_headers.h"
#include "listen.h"
#include "mrtr.h"
#include "skills_rpc.h"
#include "tasks.h"
#include "uri_template.h"
#include "validate.h"

/* {====================================================== methods */

/* t[key] without metamethods: registration tables are the script's own,
   and a failing __index here would be outside any protected call. */
static int rawfield(lua_State *L, int idx, const char *key) {
  idx = lua_absindex(L, idx);
  lua_pushstring(L, key);
  return lua_rawget(L, idx);
}

static json_span meta_of(const jsonrpc_msg *m) {
  json_span v = {0};
  if (m->params.n) jsonrpc_param(m, "_meta", &v);
  return v;
}

/* Unescape a string member of params into out; false when absent or not a
   string. */
static bool param_string(const jsonrpc_msg *m, const char *key, buf *out) {
  json_span v;
  out->len = 0;
  if (!m->params.n || !jsonrpc_param(m, key, &v) || json_kind(v) != '"') return false;
  json_string_unescape(v, out);
  return true;
}

static void handle_initialize(server *srv, inmsg *im) {
  session *s = im->s;
  const jsonrpc_msg *m = &im->m;
  if (s->initialized) {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_REQUEST, "Invalid Request: already initialized");
    return;
  }
  buf v;
  buf_init(&v);
  if (!param_string(m, "protocolVersion", &v)) {
    buf_free(&v);
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS,
                "Invalid params: \"protocolVersion\" (string) is required");
    return;
  }
  /* a per-request revision is not reached with initialize: the newest that is */
  int version = proto_from_name(v.p, v.len);
  s->version = version && !proto_per_request(version) ? version : PROTO_LATEST_SESSION;
  json_span caps, x;
  if (jsonrpc_param(m, "capabilities", &caps) && json_kind(caps) == '{') {
    s->client_sampling = json_object_get(caps, "sampling", &x);
    s->client_elicitation = json_object_get(caps, "elicitation", &x);
    s->client_roots = json_object_get(caps, "roots", &x);
    s->client_ui = envelope_declares_ui(caps);
  }
  s->initialized = true;
  log_msg(LOG_INFO, "client initialized (asked %s, speaking %s)", v.p, proto_name(s->version));
  buf_free(&v);
  /* tracked from now on: notifications that answer no request reach it */
  if (s->ephemeral) goto answer;
  notify_track(srv, s);
answer:;
  buf *out = output_reply(srv, im->reply);
  jsonrpc_begin_result(out, m->id);
  buf_printf(out, "{\"protocolVersion\":\"%s\",", proto_name(s->version));
  buf_put(out, engine_app(srv->e)->reg->init_tail[s->version], engine_app(srv->e)->reg->init_tail_len[s->version]);
  jsonrpc_end_reply(out);
}

/* {====== middleware (mcp.use): the chain in C. next is a light C function
   (no closure per call); where the chain is stays in the request. */

static int run_level(lua_State *L, request *r, int i);

/* middleware i's return (or the handler's, i = n): its values */
static int level_done(lua_State *L, int status, lua_KContext k) {
  (void)status;
  request *r = request_of(call_current(L));
  r->chain_active = (int)(k & 0xff) - 1;
  return lua_gettop(L) - (int)(k >> 8);
}

static int chain_next(lua_State *L) {
  call *c = call_current(L);
  request *r = c ? request_of(c) : NULL;
  if (!r || r->chain_req <= 0 || r->chain_active < 0)
    return luaL_error(L, "mcp.use: next() called outside its middleware");
  int i = r->chain_active;
  uint64_t bit = i < 64 ? (uint64_t)1 << i : 0;
  if (r->chain_called & bit) { /* named by the middleware's definition: a tail call leaves no frame */
    lua_rawgeti(L, LUA_REGISTRYINDEX, call_app(c)->reg->middleware);
    lua_rawgeti(L, -1, i + 1);
    lua_Debug ar;
    lua_getinfo(L, ">S", &ar);
    return luaL_error(L, "%s:%d: mcp.use: next() called twice by the middleware defined here",
                      ar.short_src, ar.linedefined);
  }
  r->chain_called |= bit;
  lua_settop(L, 0);
  return run_level(L, r, i + 1);
}

/* Call middleware i with (req, next), or past the last the handler with the
   arguments req holds now (they may have been changed). */
static int run_level(lua_State *L, request *r, int i) {
  int base = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, call_app(call_current(L))->reg->middleware);
  lua_rawgeti(L, -1, i + 1);
  lua_remove(L, -2);
  int nargs = 2;
  if (!lua_isnil(L, -1)) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, r->chain_req);
    lua_pushcfunction(L, chain_next);
    r->chain_active = i;
  } else {
    lua_pop(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, r->chain_handler);
    lua_rawgeti(L, LUA_REGISTRYINDEX, r->chain_req);
    int req = lua_gettop(L);
    switch (r->kind) {
      case CALL_RESOURCE: /* a template's variables, else the URI */
        if (lua_getfield(L, req, "variables") == LUA_TNIL) {
          lua_pop(L, 1);
          lua_getfield(L, req, "uri");
        }
        break;
      case CALL_COMPLETE:
        lua_getfield(L, req, "value");
        lua_getfield(L, req, "arguments");
        nargs = 3;
        break;
      default: lua_getfield(L, req, "arguments"); break;
    }
    lua_getfield(L, req, "ctx");
    lua_remove(L, req);
    r->chain_active = -1; /* the handler: a next() it might reach is refused */
  }
  lua_KContext k = (lua_KContext)((intptr_t)base << 8 | (i & 0xff));
  lua_callk(L, nargs, LUA_MULTRET, k, level_done);
  return level_done(L, LUA_OK, k);
}

static int chain_entry(lua_State *L) {
  request *r = request_of(call_current(L));
  return run_level(L, r, 0);
}

/* }====== */

/* Start c: on its thread are the handler, its n arguments (named by
   fields in req) and ctx. With middleware (mcp.use), the call runs
   run_chain(list, req, handler) instead, req = {method=, name=, fields...,
   ctx=}: without, nothing is added to the call. */
static void start_call(server *srv, call *c, const char *method, const char *name,
                       const char *const *fields, int n, const char *uri) {
  const app *a = call_app(c);
  lua_State *co = call_thread(c);
  trace_span *span = request_of(c)->span;
  if (span && name) { /* "{mcp.method.name} {target}" and the target's own attribute */
    char full[300]; /* "%s %s" by hand: printf was a tenth of what a span cost */
    size_t ml = strlen(method), nl = strlen(name);
    if (ml + 1 + nl >= sizeof full) nl = sizeof full - ml - 2;
    memcpy(full, method, ml);
    full[ml] = ' ';
    memcpy(full + ml + 1, name, nl);
    full[ml + 1 + nl] = '\0';
    trace_set_name(span, full);
    if (method[0] == 't') {
      trace_attr_str(span, "gen_ai.tool.name", name);
      trace_attr_str(span, "gen_ai.operation.name", "execute_tool");
    } else if (method[0] == 'p') {
      trace_attr_str(span, "gen_ai.prompt.name", name);
    }
  }
  if (method[0] == 'r') trace_attr_str(span, "mcp.resource.uri", request_of(c)->uri);
  if (a->reg->middleware == LUA_NOREF) {
    engine_call_start(srv->e, c, n + 1);
    return;
  }
  int base = lua_gettop(co) - n - 1; /* the handler's index */
  lua_createtable(co, 0, n + 3);
  int req = lua_gettop(co);
  lua_pushstring(co, method);
  lua_setfield(co, req, "method");
  if (name) {
    lua_pushstring(co, name);
    lua_setfield(co, req, "name");
  }
  if (uri) { /* resources/read: the URI asked for, a template's variables or not */
    lua_pushstring(co, uri);
    lua_setfield(co, req, "uri");
  }
  for (int i = 0; i <= n; i++) { /* the arguments, then ctx */
    lua_pushvalue(co, base + 1 + i);
    lua_setfield(co, req, i < n ? fields[i] : "ctx");
  }
  request *r = request_of(c);
  r->chain_req = luaL_ref(co, LUA_REGISTRYINDEX); /* pops req */
  lua_pushvalue(co, base);
  r->chain_handler = luaL_ref(co, LUA_REGISTRYINDEX);
  r->chain_active = -1;
  r->chain_called = 0;
  lua_settop(co, base - 1);
  lua_pushcfunction(co, chain_entry);
  engine_call_start(srv->e, c, 0);
}

/* Does the caller hold every scope the item declares? Else the request is
   answered with SERVER_INSUFFICIENT_SCOPE (403 with a scope challenge over
   HTTP), naming the scopes it was granted and those missing, so a client
   that steps up keeps what it had (the specification's recommendation). */
static bool scope_refused(server *srv, inmsg *im, const char *scopes, const char *what,
                          const char *name) {
  const principal *who = server_caller(srv, im);
  const char *missing;
  size_t n;
  if (!who || principal_has_all(who, scopes, &missing, &n)) return false;
  buf want, data;
  buf_init(&want), buf_init(&data);
  buf_puts(&want, who->scope);
  for (const char *s = scopes; *s;) {
    size_t len = strcspn(s, " ");
    if (len && !principal_has(who, s, len)) {
      if (want.len) buf_putc(&want, ' ');
      buf_put(&want, s, len);
    }
    s += len + (s[len] == ' ');
  }
  buf_puts(&data, "{\"scope\":");
  json_encode_string(&data, want.p, want.len);
  buf_puts(&data, "}");
  buf_putc(&data, '\0');
  char msg[512];
  snprintf(msg, sizeof msg, "Insufficient scope: %s '%s' needs the scope %.*s", what, name, (int)n,
           missing);
  output_rpc_error(srv, im->reply, im->m.id, SERVER_INSUFFICIENT_SCOPE, msg, data.p);
  buf_free(&want), buf_free(&data);
  return true;
}

static void handle_list(server *srv, inmsg *im, reg_list list) {
  const registry *r = engine_app(srv->e)->reg;
  const client_view *cv = &im->cv;
  const reg_pages *pg = &r->pages[list][cv->version];
  /* a caller sees what its scopes allow: pages cut for it */
  reg_pages own;
  bool model_only = list == REG_TOOLS && r->has_app_only && !cv->ui && !cv->ui_unknown;
  bool cut = server_caller(srv, im) &&
             registry_pages_for(r, list, cv->version, model_only, server_caller(srv, im), &own);
  if (cut) pg = &own;
  if (model_only) {
    /* a client without MCP Apps has no views: app-only tools are not for it */
    if (!cut) pg = &r->model_tools[cv->version];
    list = REG_MODEL_TOOLS;
  }
  const jsonrpc_msg *m = &im->m;
  size_t page = 0;
  json_span cur;
  if (m->params.n && jsonrpc_param(m, "cursor", &cur) && json_kind(cur) != 'n') {
    buf c;
    buf_init(&c);
    size_t off = 0;
    bool ok = json_kind(cur) == '"';
    if (ok) {
      json_string_unescape(cur, &c);
      ok = cursor_parse(r->cursor_key, list, c.p, c.len, &off) && off < pg->count &&
           off % r->page_size == 0;
    }
    buf_free(&c);
    if (!ok) {
      output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS,
                  "Invalid params: unknown cursor (lists restart from the beginning)");
      if (cut) registry_pages_free(&own);
      return;
    }
    page = off / r->page_size;
  }
  if (!proto_per_request(cv->version)) {
    output_json(srv, im->reply, m->id, pg->page[page], pg->page_len[page]);
  } else {
    /* 2026-07-28: the same page, with its cache hints and serverInfo; a
       page cut for one caller is not for a shared cache */
    buf *out = output_reply(srv, im->reply);
    jsonrpc_begin_result(out, m->id);
    buf_put(out, pg->page[page], pg->page_len[page] - 1);
    static const char pub[] = "\"cacheScope\":\"public\"";
    const char *at = cut ? strstr(r->list_cache, pub) : NULL;
    if (at) {
      buf_put(out, r->list_cache, (size_t)(at - r->list_cache));
      buf_puts(out, "\"cacheScope\":\"private\"");
      buf_puts(out, at + sizeof pub - 1);
    } else {
      buf_put(out, r->list_cache, r->list_cache_len);
    }
    buf_put(out, r->complete_tail, r->complete_tail_len);
    buf_putc(out, '}');
    jsonrpc_end_reply(out);
  }
  if (cut) registry_pages_free(&own);
}

static void handle_discover(server *srv, inmsg *im) {
  const registry *r = engine_app(srv->e)->reg;
  output_json(srv, im->reply, im->m.id, r->discover, r->discover_len);
}

static void handle_tools_list(server *srv, inmsg *im) { handle_list(srv, im, REG_TOOLS); }
static void handle_resources_list(server *srv, inmsg *im) { handle_list(srv, im, REG_RESOURCES); }
static void handle_templates_list(server *srv, inmsg *im) { handle_list(srv, im, REG_TEMPLATES); }
static void handle_prompts_list(server *srv, inmsg *im) { handle_list(srv, im, REG_PROMPTS); }

/* Decode params.<key> (an object) onto L, or push an empty table when it is
   absent or null. False (nothing pushed) when it is not an object. */
static bool push_object_param(lua_State *L, const jsonrpc_msg *m, const char *key) {
  json_span v;
  if (!m->params.n || !jsonrpc_param(m, key, &v) || json_kind(v) == 'n') {
    lua_newtable(L);
    return true;
  }
  if (json_kind(v) != '{') return false;
  return json_decode(L, v.p, v.n, NULL);
}

/* An explicit null for an optional argument counts as absent, unless the
   property's schema accepts null: frameworks with strict tool schemas send
   optional fields as anyOf [T, null] and fill them with null (the Vercel AI
   SDK, Mastra); answering those calls isError helped nobody. The arguments
   are on top of L, the schema at schema_idx. */
static void drop_optional_nulls(lua_State *L, int schema_idx) {
  int args = lua_gettop(L);
  bool any = false;
  lua_pushnil(L);
  while (!any && lua_next(L, args)) {
    any = json_isnull(L, -1);
    lua_pop(L, 1);
  }
  if (any) lua_pop(L, 1); /* the key lua_next left */
  if (!any || lua_rawgeti(L, LUA_REGISTRYINDEX, schema_idx) != LUA_TTABLE) {
    lua_settop(L, args);
    return;
  }
  int schema = lua_gettop(L);
  lua_getfield(L, schema, "properties");
  lua_getfield(L, schema, "required");
  int props = schema + 1, req = schema + 2;
  lua_newtable(L); /* the keys to drop */
  int drop = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, args)) {
    if (json_isnull(L, -1) && lua_type(L, -2) == LUA_TSTRING) {
      bool required = false;
      for (lua_Integer i = 1; lua_istable(L, req) && i <= (lua_Integer)lua_rawlen(L, req); i++) {
        lua_rawgeti(L, req, i);
        required = lua_rawequal(L, -1, -3);
        lua_pop(L, 1);
        if (required) break;
      }
      bool accepts = false;
      if (!required && lua_istable(L, props)) {
        lua_pushvalue(L, -2);
        if (lua_rawget(L, props) == LUA_TTABLE) {
          buf err;
          buf_init(&err);
          accepts = schema_validate(L, -1, -2, &err); /* the null itself, below */
          buf_free(&err);
        }
        lua_pop(L, 1);
      }
      if (!required && !accepts) {
        lua_pushvalue(L, -2);
        lua_rawseti(L, drop, (lua_Integer)lua_rawlen(L, drop) + 1);
      }
    }
    lua_pop(L, 1);
  }
  for (lua_Integer i = 1; i <= (lua_Integer)lua_rawlen(L, drop); i++) {
    lua_rawgeti(L, drop, i);
    lua_pushnil(L);
    lua_rawset(L, args);
  }
  lua_settop(L, args);
}

/* The value of header Mcp-Param-<name> among im's (names match ignoring
   case), or NULL. */
static const char *param_header(const inmsg *im, const char *name) {
  for (const char *p = im->params, *end = p + im->params_len; p && p < end;) {
    const char *v = p + strlen(p) + 1;
    if (strcasecmp(p, name) == 0) return v;
    p = v + strlen(v) + 1;
  }
  return NULL;
}

/* The decimal form of the integer at idx (an integer, or a float with an
   integral value: 42.0 in the body is 42), or false. */
static bool decimal_of(lua_State *L, int idx, char *out, size_t cap) {
  long long v;
  if (lua_isinteger(L, idx)) {
    v = (long long)lua_tointeger(L, idx);
  } else if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_Number f = lua_tonumber(L, idx);
    if (!(f == floor(f)) || f < -9007199254740992.0 || f > 9007199254740992.0) return false;
    v = (long long)f;
  } else {
    return false;
  }
  snprintf(out, cap, "%lld", v);
  return true;
}

/* 2026-07-28 over HTTP: the tool's x-mcp-header parameters against the
   Mcp-Param-* headers (the arguments on top of L). False after answering
   -32020 (HeaderMismatch). */
static bool param_headers_ok(server *srv, inmsg *im, const reg_tool *t, lua_State *L) {
  if (t->headers == LUA_NOREF || !proto_per_request(im->cv.version) || !im->http) return true;
  int args = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, t->headers);
  int list = lua_gettop(L);
  buf want, got, why;
  buf_init(&want), buf_init(&got), buf_init(&why);
  size_t n = lua_rawlen(L, list);
  for (size_t i = 1; i <= n && !why.len; i++) {
    lua_rawgeti(L, list, (lua_Integer)i);
    lua_getfield(L, -1, "name");
    const char *name = lua_tostring(L, -1);
    lua_getfield(L, -2, "type");
    const char *type = lua_tostring(L, -1);
    lua_getfield(L, -3, "path");
    int path = lua_gettop(L);
    lua_pushvalue(L, args); /* the value at the path, if any */
    for (lua_Integer k = 1; k <= (lua_Integer)lua_rawlen(L, path) && lua_istable(L, -1); k++) {
      lua_rawgeti(L, path, k);
      lua_rawget(L, -2);
      lua_remove(L, -2);
    }
    const char *h = param_header(im, name);
    got.len = 0;
    if (h && !http_header_decode(h, &got)) {
      buf_printf(&why, "Header mismatch: Mcp-Param-%s header value is malformed", name);
    } else if (!lua_isnil(L, -1) && !json_isnull(L, -1) && lua_type(L, -1) != LUA_TTABLE) {
      want.len = 0;
      char dec[32]; /* an integer's decimal form, before tolstring below converts the value */
      bool integral = strcmp(type, "integer") == 0 && decimal_of(L, -1, dec, sizeof dec);
      if (lua_type(L, -1) == LUA_TBOOLEAN) buf_puts(&want, lua_toboolean(L, -1) ? "true" : "false");
      else if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER) {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len); /* a number converts on the stack copy */
        buf_put(&want, s, len);
      }
      bool same;
      if (!h) same = false;
      else if (strcmp(type, "integer") == 0) /* its decimal form, exactly (42, -7): the spec's */
        same = integral && got.len == strlen(dec) && memcmp(got.p, dec, got.len) == 0;
      else {
        same = got.len == want.len && memcmp(got.p, want.p, got.len) == 0;
      }
      if (!same)
        buf_printf(&why, h ? "Header mismatch: Mcp-Param-%s header does not match the argument"
                           : "Header mismatch: Mcp-Param-%s header is required (the argument is set)",
                   name);
    }
    lua_settop(L, list);
  }
  lua_settop(L, args);
  bool ok = !why.len;
  if (!ok) {
    buf_putc(&why, '\0');
    output_rpc_error(srv, im->reply, im->m.id, MCP_HEADER_MISMATCH, why.p, NULL);
  }
  buf_free(&want), buf_free(&got), buf_free(&why);
  return ok;
}

static void handle_tools_call(server *srv, inmsg *im) {
  const jsonrpc_msg *m = &im->m;
  lua_State *L = engine_app(srv->e)->vm.L;
  json_span f[3] = {{0}};
  jsonrpc_param(m, "name", &f[0]), jsonrpc_param(m, "arguments", &f[1]), jsonrpc_param(m, "_meta", &f[2]);
  if (json_kind(f[0]) != '"') {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: \"name\" (string) is required");
    return;
  }
  /* tool names are plain ASCII: look the raw token up, unescape only if needed */
  buf name;
  buf_init(&name);
  const reg_tool *t;
  if (memchr(f[0].p, '\\', f[0].n)) {
    json_string_unescape(f[0], &name);
    t = registry_find_tool(engine_app(srv->e)->reg, name.p, name.len);
  } else {
    t = registry_find_tool(engine_app(srv->e)->reg, f[0].p + 1, f[0].n - 2);
  }
  buf_free(&name);
  if (!t) {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS, "Unknown tool: %.*s", (int)(f[0].n - 2), f[0].p + 1);
    return;
  }
  if (t->app_only && !im->cv.ui && !im->cv.ui_unknown) {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS,
                "Tool '%s' is only callable from an app view (visibility [\"app\"])", t->name);
    return;
  }
  if (t->scopes && scope_refused(srv, im, t->scopes, "tool", t->name)) return;
  if (f[1].n && json_kind(f[1]) != 'n' && json_kind(f[1]) != '{') {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: \"arguments\" must be an object");
    return;
  }
  if (t->task == TASK_REQUIRED && proto_per_request(im->cv.version) && !im->cv.tasks) {
    /* it must run as a task and this client cannot take one (2025: a plain call) */
    tasks_missing_capability(srv, im);
    return;
  }
  if (f[1].n && json_kind(f[1]) == '{') json_decode(L, f[1].p, f[1].n, NULL);
  else lua_newtable(L);
  if (!param_headers_ok(srv, im, t, L)) {
    lua_pop(L, 1);
    return;
  }
  drop_optional_nulls(L, t->input);
  lua_rawgeti(L, LUA_REGISTRYINDEX, t->input);
  buf err;
  buf_init(&err);
  /* validation runs before the call (and its count hook) starts: it gets
     the call's time, and steps in proportion to the arguments' size */
  schema_limits lim = {.deadline = engine_now() + srv->opt.engine.call_timeout,
                       .max_steps = SCHEMA_DEFAULT_STEPS + 4 * (unsigned long)f[1].n,
                       .assert_format = engine_app(srv->e)->reg->assert_format};
  bool valid = schema_validate_frozen_limited(L, -1, -2, &err, &lim);
  lua_pop(L, 1);
  if (!valid) {
    lua_pop(L, 1);
    buf msg;
    buf_init(&msg);
    buf_printf(&msg, "Invalid arguments for tool '%s': %.*s", t->name, (int)err.len, err.p);
    /* 2025-11-25 (SEP-1303): a tool execution error the model can correct;
       earlier versions answered a protocol error */
    if (im->cv.version >= PROTO_2025_11_25)
      output_tool_error(srv, &im->cv, output_reply(srv, im->reply), m->id, msg.p, msg.len);
    else output_rpc_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS, msg.p, NULL);
    buf_free(&msg);
    buf_free(&err);
    return;
  }
  buf_free(&err);
  request mr;
  if (proto_per_request(im->cv.version) && !mrtr_open(srv, im, "tools/call", t->name, strlen(t->name), f[1], &mr)) {
    lua_pop(L, 1);
    return;
  }
  call *c = request_new(srv, im, CALL_TOOL, f[2], proto_per_request(im->cv.version) ? &mr : NULL);
  request_of(c)->tool = t;
  request_of(c)->item_name = t->name;
  lua_rawgeti(call_thread(c), LUA_REGISTRYINDEX, t->handler);
  lua_xmove(L, call_thread(c), 1); /* the arguments */
  lua_rawgeti(call_thread(c), LUA_REGISTRYINDEX, request_of(c)->ctx_ref);
  start_call(srv, c, "tools/call", t->name, (const char *const[]){"arguments"}, 1, NULL);
}

/* Does uri match the template (uri_template.h)? Pushes a table of the
   percent-decoded variables when it does. A value that decodes to a NUL
   byte is no match: a C function given such a path (io.open) would see only
   what comes before it, so "secret%00.txt" could pass a check on ".txt". */
static bool push_template_match(lua_State *L, const char *tpl, const char *uri, size_t n) {
  int k = uri_template_count(tpl);
  if (k <= 0) return false;
  /* a userdata, not malloc: a memory error raised below frees it too */
  uri_template_var *v = lua_newuserdatauv(L, (size_t)k * sizeof *v, 0);
  if (uri_template_match(tpl, uri, n, v, (size_t)k) != URI_TEMPLATE_MATCH) {
    lua_pop(L, 1);
    return false;
  }
  lua_createtable(L, 0, k);
  for (int i = 0; i < k; i++) {
    lua_pushlstring(L, v[i].name, v[i].name_len);
    luaL_Buffer b;
    char *d = luaL_buffinitsize(L, &b, v[i].value_len);
    size_t len = uri_template_decode(v[i].value, v[i].value_len, d);
    if (len == (size_t)-1) {
      luaL_pushresultsize(&b, 0);
      lua_pop(L, 4); /* value, name, table, userdata */
      return false;
    }
    luaL_pushresultsize(&b, len);
    lua_rawset(L, -3);
  }
  lua_remove(L, -2); /* the userdata */
  return true;
}

static void handle_resources_read(server *srv, inmsg *im) {
  const jsonrpc_msg *m = &im->m;
  const registry *r = engine_app(srv->e)->reg;
  lua_State *L = engine_app(srv->e)->vm.L;
  buf uri;
  buf_init(&uri);
  if (!param_string(m, "uri", &uri)) {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: \"uri\" (string) is required");
    buf_free(&uri);
    return;
  }
  if (skills_rpc_read(srv, im, uri.p, uri.len)) { /* a skill's file: no Lua */
    buf_free(&uri);
    return;
  }
  int entry = LUA_NOREF, nargs = 0;
  const char *scopes = NULL, *item = NULL;
  const reg_resource *res = registry_find_resource(r, uri.p, uri.len);
  if (res) {
    entry = res->entry;
    scopes = res->scopes;
    item = res->uri;
  } else {
    for (size_t i = 0; i < r->ntemplates; i++) {
      if (push_template_match(L, r->templates[i].uri_template, uri.p, uri.len)) {
        entry = r->templates[i].entry;
        scopes = r->templates[i].scopes;
        item = r->templates[i].uri_template;
        nargs = 1;
        break;
      }
    }
  }
  if (entry != LUA_NOREF && scopes && scope_refused(srv, im, scopes, "resource", uri.p)) {
    if (nargs) lua_pop(L, 1);
    buf_free(&uri);
    return;
  }
  if (entry == LUA_NOREF) {
    buf d;
    buf_init(&d);
    buf_puts(&d, "{\"uri\":");
    json_encode_string(&d, uri.p, uri.len);
    buf_putc(&d, '}');
    buf_putc(&d, '\0');
    /* 2026-07-28 has no -32002: not found is invalid params */
    output_rpc_error(srv, im->reply, m->id,
                     proto_per_request(im->cv.version) ? JSONRPC_INVALID_PARAMS : MCP_RESOURCE_NOT_FOUND,
                     "Resource not found", d.p);
    buf_free(&d);
    buf_free(&uri);
    return;
  }
  request mr;
  if (proto_per_request(im->cv.version) && !mrtr_open(srv, im, "resources/read", uri.p, uri.len, (json_span){0}, &mr)) {
    if (nargs) lua_pop(L, 1);
    buf_free(&uri);
    return;
  }
  call *c = request_new(srv, im, CALL_RESOURCE, meta_of(m), proto_per_request(im->cv.version) ? &mr : NULL);
  request_of(c)->uri = buf_take(&uri, NULL);
  request_of(c)->item_name = item;
  lua_rawgeti(L, LUA_REGISTRYINDEX, entry);
  request_of(c)->entry_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_rawgeti(call_thread(c), LUA_REGISTRYINDEX, entry);
  rawfield(call_thread(c), -1, "read");
  lua_remove(call_thread(c), -2);
  if (nargs) lua_xmove(L, call_thread(c), 1); /* template variables */
  else lua_pushstring(call_thread(c), request_of(c)->uri); /* read(uri, ctx) */
  lua_rawgeti(call_thread(c), LUA_REGISTRYINDEX, request_of(c)->ctx_ref);
  start_call(srv, c, "resources/read", item, (const char *const[]){nargs ? "variables" : "uri"}, 1,
             nargs ? request_of(c)->uri : NULL);
}

static void handle_prompts_get(server *srv, inmsg *im) {
  const jsonrpc_msg *m = &im->m;
  lua_State *L = engine_app(srv->e)->vm.L;
  buf name;
  buf_init(&name);
  const reg_prompt *p = NULL;
  if (!param_string(m, "name", &name)) {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: \"name\" (string) is required");
    goto done;
  }
  p = registry_find_prompt(engine_app(srv->e)->reg, name.p, name.len);
  if (!p) {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS, "Unknown prompt: %s", name.p);
    goto done;
  }
  if (p->scopes && scope_refused(srv, im, p->scopes, "prompt", p->name)) goto done;
  if (!push_object_param(L, m, "arguments")) {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: \"arguments\" must be an object");
    goto done;
  }
  /* every required argument must be there */
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->entry);
  rawfield(L, -1, "args");
  size_t nargs = lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
  for (size_t i = 1; i <= nargs; i++) {
    lua_rawgeti(L, -1, (lua_Integer)i);
    if (!lua_istable(L, -1)) lua_pop(L, 1), lua_newtable(L);
    rawfield(L, -1, "required");
    bool required = lua_toboolean(L, -1);
    rawfield(L, -2, "name");
    lua_pushvalue(L, -1);
    bool present = lua_rawget(L, -7) != LUA_TNIL;
    if (required && !present) {
      output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS,
                  "Missing required argument '%s' for prompt '%s'", lua_tostring(L, -2), p->name);
      lua_settop(L, 0);
      goto done;
    }
    lua_pop(L, 4);
  }
  lua_pop(L, 2);
  request mr;
  json_span pargs = {0};
  if (proto_per_request(im->cv.version)) jsonrpc_param(m, "arguments", &pargs);
  if (proto_per_request(im->cv.version) && !mrtr_open(srv, im, "prompts/get", p->name, strlen(p->name), pargs, &mr)) {
    lua_pop(L, 1);
    goto done;
  }
  call *c = request_new(srv, im, CALL_PROMPT, meta_of(m), proto_per_request(im->cv.version) ? &mr : NULL);
  request_of(c)->item_name = p->name;
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->entry);
  request_of(c)->entry_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_rawgeti(call_thread(c), LUA_REGISTRYINDEX, p->entry);
  rawfield(call_thread(c), -1, "get");
  lua_remove(call_thread(c), -2);
  lua_xmove(L, call_thread(c), 1);
  lua_rawgeti(call_thread(c), LUA_REGISTRYINDEX, request_of(c)->ctx_ref);
  start_call(srv, c, "prompts/get", p->name, (const char *const[]){"arguments"}, 1, NULL);
done:
  buf_free(&name);
}

static void handle_complete(server *srv, inmsg *im) {
  const jsonrpc_msg *m = &im->m;
  const registry *r = engine_app(srv->e)->reg;
  json_span ref, arg, type, v;
  buf key, argname, value;
  buf_init(&key), buf_init(&argname), buf_init(&value);
  int entry = LUA_NOREF;
  const char *scopes = NULL, *item = NULL;
  if (!m->params.n || !jsonrpc_param(m, "ref", &ref) || json_kind(ref) != '{' ||
      !json_object_get(ref, "type", &type) || !jsonrpc_param(m, "argument", &arg) ||
      json_kind(arg) != '{') {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS,
                "Invalid params: \"ref\" and \"argument\" objects are required");
    goto done;
  }
  if (json_object_get(arg, "name", &v) && json_kind(v) == '"') json_string_unescape(v, &argname);
  if (json_object_get(arg, "value", &v) && json_kind(v) == '"') json_string_unescape(v, &value);
  if (!argname.len) {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: \"argument.name\" is required");
    goto done;
  }
  if (json_string_eq(type, "ref/prompt") && json_object_get(ref, "name", &v) && json_kind(v) == '"') {
    json_string_unescape(v, &key);
    const reg_prompt *p = registry_find_prompt(r, key.p, key.len);
    if (p) entry = p->entry, scopes = p->scopes, item = p->name;
  } else if (json_string_eq(type, "ref/resource") && json_object_get(ref, "uri", &v) &&
             json_kind(v) == '"') {
    json_string_unescape(v, &key);
    for (size_t i = 0; i < r->ntemplates; i++)
      if (strcmp(r->templates[i].uri_template, key.p) == 0)
        entry = r->templates[i].entry, scopes = r->templates[i].scopes,
        item = r->templates[i].uri_template;
  }
  if (entry != LUA_NOREF && scopes && scope_refused(srv, im, scopes, "completion of", key.p))
    goto done;
  if (entry == LUA_NOREF) {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: unknown ref %s",
                key.len ? key.p : "(none)");
    goto done;
  }
  call *c = request_new(srv, im, CALL_COMPLETE, meta_of(m), NULL);
  request_of(c)->item_name = item;
  lua_State *co = call_thread(c);
  lua_rawgeti(co, LUA_REGISTRYINDEX, entry);
  if (rawfield(co, -1, "complete") == LUA_TTABLE) rawfield(co, -1, argname.p);
  else lua_pushnil(co);
  lua_replace(co, -3);
  lua_pop(co, 1);
  if (!lua_isfunction(co, -1)) {
    lua_pop(co, 1);
    lua_pushcfunction(co, lua_api_no_completions);
  }
  lua_pushlstring(co, value.p ? value.p : "", value.len);
  json_span ctxv, args;
  if (jsonrpc_param(m, "context", &ctxv) && json_kind(ctxv) == '{' &&
      json_object_get(ctxv, "arguments", &args) && json_kind(args) == '{')
    json_decode(co, args.p, args.n, NULL);
  else
    lua_newtable(co);
  lua_rawgeti(co, LUA_REGISTRYINDEX, request_of(c)->ctx_ref); /* complete(value, args, ctx) */
  start_call(srv, c, "completion/complete", item, (const char *const[]){"value", "arguments"}, 2,
             NULL);
done:
  buf_free(&key), buf_free(&argname), buf_free(&value);
}

static void handle_set_level(server *srv, inmsg *im) {
  buf lv;
  buf_init(&lv);
  int level = param_string(&im->m, "level", &lv) ? log_level_from_name(lv.p, lv.len) : -1;
  buf_free(&lv);
  if (level < 0) {
    output_error(srv, im->reply, im->m.id, JSONRPC_INVALID_PARAMS,
                "Invalid params: \"level\" must be one of debug, info, notice, warning, error, "
                "critical, alert, emergency");
    return;
  }
  im->s->log_level = level;
  output_json(srv, im->reply, im->m.id, "{}", 2);
}

static void handle_subscription(server *srv, inmsg *im, bool subscribe) {
  buf uri;
  buf_init(&uri);
  if (!param_string(&im->m, "uri", &uri)) {
    output_error(srv, im->reply, im->m.id, JSONRPC_INVALID_PARAMS, "Invalid params: \"uri\" (string) is required");
  } else {
    if (subscribe) session_subscribe(im->s, uri.p, uri.len);
    else session_unsubscribe(im->s, uri.p, uri.len);
    output_json(srv, im->reply, im->m.id, "{}", 2);
  }
  buf_free(&uri);
}
static void handle_subscribe(server *srv, inmsg *im) { handle_subscription(srv, im, true); }
static void handle_unsubscribe(server *srv, inmsg *im) { handle_subscription(srv, im, false); }

typedef void (*method_fn)(server *, inmsg *);
#define ALL PROTO_2024_11_05, PROTO_LATEST
#define SESSIONS PROTO_2024_11_05, PROTO_LATEST_SESSION
#define PER_REQUEST PROTO_2026_07_28, PROTO_LATEST
/* Every method: the revisions that have it (from, to), and whether it runs
   the app's Lua; those that do not are answered even while a handler runs,
   from its hook (engine_hooks.quick): a busy handler does not silence the
   server. A new revision: the rows it adds, and `to` of those it drops. */
static const struct method {
  const char *name;
  method_fn fn;
  int from, to;
  bool needs_lua;
} methods[] = {
    {"tools/call", handle_tools_call, ALL, true},
    {"tools/list", handle_tools_list, ALL, false},
    {"resources/read", handle_resources_read, ALL, true},
    {"resources/list", handle_resources_list, ALL, false},
    {"resources/templates/list", handle_templates_list, ALL, false},
    {"prompts/get", handle_prompts_get, ALL, true},
    {"prompts/list", handle_prompts_list, ALL, false},
    {"completion/complete", handle_complete, ALL, true},
    /* the skills extension (skills_rpc.h): every revision, -32601 without skills */
    {"skills/list", skills_rpc_list, ALL, false},
    {"skills/get", skills_rpc_get, ALL, false},
    {"resources/directory/read", skills_rpc_directory, ALL, false},
    {"server/discover", handle_discover, PER_REQUEST, false},
    {"subscriptions/listen", listen_open, PER_REQUEST, false},
    /* the tasks extension (tasks.h): no tasks/list, no tasks/result */
    {"tasks/get", tasks_get, PER_REQUEST, false},
    {"tasks/update", tasks_update, PER_REQUEST, true},
    {"tasks/cancel", tasks_cancel, PER_REQUEST, false},
    /* 2026-07-28 removed them (per-request log level, subscriptions/listen,
       no handshake) */
    {"initialize", handle_initialize, SESSIONS, false},
    {"logging/setLevel", handle_set_level, SESSIONS, false},
    {"resources/subscribe", handle_subscribe, SESSIONS, false},
    {"resources/unsubscribe", handle_unsubscribe, SESSIONS, false},
};
#undef ALL
#undef SESSIONS
#undef PER_REQUEST

static const struct method *method_of(const jsonrpc_msg *m) {
  for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
    if (jsonrpc_method_is(m, methods[i].name)) return &methods[i];
  return NULL;
}

bool methods_need_lua(const jsonrpc_msg *m) {
  const struct method *me = method_of(m);
  return me && me->needs_lua;
}

/* The request's server span (OpenTelemetry's MCP conventions): a child of
   the trace context in its _meta (where MCP clients put it), else of the
   HTTP request's traceparent. */
static trace_span *server_span(const inmsg *im, const char *method) {
  trace_ctx meta_parent;
  const trace_ctx *parent = &im->parent;
  json_span meta, tp, ts = {0};
  /* a search of the raw text first: most requests carry no trace context */
  if (im->m.params.n && memmem(im->m.params.p, im->m.params.n, "traceparent", 11) &&
      jsonrpc_param(&im->m, "_meta", &meta) && json_kind(meta) == '{' &&
      json_object_get(meta, "traceparent", &tp) && json_kind(tp) == '"') {
    if (json_object_get(meta, "tracestate", &ts) && json_kind(ts) != '"') ts.n = 0;
    if (trace_parse(tp.p + 1, tp.n - 2, ts.n ? ts.p + 1 : NULL, ts.n ? ts.n - 2 : 0, &meta_parent))
      parent = &meta_parent;
  }
  trace_span *s = trace_start(parent, method, TRACE_SERVER);
  if (!s) return NULL;
  trace_attr_str(s, "mcp.method.name", method);
  trace_attr_str(s, "mcp.protocol.version", proto_name(im->cv.version));
  if (im->s->id[0]) trace_attr_str(s, "mcp.session.id", im->s->id);
  if (im->m.id.n) { /* a string id without its quotes */
    bool str = im->m.id.p[0] == '"';
    trace_attr_strn(s, "jsonrpc.request.id", im->m.id.p + str, im->m.id.n - 2 * str);
  }
  trace_attr_str(s, "network.transport", im->http ? "tcp" : "pipe");
  if (im->s->peer[0]) trace_attr_str(s, "client.address", im->s->peer);
  return s;
}

/* A request answered without a call (a call's own is accounted when it
   ends: request.c). */
static void count_request(server *srv, inmsg *im, const char *method, double t0) {
  if (im->taken) return;
  accounting_record(srv, &(account){.method = method, .version = im->cv.version,
                                    .outcome = im->reply->error_code ? OUTCOME_ERROR : OUTCOME_OK,
                                    .s = im->s, .who = server_caller(srv, im), .id = im->m.id,
                                    .started = t0, .bytes = output_answer_bytes(im->reply),
                                    .span = im->span});
  im->span = NULL;
}

void methods_handle_request(server *srv, inmsg *im) {
  session *s = im->s;
  const jsonrpc_msg *m = &im->m;
  int version = im->cv.version;
  const struct method *me = method_of(m);
  double t0 = access_log_on() ? engine_now() : 0;
  if (trace_on) im->span = server_span(im, me ? me->name : "other");
  if (me && version >= me->from && version <= me->to) {
    if (!proto_per_request(version) && !s->initialized && me->fn != handle_initialize) {
      output_error(srv, im->reply, m->id, JSONRPC_INVALID_REQUEST,
                   "Invalid Request: the session is not initialized (send initialize first)");
      count_request(srv, im, me->name, t0);
      return;
    }
    me->fn(srv, im);
    count_request(srv, im, me->name, t0);
    return;
  }
  buf name;
  buf_init(&name);
  json_string_unescape(m->method, &name);
  if (proto_per_request(version))
    output_error(srv, im->reply, m->id, JSONRPC_METHOD_NOT_FOUND,
                 "Method not found: %s (not in protocol revision %s)", name.p, proto_name(version));
  else
    output_error(srv, im->reply, m->id, JSONRPC_METHOD_NOT_FOUND, "Method not found: %s", name.p);
  buf_free(&name);
  count_request(srv, im, "other", t0); /* never the client's string: unbounded */
}
