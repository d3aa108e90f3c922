/* test_validate.c — schema_validate and schema_check: each keyword, the messages, the stack. */
#undef NDEBUG /* the asserts are the test, in every build type */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "buf.h"
#include "json.h"
#include "schema_regex.h"
#include "validate.h"

static lua_State *L;
static int failures;

/* Push the value of a JSON text. */
static void push_json(const char *text) {
  const char *err = NULL;
  if (!json_decode(L, text, strlen(text), &err)) {
    fprintf(stderr, "bad JSON in a test: %s: %s\n", err, text);
    abort();
  }
}

/* Push what a Lua expression evaluates to (tables built the way scripts do). */
static void push_lua(const char *expr) {
  lua_pushfstring(L, "return %s", expr);
  if (luaL_dostring(L, lua_tostring(L, -1)) != LUA_OK) {
    fprintf(stderr, "bad Lua in a test: %s\n", lua_tostring(L, -1));
    abort();
  }
  lua_remove(L, -2);
}

/* Validate the value at -1 against the schema at -2 (both popped); want is
   the message, or NULL for valid. */
static void expect_at(int line, const char *want) {
  int top = lua_gettop(L);
  buf err;
  buf_init(&err);
  bool ok = schema_validate(L, -2, -1, &err);
  assert(lua_gettop(L) == top); /* stack balanced */
  for (int pass = 0; pass < 2; pass++) { /* cached: same message, cold and warm */
    buf again;
    buf_init(&again);
    bool cached = schema_validate_frozen(L, -2, -1, &again);
    assert(lua_gettop(L) == top);
    if (cached != ok || again.len != err.len || (err.len && memcmp(again.p, err.p, err.len))) {
      printf("line %d: the cached validation (pass %d) differs\n", line, pass + 1);
      failures++;
    }
    buf_free(&again);
  }
  buf_putc(&err, '\0');
  const char *got = err.p;
  if (ok != (want == NULL) || (want && strcmp(got, want) != 0) || (ok && err.len != 1)) {
    printf("line %d: want %s%s%s, got %s%s%s\n", line, want ? "invalid: " : "valid",
           want ? "\"" : "", want ? want : "", ok ? "valid" : "invalid: \"", ok ? "" : got,
           ok ? "" : "\"");
    failures++;
  }
  buf_free(&err);
  lua_pop(L, 2);
}

static void expect_json(int line, const char *schema, const char *value, const char *want) {
  push_json(schema);
  push_json(value);
  expect_at(line, want);
}

#define VALID(s, v) expect_json(__LINE__, s, v, NULL)
#define INVALID(s, v, m) expect_json(__LINE__, s, v, m)

/* schema_check on the value at -1 (popped); want is the message or NULL. */
static void check_at(int line, const char *want) {
  int top = lua_gettop(L);
  buf err;
  buf_init(&err);
  bool ok = schema_check(L, -1, &err);
  assert(lua_gettop(L) == top);
  buf_putc(&err, '\0');
  if (ok != (want == NULL) || (want && strcmp(err.p, want) != 0)) {
    printf("line %d: schema_check: want %s, got %s\n", line, want ? want : "ok",
           ok ? "ok" : err.p);
    failures++;
  }
  buf_free(&err);
  lua_pop(L, 1);
}

#define CHECK_OK(s) (push_json(s), check_at(__LINE__, NULL))
#define CHECK_ERR(s, m) (push_json(s), check_at(__LINE__, m))

static void test_type(void) {
  VALID("{\"type\":\"string\"}", "\"x\"");
  INVALID("{\"type\":\"string\"}", "5", "expected string, got number");
  VALID("{\"type\":\"integer\"}", "5");
  VALID("{\"type\":\"integer\"}", "1.0"); /* integral floats are integers */
  VALID("{\"type\":\"integer\"}", "1e3");
  INVALID("{\"type\":\"integer\"}", "1.5", "expected integer, got number");
  VALID("{\"type\":\"number\"}", "1.5");
  VALID("{\"type\":\"number\"}", "7");
  VALID("{\"type\":\"boolean\"}", "false");
  VALID("{\"type\":\"null\"}", "null");
  INVALID("{\"type\":\"null\"}", "false", "expected null, got boolean");
  /* objects and arrays: a decoded [] carries the array mark, {} does not */
  VALID("{\"type\":\"object\"}", "{}");
  VALID("{\"type\":\"array\"}", "[]");
  INVALID("{\"type\":\"object\"}", "[]", "expected object, got array");
  INVALID("{\"type\":\"array\"}", "{}", "expected array, got object");
  INVALID("{\"type\":\"object\"}", "[1]", "expected object, got array");
  /* lists of types */
  VALID("{\"type\":[\"string\",\"null\"]}", "null");
  INVALID("{\"type\":[\"string\",\"null\"]}", "5", "expected string or null, got number");
  INVALID("{\"type\":[\"integer\",\"string\",\"null\"]}", "true",
          "expected integer, string or null, got boolean");
  INVALID("{\"type\":[\"integer\"]}", "0.5", "expected integer, got number");

  /* Lua-made values: a table with keys 1..n is an array, an unmarked empty
     table an object; nil is null; functions are no JSON type */
  push_json("{\"type\":\"array\"}");
  push_lua("{1, 2, 3}");
  expect_at(__LINE__, NULL);
  push_json("{\"type\":\"array\"}");
  push_lua("{}");
  expect_at(__LINE__, "expected array, got object");
  push_json("{\"type\":\"object\"}");
  push_lua("{}");
  expect_at(__LINE__, NULL);
  push_json("{\"type\":\"null\"}");
  lua_pushnil(L);
  expect_at(__LINE__, NULL);
  push_json("{\"type\":\"string\"}");
  push_lua("print");
  expect_at(__LINE__, "expected string, got function");
  push_json("{\"type\":\"array\"}");
  push_lua("setmetatable({}, {__index = function() return 1 end})");
  expect_at(__LINE__, "expected array, got object");
}

static void test_enum_const(void) {
  const char *occasion = "{\"properties\":{\"occasion\":{\"enum\":[\"birthday\",\"wedding\"]}}}";
  VALID(occasion, "{\"occasion\":\"wedding\"}");
  INVALID(occasion, "{\"occasion\":\"funeral\"}",
          "occasion: must be one of \"birthday\", \"wedding\"");
  INVALID("{\"enum\":[\"only\"]}", "\"other\"", "must be \"only\"");
  INVALID("{\"enum\":[1,2,3,4,5,6,7,8,9,10,11,12]}", "0",
          "must be one of 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ...");
  INVALID("{\"enum\":[]}", "0", "no value allowed (empty enum)");
  VALID("{\"enum\":[1]}", "1.0");
  VALID("{\"enum\":[[1,{\"a\":null}]]}", "[1.0,{\"a\":null}]");
  INVALID("{\"enum\":[[]]}", "{}", "must be []");
  INVALID("{\"enum\":[{}]}", "[]", "must be {}");
  INVALID("{\"enum\":[null]}", "false", "must be null");
  INVALID("{\"enum\":[0]}", "false", "must be 0");
  VALID("{\"const\":2}", "2.0");
  INVALID("{\"const\":2}", "3", "must be 2");
  INVALID("{\"const\":0.5}", "3", "must be 0.5");
  VALID("{\"const\":{\"a\":[1,2],\"b\":\"x\"}}", "{\"b\":\"x\",\"a\":[1,2.0]}");
  INVALID("{\"const\":{\"a\":[1,2]}}", "{\"a\":[1,2],\"b\":1}", "must be {\"a\":[1,2]}");
  INVALID("{\"const\":{\"a\":[1,2]}}", "{\"a\":[2,1]}", "must be {\"a\":[1,2]}");
  INVALID("{\"const\":[1]}", "[1,1]", "must be [1]");
  VALID("{\"const\":null}", "null");
  INVALID("{\"const\":\"a\"}", "\"A\"", "must be \"a\"");
  /* nil and the null light userdata are the same JSON value */
  push_json("{\"const\":null}");
  lua_pushnil(L);
  expect_at(__LINE__, NULL);
  /* a cyclic Lua value: equality gives up, no crash */
  push_json("{\"const\":{\"a\":{}}}");
  push_lua("(function() local t = {} t.a = t return t end)()");
  expect_at(__LINE__, "must be {\"a\":{}}");
}

static void test_numbers(void) {
  const char *budget = "{\"type\":\"object\",\"properties\":{\"budget\":{\"type\":\"number\","
                       "\"minimum\":0}},\"required\":[\"budget\"]}";
  VALID(budget, "{\"budget\":0}");
  INVALID(budget, "{\"budget\":-1}", "budget: must be >= 0");
  INVALID(budget, "{\"budget\":-0.5}", "budget: must be >= 0");
  INVALID(budget, "{}", "missing required property 'budget'");
  INVALID(budget, "{\"budget\":\"10\"}", "budget: expected number, got string");
  INVALID("{\"exclusiveMinimum\":0}", "0", "must be > 0");
  VALID("{\"exclusiveMinimum\":0}", "1e-300");
  INVALID("{\"maximum\":10}", "10.5", "must be <= 10");
  VALID("{\"maximum\":10}", "10.0");
  INVALID("{\"exclusiveMaximum\":10}", "10", "must be < 10");
  INVALID("{\"minimum\":0.5}", "0", "must be >= 0.5");
  INVALID("{\"minimum\":1e300}", "1", "must be >= 1e+300");
  /* integers and floats compare exactly: 2^53 + 1 > 2^53 as a float */
  INVALID("{\"maximum\":9007199254740992.0}", "9007199254740993",
          "must be <= 9007199254740992");
  VALID("{\"maximum\":9223372036854775807}", "9223372036854775807");
  VALID("{\"minimum\":5}", "\"not a number\"");
  VALID("{\"multipleOf\":2}", "10");
  INVALID("{\"multipleOf\":2}", "7", "must be a multiple of 2");
  VALID("{\"multipleOf\":2}", "10.0");
  VALID("{\"multipleOf\":0.1}", "0.3"); /* 0.3 / 0.1 = 2.9999999999999996 */
  VALID("{\"multipleOf\":0.01}", "19.99");
  INVALID("{\"multipleOf\":0.1}", "0.35", "must be a multiple of 0.1");
  INVALID("{\"multipleOf\":1}", "1.0000000001", "must be a multiple of 1");
  VALID("{\"multipleOf\":0.5}", "1e308");
  VALID("{\"multipleOf\":7}", "-9223372036854775807"); /* 2^63 - 1 = 7 * 1317624576693539401 */
  INVALID("{\"multipleOf\":3}", "9223372036854775807", "must be a multiple of 3");
  VALID("{\"multipleOf\":1.5}", "0");
}

static void test_strings(void) {
  VALID("{\"minLength\":2}", "\"ab\"");
  INVALID("{\"minLength\":2}", "\"a\"", "must be at least 2 characters long");
  INVALID("{\"minLength\":1}", "\"\"", "must be at least 1 character long");
  INVALID("{\"maxLength\":1}", "\"ab\"", "must be at most 1 character long");
  /* code points, not bytes */
  VALID("{\"maxLength\":2}", "\"\\u00e9\\u00e9\"");
  VALID("{\"maxLength\":1}", "\"\\ud83d\\udca9\"");
  INVALID("{\"minLength\":2}", "\"\\ud83d\\udca9\"", "must be at least 2 characters long");
  VALID("{\"minLength\":2.0}", "\"ab\""); /* an integral float is a count */
  VALID("{\"maxLength\":0}", "5");
  /* annotations are ignored, format too unless asserted */
  VALID("{\"format\":\"email\",\"title\":\"t\",\"description\":\"d\","
        "\"default\":1,\"examples\":[2],\"x-custom\":{}}", "\"zzz\"");
  VALID("{\"pattern\":\"^a+$\"}", "\"aaa\"");
  INVALID("{\"pattern\":\"^a+$\"}", "\"zzz\"", "must match the pattern /^a+$/");
  VALID("{\"pattern\":\"^a+$\"}", "5");
}

static void test_objects(void) {
  const char *closed = "{\"properties\":{\"a\":{\"type\":\"integer\"}},\"additionalProperties\":false}";
  VALID(closed, "{\"a\":1}");
  VALID(closed, "{}");
  INVALID(closed, "{\"a\":1,\"b\":2}", "unexpected property 'b'");
  INVALID(closed, "{\"a\":\"1\"}", "a: expected integer, got string");
  INVALID("{\"properties\":{\"x\":" "{\"properties\":{\"a\":{}},\"additionalProperties\":false}}}",
          "{\"x\":{\"a\":1,\"zz\":2}}", "x: unexpected property 'zz'");
  INVALID("{\"additionalProperties\":{\"type\":\"integer\"}}", "{\"q\":\"s\"}",
          "q: expected integer, got string");
  VALID("{\"additionalProperties\":true,\"properties\":{\"a\":false}}", "{\"b\":1}");
  INVALID("{\"properties\":{\"bar\":false}}", "{\"bar\":1}", "bar: not allowed");
  VALID("{\"properties\":{\"a\":{\"type\":\"string\"}}}", "{\"b\":1}");
  VALID("{\"properties\":{\"a\":{\"type\":\"string\"}}}", "[1]");
  INVALID("{\"required\":[\"a\",\"b\"]}", "{\"a\":null}", "missing required property 'b'");
  VALID("{\"required\":[\"a\"]}", "{\"a\":null}"); /* null is present */
  VALID("{\"required\":[\"a\"]}", "[]");
  INVALID("{\"properties\":{\"p\":{\"required\":[\"name\"]}}}", "{\"p\":{}}",
          "p: missing required property 'name'");
  INVALID("{\"minProperties\":1}", "{}", "must have at least 1 property");
  INVALID("{\"minProperties\":2}", "{\"a\":1}", "must have at least 2 properties");
  INVALID("{\"maxProperties\":1}", "{\"a\":1,\"b\":2}", "must have at most 1 property");
  VALID("{\"maxProperties\":0}", "{}");
  /* paths: odd names are quoted, array elements are 0-based */
  INVALID("{\"properties\":{\"a b\":{\"type\":\"string\"}}}", "{\"a b\":1}",
          "[\"a b\"]: expected string, got number");
  INVALID("{\"properties\":{\"x\":{\"properties\":{\"a.b\":{\"type\":\"string\"}}}}}",
          "{\"x\":{\"a.b\":1}}", "x[\"a.b\"]: expected string, got number");
  INVALID("{\"properties\":{\"items\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
          "\"properties\":{\"name\":{\"type\":\"string\"}}}}}}",
          "{\"items\":[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":5}]}",
          "items[2].name: expected string, got number");
  INVALID("{\"properties\":{\"\\u00e1rv\\u00edz\":{\"type\":\"string\"}}}",
          "{\"\\u00e1rv\\u00edz\":1}", "\xc3\xa1rv\xc3\xadz: expected string, got number");

  /* a schema written in Lua: required = {} and properties = {} are fine */
  push_lua("{type = 'object', required = {}, properties = {}}");
  lua_pushvalue(L, -1);
  check_at(__LINE__, NULL);
  push_json("{}");
  expect_at(__LINE__, NULL);
  push_lua("{type = 'object', required = {'tags'}, properties = {tags = {type = 'array', "
           "items = {type = 'string'}}}}");
  push_lua("{tags = {'a', 'b'}}");
  expect_at(__LINE__, NULL);
  push_lua("{properties = {tags = {type = 'array', items = {type = 'string'}}}}");
  push_lua("{tags = {'a', 2}}");
  expect_at(__LINE__, "tags[1]: expected string, got number");
}

static void test_arrays(void) {
  INVALID("{\"items\":{\"type\":\"string\"}}", "[\"a\",1]", "[1]: expected string, got number");
  VALID("{\"items\":{\"type\":\"string\"}}", "[]");
  VALID("{\"items\":false}", "[]");
  INVALID("{\"items\":false}", "[1]", "must have at most 0 items");
  INVALID("{\"minItems\":2}", "[1]", "must have at least 2 items");
  INVALID("{\"minItems\":1}", "[]", "must have at least 1 item");
  INVALID("{\"maxItems\":1}", "[1,2]", "must have at most 1 item");
  VALID("{\"maxItems\":1}", "\"ab\"");
  /* 2020-12 prefixItems + items */
  const char *tuple = "{\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}],"
                      "\"items\":{\"type\":\"boolean\"}}";
  VALID(tuple, "[1,\"a\",true,false]");
  VALID(tuple, "[1]");
  INVALID(tuple, "[\"a\"]", "[0]: expected integer, got string");
  INVALID(tuple, "[1,\"a\",true,0]", "[3]: expected boolean, got number");
  INVALID("{\"prefixItems\":[{}],\"items\":false}", "[1,2]", "must have at most 1 item");
  VALID("{\"prefixItems\":[{}],\"additionalItems\":false}", "[1,2]"); /* not 2020-12 */
  /* draft-07 array items + additionalItems */
  VALID("{\"items\":[{\"type\":\"integer\"}],\"additionalItems\":{\"type\":\"string\"}}", "[1,\"a\"]");
  INVALID("{\"items\":[{\"type\":\"integer\"}],\"additionalItems\":{\"type\":\"string\"}}",
          "[1,\"a\",2]", "[2]: expected string, got number");
  INVALID("{\"items\":[{},{}],\"additionalItems\":false}", "[1,2,3]", "must have at most 2 items");
  VALID("{\"items\":{},\"additionalItems\":false}", "[1,2,3]");
  /* uniqueItems: deep equality, 1 == 1.0, true != 1, {} != [] */
  INVALID("{\"uniqueItems\":true}", "[1,2,1.0]",
          "must not contain duplicates (items 0 and 2 are equal)");
  INVALID("{\"uniqueItems\":true}", "[{\"a\":[1]},{\"a\":[1.0]}]",
          "must not contain duplicates (items 0 and 1 are equal)");
  INVALID("{\"uniqueItems\":true}", "[null,null]",
          "must not contain duplicates (items 0 and 1 are equal)");
  VALID("{\"uniqueItems\":true}", "[{},[],0,false,null,\"0\",1,true]");
  VALID("{\"uniqueItems\":true}", "[{\"a\":1},{\"a\":1,\"b\":2}]");
  VALID("{\"uniqueItems\":false}", "[1,1]");
  /* past 16 items scalars go through a set: the same answers */
  const char *many = "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,\"a\",true,null,{},[],{\"k\":[1]},";
  char text[512];
  snprintf(text, sizeof text, "%s[1.0]]", many);
  VALID("{\"uniqueItems\":true}", text);
  snprintf(text, sizeof text, "%s5.0]", many);
  INVALID("{\"uniqueItems\":true}", text, "must not contain duplicates (items 5 and 23 are equal)");
  snprintf(text, sizeof text, "%s\"a\"]", many);
  INVALID("{\"uniqueItems\":true}", text, "must not contain duplicates (items 17 and 23 are equal)");
  snprintf(text, sizeof text, "%snull]", many);
  INVALID("{\"uniqueItems\":true}", text, "must not contain duplicates (items 19 and 23 are equal)");
  snprintf(text, sizeof text, "%s{\"k\":[1.0]}]", many);
  INVALID("{\"uniqueItems\":true}", text, "must not contain duplicates (items 22 and 23 are equal)");
  snprintf(text, sizeof text, "%strue]", many);
  INVALID("{\"uniqueItems\":true}", text, "must not contain duplicates (items 18 and 23 are equal)");
  push_json("{\"uniqueItems\":true}"); /* NaN equals nothing, and is no table key */
  push_lua("{0/0, 0/0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}");
  expect_at(__LINE__, NULL);
  push_json("{\"uniqueItems\":true}");
  push_lua("setmetatable({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, nil, 18, nil, 20}, arr_mt)");
  expect_at(__LINE__, "must not contain duplicates (items 16 and 18 are equal)");
  /* a marked array with a hole reads the hole as null */
  push_json("{\"items\":{\"type\":[\"integer\",\"null\"]}}");
  push_lua("setmetatable({1, nil, 3}, arr_mt)");
  expect_at(__LINE__, NULL);
  push_json("{\"items\":{\"type\":\"integer\"}}");
  push_lua("setmetatable({1, nil, 3}, arr_mt)");
  expect_at(__LINE__, "[1]: expected integer, got null");
}

static void test_combinators(void) {
  const char *any = "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\",\"minimum\":0}]}";
  VALID(any, "\"a\"");
  VALID(any, "3");
  INVALID(any, "-1", "must match at least one schema in anyOf");
  INVALID("{\"properties\":{\"v\":" "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}}}",
          "{\"v\":1}", "v: must match at least one schema in anyOf");
  const char *one = "{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":2}]}";
  VALID(one, "1");
  VALID(one, "2.5");
  INVALID(one, "3", "must match exactly one schema in oneOf (matched 0 and 1)");
  INVALID(one, "1.5", "must match exactly one schema in oneOf (matched none)");
  /* allOf reports what the failing branch says */
  INVALID("{\"allOf\":[{\"type\":\"object\"},{\"required\":[\"x\"]}]}", "{}",
          "missing required property 'x'");
  INVALID("{\"not\":{\"type\":\"string\"}}", "\"a\"", "must not match the schema in not");
  VALID("{\"not\":{\"type\":\"string\"}}", "1");
  VALID("{\"not\":false}", "1");
  INVALID("{\"not\":true}", "1", "must not match the schema in not");
  /* a failing branch inside anyOf writes nothing */
  VALID("{\"anyOf\":[{\"required\":[\"a\"]},{\"required\":[\"b\"]}]}", "{\"b\":1}");
  /* boolean schemas */
  VALID("true", "{\"anything\":[1]}");
  INVALID("false", "1", "not allowed");
}

static void test_refs(void) {
  const char *defs = "{\"$defs\":{\"pos\":{\"type\":\"integer\",\"minimum\":1}},"
                     "\"properties\":{\"n\":{\"$ref\":\"#/$defs/pos\"}}}";
  VALID(defs, "{\"n\":1}");
  INVALID(defs, "{\"n\":0}", "n: must be >= 1");
  VALID("{\"definitions\":{\"s\":{\"type\":\"string\"}},\"$ref\":\"#/definitions/s\"}", "\"a\"");
  INVALID("{\"definitions\":{\"s\":{\"type\":\"string\"}},\"$ref\":\"#/definitions/s\"}", "1",
          "expected string, got number");
  /* 2020-12: siblings of $ref apply; draft-07: they do not */
  INVALID("{\"$defs\":{\"a\":{\"type\":\"array\"}},\"$ref\":\"#/$defs/a\",\"maxItems\":1}", "[1,2]",
          "must have at most 1 item");
  VALID("{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"definitions\":{\"a\":"
        "{\"type\":\"array\"}},\"$ref\":\"#/definitions/a\",\"maxItems\":1}", "[1,2]");
  /* pointers: escapes, %-encoding, array indexes, the root */
  const char *esc = "{\"$defs\":{\"a/b\":{\"type\":\"integer\"},\"c~d\":{\"type\":\"string\"},"
                    "\"e f\":{\"type\":\"null\"}},\"properties\":{\"x\":{\"$ref\":\"#/$defs/a~1b\"},"
                    "\"y\":{\"$ref\":\"#/$defs/c~0d\"},\"z\":{\"$ref\":\"#/$defs/e%20f\"}}}";
  VALID(esc, "{\"x\":1,\"y\":\"s\",\"z\":null}");
  INVALID(esc, "{\"x\":\"1\"}", "x: expected integer, got string");
  INVALID(esc, "{\"y\":1}", "y: expected string, got number");
  INVALID(esc, "{\"z\":1}", "z: expected null, got number");
  INVALID("{\"allOf\":[{\"type\":\"string\"}],\"properties\":{\"a\":{\"$ref\":\"#/allOf/0\"}}}",
          "{\"a\":1}", "a: expected string, got number");
  VALID("{\"allOf\":[{\"type\":\"object\"}],\"properties\":{\"a\":{\"$ref\":\"#/allOf/0\"}}}",
        "{\"a\":{}}");
  const char *tree = "{\"type\":\"object\",\"properties\":{\"kids\":{\"type\":\"array\","
                     "\"items\":{\"$ref\":\"#\"}}},\"additionalProperties\":false}";
  VALID(tree, "{\"kids\":[{\"kids\":[]},{}]}");
  INVALID(tree, "{\"kids\":[{\"kids\":[{\"x\":1}]}]}", "kids[0].kids[0]: unexpected property 'x'");
  /* cycles end at the depth limit, which no not/anyOf can turn into success */
  INVALID("{\"$ref\":\"#\"}", "1", "schema nesting too deep");
  INVALID("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},"
          "\"$ref\":\"#/$defs/a\"}", "1", "schema nesting too deep");
  INVALID("{\"not\":{\"$ref\":\"#\"}}", "1", "schema nesting too deep");
  INVALID("{\"anyOf\":[{\"$ref\":\"#\"},true]}", "1", "schema nesting too deep");
  INVALID("{\"oneOf\":[true,{\"$ref\":\"#\"}]}", "1", "schema nesting too deep");
  /* a cyclic Lua value under a recursive schema */
  push_json("{\"properties\":{\"a\":{\"$ref\":\"#\"}}}");
  push_lua("(function() local t = {} t.a = t return t end)()");
  expect_at(__LINE__, "schema nesting too deep");
  /* deep but finite values are fine */
  {
    buf b;
    buf_init(&b);
    for (int i = 0; i < 200; i++) buf_putc(&b, '[');
    for (int i = 0; i < 200; i++) buf_putc(&b, ']');
    buf_putc(&b, '\0');
    VALID("{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}", b.p);
    buf_free(&b);
  }
  /* a schema that did not pass schema_check still fails cleanly */
  INVALID("{\"$ref\":\"#/nope\"}", "1", "$ref '#/nope' does not resolve");
  INVALID("{\"properties\":{\"a\":{\"$ref\":\"http://x/y\"}}}", "{\"a\":1}",
          "unsupported $ref 'http://x/y' (only local ones)");
  VALID("{\"properties\":{\"a\":{\"$ref\":\"http://x/y\"}}}", "{\"b\":1}");
  VALID("{\"type\":5,\"minimum\":\"x\",\"required\":\"a\",\"items\":3,\"anyOf\":{}}", "{}");
}

static void test_check(void) {
  CHECK_OK("{\"type\":\"object\",\"properties\":{\"budget\":{\"type\":\"number\",\"minimum\":0},"
           "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"uniqueItems\":true}},"
           "\"required\":[\"budget\"],\"additionalProperties\":false,"
           "\"$defs\":{\"x\":true},\"$ref\":\"#/$defs/x\"}");
  CHECK_OK("true");
  CHECK_OK("{}");
  CHECK_OK("{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\"}");
  CHECK_OK("{\"$schema\":\"http://json-schema.org/draft-07/schema#\"}");
  CHECK_ERR("{\"pattern\":5}", "pattern: must be a string");
  CHECK_ERR("{\"format\":[]}", "format: must be a string");
  CHECK_ERR("{\"patternProperties\":1}", "patternProperties: must be an object");
  CHECK_OK("{\"minLength\":2.0,\"enum\":[],\"const\":null}");
  CHECK_ERR("5", "must be a schema (an object or a boolean)");
  CHECK_ERR("[]", "must be a schema (an object or a boolean)");
  CHECK_ERR("{\"properties\":{\"budget\":{\"minimum\":\"0\"}}}",
            "properties.budget.minimum: must be a number");
  CHECK_ERR("{\"type\":\"strin\"}", "type: unknown type 'strin'");
  CHECK_ERR("{\"type\":[\"string\",5]}", "type[1]: must be a type name");
  CHECK_ERR("{\"type\":[]}", "type: must be a type name or an array of type names");
  CHECK_ERR("{\"type\":{}}", "type: must be a type name or an array of type names");
  CHECK_ERR("{\"required\":\"a\"}", "required: must be an array of strings");
  CHECK_ERR("{\"required\":[\"a\",1]}", "required[1]: must be a string");
  CHECK_ERR("{\"minLength\":-1}", "minLength: must be a non-negative integer");
  CHECK_ERR("{\"maxItems\":1.5}", "maxItems: must be a non-negative integer");
  CHECK_ERR("{\"minProperties\":\"1\"}", "minProperties: must be a non-negative integer");
  CHECK_ERR("{\"multipleOf\":0}", "multipleOf: must be a number greater than 0");
  CHECK_ERR("{\"uniqueItems\":1}", "uniqueItems: must be a boolean");
  CHECK_ERR("{\"enum\":{\"a\":1}}", "enum: must be an array");
  CHECK_ERR("{\"enum\":\"a\"}", "enum: must be an array");
  CHECK_ERR("{\"$ref\":\"#/$defs/missing\"}", "$ref: '#/$defs/missing' does not resolve");
  CHECK_ERR("{\"$ref\":\"#/enum\",\"enum\":[1]}", "$ref: '#/enum' does not point to a schema");
  CHECK_ERR("{\"$ref\":\"#anchor\"}", "$ref: '#anchor' does not resolve");
  CHECK_ERR("{\"$ref\":\"http://x/y.json\"}",
            "$ref: only references within the schema (\"#...\", or the exact URI of an $id) are "
            "supported, got 'http://x/y.json'");
  CHECK_ERR("{\"$ref\":1}", "$ref: must be a string");
  CHECK_ERR("{\"$schema\":\"http://json-schema.org/draft-04/schema#\"}",
            "$schema: unsupported dialect 'http://json-schema.org/draft-04/schema#' "
            "(use draft-07 or 2020-12)");
  CHECK_ERR("{\"anyOf\":[]}", "anyOf: must be a non-empty array of schemas");
  CHECK_ERR("{\"oneOf\":{}}", "oneOf: must be a non-empty array of schemas");
  CHECK_ERR("{\"anyOf\":[{\"type\":\"x\"}]}", "anyOf[0].type: unknown type 'x'");
  CHECK_ERR("{\"items\":[{\"type\":\"integer\"},5]}",
            "items[1]: must be a schema (an object or a boolean)");
  CHECK_ERR("{\"prefixItems\":[{}],\"items\":[{}]}",
            "items: must be a schema, not an array, next to prefixItems");
  CHECK_ERR("{\"prefixItems\":[]}", "prefixItems: must be a non-empty array of schemas");
  CHECK_ERR("{\"not\":[]}", "not: must be a schema (an object or a boolean)");
  CHECK_ERR("{\"additionalProperties\":\"no\"}",
            "additionalProperties: must be a schema (an object or a boolean)");
  CHECK_ERR("{\"$defs\":{\"a\":{\"type\":\"nope\"}}}", "$defs.a.type: unknown type 'nope'");
  CHECK_ERR("{\"definitions\":[1]}", "definitions: must be an object");
  CHECK_ERR("{\"properties\":{\"a b\":{\"type\":1}}}",
            "properties[\"a b\"].type: must be a type name or an array of type names");
  CHECK_ERR("{\"properties\":{\"a\":{\"items\":{\"properties\":{\"b\":{\"maxLength\":-2}}}}}}",
            "properties.a.items.properties.b.maxLength: must be a non-negative integer");
  /* schemas written in Lua */
  push_lua("{properties = {x = {'string'}}}");
  check_at(__LINE__, "properties.x: must be a schema (an object or a boolean)");
  push_lua("{properties = {[1] = {}, x = {}}}");
  check_at(__LINE__, "properties: member names must be strings");
  push_lua("{type = 'object', properties = {n = {type = 'integer', minimum = 1.5}}, required = {'n'}}");
  check_at(__LINE__, NULL);
  push_lua("(function() local s = {properties = {}} s.properties.self = s return s end)()");
  check_at(__LINE__, "schema nesting too deep (a cycle?)");
}

/* The message is appended: what the buffer held stays. */
/* As expect_json, format asserted (schema_limits.assert_format). */
static void expect_format(int line, const char *schema, const char *value, const char *want) {
  push_json(schema);
  push_json(value);
  int top = lua_gettop(L);
  buf err, again;
  buf_init(&err);
  buf_init(&again);
  schema_limits lim = {.assert_format = true};
  bool ok = schema_validate_limited(L, -2, -1, &err, &lim);
  bool cached = schema_validate_frozen_limited(L, -2, -1, &again, &lim);
  assert(lua_gettop(L) == top);
  buf_putc(&err, '\0');
  if (ok != (want == NULL) || cached != ok || (want && strcmp(err.p, want) != 0)) {
    printf("line %d: format asserted: want %s, got %s%s (cached: %s)\n", line, want ? want : "valid",
           ok ? "valid" : "invalid: ", ok ? "" : err.p, cached ? "valid" : "invalid");
    failures++;
  }
  /* as an annotation, anything passes */
  err.len = 0;
  if (!schema_validate(L, -2, -1, &err) || !schema_validate_frozen(L, -2, -1, NULL)) {
    printf("line %d: format not asserted, yet invalid\n", line);
    failures++;
  }
  buf_free(&err);
  buf_free(&again);
  lua_pop(L, 2);
}
#define FORMAT_OK(f, v) expect_format(__LINE__, "{\"format\":\"" f "\"}", v, NULL)
#define FORMAT_BAD(f, v) expect_format(__LINE__, "{\"format\":\"" f "\"}", v, "must be a valid " f)

static void test_regex(void) {
  /* ECMA-262's meaning, not PCRE2's */
  VALID("{\"pattern\":\"^\\\\d$\"}", "\"7\"");
  INVALID("{\"pattern\":\"^\\\\d$\"}", "\"\\u0667\"", "must match the pattern /^\\d$/"); /* ASCII \\d */
  INVALID("{\"pattern\":\"^\\\\w$\"}", "\"\\u00e9\"", "must match the pattern /^\\w$/");
  VALID("{\"pattern\":\"^\\\\s$\"}", "\"\\u00a0\""); /* Unicode \\s */
  VALID("{\"pattern\":\"^\\\\s$\"}", "\"\\ufeff\"");
  VALID("{\"pattern\":\"^[\\\\s]$\"}", "\"\\u3000\"");
  INVALID("{\"pattern\":\"^\\\\S$\"}", "\"\\u2028\"", "must match the pattern /^\\S$/");
  INVALID("{\"pattern\":\"^a$\"}", "\"a\\n\"", "must match the pattern /^a$/"); /* $ at the end only */
  INVALID("{\"pattern\":\"^.$\"}", "\"\\r\"", "must match the pattern /^.$/");
  VALID("{\"pattern\":\"^.$\"}", "\"\\ud83d\\udca9\""); /* one code point (the u flag) */
  VALID("{\"pattern\":\"^\\\\u00e9\\\\x41$\"}", "\"\\u00e9A\"");
  VALID("{\"pattern\":\"^\\\\v$\"}", "\"\\u000b\"");
  INVALID("{\"pattern\":\"^\\\\v$\"}", "\"\\n\"", "must match the pattern /^\\v$/");
  VALID("{\"pattern\":\"^\\\\cJ$\"}", "\"\\n\"");
  VALID("{\"pattern\":\"^[^]$\"}", "\"\\n\"");
  VALID("{\"pattern\":\"^\\\\p{L}+$\"}", "\"\\u00e9t\\u00e9\"");
  VALID("{\"pattern\":\"^(?<y>\\\\d{4})-\\\\k<y>$\"}", "\"2024-2024\"");
  VALID("{\"pattern\":\"(?<=a)b\"}", "\"ab\"");
  VALID("{\"pattern\":\"^[[:a]+$\"}", "\"[:a\""); /* a class of [, : and a, not POSIX */
  /* bad UTF-8 never matches */
  push_json("{\"pattern\":\"a\"}");
  lua_pushstring(L, "a\xff");
  expect_at(__LINE__, "must match the pattern /a/");
  /* what only PCRE2 has is not a pattern */
  CHECK_ERR("{\"pattern\":\"\\\\Z\"}",
            "pattern: not an ECMA-262 regular expression: an escape ECMA-262 does not have at offset 0 of /\\Z/");
  CHECK_ERR("{\"pattern\":\"(?i)a\"}",
            "pattern: not an ECMA-262 regular expression: a (? group ECMA-262 does not have at offset 0 of /(?i)a/");
  CHECK_ERR("{\"pattern\":\"a*+\"}",
            "pattern: not an ECMA-262 regular expression: a possessive quantifier at offset 2 of /a*+/");
  CHECK_ERR("{\"pattern\":\"(*LIMIT_MATCH=1)a\"}",
            "pattern: not an ECMA-262 regular expression: a (* verb at offset 0 of /(*LIMIT_MATCH=1)a/");
  CHECK_ERR("{\"pattern\":\"(?>a)\"}",
            "pattern: not an ECMA-262 regular expression: a (? group ECMA-262 does not have at offset 0 of /(?>a)/");
  CHECK_ERR("{\"pattern\":\"^(abc]\"}",
            "pattern: bad regular expression /^(abc]/: missing closing parenthesis");
  CHECK_ERR("{\"patternProperties\":{\"a\\\\\":true}}",
            "patternProperties[\"a\\\\\"]: not an ECMA-262 regular expression: a trailing backslash at offset 1 of /a\\/");
  /* patternProperties with properties and additionalProperties */
  const char *pp = "{\"properties\":{\"id\":{\"type\":\"integer\"}},"
                   "\"patternProperties\":{\"^x-\":{\"type\":\"string\"},\"-n$\":{\"type\":\"number\"}},"
                   "\"additionalProperties\":false}";
  VALID(pp, "{\"id\":1,\"x-a\":\"s\",\"b-n\":2}");
  INVALID(pp, "{\"x-a\":1}", "x-a: expected string, got number");
  INVALID(pp, "{\"x-a-n\":\"s\"}", "x-a-n: expected number, got string"); /* both patterns apply */
  INVALID(pp, "{\"id\":1,\"other\":1}", "unexpected property 'other'");
  /* the regex is compiled once per schema: schema_check and every
     validation after it use the same compiled pattern */
  push_json("{\"pattern\":\"^b\"}");
  const schema_regex *r1 = NULL;
  {
    buf e;
    buf_init(&e);
    assert(schema_check(L, -1, &e));
    lua_getfield(L, -1, "pattern");
    r1 = schema_regex_get(L, -2, -1, NULL);
    lua_pushstring(L, "bc");
    assert(schema_validate(L, -3, -1, NULL) && schema_validate_frozen(L, -3, -1, NULL));
    assert(schema_regex_get(L, -3, -2, NULL) == r1 && r1);
    lua_pop(L, 3);
    buf_free(&e);
  }
}

static void test_applicators_2020(void) {
  const char *dr = "{\"dependentRequired\":{\"card\":[\"cvv\",\"expiry\"]}}";
  VALID(dr, "{\"card\":1,\"cvv\":2,\"expiry\":3}");
  VALID(dr, "{\"cvv\":2}");
  INVALID(dr, "{\"card\":1,\"cvv\":2}", "property 'card' requires property 'expiry'");
  const char *ds = "{\"dependentSchemas\":{\"card\":{\"required\":[\"cvv\"]}}}";
  VALID(ds, "{\"card\":1,\"cvv\":2}");
  INVALID(ds, "{\"card\":1}", "missing required property 'cvv'");
  const char *dep = "{\"dependencies\":{\"a\":[\"b\"],\"c\":{\"properties\":{\"d\":{\"type\":\"string\"}}}}}";
  INVALID(dep, "{\"a\":1}", "property 'a' requires property 'b'");
  INVALID(dep, "{\"c\":1,\"d\":2}", "d: expected string, got number");
  VALID(dep, "{\"d\":2}");
  const char *pn = "{\"propertyNames\":{\"maxLength\":3}}";
  VALID(pn, "{\"abc\":1}");
  INVALID(pn, "{\"abcd\":1}", "abcd: must be at most 3 characters long");
  const char *ite = "{\"if\":{\"properties\":{\"kind\":{\"const\":\"a\"}}},"
                    "\"then\":{\"required\":[\"x\"]},\"else\":{\"required\":[\"y\"]}}";
  VALID(ite, "{\"kind\":\"a\",\"x\":1}");
  INVALID(ite, "{\"kind\":\"a\",\"y\":1}", "missing required property 'x'");
  INVALID(ite, "{\"kind\":\"b\",\"x\":1}", "missing required property 'y'");
  VALID("{\"if\":false}", "1"); /* if alone decides nothing */
  const char *co = "{\"contains\":{\"type\":\"integer\"},\"minContains\":2,\"maxContains\":3}";
  VALID(co, "[1,\"a\",2]");
  INVALID(co, "[1,\"a\"]", "must contain at least 2 items that match the contains schema");
  INVALID(co, "[1,2,3,4]", "must contain at most 3 items that match the contains schema");
  INVALID("{\"contains\":{\"type\":\"integer\"}}", "[\"a\"]",
          "must contain an item that matches the contains schema");
  VALID("{\"contains\":false,\"minContains\":0}", "[1]");
  /* unevaluatedProperties sees through allOf, $ref, the branches that match */
  const char *up = "{\"$defs\":{\"base\":{\"properties\":{\"id\":true}}},"
                   "\"allOf\":[{\"$ref\":\"#/$defs/base\"}],"
                   "\"anyOf\":[{\"properties\":{\"a\":true},\"required\":[\"a\"]},"
                   "{\"properties\":{\"b\":true},\"required\":[\"b\"]}],"
                   "\"unevaluatedProperties\":false}";
  VALID(up, "{\"id\":1,\"a\":1}");
  VALID(up, "{\"a\":1,\"b\":1}");
  INVALID(up, "{\"a\":1,\"c\":1}", "unexpected property 'c'");
  INVALID("{\"properties\":{\"a\":true},\"unevaluatedProperties\":{\"type\":\"string\"}}",
          "{\"a\":1,\"b\":2}", "b: expected string, got number");
  const char *ui = "{\"prefixItems\":[true],\"contains\":{\"const\":\"x\"},\"unevaluatedItems\":false}";
  VALID(ui, "[1,\"x\",\"x\"]");
  INVALID(ui, "[1,\"x\",2]", "[2]: unexpected item (unevaluatedItems)");
  /* $anchor, and $ref to an $id's exact URI */
  const char *an = "{\"$defs\":{\"p\":{\"$anchor\":\"pos\",\"minimum\":0}},"
                   "\"properties\":{\"n\":{\"$ref\":\"#pos\"}}}";
  VALID(an, "{\"n\":1}");
  INVALID(an, "{\"n\":-1}", "n: must be >= 0");
  const char *id = "{\"$id\":\"https://example.com/root\",\"$defs\":{\"s\":{\"$id\":\"https://example.com/s\","
                   "\"type\":\"string\"}},\"properties\":{\"a\":{\"$ref\":\"https://example.com/s\"},"
                   "\"b\":{\"$ref\":\"https://example.com/root#/$defs/s\"}}}";
  VALID(id, "{\"a\":\"x\",\"b\":\"y\"}");
  INVALID(id, "{\"b\":1}", "b: expected string, got number");
  CHECK_ERR("{\"$ref\":\"#nowhere\",\"$defs\":{\"a\":{\"$anchor\":\"here\"}}}",
            "$ref: '#nowhere' does not resolve");
  CHECK_ERR("{\"dependentRequired\":{\"a\":[1]}}", "dependentRequired.a: must be an array of strings");
  CHECK_ERR("{\"dependencies\":{\"a\":5}}", "dependencies.a: must be a schema or an array of strings");
  CHECK_ERR("{\"minContains\":-1}", "minContains: must be a non-negative integer");
  CHECK_ERR("{\"if\":5}", "if: must be a schema (an object or a boolean)");
}

static void test_format(void) {
  FORMAT_OK("date-time", "\"1963-06-19T08:30:06.283185Z\"");
  FORMAT_OK("date-time", "\"1998-12-31T15:59:60.123-08:00\""); /* 23:59:60 UTC */
  FORMAT_BAD("date-time", "\"1998-12-31T15:58:60-08:00\"");
  FORMAT_BAD("date-time", "\"1990-02-31T15:59:59Z\"");
  FORMAT_BAD("date-time", "\"1963-06-19 08:30:06Z\"");
  FORMAT_OK("date", "\"2020-02-29\"");
  FORMAT_BAD("date", "\"2021-02-29\"");
  FORMAT_BAD("date", "\"2020-1-01\"");
  FORMAT_OK("time", "\"08:30:06+01:00\"");
  FORMAT_BAD("time", "\"08:30:06\""); /* the offset is required */
  FORMAT_BAD("time", "\"24:00:00Z\"");
  FORMAT_OK("duration", "\"P1Y2M3DT4H5M6S\"");
  FORMAT_OK("duration", "\"P4W\"");
  FORMAT_OK("duration", "\"PT36H\"");
  FORMAT_BAD("duration", "\"P\"");
  FORMAT_BAD("duration", "\"P1D2H\"");
  FORMAT_BAD("duration", "\"PT1D\"");
  FORMAT_BAD("duration", "\"P2W1D\"");
  FORMAT_OK("email", "\"joe.bloggs@example.com\"");
  FORMAT_OK("email", "\"\\\"joe bloggs\\\"@example.com\"");
  FORMAT_OK("email", "\"joe@[127.0.0.1]\"");
  FORMAT_OK("email", "\"joe@[IPv6:::1]\"");
  FORMAT_BAD("email", "\".joe@example.com\"");
  FORMAT_BAD("email", "\"jo..e@example.com\"");
  FORMAT_BAD("email", "\"2962\"");
  FORMAT_OK("hostname", "\"xn--4gbwdl.xn--wgbh1c\"");
  FORMAT_BAD("hostname", "\"-a.example\"");
  FORMAT_BAD("hostname", "\"not_valid\"");
  FORMAT_BAD("hostname", "\"a..b\"");
  FORMAT_OK("ipv4", "\"192.168.0.1\"");
  FORMAT_BAD("ipv4", "\"087.10.0.1\"");
  FORMAT_BAD("ipv4", "\"256.1.1.1\"");
  FORMAT_OK("ipv6", "\"::ffff:192.168.0.1\"");
  FORMAT_OK("ipv6", "\"1:2:3:4:5:6:7:8\"");
  FORMAT_BAD("ipv6", "\"1:2:3:4:5:6:7:8:9\"");
  FORMAT_BAD("ipv6", "\"1::2::3\"");
  FORMAT_BAD("ipv6", "\"fe80::1%eth0\"");
  FORMAT_OK("uri", "\"http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com\"");
  FORMAT_OK("uri", "\"ldap://[2001:db8::7]/c=GB?objectClass?one\"");
  FORMAT_BAD("uri", "\"/abc\"");
  FORMAT_BAD("uri", "\"http:// shouldfail.com\"");
  FORMAT_OK("uri-reference", "\"//foo.bar/?baz=qux#quux\"");
  FORMAT_BAD("uri-reference", "\"#frag\\\\ment\"");
  FORMAT_BAD("uri-reference", "\"1a:b\"");
  FORMAT_OK("uuid", "\"2EB8AA08-AA98-11EA-B4AA-73B441D16380\"");
  FORMAT_BAD("uuid", "\"2eb8aa08-aa98-11ea-b4aa-73b441d1638\"");
  FORMAT_OK("json-pointer", "\"/foo/bar~0/baz~1/%a\"");
  FORMAT_BAD("json-pointer", "\"/foo/bar~\"");
  FORMAT_OK("relative-json-pointer", "\"0#\"");
  FORMAT_BAD("relative-json-pointer", "\"01/a\"");
  FORMAT_OK("regex", "\"([abc])+\\\\s+$\"");
  FORMAT_BAD("regex", "\"^\\\\S(|(.|\\\\n)*\\\\S)\\\\Z\"");
  FORMAT_OK("no-such-format", "\"anything\"");
  expect_format(__LINE__, "{\"format\":\"email\"}", "5", NULL); /* only strings */
}

static void test_unenforced(void) {
  push_json("{\"properties\":{\"a\":{\"format\":\"email\"},\"b\":{\"$dynamicRef\":\"#x\",\"$dynamicAnchor\":\"x\"},"
            "\"c\":{\"format\":\"iri\",\"contentMediaType\":\"text/html\"}},\"pattern\":\"a\"}");
  buf out;
  buf_init(&out);
  int n = schema_unenforced(L, -1, false, &out);
  buf_putc(&out, '\0');
  /* member order is the table's: compare as a set of lines */
  const char *want[] = {
    "properties.a: format 'email' is an annotation (not checked; app.lua schema = { format = \"assert\" } checks it)",
    "properties.b: $dynamicRef is resolved as a $ref (no dynamic scope)",
    "properties.c: contentMediaType is an annotation (not checked)",
    "properties.c: format 'iri' is an annotation (not checked; app.lua schema = { format = \"assert\" } checks it)",
  };
  bool ok = n == 4;
  for (size_t i = 0; i < 4; i++) ok = ok && strstr(out.p, want[i]) != NULL;
  out.len = 0;
  int m = schema_unenforced(L, -1, true, &out);
  buf_putc(&out, '\0');
  ok = ok && m == 3 && strstr(out.p, "properties.c: format 'iri' is not one the validator knows (not checked)") &&
       !strstr(out.p, "'email'");
  if (!ok) {
    printf("line %d: schema_unenforced: %d / %d: %s\n", __LINE__, n, m, out.p);
    failures++;
  }
  buf_free(&out);
  lua_pop(L, 1);
}

static void test_append(void) {
  buf err;
  buf_init(&err);
  buf_puts(&err, "tools/call: ");
  push_json("{\"required\":[\"a\"]}");
  push_json("{}");
  assert(!schema_validate(L, -2, -1, &err));
  buf_putc(&err, '\0');
  assert(strcmp(err.p, "tools/call: missing required property 'a'") == 0);
  lua_pop(L, 2);
  /* a NULL buffer is allowed: only the answer */
  push_json("{\"required\":[\"a\"]}");
  push_json("{}");
  assert(!schema_validate(L, 1, 2, NULL));
  lua_pop(L, 2);
  buf_free(&err);
}

int main(void) {
  L = luaL_newstate();
  luaL_openlibs(L);
  json_push_array_mt(L);
  lua_setglobal(L, "arr_mt");
  assert(lua_gettop(L) == 0);

  test_type();
  test_enum_const();
  test_numbers();
  test_strings();
  test_objects();
  test_arrays();
  test_combinators();
  test_refs();
  test_check();
  test_regex();
  test_applicators_2020();
  test_format();
  test_unenforced();
  test_append();

  assert(lua_gettop(L) == 0);
  lua_close(L);
  if (failures) {
    printf("%d failed\n", failures);
    return 1;
  }
  printf("test_validate: all passed\n");
  return 0;
}
