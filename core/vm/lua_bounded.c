/* lua_bounded.c — string.rep, table.insert/remove/move that the call's
 * limits can end (see lua_bounded.h). */
#include "lua_bounded.h"

#include <limits.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

/* The interrupt check, upvalue 1 of every replacement. */
typedef struct hold {
  lua_pattern_interrupt check;
} hold;

/* Raise the call's interrupt (deadline, cancel), if there is one. */
static void bounded_checkpoint(lua_State *L) {
  const hold *h = lua_touserdata(L, lua_upvalueindex(1));
  const char *why = h && h->check ? h->check(L) : NULL;
  if (why) luaL_error(L, "%s", why);
}

#define EVERY(i) (((i) & (BOUNDED_CHECK_EVERY - 1)) == 0)

/* {====================================================== string.rep */

#define MAXSIZE ((size_t)INT_MAX) /* lstrlib.c's, for a 64-bit size_t */
#define REP_CHECK_BYTES ((size_t)1 << 20)

/* string.rep(s, n [, sep]): one copy of s..sep, then the result doubles
   itself; an empty s and sep make an empty string at once, however large
   n is. */
static int str_rep(lua_State *L) {
  size_t l, lsep;
  const char *s = luaL_checklstring(L, 1, &l);
  lua_Integer n = luaL_checkinteger(L, 2);
  const char *sep = luaL_optlstring(L, 3, "", &lsep);
  if (n <= 0 || l + lsep == 0) {
    lua_pushliteral(L, "");
    return 1;
  }
  if (l + lsep < l || l + lsep > MAXSIZE / (lua_Unsigned)n)
    return luaL_error(L, "resulting string too large");
  size_t total = (size_t)n * l + (size_t)(n - 1) * lsep;
  luaL_Buffer b;
  char *p = luaL_buffinitsize(L, &b, total);
  memcpy(p, s, l);
  size_t have = l;
  if (n > 1) {
    memcpy(p + l, sep, lsep); /* the unit: s..sep */
    have += lsep;
  }
  /* p holds whole units (the last one without its sep once complete) */
  while (have < total) {
    size_t more = have < total - have ? have : total - have;
    memcpy(p + have, p, more);
    have += more;
    if (have >= REP_CHECK_BYTES && have < total) bounded_checkpoint(L);
  }
  luaL_pushresultsize(&b, total);
  return 1;
}

/* }====================================================== */

/* {====================================================== table */

/* ltablib.c's: what an object must define to stand in for a table. */
#define TAB_R 1
#define TAB_W 2
#define TAB_L 4
#define TAB_RW (TAB_R | TAB_W)

static int checkfield(lua_State *L, const char *key, int n) {
  lua_pushstring(L, key);
  return lua_rawget(L, -n) != LUA_TNIL;
}

static void checktab(lua_State *L, int arg, int what) {
  if (lua_type(L, arg) != LUA_TTABLE) {
    int n = 1;
    if (lua_getmetatable(L, arg) && (!(what & TAB_R) || checkfield(L, "__index", ++n)) &&
        (!(what & TAB_W) || checkfield(L, "__newindex", ++n)) &&
        (!(what & TAB_L) || checkfield(L, "__len", ++n)))
      lua_pop(L, n);
    else
      luaL_checktype(L, arg, LUA_TTABLE); /* raises */
  }
}

static lua_Integer aux_getn(lua_State *L, int n, int what) {
  checktab(L, n, what | TAB_L);
  return luaL_len(L, n);
}

static int tinsert(lua_State *L) {
  lua_Integer pos;
  lua_Integer e = aux_getn(L, 1, TAB_RW);
  e = (lua_Integer)((lua_Unsigned)e + 1u); /* the first empty element */
  switch (lua_gettop(L)) {
    case 2: pos = e; break;
    case 3: {
      pos = luaL_checkinteger(L, 2);
      luaL_argcheck(L, (lua_Unsigned)pos - 1u < (lua_Unsigned)e, 2, "position out of bounds");
      for (lua_Integer i = e; i > pos; i--) { /* move up elements */
        if (EVERY(e - i + 1)) bounded_checkpoint(L);
        lua_geti(L, 1, i - 1);
        lua_seti(L, 1, i);
      }
      break;
    }
    default: return luaL_error(L, "wrong number of arguments to 'insert'");
  }
  lua_seti(L, 1, pos);
  return 0;
}

static int tremove(lua_State *L) {
  lua_Integer size = aux_getn(L, 1, TAB_RW);
  lua_Integer pos = luaL_optinteger(L, 2, size);
  if (pos != size)
    luaL_argcheck(L, (lua_Unsigned)pos - 1u <= (lua_Unsigned)size, 1, "position out of bounds");
  lua_geti(L, 1, pos); /* the result */
  for (lua_Integer k = 1; pos < size; pos++, k++) {
    if (EVERY(k)) bounded_checkpoint(L);
    lua_geti(L, 1, pos + 1);
    lua_seti(L, 1, pos);
  }
  lua_pushnil(L);
  lua_seti(L, 1, pos);
  return 1;
}

/* table.move(a1, f, e, t [, a2]): increasing order where the ranges allow. */
static int tmove(lua_State *L) {
  lua_Integer f = luaL_checkinteger(L, 2);
  lua_Integer e = luaL_checkinteger(L, 3);
  lua_Integer t = luaL_checkinteger(L, 4);
  int tt = !lua_isnoneornil(L, 5) ? 5 : 1;
  checktab(L, 1, TAB_R);
  checktab(L, tt, TAB_W);
  if (e >= f) {
    luaL_argcheck(L, f > 0 || e < LUA_MAXINTEGER + f, 3, "too many elements to move");
    lua_Integer n = e - f + 1;
    luaL_argcheck(L, t <= LUA_MAXINTEGER - n + 1, 4, "destination wrap around");
    if (t > e || t <= f || (tt != 1 && !lua_compare(L, 1, tt, LUA_OPEQ))) {
      for (lua_Integer i = 0; i < n; i++) {
        if (EVERY(i + 1)) bounded_checkpoint(L);
        lua_geti(L, 1, f + i);
        lua_seti(L, tt, t + i);
      }
    } else {
      for (lua_Integer i = n - 1; i >= 0; i--) {
        if (EVERY(n - i)) bounded_checkpoint(L);
        lua_geti(L, 1, f + i);
        lua_seti(L, tt, t + i);
      }
    }
  }
  lua_pushvalue(L, tt);
  return 1;
}

/* }====================================================== */

/* Set lib.name = fn with the shared check as its upvalue (at -1). */
static void put(lua_State *L, const char *lib, const char *name, lua_CFunction fn) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, lib) == LUA_TTABLE) {
    lua_pushvalue(L, -3);
    lua_pushcclosure(L, fn, 1);
    lua_setfield(L, -2, name);
  }
  lua_pop(L, 2);
}

void lua_bounded_install(lua_State *L, lua_pattern_interrupt check) {
  hold *h = lua_newuserdatauv(L, sizeof *h, 0);
  h->check = check;
  put(L, LUA_STRLIBNAME, "rep", str_rep);
  put(L, LUA_TABLIBNAME, "insert", tinsert);
  put(L, LUA_TABLIBNAME, "remove", tremove);
  put(L, LUA_TABLIBNAME, "move", tmove);
  lua_pop(L, 1);
}
