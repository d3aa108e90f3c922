/* test_json.c — the JSON layer: strict validation, decoding into Lua
 * (integers stay integers, arrays marked), encoding (empty arrays, floats
 * that round-trip, no "\/", invalid UTF-8 replaced). */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "check.h"
#include "json.h"

static lua_State *L;

static bool valid(const char *s) { return json_validate(s, strlen(s), NULL, NULL); }

/* decode s, encode it again, return the text (static buffer) */
static const char *roundtrip(const char *s) {
  static char out[4096];
  if (!json_decode(L, s, strlen(s), NULL)) return "(decode failed)";
  buf b;
  buf_init(&b);
  char err[128];
  bool ok = json_encode(L, -1, &b, err, sizeof err);
  lua_pop(L, 1);
  snprintf(out, sizeof out, "%.*s", (int)b.len, ok ? b.p : err);
  buf_free(&b);
  return out;
}

/* run a Lua expression and encode its value */
static const char *encode_lua(const char *expr) {
  static char out[4096];
  char code[1024];
  snprintf(code, sizeof code, "return %s", expr);
  if (luaL_dostring(L, code) != LUA_OK) {
    snprintf(out, sizeof out, "(lua error: %s)", lua_tostring(L, -1));
    lua_pop(L, 1);
    return out;
  }
  buf b;
  buf_init(&b);
  char err[128];
  bool ok = json_encode(L, -1, &b, err, sizeof err);
  lua_pop(L, 1);
  snprintf(out, sizeof out, "%.*s", ok ? (int)b.len : (int)strlen(err), ok ? b.p : err);
  buf_free(&b);
  return out;
}

static void test_validate(void) {
  CHECK(valid("{}"));
  CHECK(valid(" [1, 2.5e3, -0, \"x\", true, false, null] "));
  CHECK(valid("\"\\u00e9\\ud83d\\ude00\""));
  CHECK(valid("\"h\xc3\xa9 \xf0\x9f\x98\x80\""));
  CHECK(!valid(""));
  CHECK(!valid("{"));
  CHECK(!valid("[1,]"));
  CHECK(!valid("{\"a\":1,}"));
  CHECK(!valid("[NaN]"));
  CHECK(!valid("[Infinity]"));
  CHECK(!valid("[0x10]"));
  CHECK(!valid("[1e400]")); /* past a double: refused, not read as infinity */
  CHECK(valid("[1e300, 123456789012345678901234567890]"));
  CHECK(!valid("[01]"));
  CHECK(!valid("[1.]"));
  CHECK(!valid("['x']"));
  CHECK(!valid("\"\xff\""));            /* not UTF-8 */
  CHECK(!valid("\"\xc0\xaf\""));        /* overlong */
  CHECK(!valid("\"\xed\xa0\x80\""));    /* UTF-8 encoded surrogate */
  CHECK(!valid("\"a\nb\""));            /* raw control character */
  CHECK(!valid("\"\\x\""));
  CHECK(!valid("{} {}"));
  char deep[2 * JSON_MAX_DEPTH + 10];
  memset(deep, '[', JSON_MAX_DEPTH + 1);
  memset(deep + JSON_MAX_DEPTH + 1, ']', JSON_MAX_DEPTH + 1);
  deep[2 * JSON_MAX_DEPTH + 2] = 0;
  CHECK(!valid(deep));
  CHECK(valid(deep + 1) == false); /* unbalanced */
}

static void test_decode(void) {
  CHECK(json_decode(L, "123456789012345678", 18, NULL));
  CHECK(lua_isinteger(L, -1) && lua_tointeger(L, -1) == 123456789012345678LL);
  lua_pop(L, 1);
  CHECK(json_decode(L, "-9223372036854775808", 20, NULL));
  CHECK(lua_isinteger(L, -1));
  lua_pop(L, 1);
  CHECK(json_decode(L, "9223372036854775808", 19, NULL));
  CHECK(!lua_isinteger(L, -1)); /* past int64: a float */
  lua_pop(L, 1);
  CHECK(json_decode(L, "2.0", 3, NULL));
  CHECK(!lua_isinteger(L, -1) && lua_tonumber(L, -1) == 2.0);
  lua_pop(L, 1);
  CHECK(json_decode(L, "[]", 2, NULL));
  CHECK(json_table_array_len(L, -1) == 0); /* marked: still an array when empty */
  lua_pop(L, 1);
  CHECK(json_decode(L, "{}", 2, NULL));
  CHECK(json_table_array_len(L, -1) == -1);
  lua_pop(L, 1);
  CHECK(json_decode(L, "[null]", 6, NULL));
  lua_rawgeti(L, -1, 1);
  CHECK(json_isnull(L, -1));
  lua_pop(L, 2);
  const char *err = NULL;
  int top = lua_gettop(L);
  CHECK(!json_decode(L, "[1,", 3, &err) && err && lua_gettop(L) == top);
}

static void test_roundtrip(void) {
  CHECK_STR(roundtrip("[]"), "[]");
  CHECK_STR(roundtrip("{}"), "{}");
  CHECK_STR(roundtrip("[1,-2,3.5,1e300,0.1]"), "[1,-2,3.5,1e+300,0.1]");
  CHECK_STR(roundtrip("123456789012345678"), "123456789012345678");
  CHECK_STR(roundtrip("\"ui://gifts/board.html\""), "\"ui://gifts/board.html\"");
  CHECK_STR(roundtrip("\"\\u00e9\\ud83d\\ude00\\n\\t\\\"\\\\\\u0001\""),
            "\"\xc3\xa9\xf0\x9f\x98\x80\\n\\t\\\"\\\\\\u0001\"");
  CHECK_STR(roundtrip("\"\\ud800\""), "\"\xef\xbf\xbd\""); /* lone surrogate */
  CHECK_STR(roundtrip("[[],{},[[]]]"), "[[],{},[[]]]");
  CHECK_STR(roundtrip("{\"a\":[]}"), "{\"a\":[]}");
}

static void test_encode(void) {
  CHECK_STR(encode_lua("{1, 2, 3}"), "[1,2,3]");
  CHECK_STR(encode_lua("{}"), "{}");
  CHECK_STR(encode_lua("setmetatable({}, AMT)"), "[]");
  CHECK_STR(encode_lua("{n = 3}"), "{\"n\":3}");
  CHECK_STR(encode_lua("1/3"), "0.3333333333333333");
  CHECK_STR(encode_lua("2^53"), "9007199254740992");
  CHECK_STR(encode_lua("math.maxinteger"), "9223372036854775807");
  CHECK_STR(encode_lua("-0.0"), "0");
  CHECK_STR(encode_lua("0.1 + 0.2"), "0.30000000000000004");
  CHECK_STR(encode_lua("'a\\255b'"), "\"a\xef\xbf\xbd" "b\"");
  CHECK_STR(encode_lua("{[1]='a', [3]='c'}"), "{\"1\":\"a\",\"3\":\"c\"}");
  CHECK(encode_lua("{1, 2, x = 1}")[0] == '{'); /* mixed keys: an object */
  CHECK_STR(encode_lua("0/0"), "cannot encode NaN or infinity as JSON");
  CHECK_STR(encode_lua("print"), "cannot encode a value of type function");
  CHECK_STR(encode_lua("(function() local t = {} t.self = t return t end)()"),
            "cannot encode: nesting too deep (a cycle?)");
}

static void test_sorted(void) {
  luaL_dostring(L, "return {b = 1, a = 2, c = {z = 1, y = {2, 3}}, [\"\"] = 0}");
  buf b;
  buf_init(&b);
  char err[64];
  CHECK(json_encode_sorted(L, -1, &b, err, sizeof err));
  buf_putc(&b, 0);
  CHECK_STR(b.p, "{\"\":0,\"a\":2,\"b\":1,\"c\":{\"y\":[2,3],\"z\":1}}");
  buf_free(&b);
  lua_pop(L, 1);
}

/* Member lookup steps over values, strings with escaped quotes and
   backslash runs included (an even run does not escape the quote). */
static void test_members(void) {
  static const char obj[] =
      "{\"a\": \"x\\\"}, \\\\\", \"b\" : [1, {\"c\": \"\\\\\"}], \"d\":\"\\\\\\\"\\\\\",\"e\":true}";
  CHECK(json_validate(obj, strlen(obj), NULL, NULL));
  json_span o = {obj, strlen(obj)}, v;
  CHECK(json_object_get(o, "e", &v) && v.n == 4 && memcmp(v.p, "true", 4) == 0);
  CHECK(json_object_get(o, "b", &v) && v.p[0] == '[' && v.p[v.n - 1] == ']');
  CHECK(json_object_get(o, "d", &v) && v.n == 8);
  CHECK(!json_object_get(o, "c", &v)); /* nested: not a member */
  const char *keys[] = {"a", "b", "d", "e"};
  json_span vals[4];
  CHECK(json_object_fields(o, keys, vals, 4) == 4);
  CHECK(vals[0].n == 10);
  /* unterminated string: nothing found, no overrun */
  static const char cut[] = "{\"a\": \"abc\\\", \"b\": 1";
  CHECK(!json_object_get((json_span){cut, strlen(cut)}, "b", &v));
}

int main(void) {
  L = luaL_newstate();
  luaL_openlibs(L);
  json_push_array_mt(L);
  lua_setglobal(L, "AMT");
  test_validate();
  test_decode();
  test_roundtrip();
  test_encode();
  test_sorted();
  test_members();
  CHECK(lua_gettop(L) == 0);
  lua_close(L);
  return check_report("test_json");
}
