/* test_pattern.c — core/vm/lua_pattern.c: Lua 5.4's results and errors
 * (test_pattern.lua compares ours with Lua's own functions, fixed and random
 * cases), and the interrupt check ending matches that would otherwise run
 * for seconds to hours inside one C call (each quadratic case here takes
 * longer than 3 s on Lua's own functions). No timing is asserted, only that
 * the check was asked and its message raised.
 *
 *   test_pattern [SCRIPT [SEED [ROUNDS]]]   the tests
 *   test_pattern --bench                    Lua's functions against ours */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "check_lua.h"
#include "lua_pattern.h"

#ifndef PATTERN_TEST_LUA
#define PATTERN_TEST_LUA "tests/unit/test_pattern.lua"
#endif

static const char *const names[] = {"find", "match", "gmatch", "gsub"};

/* {====== the check the tests install */
#define STOPPED "stopped by the test check"
static int asked;           /* how often the check was consulted */
static int stop_after = -1; /* it says stop once asked more than this; -1: never */
static lua_State *asked_on; /* the state it was last asked with */

static const char *test_check(lua_State *L) {
  asked++;
  asked_on = L;
  return stop_after >= 0 && asked > stop_after ? STOPPED : NULL;
}

static void arm(int after) {
  asked = 0;
  asked_on = NULL;
  stop_after = after;
}
/* }====== */

/* The string library's four functions, as a global table `name`. */
static void save_functions(lua_State *L, const char *name) {
  lua_newtable(L);
  lua_getglobal(L, "string");
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    lua_getfield(L, -1, names[i]);
    lua_setfield(L, -3, names[i]);
  }
  lua_pop(L, 1);
  lua_setglobal(L, name);
}

/* A state with ORIG (Lua's functions) and NEW (ours, installed). */
static lua_State *new_state(lua_pattern_interrupt check) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  save_functions(L, "ORIG");
  lua_pattern_install(L, check);
  save_functions(L, "NEW");
  return L;
}

/* {====== 1. the same results as Lua's */
static void test_differential(const char *script, const char *seed, const char *rounds) {
  lua_State *L = new_state(NULL);
  CHECK(luaL_loadfile(L, script) == LUA_OK);
  if (lua_gettop(L) == 0 || !lua_isfunction(L, -1)) {
    fprintf(stderr, "cannot load %s: %s\n", script, lua_tostring(L, -1));
    lua_close(L);
    return;
  }
  lua_getglobal(L, "ORIG");
  lua_getglobal(L, "NEW");
  lua_pushstring(L, seed);
  lua_pushstring(L, rounds);
  check_differential(L, lua_pcall(L, 4, 2, 0), script, 50000);
  /* our functions are what strings' methods reach */
  CHECK(run(L, "assert(('x').match == NEW.match and ('x').gsub == NEW.gsub and "
               "string.find == NEW.find and string.gmatch ~= ORIG.gmatch)") == NULL);
  lua_close(L);
}
/* }====== */

/* {====== 2. the check ends what would run for minutes */

/* Does the error say the check stopped it? (luaL_error adds where the
   caller was, "[string ...]:1: ") */
static int stopped(const char *err) {
  size_t n = err ? strlen(err) : 0, k = strlen(STOPPED);
  return n >= k && strcmp(err + n - k, STOPPED) == 0;
}

/* code must raise the check's message, having asked it exactly after+1
   times */
static void expect_stopped(lua_State *L, const char *code, int after) {
  arm(after);
  const char *err = run(L, code);
  CHECK(stopped(err));
  if (!stopped(err)) fprintf(stderr, "  got %s\n", err ? err : "no error");
  CHECK(asked == after + 1);
  if (asked != after + 1) fprintf(stderr, "  asked %d times: %s\n", asked, code);
}

static void test_interrupts(void) {
  lua_State *L = new_state(test_check);

  /* an everyday match takes fewer steps than one check's worth */
  arm(0);
  CHECK(run(L, "local k, v = ('key=value'):match('(%w+)=(%w+)') assert(k == 'key' and v == 'value')"
               "assert(('  hi  '):match('^%s*(.-)%s*$') == 'hi')") == NULL);
  CHECK(asked == 0);

  /* the trim idiom on a text with 100k spaces inside: ~5e9 steps, about a
     minute on Lua's functions */
  expect_stopped(L, "local s = 'x' .. (' '):rep(100000) .. 'x' return s:match('^%s*(.-)%s*$')", 3);
  expect_stopped(L, "local s = 'x' .. (' '):rep(100000) .. 'x' return string.find(s, '^%s*(.-)%s*$')", 0);
  /* each function, and each kind of step: items, repetition scans, %b,
     back-references, sets, gsub's output */
  expect_stopped(L, "return (('a'):rep(100000)):find('.-b')", 2);
  expect_stopped(L, "for _ in (('a'):rep(100000)):gmatch('a*b') do end", 2);
  expect_stopped(L, "return (('a'):rep(100000)):gsub('(.-)x', '')", 2);
  expect_stopped(L, "return (('('):rep(300000)):find('%b()')", 2);
  expect_stopped(L, "return (('ab'):rep(50000)):match('(.*)%1x')", 2);
  expect_stopped(L, "return (('b'):rep(100000)):find('[' .. ('a'):rep(100000) .. ']')", 2);
  expect_stopped(L, "return (('b'):rep(100000)):find('%f[' .. ('a'):rep(100000) .. ']')", 2);
  expect_stopped(L, "return (('x'):rep(100000)):gsub('.', ('y'):rep(100000))", 2);
  expect_stopped(L, "return (('x'):rep(100000)):gsub('.', function() return 'y' end)", 2);
  expect_stopped(L, "return (('x'):rep(100000)):gsub('(.-)y', {})", 2);
  /* a pcall inside the script sees the error like any other */
  arm(1);
  CHECK(run(L, "local ok, e = pcall(string.match, 'x' .. (' '):rep(100000) .. 'x', '^%s*(.-)%s*$')"
               "assert(not ok and e:find('stopped by the test check', 1, true), e)") == NULL);
  CHECK(asked == 2);

  /* the check is asked with the state that runs the match: a coroutine */
  arm(0);
  CHECK(run(L, "co = coroutine.create(function() return ('x' .. (' '):rep(100000) .. 'x'):match('^%s*(.-)%s*$') end)"
               "local ok, e = coroutine.resume(co) assert(not ok and e:find('stopped by the test check', 1, true))") == NULL);
  lua_getglobal(L, "co");
  CHECK(asked == 1 && asked_on == lua_tothread(L, -1));
  lua_settop(L, 0);

  /* a gmatch loop stopped half-way can go on */
  CHECK(run(L, "it = (('a'):rep(100000) .. 'b,aab'):gmatch('(a*)b')") == NULL);
  arm(0);
  CHECK(stopped(run(L, "local ok, e = pcall(it) error(e, 0)")));
  arm(-1);
  CHECK(run(L, "assert(#it() == 100000) assert(it() == 'aa') assert(it() == nil)") == NULL);
  CHECK(asked > 0);
  lua_close(L);

  /* no check: the same functions, never stopped */
  L = new_state(NULL);
  CHECK(run(L, "local s = 'x' .. (' '):rep(3000) .. 'x' assert(s:match('^%s*(.-)%s*$') == s)") == NULL);
  lua_close(L);
}
/* }====== */

/* {====== --bench */
static const char bench_code[] =
    "local F, label = ...\n"
    "local function time(what, f)\n"
    "  local t = os.clock() f() io.write(string.format('  %-44s %7.3f s\\n', what, os.clock() - t))\n"
    "end\n"
    "print(label)\n"
    "local match, find, gmatch, gsub = F.match, F.find, F.gmatch, F.gsub\n"
    "time('1M match key=value (%w+)=(%w+)', function()\n"
    "  local s = 'key=value' for _ = 1, 1e6 do local k, v = match(s, '(%w+)=(%w+)') end end)\n"
    "time('1M trim ^%s*(.-)%s*$ of \"  hello world  \"', function()\n"
    "  local s = '  hello world  ' for _ = 1, 1e6 do local r = match(s, '^%s*(.-)%s*$') end end)\n"
    "time('1M find %d+ in a 30-byte line', function()\n"
    "  local s = 'GET /index.html HTTP/1.1 200' for _ = 1, 1e6 do local a = find(s, '%d+') end end)\n"
    "local big = ('hello world, lorem ipsum. '):rep(40330)  -- 1 MB\n"
    "time('10x gsub 1 MB %w+ -> <%0>', function() for _ = 1, 10 do gsub(big, '%w+', '<%0>') end end)\n"
    "time('10x gsub 1 MB %s+ -> \" \"', function() for _ = 1, 10 do gsub(big, '%s+', ' ') end end)\n"
    "time('10x gsub 1 MB o -> 0', function() for _ = 1, 10 do gsub(big, 'o', '0') end end)\n"
    "time('10x gsub 1 MB (%w+) -> function', function()\n"
    "  local f = function(w) return w end for _ = 1, 10 do gsub(big, '(%w+)', f) end end)\n"
    "time('10x gmatch 1 MB %a+', function()\n"
    "  for _ = 1, 10 do local n = 0 for w in gmatch(big, '%a+') do n = n + 1 end end end)\n"
    "time('100x find 1 MB plain, absent', function() for _ = 1, 100 do find(big, 'xyz', 1, true) end end)\n"
    "time('100x find 1 MB [xyz] (a set, absent)', function() for _ = 1, 100 do find(big, '[xyz]') end end)\n"
    "time('100x match 1 MB .-$ (lazy to the end)', function() for _ = 1, 100 do match(big, '^(.-)$') end end)\n";

static int bench(void) {
  lua_State *L = new_state(NULL);
  for (int i = 0; i < 2; i++) {
    if (luaL_loadstring(L, bench_code) != LUA_OK) return fprintf(stderr, "%s\n", lua_tostring(L, -1)), 1;
    lua_getglobal(L, i == 0 ? "ORIG" : "NEW");
    lua_pushstring(L, i == 0 ? "Lua 5.4's lstrlib.c" : "lua_pattern.c (no check installed)");
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) return fprintf(stderr, "%s\n", lua_tostring(L, -1)), 1;
  }
  lua_close(L);
  L = new_state(test_check);
  arm(-1);
  if (luaL_loadstring(L, bench_code) != LUA_OK) return 1;
  lua_getglobal(L, "NEW");
  lua_pushstring(L, "lua_pattern.c (with a check that says go on)");
  if (lua_pcall(L, 2, 0, 0) != LUA_OK) return fprintf(stderr, "%s\n", lua_tostring(L, -1)), 1;
  printf("  (the check was asked %d times)\n", asked);
  lua_close(L);
  return 0;
}
/* }====== */

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) return bench();
  test_differential(argc > 1 ? argv[1] : PATTERN_TEST_LUA, argc > 2 ? argv[2] : "20240515",
                    argc > 3 ? argv[3] : "6000");
  test_interrupts();
  return check_report("test_pattern");
}
