/* fuzz_pattern.c — our Lua pattern functions (core/vm/lua_pattern.c) against
 * Lua's own string.find, match, gmatch and gsub, on random patterns and
 * subjects: the same results (values and their math types) and the same
 * errors (the function name in "bad argument ... to 'x'" aside, as
 * tests/unit/test_pattern.lua does). Ours run first, under an interrupt
 * check that stops them after STOP_AFTER checks (a few hundred thousand
 * steps); a call it stopped is not run on Lua's, whose backtracking has no
 * such bound. Input: a byte for the function, one for init (0x80: none),
 * one for find's plain / gsub's max, then pattern, newline, subject,
 * newline, gsub's replacement string. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "fuzz.h"
#include "lua_pattern.h"

#define STOP_AFTER 32
#define STOPPED "stopped by the fuzzer's check"

static lua_State *L;
static int asked;
static bool fired;

static const char *check(lua_State *state) {
  (void)state;
  if (++asked > STOP_AFTER) {
    fired = true;
    return STOPPED;
  }
  return NULL;
}

static int l_arm(lua_State *state) {
  asked = 0;
  fired = false;
  (void)state;
  return 0;
}

static int l_fired(lua_State *state) {
  lua_pushboolean(state, fired);
  return 1;
}

static const char driver[] =
    "local ORIG, NEW, arm, fired = ...\n"
    "local gsub, concat, pack, format = ORIG.gsub, table.concat, table.pack, string.format\n"
    "local function norm(v)\n"
    "  if type(v) == 'string' then return (gsub(v, \"to '[^']*'\", \"to '?'\")) end\n"
    "  return v\n"
    "end\n"
    "local function show(r)\n"
    "  local t = {}\n"
    "  for i = 1, r.n do\n"
    "    local v = r[i]\n"
    "    t[i] = type(v) == 'string' and format('%q', v) or\n"
    "           (tostring(v) .. (math.type(v) == 'float' and '(float)' or ''))\n"
    "  end\n"
    "  return concat(t, ', ')\n"
    "end\n"
    "local function gm(lib, s, p, init)\n"
    "  local out = {n = 0}\n"
    "  local ok, it = pcall(lib.gmatch, s, p, init)\n"
    "  if not ok then return pack(false, norm(it)) end\n"
    "  for _ = 1, 100 do\n"
    "    local r = pack(pcall(it))\n"
    "    if not r[1] then r[2] = norm(r[2]) end\n"
    "    out.n = out.n + 1; out[out.n] = show(r)\n"
    "    if not r[1] or r[2] == nil then break end\n"
    "  end\n"
    "  return out\n"
    "end\n"
    "local function call(lib, op, s, p, init, extra, repl)\n"
    "  if op == 2 then return gm(lib, s, p, init) end\n"
    "  local r\n"
    "  if op == 0 then r = pack(pcall(lib.find, s, p, init, extra % 2 == 1))\n"
    "  elseif op == 1 then r = pack(pcall(lib.match, s, p, init))\n"
    "  else r = pack(pcall(lib.gsub, s, p, repl, extra < 128 and extra % 8 or nil)) end\n"
    "  if not r[1] then r[2] = norm(r[2]) end\n"
    "  return r\n"
    "end\n"
    "return function(op, s, p, init, extra, repl)\n"
    "  arm()\n"
    "  local b = call(NEW, op, s, p, init, extra, repl)\n"
    "  if fired() then return true end\n"
    "  local a = call(ORIG, op, s, p, init, extra, repl)\n"
    "  local sa, sb = show(a), show(b)\n"
    "  if sa == sb then return true end\n"
    "  return format('%s(%q, %q, %s): lua %s, ours %s', ({'find','match','gmatch','gsub'})[op + 1],\n"
    "                s, p, tostring(init), sa, sb)\n"
    "end\n";

static void save(const char *name) {
  static const char *const fns[] = {"find", "match", "gmatch", "gsub"};
  lua_newtable(L);
  lua_getglobal(L, "string");
  for (int i = 0; i < 4; i++) {
    lua_getfield(L, -1, fns[i]);
    lua_setfield(L, -3, fns[i]);
  }
  lua_pop(L, 1);
  lua_setglobal(L, name);
}

static void setup(void) {
  L = luaL_newstate();
  luaL_openlibs(L);
  save("ORIG");
  lua_pattern_install(L, check);
  save("NEW");
  FUZZ_CHECK(luaL_loadstring(L, driver) == LUA_OK);
  lua_getglobal(L, "ORIG");
  lua_getglobal(L, "NEW");
  lua_pushcfunction(L, l_arm);
  lua_pushcfunction(L, l_fired);
  FUZZ_CHECK(lua_pcall(L, 4, 1, 0) == LUA_OK);
  lua_setglobal(L, "compare");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!L) setup();
  if (size < 3) return 0;
  const uint8_t *q = data + 3, *end = data + size, *pp, *sp;
  size_t pn = fuzz_part(&q, end, '\n', &pp), sn = fuzz_part(&q, end, '\n', &sp);
  lua_settop(L, 0);
  lua_getglobal(L, "compare");
  lua_pushinteger(L, data[0] & 3);
  lua_pushlstring(L, (const char *)sp, sn);
  lua_pushlstring(L, (const char *)pp, pn);
  if (data[1] == 0x80)
    lua_pushnil(L);
  else
    lua_pushinteger(L, (signed char)data[1] % 12);
  lua_pushinteger(L, data[2]);
  lua_pushlstring(L, (const char *)q, (size_t)(end - q));
  FUZZ_CHECK(lua_pcall(L, 6, 1, 0) == LUA_OK);
  if (!lua_toboolean(L, -1) || lua_type(L, -1) == LUA_TSTRING) {
    fprintf(stderr, "MISMATCH %s\n", lua_tostring(L, -1));
    FUZZ_CHECK(!"our pattern functions answer as Lua's");
  }
  lua_settop(L, 0);
  lua_gc(L, LUA_GCSTEP, 0);
  return 0;
}
