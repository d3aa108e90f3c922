/* luax.c — small Lua helpers the floors share (luax.h). */
#include "luax.h"

#include <stdarg.h>

#include <lauxlib.h>
#include <lua.h>

void luax_push_weak_table(lua_State *L, const void *key) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_createtable(L, 0, 8);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, key);
}

int luax_rawfield(lua_State *L, int idx, const char *key) {
  idx = lua_absindex(L, idx);
  lua_pushstring(L, key);
  return lua_rawget(L, idx);
}

int luax_error_at(lua_State *L, int level) {
  luaL_where(L, level);
  lua_insert(L, -2);
  lua_concat(L, 2);
  return lua_error(L);
}

int luax_raise_at(lua_State *L, int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  return luax_error_at(L, level);
}
