/* results.c — a handler's return values shaped into the MCP result of its
 * request: the tool result (text, content, structuredContent checked
 * against the outputSchema), resource contents, prompt messages,
 * completion values. The shapers of lua/mcp.lua do the Lua side; every
 * use of the script's values runs under a protected call, so a metamethod
 * that raises becomes an error answer, not an abort. */
#include "server_internal.h"

#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "clock.h"
#include "json.h"
#include "luax.h"
#include "log.h"
#include "validate.h"

static json_span id_of(call *c) {
  size_t n;
  const char *p = call_id(c, &n);
  return (json_span){p, n};
}


/* Run the shaper (a function ref in lua/mcp.lua) on the results left on
   the finished coroutine; leaves one table on co or returns false with the
   error reported. */
static bool shape(server *srv, call *c, int shaper, int nres, int extra) {
  lua_State *co = call_thread(c);
  lua_rawgeti(co, LUA_REGISTRYINDEX, shaper);
  lua_insert(co, -(nres + extra) - 1);
  if (vm_pcall(co, nres + extra, 1, NULL) != LUA_OK) {
    results_failed(srv, c, lua_tostring(co, -1));
    return false;
  }
  return true;
}

/* 2026-07-28: the result says it is complete and who answered; a
   resources/read result also how long it may be cached (the resource's
   cache = {ttl=, scope=}, else private and not at all). Set on the table,
   which may have a _meta of its own. */
static void decorate(call *c, int idx) {
  lua_State *co = call_thread(c);
  request *r = request_of(c);
  if (!proto_per_request(r->cv.version)) return;
  const registry *reg = call_app(c)->reg;
  idx = lua_absindex(co, idx);
  lua_pushliteral(co, "complete");
  lua_setfield(co, idx, "resultType");
  if (luax_rawfield(co, idx, "_meta") != LUA_TTABLE) {
    lua_pop(co, 1);
    lua_newtable(co);
    lua_pushvalue(co, -1);
    lua_setfield(co, idx, "_meta");
  }
  lua_createtable(co, 0, 2);
  lua_pushstring(co, reg->name);
  lua_setfield(co, -2, "name");
  lua_pushstring(co, reg->version);
  lua_setfield(co, -2, "version");
  lua_setfield(co, -2, "io.modelcontextprotocol/serverInfo");
  lua_pop(co, 1);
  if (r->kind != CALL_RESOURCE) return;
  double ttl = 0;
  const char *scope = "private";
  lua_rawgeti(co, LUA_REGISTRYINDEX, r->entry_ref);
  if (luax_rawfield(co, -1, "cache") == LUA_TTABLE) {
    if (luax_rawfield(co, -1, "ttl") == LUA_TNUMBER) ttl = lua_tonumber(co, -1);
    lua_pop(co, 1);
    if (luax_rawfield(co, -1, "scope") == LUA_TSTRING && strcmp(lua_tostring(co, -1), "public") == 0)
      scope = "public";
    lua_pop(co, 1);
  }
  lua_pop(co, 2);
  lua_pushinteger(co, (lua_Integer)(ttl * 1000));
  lua_setfield(co, idx, "ttlMs");
  lua_pushstring(co, scope);
  lua_setfield(co, idx, "cacheScope");
}

static void encode_result(server *srv, call *c, int idx) {
  lua_State *co = call_thread(c);
  request *r = request_of(c);
  decorate(c, idx);
  buf *out = output_reply(srv, r->out);
  size_t mark = out->len;
  char err[256];
  jsonrpc_begin_result(out, id_of(c));
  if (!json_encode_result(co, idx, out, err, sizeof err)) {
    out->len = mark;
    char msg[600];
    const char *where = NULL;
    if (r->kind == CALL_TOOL) {
      where = r->tool->where;
    } else if (r->entry_ref != LUA_NOREF) {
      lua_rawgeti(co, LUA_REGISTRYINDEX, r->entry_ref);
      if (luax_rawfield(co, -1, "where") == LUA_TSTRING) where = lua_tostring(co, -1); /* the entry keeps it */
      lua_pop(co, 2);
    }
    snprintf(msg, sizeof msg, "%s%sthe handler's result cannot be sent: %s", where ? where : "",
             where ? ": " : "", err);
    results_failed(srv, c, msg);
    return;
  }
  jsonrpc_end_reply(out);
}

/* 2025-11-25 has structuredContent an object: a list (or any other value)
   travels as {"result": value}, as the official SDKs wrap it. */
static void wrap_structured(lua_State *co, int idx) {
  idx = lua_absindex(co, idx);
  int t = luax_rawfield(co, idx, "structuredContent");
  if (t == LUA_TNIL || (t == LUA_TTABLE && json_table_array_len(co, -1) < 0)) {
    lua_pop(co, 1);
    return;
  }
  lua_createtable(co, 0, 1);
  lua_insert(co, -2);
  lua_setfield(co, -2, "result");
  lua_setfield(co, idx, "structuredContent");
}

/* The common case: a tool without an output schema returned a string.
   Nothing of the script's is touched but the string: no protected call. */
static bool text_result(server *srv, call *c, int nres) {
  lua_State *co = call_thread(c);
  request *r = request_of(c);
  if (r->kind != CALL_TOOL || nres < 1 || lua_type(co, -nres) != LUA_TSTRING ||
      r->tool->output != LUA_NOREF)
    return false;
  size_t n;
  const char *s = lua_tolstring(co, -nres, &n);
  buf *out = output_reply(srv, r->out);
  jsonrpc_begin_result(out, id_of(c));
  buf_puts(out, "{\"content\":[{\"type\":\"text\",\"text\":");
  json_encode_string(out, s, n);
  buf_puts(out, "}]");
  output_result_tail(srv, &r->cv, out);
  buf_putc(out, '}');
  jsonrpc_end_reply(out);
  return true;
}

static void finish_tool(server *srv, call *c, int nres) {
  lua_State *co = call_thread(c);
  request *r = request_of(c);
  const reg_tool *t = r->tool;
  if (nres > 1) lua_pop(co, nres - 1);
  if (nres == 0) lua_pushnil(co);
  lua_pushstring(co, t->where);
  lua_pushboolean(co, t->output != LUA_NOREF); /* a list or a value is then its structured output */
  if (!shape(srv, c, call_app(c)->tool_result, 1, 2)) return;
  luax_rawfield(co, -1, "isError");
  if (lua_toboolean(co, -1)) r->outcome = OUTCOME_TOOL_ERROR;
  lua_pop(co, 1);
  /* an output schema describes an object: a list (or other value) is
     checked, and sent, as {"result": value}, on every revision */
  if (t->output != LUA_NOREF) wrap_structured(co, -1);
  if (t->output != LUA_NOREF) {
    luax_rawfield(co, -1, "isError");
    bool is_error = lua_toboolean(co, -1);
    lua_pop(co, 1);
    if (!is_error) {
      lua_rawgeti(co, LUA_REGISTRYINDEX, t->output);
      luax_rawfield(co, -2, "structuredContent");
      buf err;
      buf_init(&err);
      bool ok = !lua_isnil(co, -1);
      if (!ok) buf_puts(&err, "the tool declares an outputSchema but returned no structured content");
      else if (!schema_validate_frozen_limited(
                   co, -2, -1, &err,
                   &(schema_limits){.deadline = clock_now() + call_time_left(c),
                                    .assert_format = call_app(c)->reg->assert_format}))
        ok = false;
      lua_pop(co, 2);
      if (!ok) {
        buf msg;
        buf_init(&msg);
        buf_printf(&msg, "%s: tool '%s' returned invalid output: %.*s", t->where, t->name,
                   (int)err.len, err.p);
        log_msg(LOG_ERROR, "%.*s", (int)msg.len, msg.p);
        r->outcome = OUTCOME_TOOL_ERROR;
        output_tool_error(srv, &r->cv, output_reply(srv, r->out), id_of(c), msg.p, msg.len);
        buf_free(&msg);
        buf_free(&err);
        return;
      }
      buf_free(&err);
    }
  }
  if (!proto_per_request(r->cv.version)) wrap_structured(co, -1);
  encode_result(srv, c, -1);
}

static void finish_resource(server *srv, call *c, int nres) {
  lua_State *co = call_thread(c);
  request *r = request_of(c);
  if (nres > 1) lua_pop(co, nres - 1);
  if (nres == 0 || lua_isnil(co, -1)) {
    buf d;
    buf_init(&d);
    buf_puts(&d, "{\"uri\":");
    json_encode_string(&d, r->uri, strlen(r->uri));
    buf_putc(&d, '}');
    buf_putc(&d, '\0');
    /* 2026-07-28 has no -32002: not found is invalid params */
    output_rpc_error(srv, r->out, id_of(c),
                     proto_per_request(r->cv.version) ? JSONRPC_INVALID_PARAMS : MCP_RESOURCE_NOT_FOUND,
                     "Resource not found", d.p);
    buf_free(&d);
    return;
  }
  lua_pushstring(co, r->uri);
  lua_rawgeti(co, LUA_REGISTRYINDEX, r->entry_ref);
  luax_rawfield(co, -1, "mime");
  luax_rawfield(co, -2, "where"); /* FILE:LINE of read, for the errors */
  lua_remove(co, -3);
  if (!shape(srv, c, call_app(c)->resource_result, 1, 3)) return;
  lua_createtable(co, 0, 1);
  lua_insert(co, -2);
  lua_setfield(co, -2, "contents");
  encode_result(srv, c, -1);
}

static void finish_prompt(server *srv, call *c, int nres) {
  lua_State *co = call_thread(c);
  request *r = request_of(c);
  if (nres > 1) lua_pop(co, nres - 1);
  if (nres == 0) lua_pushnil(co);
  lua_rawgeti(co, LUA_REGISTRYINDEX, r->entry_ref);
  luax_rawfield(co, -1, "def");
  luax_rawfield(co, -2, "where"); /* FILE:LINE of get, for the errors */
  lua_remove(co, -3);
  if (!shape(srv, c, call_app(c)->prompt_result, 1, 2)) return;
  encode_result(srv, c, -1);
}

/* Completion values: a list of strings (at most 100 are sent). */
static void finish_complete(server *srv, call *c, int nres) {
  lua_State *co = call_thread(c);
  request *r = request_of(c);
  buf *out = output_reply(srv, r->out);
  size_t total = 0;
  jsonrpc_begin_result(out, id_of(c));
  buf_puts(out, "{\"completion\":{\"values\":[");
  if (nres >= 1 && lua_istable(co, -nres)) {
    int t = lua_absindex(co, -nres);
    total = lua_rawlen(co, t);
    for (size_t i = 1; i <= total && i <= 100; i++) {
      if (i > 1) buf_putc(out, ',');
      int type = lua_rawgeti(co, t, (lua_Integer)i);
      if (type != LUA_TSTRING && type != LUA_TNUMBER) /* no __tostring: values are text */
        luaL_error(co, "completion value %d is a %s; completion values must be strings", (int)i,
                   lua_typename(co, type));
      size_t n;
      const char *s = lua_tolstring(co, -1, &n);
      json_encode_string(out, s, n);
      lua_pop(co, 1);
    }
  }
  buf_printf(out, "],\"total\":%zu,\"hasMore\":%s}", total, total > 100 ? "true" : "false");
  output_result_tail(srv, &r->cv, out);
  buf_putc(out, '}');
  jsonrpc_end_reply(out);
}


/* The handler's nres results are this function's arguments (run under
   vm_pcall on the finished coroutine). */
static int finish_entry(lua_State *co) {
  call *c = call_of(co);
  request *r = request_of(c);
  server *srv = r->srv;
  int nres = lua_gettop(co);
  switch (r->kind) {
    case CALL_TOOL: finish_tool(srv, c, nres); break;
    case CALL_RESOURCE: finish_resource(srv, c, nres); break;
    case CALL_PROMPT: finish_prompt(srv, c, nres); break;
    case CALL_COMPLETE: finish_complete(srv, c, nres); break;
  }
  return 0;
}

/* The value at idx is an mcp.rpc_error (its metatable's __name): answer c
   with that JSON-RPC error. Only raw reads of the script's table. */
static bool rpc_error(server *srv, call *c, int idx) {
  lua_State *co = call_thread(c);
  if (lua_type(co, idx) != LUA_TTABLE || !lua_getmetatable(co, idx)) return false;
  lua_pushliteral(co, "__name");
  lua_rawget(co, -2);
  bool is = lua_type(co, -1) == LUA_TSTRING && strcmp(lua_tostring(co, -1), "mcp.rpc_error") == 0;
  lua_pop(co, 2);
  if (!is) return false;
  request_of(c)->outcome = OUTCOME_ERROR;
  idx = lua_absindex(co, idx);
  int top = lua_gettop(co);
  luax_rawfield(co, idx, "code");
  int code = lua_isinteger(co, -1) ? (int)lua_tointeger(co, -1) : JSONRPC_INTERNAL_ERROR;
  luax_rawfield(co, idx, "message");
  const char *msg = lua_type(co, -1) == LUA_TSTRING ? lua_tostring(co, -1) : "error";
  buf data;
  buf_init(&data);
  if (luax_rawfield(co, idx, "data") != LUA_TNIL) {
    char err[128];
    if (!json_encode(co, -1, &data, err, sizeof err)) data.len = 0;
    buf_putc(&data, '\0');
  }
  output_rpc_error(srv, request_of(c)->out, id_of(c), code, msg, data.len > 1 ? data.p : NULL);
  buf_free(&data);
  lua_settop(co, top);
  return true;
}

void results_returned(void *ud, call *c, int nres) {
  server *srv = ud;
  lua_State *L = call_thread(c);
  /* Lua's own idiom for a failure: return nil, "what went wrong" */
  if (nres >= 2 && lua_isnil(L, -nres) && lua_type(L, -nres + 1) == LUA_TSTRING) {
    lua_pushvalue(L, -nres + 1);
    results_failed(srv, c, lua_tostring(L, -1));
    return;
  }
  if (nres >= 1 && rpc_error(srv, c, -nres)) return;
  if (text_result(srv, c, nres)) return;
  request *r = request_of(c);
  lua_State *co = call_thread(c);
  size_t mark = r->out->out.len;
  lua_pushcfunction(co, finish_entry);
  lua_insert(co, -nres - 1);
  if (lua_pcall(co, nres, 0, 0) != LUA_OK) { /* no traceback: the message names the line */
    r->out->out.len = mark; /* what was half written */
    const char *msg = lua_tostring(co, -1);
    if (!msg) msg = "the handler's result cannot be sent";
    log_msg(LOG_ERROR, "shaping a result failed: %s", msg);
    results_failed(srv, c, msg);
  }
}

/* The handler failed: tools answer isError (so the model can react), the
   other kinds a JSON-RPC internal error. */
void results_failed(void *ud, call *c, const char *msg) {
  request *r = request_of(c);
  if (lua_gettop(call_thread(c)) > 0 && rpc_error(ud, c, -1)) return; /* error(mcp.rpc_error(...)) */
  r->outcome = r->kind == CALL_TOOL ? OUTCOME_TOOL_ERROR : OUTCOME_ERROR;
  if (r->span && !r->failure) r->failure = strdup(msg);
  if (r->kind == CALL_TOOL)
    output_tool_error(ud, &r->cv, output_reply(ud, r->out), id_of(c), msg, strlen(msg));
  else output_rpc_error(ud, r->out, id_of(c), JSONRPC_INTERNAL_ERROR, msg, NULL);
}
