/* check_lua.h — what the C unit tests of Lua library replacements share
 * (test_pattern.c, test_bounded.c): running a chunk, and judging the
 * differential script's count of cases and mismatches. */
#ifndef LUAMCP_CHECK_LUA_H
#define LUAMCP_CHECK_LUA_H

#include <stdio.h>

#include <lauxlib.h>
#include <lua.h>

#include "check.h"

/* Run code; NULL if it ran, else its error message (valid until the next
   run). */
static const char *run(lua_State *L, const char *code) {
  static char err[512];
  lua_settop(L, 0);
  if (luaL_loadstring(L, code) != LUA_OK || lua_pcall(L, 0, LUA_MULTRET, 0) != LUA_OK) {
    snprintf(err, sizeof err, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "(not a string)");
    lua_settop(L, 0);
    return err;
  }
  return NULL;
}

/* status: the differential script's pcall, which left (mismatches, cases)
   or its error; at least min_cases must have run, with no mismatch. */
static void check_differential(lua_State *L, int status, const char *what, lua_Integer min_cases) {
  if (status != LUA_OK) {
    fprintf(stderr, "%s: %s\n", what, lua_tostring(L, -1));
    CHECK(!"the differential script ran");
    return;
  }
  lua_Integer bad = lua_tointeger(L, -2), cases = lua_tointeger(L, -1);
  printf("differential: %lld cases, %lld mismatches\n", (long long)cases, (long long)bad);
  CHECK(bad == 0);
  CHECK(cases > min_cases);
}

#endif
