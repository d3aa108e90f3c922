/* methods.c — the MCP methods a client calls: initialize, the lists,
 * tools/call, resources/read, prompts/get, completion/complete,
 * logging/setLevel, subscriptions. Lists and initialize come from the
 * registry snapshot; the rest start calls (engine.c runs them). ping is
 * answered before any method, in server.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "access_log.h"
#include "clock.h"
#include "cursor.h"
#include "server_internal.h"
#include "json.h"
#include "luax.h"
#include "log.h"
#include "metrics.h"
#include "lua_api.h"
#include "listen.h"
#include "mrtr.h"
#include "skills_rpc.h"
#include "tasks.h"
#include "uri_template.h"
#include "validate.h"

/* {====================================================== methods */


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
  im->item = t->name;
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
  schema_limits lim = {.deadline = clock_now() + srv->opt.engine.call_timeout,
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
    im->tool_error = im->cv.version >= PROTO_2025_11_25;
    if (im->tool_error)
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
  method_chain_start(srv, c, "tools/call", t->name, (const char *const[]){"arguments"}, 1, NULL);
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

/* The resource, else the first template, that uri names: its entry
   (LUA_NOREF: none), scopes and registered name; a template's variables are
   pushed on the app's state (*nargs 1). */
static int find_resource(server *srv, const char *uri, size_t n, const char **scopes, const char **item,
                         int *nargs) {
  const registry *r = engine_app(srv->e)->reg;
  *scopes = *item = NULL;
  *nargs = 0;
  const reg_resource *res = registry_find_resource(r, uri, n);
  if (res) {
    *scopes = res->scopes, *item = res->uri;
    return res->entry;
  }
  for (size_t i = 0; i < r->ntemplates; i++)
    if (push_template_match(engine_app(srv->e)->vm.L, r->templates[i].uri_template, uri, n)) {
      *scopes = r->templates[i].scopes, *item = r->templates[i].uri_template;
      *nargs = 1;
      return r->templates[i].entry;
    }
  return LUA_NOREF;
}

static void handle_resources_read(server *srv, inmsg *im) {
  const jsonrpc_msg *m = &im->m;
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
  int nargs;
  const char *scopes, *item;
  int entry = find_resource(srv, uri.p, uri.len, &scopes, &item, &nargs);
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
  luax_rawfield(call_thread(c), -1, "read");
  lua_remove(call_thread(c), -2);
  if (nargs) lua_xmove(L, call_thread(c), 1); /* template variables */
  else lua_pushstring(call_thread(c), request_of(c)->uri); /* read(uri, ctx) */
  lua_rawgeti(call_thread(c), LUA_REGISTRYINDEX, request_of(c)->ctx_ref);
  method_chain_start(srv, c, "resources/read", item, (const char *const[]){nargs ? "variables" : "uri"}, 1,
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
  im->item = p->name;
  if (p->scopes && scope_refused(srv, im, p->scopes, "prompt", p->name)) goto done;
  if (!push_object_param(L, m, "arguments")) {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: \"arguments\" must be an object");
    goto done;
  }
  /* every required argument must be there */
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->entry);
  luax_rawfield(L, -1, "args");
  size_t nargs = lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
  for (size_t i = 1; i <= nargs; i++) {
    lua_rawgeti(L, -1, (lua_Integer)i);
    if (!lua_istable(L, -1)) lua_pop(L, 1), lua_newtable(L);
    luax_rawfield(L, -1, "required");
    bool required = lua_toboolean(L, -1);
    luax_rawfield(L, -2, "name");
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
  luax_rawfield(call_thread(c), -1, "get");
  lua_remove(call_thread(c), -2);
  lua_xmove(L, call_thread(c), 1);
  lua_rawgeti(call_thread(c), LUA_REGISTRYINDEX, request_of(c)->ctx_ref);
  method_chain_start(srv, c, "prompts/get", p->name, (const char *const[]){"arguments"}, 1, NULL);
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
  if (luax_rawfield(co, -1, "complete") == LUA_TTABLE) luax_rawfield(co, -1, argname.p);
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
  method_chain_start(srv, c, "completion/complete", item, (const char *const[]){"value", "arguments"}, 2,
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
    /* told of updates only to what it may read: a resource's scopes apply */
    int nargs = 0;
    const char *scopes = NULL, *item;
    int entry = subscribe ? find_resource(srv, uri.p, uri.len, &scopes, &item, &nargs) : LUA_NOREF;
    if (nargs) lua_pop(engine_app(srv->e)->vm.L, 1);
    if (entry != LUA_NOREF && scopes && scope_refused(srv, im, scopes, "resource", uri.p)) {
      buf_free(&uri);
      return;
    }
    if (subscribe) session_subscribe(im->s, uri.p, uri.len);
    else session_unsubscribe(im->s, uri.p, uri.len);
    output_json(srv, im->reply, im->m.id, "{}", 2);
  }
  buf_free(&uri);
}
static void handle_subscribe(server *srv, inmsg *im) { handle_subscription(srv, im, true); }
static void handle_unsubscribe(server *srv, inmsg *im) { handle_subscription(srv, im, false); }

/* the server's own request (mount.c), for no client */
static void handle_mount_refresh(server *srv, inmsg *im) {
  if (im->s->internal && srv->mount_request) srv->mount_request(srv, im);
  else output_error(srv, im->reply, im->m.id, JSONRPC_METHOD_NOT_FOUND, "Method not found: luamcp/mount/refresh");
}

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
    /* the server's own (mount.c): -32601 for every client */
    {"luamcp/mount/refresh", handle_mount_refresh, ALL, true},
};
#undef ALL
#undef SESSIONS
#undef PER_REQUEST

static const struct method *method_of(const jsonrpc_msg *m) {
  for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
    if (jsonrpc_method_is(m, methods[i].name)) return &methods[i];
  return NULL;
}

const char *methods_name(const jsonrpc_msg *m) {
  const struct method *me = method_of(m);
  return me ? me->name : "other";
}

void server_count_refused(const jsonrpc_msg *m, int version) {
  if (metrics_on)
    metric_add(metric_at(M_REQUESTS, (const char *const[]){methods_name(m),
                                                            version ? proto_name(version) : "unsupported",
                                                            "error"}), 1);
}

bool methods_need_lua(const jsonrpc_msg *m) {
  const struct method *me = method_of(m);
  return me && me->needs_lua;
}

void methods_handle_request(server *srv, inmsg *im) {
  session *s = im->s;
  const jsonrpc_msg *m = &im->m;
  int version = im->cv.version;
  const struct method *me = method_of(m);
  double t0 = access_log_on() || metrics_on ? clock_now() : 0;
  if (trace_on) im->span = accounting_start(im, me ? me->name : "other");
  if (me && version >= me->from && version <= me->to) {
    if (!proto_per_request(version) && !s->initialized && me->fn != handle_initialize) {
      output_error(srv, im->reply, m->id, JSONRPC_INVALID_REQUEST,
                   "Invalid Request: the session is not initialized (send initialize first)");
      accounting_answered(srv, im, me->name, t0);
      return;
    }
    me->fn(srv, im);
    if (me->fn == handle_initialize && !im->taken) im->cv.version = s->version; /* the negotiated one */
    accounting_answered(srv, im, me->name, t0);
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
  accounting_answered(srv, im, "other", t0); /* never the client's string: unbounded */
}
