/* ctx_auth.c — ctx.auth: who calls, as the handler sees it. A read-only
 * table (the token's claims included) built from the call's principal on
 * first use; nil when the request carried no identity (stdio, an open
 * server). Scripts never see the token itself. */
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "lua_api.h"
#include "principal.h"

static int ro_refuse(lua_State *L) {
  return luaL_error(L, "ctx.auth is read-only (its field '%s')", luaL_tolstring(L, 2, NULL));
}

static int ro_next(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  if (lua_next(L, 1)) return 2;
  lua_pushnil(L);
  return 1;
}

static int ro_pairs(lua_State *L) {
  lua_pushcfunction(L, ro_next);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushnil(L);
  return 3;
}

static int ro_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)lua_rawlen(L, lua_upvalueindex(1)));
  return 1;
}

/* Replace the table at idx by a read-only view of it, nested tables too
   (the table itself stays reachable only through the view's metatable,
   which is hidden). */
static void freeze(lua_State *L, int idx, int depth) {
  idx = lua_absindex(L, idx);
  luaL_checkstack(L, 8, "ctx.auth: claims nested too deeply");
  if (depth < 64) {
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      if (lua_type(L, -1) == LUA_TTABLE) {
        freeze(L, -1, depth + 1);
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, idx);
      } else {
        lua_pop(L, 1);
      }
    }
  }
  lua_newtable(L); /* the view */
  lua_createtable(L, 0, 6);
  lua_pushvalue(L, idx);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, ro_refuse);
  lua_setfield(L, -2, "__newindex");
  lua_pushvalue(L, idx);
  lua_pushcclosure(L, ro_pairs, 1);
  lua_setfield(L, -2, "__pairs");
  lua_pushvalue(L, idx);
  lua_pushcclosure(L, ro_len, 1);
  lua_setfield(L, -2, "__len");
  lua_pushliteral(L, "read-only");
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_replace(L, idx);
}

/* ctx.auth:has(scope, ...): every scope named was granted */
static int auth_has(lua_State *L) {
  int n = lua_gettop(L);
  luaL_checkany(L, 1);
  if (n < 2) return luaL_error(L, "ctx.auth:has needs a scope (a string)");
  lua_getfield(L, 1, "scopes");
  int scopes = lua_gettop(L);
  for (int i = 2; i <= n; i++) {
    size_t want_len;
    const char *want = luaL_checklstring(L, i, &want_len);
    bool found = false;
    for (lua_Integer k = 1; !found && lua_geti(L, scopes, k) == LUA_TSTRING; k++) {
      size_t len;
      const char *s = lua_tolstring(L, -1, &len);
      found = len == want_len && memcmp(s, want, len) == 0;
      lua_pop(L, 1);
    }
    if (!found) {
      lua_pushboolean(L, 0);
      return 1;
    }
  }
  lua_pushboolean(L, 1);
  return 1;
}

static void set_string(lua_State *L, const char *key, const char *v) {
  if (!v) return;
  lua_pushstring(L, v);
  lua_setfield(L, -2, key);
}

void ctx_auth_push(lua_State *L, const principal *p) {
  if (!p) {
    lua_pushnil(L);
    return;
  }
  lua_createtable(L, 0, 10);
  set_string(L, "subject", p->subject);
  /* the caller's data key (principal_owner_key): never one shared by two
     callers, absent only for a made-up caller without a subject */
  char *key = principal_owner_key(p);
  if (!key && p->subject && p->subject[0]) luaL_error(L, "ctx.auth: out of memory");
  set_string(L, "key", key);
  free(key);
  if (p->subject_is_client) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "subject_is_client");
  }
  set_string(L, "client_id", p->client_id);
  set_string(L, "issuer", p->issuer);
  if (p->exp) {
    lua_pushinteger(L, (lua_Integer)p->exp);
    lua_setfield(L, -2, "expires");
  }
  lua_newtable(L);
  lua_Integer k = 0;
  for (const char *s = p->scope; *s;) {
    size_t len = strcspn(s, " ");
    if (len) {
      lua_pushlstring(L, s, len);
      lua_rawseti(L, -2, ++k);
    }
    s += len;
    while (*s == ' ') s++;
  }
  lua_setfield(L, -2, "scopes");
  const char *err;
  if (!json_decode(L, p->claims, p->claims_len, &err) || !lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
  }
  lua_setfield(L, -2, "claims");
  lua_pushcfunction(L, auth_has);
  lua_setfield(L, -2, "has");
  freeze(L, -1, 0);
}
