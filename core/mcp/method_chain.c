/* method_chain.c — starting a method's call: its span named for what it
 * calls, then the handler, or with middleware (mcp.use) the chain in C:
 * next is a light C function (no closure per call), and where the chain
 * is stays in the request. */
#include "server_internal.h"

#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

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
  uint64_t bit = (uint64_t)1 << (i & 63); /* mcp.use allows at most 64 */
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

void method_chain_start(server *srv, call *c, const char *method, const char *name,
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
    call_start(srv->e, c, n + 1);
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
  call_start(srv->e, c, 0);
}

