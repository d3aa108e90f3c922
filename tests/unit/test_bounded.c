/* test_bounded.c — core/vm/lua_bounded.c: string.rep, table.insert, remove and
 * move give Lua 5.4's results and errors (compared with Lua's own functions
 * over fixed and random cases, metamethods included), and the interrupt
 * check ends the calls that would otherwise loop in C for centuries. No
 * timing is asserted, only that the check was asked and its message raised. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "check_lua.h"
#include "lua_bounded.h"

#define STOPPED "stopped by the test check"
static int asked, stop_after = -1;

static const char *test_check(lua_State *L) {
  (void)L;
  asked++;
  return stop_after >= 0 && asked > stop_after ? STOPPED : NULL;
}

/* A state with ORIG (Lua's rep, insert, remove, move) and NEW (ours). */
static lua_State *new_state(lua_pattern_interrupt check) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  const char *save = "local t = {rep = string.rep, insert = table.insert, remove = table.remove,"
                     " move = table.move} return t";
  luaL_dostring(L, save);
  lua_setglobal(L, "ORIG");
  lua_bounded_install(L, check);
  luaL_dostring(L, save);
  lua_setglobal(L, "NEW");
  return L;
}

/* The same outcome from ORIG and NEW: each case runs on fresh tables,
   built by a maker, and compares the results, the errors (with the
   function's name normalised: "to 'rep'" vs "to '?'") and the tables'
   contents afterwards. */
static const char differential[] =
    "local ORIG, NEW = ORIG, NEW\n"
    "local cases, bad = 0, 0\n"
    "local function norm(e) return type(e) == 'string' and e:gsub(\"to '[^']*'\", \"to '?'\") or e end\n"
    "local function dump(t, n)\n"
    "  if type(t) ~= 'table' then return tostring(t) end\n"
    "  local out = {}\n"
    "  for i = -2, n or 12 do out[#out + 1] = tostring(rawget(t, i)) end\n"
    "  return table.concat(out, ',')\n"
    "end\n"
    "local function same(name, make, ...)\n"
    "  cases = cases + 1\n"
    "  local a1, a2 = make(), make()\n"
    "  local args = table.pack(...)\n"
    "  local function call(F, t)\n"
    "    local ar = {}\n"
    "    for i = 1, args.n do ar[i] = args[i] == 'T' and t[1] or args[i] == 'U' and t[2] or args[i] end\n"
    "    return table.pack(pcall(F[name], table.unpack(ar, 1, args.n)))\n"
    "  end\n"
    "  local r1, r2 = call(ORIG, a1), call(NEW, a2)\n"
    "  local s1 = tostring(r1[1]) .. '|' .. tostring(norm(r1[2])) .. '|' .. dump(a1[1]) .. '|' .. dump(a1[2])\n"
    "  local s2 = tostring(r2[1]) .. '|' .. tostring(norm(r2[2])) .. '|' .. dump(a2[1]) .. '|' .. dump(a2[2])\n"
    "  if type(r1[2]) == 'table' then s1 = s1:gsub('table: 0x%x+', 'T') s2 = s2:gsub('table: 0x%x+', 'T') end\n"
    "  if r1.n ~= r2.n or s1 ~= s2 then\n"
    "    bad = bad + 1\n"
    "    if bad < 10 then print('mismatch', name, s1, s2) end\n"
    "  end\n"
    "end\n"
    "local function list(n) return function() local t = {} for i = 1, n do t[i] = i * 10 end return {t, {}} end end\n"
    "local function proxy(n) return function()\n"
    "  local store = {} for i = 1, n do store[i] = i end\n"
    "  local p = setmetatable({}, {__index = store, __newindex = store, __len = function() return n end})\n"
    "  return {p, store} end end\n"
    "local function weird() return {'x', 42} end\n"
    "-- string.rep\n"
    "for _, s in ipairs{'', 'a', 'ab', 'xyz\\0q'} do\n"
    "  for _, sep in ipairs{'', ',', '--', false} do\n"
    "    for _, n in ipairs{-3, 0, 1, 2, 3, 7, 64, 1000, 4097} do\n"
    "      if sep then same('rep', weird, s, n, sep) else same('rep', weird, s, n) end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "same('rep', weird, 'x', 2^31) same('rep', weird, 'ab', 2^40, ',') same('rep', weird, 'x', 1.5)\n"
    "same('rep', weird, {}, 2) same('rep', weird, 'x') same('rep', weird, 'x', '3') same('rep', weird, 5, 3, 1)\n"
    "-- table.insert / remove / move on lists, proxies and bad arguments\n"
    "for _, mk in ipairs{list(0), list(1), list(5), proxy(0), proxy(4)} do\n"
    "  for _, pos in ipairs{-1, 0, 1, 2, 3, 5, 6, 7} do\n"
    "    same('insert', mk, 'T', pos, 'v') same('remove', mk, 'T', pos)\n"
    "  end\n"
    "  same('insert', mk, 'T', 'v') same('remove', mk, 'T') same('insert', mk, 'T')\n"
    "  same('insert', mk, 'T', 1, 2, 3) same('insert', mk, 'T', 'x', 1) same('remove', mk, 'T', 'x')\n"
    "  for _, f in ipairs{-1, 0, 1, 2, 4} do\n"
    "    for _, e in ipairs{-1, 0, 1, 3, 5} do\n"
    "      for _, t in ipairs{-2, 0, 1, 2, 3, 6} do\n"
    "        same('move', mk, 'T', f, e, t) same('move', mk, 'T', f, e, t, 'U')\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "same('move', list(3), 'T', math.mininteger, 1, 1) same('move', list(3), 'T', 1, 3, math.maxinteger)\n"
    "same('move', list(3), 'T', 1, 3, 1, 5) same('move', list(3), 'T', 'a', 3, 1)\n"
    "same('insert', weird, 'T', 1) same('remove', weird, 'T') same('move', weird, 'T', 1, 1, 1)\n"
    "-- random ones\n"
    "math.randomseed(20261201)\n"
    "for _ = 1, 3000 do\n"
    "  local n = math.random(0, 9)\n"
    "  local mk = math.random() < 0.5 and list(n) or proxy(n)\n"
    "  local r = math.random(3)\n"
    "  if r == 1 then same('insert', mk, 'T', math.random(-1, n + 2), 'v')\n"
    "  elseif r == 2 then same('remove', mk, 'T', math.random(-1, n + 2))\n"
    "  else same('move', mk, 'T', math.random(-1, n + 1), math.random(-1, n + 1), math.random(-2, n + 3),\n"
    "                 math.random() < 0.5 and 'U' or nil) end\n"
    "end\n"
    "return bad, cases\n";

static void test_differential(void) {
  lua_State *L = new_state(NULL);
  lua_settop(L, 0);
  int status = luaL_loadstring(L, differential);
  if (status == LUA_OK) status = lua_pcall(L, 0, 2, 0);
  check_differential(L, status, "differential", 4000);
  /* ours are what the libraries and strings' methods reach */
  CHECK(run(L, "assert(('x').rep == NEW.rep and table.move == NEW.move and "
               "package.loaded.table.insert == NEW.insert and string.rep ~= ORIG.rep)") == NULL);
  lua_close(L);
}

static int stopped(const char *err) {
  size_t n = err ? strlen(err) : 0, k = strlen(STOPPED);
  return n >= k && strcmp(err + n - k, STOPPED) == 0;
}

static void expect_stopped(lua_State *L, const char *code) {
  asked = 0;
  stop_after = 2;
  const char *err = run(L, code);
  CHECK(stopped(err));
  if (!stopped(err)) fprintf(stderr, "  got %s: %s\n", err ? err : "no error", code);
  CHECK(asked == 3);
}

static void test_interrupts(void) {
  lua_State *L = new_state(test_check);
  /* everyday sizes never ask */
  asked = 0;
  stop_after = 0;
  CHECK(run(L, "local t = {} for i = 1, 100 do table.insert(t, 1, i) end table.remove(t, 1)"
               "table.move(t, 1, #t, 2) assert(#('ab'):rep(1000, ',') == 2999)") == NULL);
  CHECK(asked == 0);
  /* what Lua's own functions run for centuries, allocating nothing */
  expect_stopped(L, "return table.move({}, 1, 2^62, 1, {})");
  expect_stopped(L, "local t = {} return table.move(t, 1, 2^62, 2)");
  expect_stopped(L, "local t = setmetatable({}, {__len = function() return 2^62 end}) table.remove(t, 1)");
  expect_stopped(L, "local t = setmetatable({}, {__len = function() return 2^62 end}) table.insert(t, 1, 0)");
  /* a large output: checked between its doublings */
  expect_stopped(L, "return #('x'):rep(256 * 1024 * 1024)");
  /* an empty result is no work at all: nothing to stop */
  asked = 0;
  stop_after = 0;
  CHECK(run(L, "assert(string.rep('', 2^62) == '' and ('x'):rep(0) == '')") == NULL);
  CHECK(run(L, "assert(string.rep('', 2^62, '') == '')") == NULL);
  CHECK(strstr(run(L, "return ('x'):rep(2^62)"), "resulting string too large") != NULL);
  CHECK(asked == 0);
  lua_close(L);
}

int main(void) {
  test_differential();
  test_interrupts();
  return check_report("test_bounded");
}
