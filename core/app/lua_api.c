/* lua_api.c — C functions for lua/mcp.lua and the ctx object (see
 * lua_api.h). Registration itself lives in lua/mcp.lua; this file holds
 * what needs C: JSON, base64, schema validation, paths and the call context. */
#include "lua_api.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "app.h"
#include "base64.h"
#include "call.h"
#include "ctx_client.h"
#include "io_http.h"
#include "io_exec.h"
#include "mcp_client.h"
#include "io_socket.h"
#include "store.h"
#include "io_redis.h"
#include "db.h"
#include "trace.h"
#include "embedded.h"
#include "json.h"
#include "log.h"
#include "path.h"
#include "validate.h"

#define CTX_TYPE "mcp.ctx"

/* {====================================================== core */

static int core_json_encode(lua_State *L) {
  luaL_checkany(L, 1);
  buf b;
  buf_init(&b);
  char err[256];
  /* a true second argument: the stricter encoding of results (json.h) */
  bool ok = lua_toboolean(L, 2) ? json_encode_result(L, 1, &b, err, sizeof err)
                                : json_encode(L, 1, &b, err, sizeof err);
  if (ok) lua_pushlstring(L, b.p ? b.p : "", b.len);
  buf_free(&b);
  if (!ok) return luaL_error(L, "%s", err);
  return 1;
}

static int core_json_decode(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  const char *err;
  if (!json_decode(L, s, n, &err)) return luaL_error(L, "invalid JSON: %s", err);
  return 1;
}

static int core_base64_encode(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  buf b;
  buf_init(&b);
  base64_encode(&b, (const unsigned char *)s, n);
  lua_pushlstring(L, b.p ? b.p : "", b.len);
  buf_free(&b);
  return 1;
}

static int core_base64_decode(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  buf b;
  buf_init(&b);
  bool ok = base64_decode(&b, s, n);
  if (ok) lua_pushlstring(L, b.p ? b.p : "", b.len);
  buf_free(&b);
  if (!ok) return luaL_error(L, "invalid base64");
  return 1;
}

/* schema_check(schema) -> true | false, message */
static int core_schema_check(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  buf err;
  buf_init(&err);
  bool ok = schema_check(L, 1, &err);
  lua_pushboolean(L, ok);
  if (!ok) lua_pushlstring(L, err.p ? err.p : "", err.len);
  buf_free(&err);
  return ok ? 1 : 2;
}

/* validate(schema, value [, {format = "assert"}]) -> true | false, message */
static int core_validate(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checkany(L, 2);
  schema_limits lim = {0};
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_getfield(L, 3, "format");
    const char *f = lua_tostring(L, -1);
    if (f && strcmp(f, "assert") == 0) lim.assert_format = true;
    else if (f && strcmp(f, "annotate") != 0) return luaL_argerror(L, 3, "format must be \"assert\" or \"annotate\"");
    lua_pop(L, 1);
  }
  lua_settop(L, 2);
  buf err;
  buf_init(&err);
  bool ok = schema_validate_limited(L, 1, 2, &err, &lim);
  lua_pushboolean(L, ok);
  if (!ok) lua_pushlstring(L, err.p ? err.p : "", err.len);
  buf_free(&err);
  return ok ? 1 : 2;
}

/* notify_updated(uri): tell subscribed clients the resource changed. */
static int core_notify_updated(lua_State *L) {
  size_t n;
  const char *uri = luaL_checklstring(L, 1, &n);
  ctx_client_notify_updated(L, uri, n); /* nobody to tell while `luamcp check` loads */
  return 0;
}

/* Push path_join(base, rel) (path.h): the path, or nil and why. */
static int push_joined(lua_State *L, const char *base, size_t blen, const char *rel, size_t rlen) {
  luaL_Buffer b;
  char *out = luaL_buffinitsize(L, &b, PATH_JOIN_ROOM(blen, rlen));
  const char *why;
  size_t n = path_join(out, base, blen, rel, rlen, &why);
  if (n == (size_t)-1) {
    luaL_pushresultsize(&b, 0);
    lua_pop(L, 1);
    lua_pushnil(L);
    lua_pushfstring(L, "path '%s' %s: it must stay inside its folder", rel, why);
    return 2;
  }
  luaL_pushresultsize(&b, n);
  return 1;
}

/* path_join(base, rel) -> base/rel, or nil and why (mcp.path.join) */
static int core_path_join(lua_State *L) {
  size_t blen, rlen;
  const char *base = luaL_checklstring(L, 1, &blen);
  const char *rel = luaL_checklstring(L, 2, &rlen);
  return push_joined(L, base, blen, rel, rlen);
}

/* app_path([rel]) -> rel inside the app's folder, or nil and why (mcp.path.app) */
static int core_app_path(lua_State *L) {
  size_t blen, rlen;
  const char *rel = luaL_optlstring(L, 1, "", &rlen);
  lua_getfield(L, LUA_REGISTRYINDEX, APP_DIR_KEY);
  const char *dir = luaL_checklstring(L, -1, &blen);
  return push_joined(L, dir, blen, rel, rlen);
}

/* widget_path(file) -> the file's path inside the app's widgets/ folder, or
   nil and why. A widget can never name a file outside that folder (what
   path_join refuses, and no symlink leading out). */
static int core_widget_path(lua_State *L) {
  size_t flen;
  const char *file = luaL_checklstring(L, 1, &flen);
  lua_getfield(L, LUA_REGISTRYINDEX, APP_DIR_KEY);
  const char *dir = luaL_checkstring(L, -1);
  char folder[PATH_MAX], path[PATH_MAX + NAME_MAX], real_folder[PATH_MAX], real_path[PATH_MAX];
  size_t dlen = (size_t)snprintf(folder, sizeof folder, "%s/widgets", dir);
  if (dlen >= sizeof folder || PATH_JOIN_ROOM(dlen, flen) >= sizeof path) {
    lua_pushnil(L);
    lua_pushfstring(L, "widget file '%s': path too long", file);
    return 2;
  }
  const char *why;
  size_t n = path_join(path, folder, dlen, file, flen, &why);
  if (n == (size_t)-1) {
    lua_pushnil(L);
    lua_pushfstring(L, "widget file '%s' must be a path inside the widgets/ folder", file);
    return 2;
  }
  path[n] = '\0';
  if (!realpath(path, real_path)) {
    lua_pushnil(L);
    lua_pushfstring(L, "widget file '%s': %s", path, strerror(errno));
    return 2;
  }
  size_t rn = realpath(folder, real_folder) ? strlen(real_folder) : 0;
  if (!rn || strncmp(real_path, real_folder, rn) != 0 || real_path[rn] != '/') {
    lua_pushnil(L);
    lua_pushfstring(L, "widget file '%s' leads outside the widgets/ folder", file);
    return 2;
  }
  lua_pushstring(L, path);
  return 1;
}

/* mcp.now(): wall-clock milliseconds since the Unix epoch, with a fraction
   (microseconds): for logs and measured durations (os.time has seconds). */
static int core_now(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec * 1e3 + (lua_Number)(ts.tv_nsec / 1000) / 1e3);
  return 1;
}

static const luaL_Reg core_funcs[] = {
    {"now", core_now},
    {"widget_path", core_widget_path},
    {"path_join", core_path_join},
    {"app_path", core_app_path},
    {"notify_updated", core_notify_updated},
    {"json_encode", core_json_encode},
    {"json_decode", core_json_decode},
    {"base64_encode", core_base64_encode},
    {"base64_decode", core_base64_decode},
    {"schema_check", core_schema_check},
    {"validate", core_validate},
    {NULL, NULL},
};

int lua_api_no_completions(lua_State *L) {
  lua_newtable(L);
  return 1;
}

/* }====================================================== */

/* {====================================================== ctx */

typedef struct ctx_ud {
  call *c; /* NULL once the call has ended */
} ctx_ud;

static call *check_ctx(lua_State *L) {
  ctx_ud *u = luaL_checkudata(L, 1, CTX_TYPE);
  if (!u->c) luaL_error(L, "attempt to use a call context after its handler returned");
  return u->c;
}

/* string.format(...) of the arguments from index i on */
static const char *format_args(lua_State *L, int i, size_t *len) {
  if (lua_gettop(L) > i) {
    lua_getglobal(L, "string");
    lua_getfield(L, -1, "format");
    lua_remove(L, -2);
    lua_insert(L, i);
    lua_call(L, lua_gettop(L) - i, 1);
  }
  return luaL_tolstring(L, i, len);
}

static void log_at(lua_State *L, call *c, int level, int first) {
  size_t n;
  const char *msg = format_args(L, first, &n);
  ctx_client_log(c, level, msg, n);
}

/* ctx:log(level, fmt, ...) */
static int ctx_log(lua_State *L) {
  call *c = check_ctx(L);
  size_t n;
  const char *name = luaL_checklstring(L, 2, &n);
  int level = log_level_from_name(name, n);
  if (level < 0) return luaL_argerror(L, 2, "not a log level (debug, info, notice, warning, error, critical, alert, emergency)");
  luaL_checkany(L, 3);
  log_at(L, c, level, 3);
  return 0;
}

#define LEVEL_METHOD(fn, level)            \
  static int fn(lua_State *L) {            \
    call *c = check_ctx(L);                \
    luaL_checkany(L, 2);                   \
    log_at(L, c, level, 2);                \
    return 0;                              \
  }
LEVEL_METHOD(ctx_debug, LOG_DEBUG)
LEVEL_METHOD(ctx_info, LOG_INFO)
LEVEL_METHOD(ctx_warning, LOG_WARNING)
LEVEL_METHOD(ctx_error, LOG_ERROR)

/* ctx:progress(progress [, total [, message]]) -> true when the client asked for progress */
static int ctx_progress(lua_State *L) {
  call *c = check_ctx(L);
  double progress = luaL_checknumber(L, 2);
  bool has_total = !lua_isnoneornil(L, 3);
  double total = has_total ? luaL_checknumber(L, 3) : NAN;
  const char *message = luaL_optstring(L, 4, NULL);
  if (!isfinite(progress)) return luaL_argerror(L, 2, "must be a finite number");
  if (has_total && !isfinite(total)) return luaL_argerror(L, 3, "must be a finite number");
  lua_pushboolean(L, ctx_client_progress(c, progress, total, message));
  return 1;
}

/* The sleep is over (a call whose deadline comes first is ended without
   being resumed: on_call_timer). */
static int sleep_done(lua_State *L, int status, lua_KContext k) {
  (void)L, (void)status, (void)k;
  return 0;
}

/* ctx:sleep(seconds): park this call; other calls run meanwhile. */
static int ctx_sleep(lua_State *L) {
  call *c = check_ctx(L);
  double s = luaL_checknumber(L, 2);
  if (call_in_thread(L)) return call_threads_sleep(L, c, s); /* a thread of mcp.spawn */
  if (L != call_thread(c))
    return luaL_error(L, "ctx:sleep must be called from the handler or a thread of mcp.spawn, not a coroutine it made");
  call_sleep(c, s);
  return lua_yieldk(L, 0, 0, sleep_done);
}

/* {====== asking the client: ctx:sample, ctx:elicit, ctx:roots */

enum { ASK_SAMPLE, ASK_ELICIT, ASK_ROOTS };

/* Resumed by the engine with the result, or nil and a message, or nothing
   when the call timed out. k packs the stack base and which question. */
static int ask_done(lua_State *L, int status, lua_KContext k) {
  (void)status;
  int base = (int)(k >> 2), kind = (int)(k & 3);
  int n = lua_gettop(L) - base;
  call *c = call_of(L);
  if (n == 0) {
    char msg[TIMEOUT_MSG_MAX];
    if (c) call_timeout_message(c, msg);
    return luaL_error(L, "%s (waiting for the client)", c ? msg : "call ended");
  }
  if (n >= 2 && lua_isnil(L, base + 1)) return luaL_error(L, "%s", lua_tostring(L, base + 2));
  lua_settop(L, base + 1);
  if (kind == ASK_ROOTS) {
    lua_getfield(L, -1, "roots");
    if (lua_isnil(L, -1)) {
      lua_newtable(L);
      json_mark_array(L, -1);
    }
  }
  return 1;
}

/* `key = "..."` in a question's table: the name its answer comes back
   under in a 2026-07-28 round (inputRequests); never sent as a param.
   Leaves a copy of the table without it at params_idx. */
static const char *take_key(lua_State *L, int params_idx) {
  if (!params_idx) return NULL;
  if (lua_getfield(L, params_idx, "key") == LUA_TNIL) {
    lua_pop(L, 1);
    return NULL;
  }
  if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "the question's key must be a string");
  const char *key = lua_tostring(L, -1); /* stays on the stack, below the copy */
  lua_newtable(L);
  lua_pushnil(L);
  while (lua_next(L, params_idx)) {
    if (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "key") == 0) {
      lua_pop(L, 1);
      continue;
    }
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
  lua_replace(L, params_idx);
  return key;
}

/* A 2026-07-28 round that was not answered at once ended the call: this
   is never resumed -- but for a task's round, resumed with the answers by
   key when tasks/update gave them all (stack: 1 ctx, 2 questions). */
static int ask_done_round(lua_State *L, int status, lua_KContext k) {
  (void)status, (void)k;
  if (lua_gettop(L) >= 3) {
    lua_settop(L, 3);
    return 1;
  }
  call *c = call_of(L);
  char msg[TIMEOUT_MSG_MAX];
  if (c) call_timeout_message(c, msg);
  return luaL_error(L, "%s (the questions were not answered)", c ? msg : "call ended");
}

static int ask(lua_State *L, const char *method, int kind, int params_idx) {
  call *c = check_ctx(L);
  if (L != call_thread(c))
    return luaL_error(L, "ctx:%s must be called from the handler itself (not a coroutine it made, nor a thread of mcp.spawn)",
                      kind == ASK_SAMPLE ? "sample" : kind == ASK_ELICIT ? "elicit" : "roots");
  const char *key = take_key(L, params_idx);
  char err[256];
  int base = lua_gettop(L);
  lua_KContext k = ((lua_KContext)base << 2) | kind;
  switch (ctx_client_ask(c, method, L, params_idx, key, err, sizeof err)) {
    case ASK_FAILED: return luaL_error(L, "%s", err);
    case ASK_ANSWERED: return ask_done(L, LUA_OK, k); /* an earlier round's answer */
    default: return lua_yieldk(L, 0, k, ask_done);
  }
}

/* ctx:sample{ messages = {...}, maxTokens = n, ... } -> CreateMessageResult */
static int ctx_sample(lua_State *L) {
  luaL_checktype(L, 2, LUA_TTABLE);
  return ask(L, "sampling/createMessage", ASK_SAMPLE, 2);
}

/* ctx:elicit{ message = "...", schema = {...} } -> {action=, content=}.
   schema is luamcp's name for requestedSchema (either, not both): the
   request goes out with a copy that says requestedSchema, the caller's
   table stays as it was. A table of fields ({ name = mcp.string() }, as a
   tool's input) becomes the object schema MCP asks for, through
   mcp.object; anything but an object schema is the script's error here,
   not an invalid request the client would refuse. */
static int ctx_elicit(lua_State *L) {
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  bool ours = lua_getfield(L, 2, "schema") != LUA_TNIL;
  bool theirs = lua_getfield(L, 2, "requestedSchema") != LUA_TNIL;
  if (ours && theirs)
    return luaL_error(L, "ctx:elicit: give 'schema' or 'requestedSchema', not both (they are one field)");
  lua_settop(L, 2);
  lua_newtable(L); /* the params: a copy, schema named as MCP names it */
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    if (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "schema") == 0) {
      lua_pushliteral(L, "requestedSchema");
      lua_replace(L, -3);
    }
    lua_rawset(L, 3);
  }
  lua_replace(L, 2);
  int t = lua_getfield(L, 2, "requestedSchema"); /* 3 */
  bool object = t == LUA_TNIL;                    /* none: the client's to refuse */
  if (t == LUA_TTABLE) {
    bool fields = lua_getfield(L, 3, "type") == LUA_TNIL && lua_getfield(L, 3, "properties") == LUA_TNIL;
    lua_settop(L, 3);
    if (fields) {
      luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
      lua_getfield(L, -1, "mcp");
      lua_getfield(L, -1, "object");
      lua_pushvalue(L, 3);
      lua_call(L, 1, 1); /* mcp.object(fields): its errors name the field */
      lua_pushvalue(L, -1);
      lua_setfield(L, 2, "requestedSchema");
      lua_replace(L, 3);
      lua_settop(L, 3);
    }
    object = lua_getfield(L, 3, "type") == LUA_TSTRING && strcmp(lua_tostring(L, -1), "object") == 0;
  }
  if (!object)
    return luaL_error(L, "ctx:elicit: the schema must describe an object: a table of fields "
                         "({ name = mcp.string() }) or { type = \"object\", properties = {...} }");
  lua_settop(L, 2);
  return ask(L, "elicitation/create", ASK_ELICIT, 2);
}

/* ctx:roots([{key=}]) -> the client's roots ({uri=, name=} tables) */
static int ctx_roots(lua_State *L) {
  if (lua_istable(L, 2)) {
    lua_settop(L, 2);
    return ask(L, "roots/list", ASK_ROOTS, 2);
  }
  lua_settop(L, 1);
  return ask(L, "roots/list", ASK_ROOTS, 0);
}

/* ctx:ask{ key = {method=, params=}, ... } -> the answers by key. A
   2026-07-28 request asks them in one round; a 2025 session one request
   after the other (stack: 1 ctx, 2 questions, 3 answers, 4 the key asked). */
static int ask_next(lua_State *L, int status, lua_KContext k) {
  (void)k;
  call *c = call_of(L);
  if (status == LUA_YIELD) { /* resumed with the answer, or nil and why, or nothing */
    int n = lua_gettop(L) - 4;
    if (n <= 0) {
      char msg[TIMEOUT_MSG_MAX];
      if (c) call_timeout_message(c, msg);
      return luaL_error(L, "%s (waiting for the client)", c ? msg : "call ended");
    }
    if (n >= 2 && lua_isnil(L, 5)) return luaL_error(L, "%s", lua_tostring(L, 6));
    lua_pushvalue(L, 4);
    lua_pushvalue(L, 5);
    lua_rawset(L, 3);
    lua_settop(L, 4);
  }
  while (lua_next(L, 2)) { /* key, question */
    char err[256];
    lua_getfield(L, -1, "method");
    const char *method = lua_tostring(L, -1);
    if (!method) return luaL_error(L, "ctx:ask: question '%s' has no method", lua_tostring(L, -3));
    lua_getfield(L, -2, "params");
    int params = lua_istable(L, -1) ? lua_gettop(L) : 0;
    int base = lua_gettop(L);
    int how = ctx_client_ask(c, method, L, params, NULL, err, sizeof err);
    if (how == ASK_FAILED) return luaL_error(L, "%s", err);
    lua_settop(L, base);
    lua_pop(L, 3); /* params, method, question: the key stays at 4 for the next turn */
    return lua_yieldk(L, 0, 0, ask_next);
  }
  lua_settop(L, 3);
  return 1;
}

static int ctx_ask(lua_State *L) {
  call *c = check_ctx(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  if (L != call_thread(c))
    return luaL_error(L, "ctx:ask must be called from the handler itself (not a coroutine it made, nor a thread of mcp.spawn)");
  if (ctx_client_asks_in_rounds(c)) {
    char err[256];
    switch (ctx_client_ask_round(c, L, 2, err, sizeof err)) {
      case ASK_FAILED: return luaL_error(L, "%s", err);
      case ASK_ANSWERED: return 1;
      default: return lua_yieldk(L, 0, 0, ask_done_round);
    }
  }
  lua_newtable(L);
  lua_pushnil(L);
  return ask_next(L, LUA_OK, 0);
}

/* }====== */

/* ctx:close_stream(): HTTP only — end this call's SSE response now; the
   client reconnects (GET + Last-Event-ID) and gets the rest (SEP-1699).
   Returns false where there is no such stream (stdio). */
static int ctx_close_stream(lua_State *L) {
  lua_pushboolean(L, ctx_client_detach(check_ctx(L)));
  return 1;
}

/* ctx:as_task(): run as a task from here on (the tasks extension of
   2026-07-28): the client gets a CreateTaskResult now and polls tasks/get;
   questions asked after it wait as the task's input_required. True when
   the call is a task; false where it cannot be one (the tool declares no
   `task`, the client did not declare the extension, a 2025 session): it
   goes on as a plain call. */
static int ctx_as_task(lua_State *L) {
  lua_pushboolean(L, ctx_client_as_task(check_ctx(L)));
  return 1;
}

/* {====== tracing: ctx:span, ctx:set_attribute */

/* The value at idx as key's attribute of s (strings, numbers, booleans). */
static void set_attribute(lua_State *L, trace_span *s, const char *key, int idx, const char *fn) {
  switch (lua_type(L, idx)) {
    case LUA_TSTRING: {
      size_t n;
      const char *v = lua_tolstring(L, idx, &n);
      trace_attr_strn(s, key, v, n);
      break;
    }
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) trace_attr_int(s, key, (long long)lua_tointeger(L, idx));
      else trace_attr_double(s, key, lua_tonumber(L, idx));
      break;
    case LUA_TBOOLEAN: trace_attr_bool(s, key, lua_toboolean(L, idx)); break;
    default:
      luaL_error(L, "%s: attribute '%s' must be a string, a number or a boolean (got a %s)", fn, key,
                 luaL_typename(L, idx));
  }
}

/* ends the span of ctx:span (upvalue-free: the span is the continuation's k) */
static int span_done(lua_State *L, int status, lua_KContext k) {
  trace_span *s = (trace_span *)k;
  ctx_ud *u = lua_touserdata(L, 1);
  if (status != LUA_OK && status != LUA_YIELD) {
    if (s && u->c) ctx_client_span_close(u->c, s, lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error");
    return lua_error(L);
  }
  if (s && u->c) ctx_client_span_close(u->c, s, NULL);
  return lua_gettop(L) - 4;
}

/* ctx:span(name, [attributes,] fn): fn runs in a span of its own, a child
   of the request's (or of the ctx:span it runs in); returns what fn returns.
   An error in fn is recorded on the span and raised again. Without tracing
   it only runs fn. */
static int ctx_span(lua_State *L) {
  call *c = check_ctx(L);
  const char *name = luaL_checkstring(L, 2);
  if (lua_type(L, 3) == LUA_TFUNCTION) {
    lua_settop(L, 3);
    lua_pushnil(L);
    lua_insert(L, 3); /* no attributes */
  }
  lua_settop(L, 4);
  if (!lua_isnil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  luaL_checktype(L, 4, LUA_TFUNCTION);
  trace_span *s = trace_on ? ctx_client_span_open(c, name) : NULL;
  if (s && lua_istable(L, 3)) {
    lua_pushnil(L);
    while (lua_next(L, 3)) {
      if (lua_type(L, -2) == LUA_TSTRING) set_attribute(L, s, lua_tostring(L, -2), -1, "ctx:span");
      lua_pop(L, 1);
    }
  }
  lua_pushvalue(L, 4);
  return span_done(L, lua_pcallk(L, 0, LUA_MULTRET, 0, (lua_KContext)s, span_done), (lua_KContext)s);
}

/* ctx:set_attribute(key, value): on the current span (nothing untraced) */
static int ctx_set_attribute(lua_State *L) {
  call *c = check_ctx(L);
  const char *key = luaL_checkstring(L, 2);
  luaL_checkany(L, 3);
  trace_span *s = trace_on ? call_span(c) : NULL;
  if (s) set_attribute(L, s, key, 3, "ctx:set_attribute");
  return 0;
}

/* }====== */

static const luaL_Reg ctx_methods[] = {
    {"close_stream", ctx_close_stream},
    {"sample", ctx_sample},   {"elicit", ctx_elicit},     {"roots", ctx_roots},
    {"ask", ctx_ask},
    {"log", ctx_log},         {"debug", ctx_debug},       {"info", ctx_info},
    {"warning", ctx_warning}, {"error", ctx_error},       {"progress", ctx_progress},
    {"sleep", ctx_sleep},     {"as_task", ctx_as_task},
    {"span", ctx_span},       {"set_attribute", ctx_set_attribute}, {NULL, NULL},
};

/* Fields computed on access, methods from the method table (upvalue 1). */
static int ctx_index(lua_State *L) {
  ctx_ud *u = luaL_checkudata(L, 1, CTX_TYPE);
  const char *key = luaL_checkstring(L, 2);
  if (strcmp(key, "cancelled") == 0) {
    lua_pushboolean(L, !u->c || call_is_cancelled(u->c));
    return 1;
  }
  if (strcmp(key, "client_capabilities") == 0) {
    if (!u->c) return 0;
    bool sampling, elicitation, roots, ui;
    ctx_client_caps(u->c, &sampling, &elicitation, &roots, &ui);
    lua_createtable(L, 0, 4);
    if (sampling) lua_newtable(L), lua_setfield(L, -2, "sampling");
    if (elicitation) lua_newtable(L), lua_setfield(L, -2, "elicitation");
    if (roots) lua_newtable(L), lua_setfield(L, -2, "roots");
    if (ui) {
      lua_newtable(L);
      lua_newtable(L);
      lua_setfield(L, -2, "io.modelcontextprotocol/ui");
      lua_setfield(L, -2, "extensions");
    }
    return 1;
  }
  if (strcmp(key, "uri") == 0) { /* what a resources/read reads */
    const char *uri = u->c ? ctx_client_resource_uri(u->c) : NULL;
    if (uri) lua_pushstring(L, uri);
    else lua_pushnil(L);
    return 1;
  }
  if (strcmp(key, "auth") == 0) { /* built once per call, kept as the ctx's user value */
    if (lua_getiuservalue(L, 1, 1) == LUA_TNIL && u->c) {
      lua_pop(L, 1);
      ctx_auth_push(L, ctx_client_principal(u->c));
      lua_pushvalue(L, -1);
      lua_setiuservalue(L, 1, 1);
    }
    return 1;
  }
  if (strcmp(key, "protocol_version") == 0) {
    if (u->c) lua_pushstring(L, ctx_client_version(u->c));
    else lua_pushnil(L);
    return 1;
  }
  lua_getfield(L, lua_upvalueindex(1), key);
  return 1;
}

static int ctx_tostring(lua_State *L) {
  ctx_ud *u = luaL_checkudata(L, 1, CTX_TYPE);
  lua_pushstring(L, u->c ? "mcp.ctx" : "mcp.ctx (closed)");
  return 1;
}

void *lua_api_push_ctx(lua_State *L, call *c) {
  ctx_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
  u->c = c;
  if (luaL_newmetatable(L, CTX_TYPE)) {
    luaL_newlib(L, ctx_methods);
    lua_pushcclosure(L, ctx_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, ctx_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_setmetatable(L, -2);
  return u;
}

void lua_api_close_ctx(void *ctx) { ((ctx_ud *)ctx)->c = NULL; }

/* }====================================================== */

void lua_api_push_core(lua_State *L) {
  luaL_newlib(L, core_funcs);
  size_t len;
  const char *view = embedded_source("view", &len); /* the view helper (lua/view.js) */
  if (view) {
    lua_pushlstring(L, view, len);
    lua_setfield(L, -2, "view_js");
  }
  json_pushnull(L);
  lua_setfield(L, -2, "null");
  json_push_array_mt(L);
  lua_setfield(L, -2, "array_mt");
  lua_newtable(L);
  lua_setfield(L, -2, "state");
  /* {====== I/O modules: core.<name>, exposed as mcp.<name> by lua/mcp.lua */
  io_http_push(L);
  lua_setfield(L, -2, "http");
  io_exec_push(L);
  lua_setfield(L, -2, "exec");
  io_socket_push(L);
  lua_setfield(L, -2, "socket");
  store_push(L);
  lua_setfield(L, -2, "store");
  io_redis_push(L);
  lua_setfield(L, -2, "redis");
  db_push(L);
  lua_setfield(L, -2, "db");
  mcp_client_push(L);
  lua_setfield(L, -2, "client");
  {
    size_t n;
    const char *src = embedded_source("client", &n); /* lua/client.lua, run by lua/mcp.lua */
    if (src) lua_pushlstring(L, src, n), lua_setfield(L, -2, "client_lua");
    src = embedded_source("mount", &n); /* lua/mount.lua: mcp.mount */
    if (src) lua_pushlstring(L, src, n), lua_setfield(L, -2, "mount_lua");
    src = embedded_source("mcp-results", &n); /* what its answers are checked against */
    if (src) lua_pushlstring(L, src, n), lua_setfield(L, -2, "results_json");
    lua_pushstring(L, LUAMCP_VERSION);
    lua_setfield(L, -2, "version");
  }
  /* }====== */
  call_threads_register(L); /* core.spawn, core.all (core/reactor/call_threads.c) */
}
