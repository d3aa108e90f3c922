/* test_validate_limits.c — validation work is bounded (issue 15): the memo
 * of anyOf/oneOf/allOf/$ref branches, hashed uniqueItems, and the step
 * budget and deadline of schema_limits.
 *
 * The attacks run under a small step budget: the answer must be the right
 * true/false, not "too complex". Without the memo and the hashing they
 * need 2^30 and 10^8 steps (an hour, minutes), so on the old code they
 * also outlast the TIMEOUT validate.cmake gives this test. */
#undef NDEBUG /* the asserts are the test, in every build type */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "buf.h"
#include "json.h"
#include "validate.h"

static lua_State *L;
static int failures;

static void push_json(const char *text, size_t n) {
  const char *err = NULL;
  if (!json_decode(L, text, n, &err)) {
    fprintf(stderr, "bad JSON in a test: %s: %.200s\n", err, text);
    abort();
  }
}

static void push_str(const char *text) { push_json(text, strlen(text)); }

static void push_lua(const char *expr) {
  lua_pushfstring(L, "return %s", expr);
  if (luaL_dostring(L, lua_tostring(L, -1)) != LUA_OK) {
    fprintf(stderr, "bad Lua in a test: %s\n", lua_tostring(L, -1));
    abort();
  }
  lua_remove(L, -2);
}

/* Validate the value at -1 against the schema at -2 (both popped) with
   schema_validate_limited and (cold, then warm) the frozen variant, each
   within max_steps; want is the message or NULL for valid. All must agree,
   and say "exhausted" exactly when want is a "too complex" message. */
static void expect_at(int line, unsigned long max_steps, double deadline, const char *want) {
  int top = lua_gettop(L);
  bool too_complex = want && strncmp(want, "too complex", 11) == 0;
  for (int pass = 0; pass < 3; pass++) {
    buf err;
    buf_init(&err);
    schema_limits lim = {.deadline = deadline, .max_steps = max_steps, .exhausted = !too_complex};
    bool ok = pass == 0 ? schema_validate_limited(L, -2, -1, &err, &lim)
                        : schema_validate_frozen_limited(L, -2, -1, &err, &lim);
    assert(lua_gettop(L) == top);
    buf_putc(&err, '\0');
    if (ok != (want == NULL) || (want && strcmp(err.p, want) != 0) || (ok && err.len != 1) ||
        lim.exhausted != too_complex) {
      printf("line %d (%s): want %s%s, got %s%s%s\n", line,
             pass == 0 ? "walker" : pass == 1 ? "frozen, cold" : "frozen, warm",
             want ? "invalid: " : "valid", want ? want : "", ok ? "valid" : "invalid: ",
             ok ? "" : err.p, lim.exhausted ? " (exhausted)" : "");
      failures++;
    }
    buf_free(&err);
  }
  lua_pop(L, 2);
}

static void expect_json(int line, const char *schema, const char *value, unsigned long max_steps,
                        const char *want) {
  push_str(schema);
  push_str(value);
  expect_at(line, max_steps, 0, want);
}

/* [[[...leaf...]]], depth deep, as {"a": ...} */
static void nested(buf *b, int depth, const char *leaf) {
  buf_puts(b, "{\"a\":");
  for (int i = 0; i < depth; i++) buf_putc(b, '[');
  buf_puts(b, leaf);
  for (int i = 0; i < depth; i++) buf_putc(b, ']');
  buf_putc(b, '}');
}

/* A node that is an array of nodes two ways: combinator over branches,
   the second with extra (a keyword after items). */
static void recursive_schema(buf *b, const char *combinator, const char *extra) {
  buf_printf(b,
             "{\"$defs\":{\"node\":{\"%s\":[{\"items\":{\"$ref\":\"#/$defs/node\"}},"
             "{\"items\":{\"$ref\":\"#/$defs/node\"}%s}]}},"
             "\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/node\"}}}",
             combinator, extra);
}

/* The attack: each level tried both branches of the one below, so
   the work doubled per level (depth 18: 1 s, depth 30: an hour). */
static void test_recursive_branches(void) {
  const int depths[] = {30, 100};
  for (size_t d = 0; d < sizeof depths / sizeof *depths; d++) {
    buf s, v;
    buf_init(&s);
    buf_init(&v);
    /* the shape, and a leaf no branch takes: every branch at
       every level fails */
    buf_puts(&s, "{\"$defs\":{\"node\":{\"anyOf\":[{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}},"
                 "{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"},\"minItems\":0}]}},"
                 "\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/node\"}}}");
    nested(&v, depths[d], "\"x\"");
    buf_putc(&s, '\0');
    buf_putc(&v, '\0');
    expect_json(__LINE__, s.p, v.p, 20000, "a: must match at least one schema in anyOf");
    buf_free(&v);
    buf_init(&v);
    nested(&v, depths[d], "[]");
    buf_putc(&v, '\0');
    expect_json(__LINE__, s.p, v.p, 20000, NULL);
    buf_free(&s);
    buf_free(&v);

    /* a valid value whose first branch fails only after its items passed
       ("not": {} fails everything): both branches explore the level below */
    buf_init(&s);
    buf_init(&v);
    buf_puts(&s, "{\"$defs\":{\"node\":{\"anyOf\":[{\"items\":{\"$ref\":\"#/$defs/node\"},\"not\":{}},"
                 "{\"items\":{\"$ref\":\"#/$defs/node\"}}]}},"
                 "\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/node\"}}}");
    buf_putc(&s, '\0');
    nested(&v, depths[d], "1");
    buf_putc(&v, '\0');
    expect_json(__LINE__, s.p, v.p, 20000, NULL);
    buf_free(&s);

    /* oneOf must try every branch: one matches, the other fails late */
    buf_init(&s);
    recursive_schema(&s, "oneOf", ",\"not\":{}");
    buf_putc(&s, '\0');
    expect_json(__LINE__, s.p, v.p, 20000, NULL);
    buf_free(&s);
    buf_init(&s);
    recursive_schema(&s, "oneOf", ""); /* both match the leaf, so none the levels above */
    buf_putc(&s, '\0');
    expect_json(__LINE__, s.p, v.p, 20000,
                "a: must match exactly one schema in oneOf (matched none)");
    buf_free(&s);
    buf_free(&v);
  }
}

/* Chains over one scalar value: level i applies level i+1 twice. */
static void chain_schema(buf *b, const char *combinator, int levels, const char *last) {
  buf_puts(b, "{\"$defs\":{");
  for (int i = 0; i < levels; i++)
    buf_printf(b, "\"l%d\":{\"%s\":[{\"$ref\":\"#/$defs/l%d\"},{\"$ref\":\"#/$defs/l%d\"}]},", i,
               combinator, i + 1, i + 1);
  buf_printf(b, "\"l%d\":%s},\"$ref\":\"#/$defs/l0\"}", levels, last);
  buf_putc(b, '\0');
}

static void test_chains(void) {
  buf s;
  buf_init(&s);
  chain_schema(&s, "allOf", 40, "{\"type\":\"integer\"}");
  expect_json(__LINE__, s.p, "1", 20000, NULL);
  expect_json(__LINE__, s.p, "\"x\"", 20000, "expected integer, got string");
  buf_free(&s);
  buf_init(&s);
  chain_schema(&s, "anyOf", 40, "{\"type\":\"integer\"}");
  expect_json(__LINE__, s.p, "1", 20000, NULL);
  expect_json(__LINE__, s.p, "\"x\"", 20000, "must match at least one schema in anyOf");
  buf_free(&s);
  buf_init(&s);
  chain_schema(&s, "oneOf", 40, "true"); /* [true, true] matches twice, so the rest none */
  expect_json(__LINE__, s.p, "1", 20000,
              "must match exactly one schema in oneOf (matched none)");
  buf_free(&s);
}

/* The memo keeps every answer and message the same. */
static void test_memo_answers(void) {
  /* a pair first failed quietly (in anyOf), then met where a message is
     wanted: the message is still written, with its path */
  const char *n = "\"$defs\":{\"n\":{\"properties\":{\"x\":{\"type\":\"integer\"}}}}";
  char s[512];
  snprintf(s, sizeof s, "{%s,\"allOf\":[{\"anyOf\":[{\"$ref\":\"#/$defs/n\"},true]},{\"$ref\":\"#/$defs/n\"}]}", n);
  expect_json(__LINE__, s, "{\"x\":\"s\"}", 0, "x: expected integer, got string");
  expect_json(__LINE__, s, "{\"x\":1}", 0, NULL);
  /* and first passed, then met again */
  snprintf(s, sizeof s, "{%s,\"allOf\":[{\"$ref\":\"#/$defs/n\"},{\"$ref\":\"#/$defs/n\"}],"
           "\"properties\":{\"y\":{\"$ref\":\"#/$defs/n\"}}}", n);
  expect_json(__LINE__, s, "{\"x\":1,\"y\":{\"x\":2}}", 0, NULL);
  expect_json(__LINE__, s, "{\"x\":1,\"y\":{\"x\":true}}", 0, "y.x: expected integer, got boolean");
  /* equal values in different places are different pairs, by identity:
     1 and 1.0 and "1" are told apart */
  expect_json(__LINE__, "{\"items\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}}",
              "[1,1.5,\"1\"]", 0, "[1]: must match at least one schema in anyOf");
  expect_json(__LINE__, "{\"items\":{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}}",
              "[1.5,1.5,2.5]", 0, NULL);
  expect_json(__LINE__, "{\"items\":{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}}",
              "[1.5,1.5,2]", 0, "[2]: must match exactly one schema in oneOf (matched 0 and 1)");
  expect_json(__LINE__, "{\"items\":{\"not\":{\"const\":1}}}", "[2,2,1.0]", 0,
              "[2]: must not match the schema in not");
  /* a $ref cycle that makes no progress is still the depth limit */
  expect_json(__LINE__, "{\"anyOf\":[{\"$ref\":\"#\"},true]}", "1", 0, "schema nesting too deep");
  /* a Lua value with shared tables (a DAG: 2^60 paths, 60 tables) is
     walked once per table */
  push_str("{\"type\":\"array\",\"items\":{\"anyOf\":[{\"$ref\":\"#\"},{\"$ref\":\"#\"}]}}");
  push_lua("(function() local a = setmetatable({}, arr_mt) "
           "for i = 1, 60 do a = setmetatable({a, a}, arr_mt) end return a end)()");
  expect_at(__LINE__, 20000, 0, NULL);
}

/* uniqueItems on n distinct objects, plus (dup) one equal to the first:
   its members in another order, 0 written as 0.0. */
static void unique_objects(buf *b, int n, bool dup) {
  buf_puts(b, "{\"a\":[");
  for (int i = 0; i < n; i++)
    buf_printf(b, "%s{\"id\":%d,\"tags\":[\"t\",%d],\"k\":\"v\"}", i ? "," : "", i, i % 7);
  if (dup) buf_puts(b, ",{\"k\":\"v\",\"tags\":[\"t\",0.0],\"id\":0.0}");
  buf_puts(b, "]}");
  buf_putc(b, '\0');
}

static void test_unique_items(void) {
  const char *s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"uniqueItems\":true}}}";
  buf v;
  buf_init(&v);
  unique_objects(&v, 20000, false); /* pairwise: 2*10^8 comparisons */
  expect_json(__LINE__, s, v.p, 1000000, NULL);
  buf_free(&v);
  buf_init(&v);
  unique_objects(&v, 20000, true);
  expect_json(__LINE__, s, v.p, 1000000,
              "a: must not contain duplicates (items 0 and 20000 are equal)");
  buf_free(&v);

  /* which pair: the first item equal to an earlier one, and the first of
     those, as the pairwise and set versions said */
  const char *u = "{\"uniqueItems\":true}";
  buf_init(&v);
  buf_putc(&v, '[');
  for (int i = 0; i < 40; i++) {
    int x = i == 30 ? 3 : i == 20 ? 10 : i == 35 ? 10 : i; /* 3 = 30; 10 = 20 = 35 */
    buf_printf(&v, "%s{\"x\":[%d]}", i ? "," : "", x);
  }
  buf_puts(&v, "]");
  buf_putc(&v, '\0');
  expect_json(__LINE__, u, v.p, 0, "must not contain duplicates (items 10 and 20 are equal)");
  buf_free(&v);
  /* JSON equality: order of members does not count, of elements does;
     1 == 1.0; true, 1, "1", [1], {"1":1} all differ; null and a hole agree */
  const char *distinct = "[[1,2],[2,1],{\"a\":1,\"b\":2},{\"a\":2,\"b\":1},{\"a\":\"b\"},{\"b\":\"a\"},"
                         "true,1,\"1\",[1],{\"1\":1},[[1]],{},[],null,false,0,-1,1.5,\"\",[{}],[[]],"
                         "{\"a\":{}},{\"a\":[]},{\"a\":null},[null],[true],[false],1e300,-0.5]";
  expect_json(__LINE__, u, distinct, 0, NULL);
  char text[1024];
  const char *equal[] = {"{\"b\":2.0,\"a\":1}", "[1.0,2]", "{\"b\":\"a\"}", "[[1.0]]", "{\"a\":[]}",
                         "null", "-0.0", "1.0", "[{}]", "{\"1\":1.0}"};
  const int first[] = {2, 0, 5, 11, 23, 14, 16, 7, 20, 10};
  for (size_t i = 0; i < sizeof equal / sizeof *equal; i++) {
    snprintf(text, sizeof text, "%.*s,%s]", (int)strlen(distinct) - 1, distinct, equal[i]);
    char want[128];
    snprintf(want, sizeof want, "must not contain duplicates (items %d and 30 are equal)", first[i]);
    expect_json(__LINE__, u, text, 0, want);
  }
  /* random long arrays of values from classes, each written several ways:
     the pair reported is the one the class ids say */
  static const char *const classes[][3] = {
    {"{\"a\":1,\"b\":[2]}", "{\"b\":[2.0],\"a\":1.0}", "{\"b\":[2],\"a\":1}"},
    {"[1,2]", "[1.0,2.0]", "[1,2.0]"},
    {"[2,1]", "[2,1]", "[2.0,1]"},
    {"1", "1.0", "1e0"},
    {"\"1\"", "\"1\"", "\"\\u0031\""},
    {"null", "null", "null"},
    {"{\"a\":{\"b\":[]}}", "{\"a\":{\"b\":[]}}", "{\"a\":{\"b\":[]}}"},
    {"{}", "{}", "{}"},
    {"[]", "[]", "[]"},
    {"true", "true", "true"},
    {"{\"a\":{\"b\":{}}}", "{\"a\":{\"b\":{}}}", "{\"a\":{\"b\":{}}}"},
    {"[[1],[2]]", "[[1.0],[2]]", "[[1],[2.0]]"},
    {"[[2],[1]]", "[[2],[1]]", "[[2],[1]]"},
    {"{\"x\":\"y\"}", "{\"x\":\"y\"}", "{\"x\":\"y\"}"},
    {"{\"y\":\"x\"}", "{\"y\":\"x\"}", "{\"y\":\"x\"}"},
    {"0", "-0.0", "0.0"},
  };
  const int nclasses = sizeof classes / sizeof *classes;
  unsigned long seed = 12345;
  for (int round = 0; round < 400; round++) {
    int len = 17 + (int)((seed = seed * 6364136223846793005UL + 1442695040888963407UL) >> 33) % 40;
    int cls[64], best_i = -1, best_j = -1;
    buf_init(&v);
    buf_putc(&v, '[');
    for (int k = 0; k < len; k++) {
      seed = seed * 6364136223846793005UL + 1442695040888963407UL;
      /* mostly distinct: each class can appear once plus a few repeats */
      cls[k] = (int)((seed >> 33) % (unsigned long)(round % 4 == 0 ? nclasses : 4 * nclasses));
      const char *text;
      char own[32];
      if (cls[k] < nclasses) {
        text = classes[cls[k]][(seed >> 20) % 3];
      } else { /* a value of its own */
        snprintf(own, sizeof own, "{\"n\":[%d]}", 1000 * round + k);
        text = own;
        cls[k] = 1000 + k;
      }
      buf_printf(&v, "%s%s", k ? "," : "", text);
      for (int r = 0; r < k && best_j < 0; r++)
        if (cls[r] == cls[k]) best_i = r, best_j = k;
    }
    buf_putc(&v, ']');
    buf_putc(&v, '\0');
    char want[128];
    snprintf(want, sizeof want, "must not contain duplicates (items %d and %d are equal)", best_i, best_j);
    expect_json(__LINE__, u, v.p, 0, best_j < 0 ? NULL : want);
    buf_free(&v);
  }
  /* NaN equals nothing, a hole reads as null, in a long Lua-made array */
  push_str(u);
  push_lua("{0/0, 0/0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, {a = 0/0}, {a = 0/0}}");
  expect_at(__LINE__, 0, 0, NULL);
  push_str(u);
  push_lua("setmetatable({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, nil, 18, 19, {}, json_null}, arr_mt)");
  expect_at(__LINE__, 0, 0, "must not contain duplicates (items 16 and 20 are equal)");
}

static void test_budget(void) {
  buf v;
  buf_init(&v);
  buf_putc(&v, '[');
  for (int i = 0; i < 5000; i++) buf_printf(&v, "%s%d", i ? "," : "", i);
  buf_putc(&v, ']');
  buf_putc(&v, '\0');
  const char *work = "too complex to validate (work limit reached)";
  expect_json(__LINE__, "{\"items\":{\"type\":\"integer\",\"minimum\":0}}", v.p, 100000, NULL);
  expect_json(__LINE__, "{\"items\":{\"type\":\"integer\",\"minimum\":0}}", v.p, 100, work);
  /* a failure before the limit is reported as usual */
  expect_json(__LINE__, "{\"items\":{\"type\":\"string\"}}", v.p, 100, "[0]: expected string, got number");
  /* what the budget cut short is not a failure that not/anyOf/oneOf turn
     into success, nor a message of its own (the inner schema fails only
     at the last item) */
  const char *late = "{\"items\":{\"maximum\":4998}}";
  char s[256];
  snprintf(s, sizeof s, "{\"not\":%s}", late);
  expect_json(__LINE__, s, v.p, 100000, NULL);
  expect_json(__LINE__, s, v.p, 100, work);
  snprintf(s, sizeof s, "{\"anyOf\":[%s,true]}", late);
  expect_json(__LINE__, s, v.p, 100000, NULL);
  expect_json(__LINE__, s, v.p, 100, work);
  snprintf(s, sizeof s, "{\"oneOf\":[%s,true]}", late);
  expect_json(__LINE__, s, v.p, 100000, NULL);
  expect_json(__LINE__, s, v.p, 100, work);
  expect_json(__LINE__, "{\"uniqueItems\":true}", v.p, 100000, NULL);
  expect_json(__LINE__, "{\"uniqueItems\":true}", v.p, 100, work);
  /* enum and const compare all but the last item */
  const char *last = strrchr(v.p, ','); /* v without its last item */
  buf e;
  buf_init(&e);
  buf_printf(&e, "{\"enum\":[%.*s,-1]]}", (int)(last - v.p), v.p);
  expect_json(__LINE__, e.p, v.p, 100, work);
  e.len = 0;
  buf_printf(&e, "{\"const\":%.*s,-1]}", (int)(last - v.p), v.p);
  expect_json(__LINE__, e.p, v.p, 100, work);
  buf_free(&e);
  /* the deadline: a time long past; read every 1024 steps, so a small
     validation finishes regardless */
  push_str("{\"items\":{\"type\":\"integer\",\"minimum\":0}}");
  push_json(v.p, v.len - 1);
  expect_at(__LINE__, 0, 1e-9, "too complex to validate (time limit reached)");
  expect_json(__LINE__, "{\"items\":{\"type\":\"integer\"}}", "[1,2]", 0, NULL);
  push_str("{\"minimum\":0}");
  push_str("1");
  expect_at(__LINE__, 0, 1e-9, NULL);
  /* an exponential Lua value (a DAG, 2^60 paths) compared: too complex, not a hang */
  push_str("{\"uniqueItems\":true}");
  push_lua("(function() local function d() local a = {} for i = 1, 60 do a = {a, a} end return a end "
           "return {d(), d()} end)()");
  expect_at(__LINE__, 100000, 0, work);
  /* the default limits: NULL, and the functions without _limited (about
     a second of work each) */
  push_str("{\"uniqueItems\":true}");
  push_lua("(function() local function d() local a = {} for i = 1, 60 do a = {a, a} end return a end "
           "return {d(), d()} end)()");
  buf err;
  buf_init(&err);
  assert(!schema_validate(L, -2, -1, &err));
  buf_putc(&err, '\0');
  assert(strcmp(err.p, work) == 0);
  err.len = 0;
  assert(!schema_validate_frozen_limited(L, -2, -1, &err, NULL));
  buf_putc(&err, '\0');
  assert(strcmp(err.p, work) == 0);
  buf_free(&err);
  lua_pop(L, 2);
  buf_free(&v);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Regular expressions: PCRE2 backtracks, so ^(a+)+$ against a^n b takes
   2^n steps. The match limit, tied to what is left of the step budget,
   stops it: "too complex", never a pass, and quickly. */
static void test_regex_budget(void) {
  const char *work = "too complex to validate (work limit reached)";
  buf v;
  buf_init(&v);
  buf_putc(&v, '"');
  for (int i = 0; i < 40; i++) buf_putc(&v, 'a');
  buf_puts(&v, "b\"");
  buf_putc(&v, '\0');
  const char *evil = "{\"pattern\":\"^(a+)+$\"}";
  expect_json(__LINE__, evil, v.p, 20000, work);
  /* ... a short subject it can answer within the budget */
  expect_json(__LINE__, evil, "\"aaaaab\"", 20000, "must match the pattern /^(a+)+$/");
  expect_json(__LINE__, evil, "\"aaaaa\"", 20000, NULL);
  /* not turned into success by not/anyOf, in patternProperties too */
  char s[256];
  snprintf(s, sizeof s, "{\"not\":%s}", evil);
  expect_json(__LINE__, s, v.p, 20000, work);
  snprintf(s, sizeof s, "{\"anyOf\":[%s,true]}", evil);
  expect_json(__LINE__, s, v.p, 20000, work);
  buf o;
  buf_init(&o);
  buf_printf(&o, "{%s:1}", v.p);
  buf_putc(&o, '\0');
  expect_json(__LINE__, "{\"patternProperties\":{\"^(a+)+$\":false}}", o.p, 20000, work);
  expect_json(__LINE__, "{\"propertyNames\":{\"pattern\":\"^(a+)+$\"}}", o.p, 20000, work);
  /* the default budget, and the deadline: a second or so at most (one
     match's cap), not 2^40 steps */
  push_str(evil);
  push_str(v.p);
  double t0 = now();
  buf err;
  buf_init(&err);
  assert(!schema_validate_frozen_limited(L, -2, -1, &err, NULL));
  double t1 = now();
  buf_putc(&err, '\0');
  assert(strcmp(err.p, work) == 0);
  err.len = 0;
  schema_limits lim = {.deadline = now() + 0.01};
  assert(!schema_validate_limited(L, -2, -1, &err, &lim) && lim.exhausted);
  buf_putc(&err, '\0');
  assert(strcmp(err.p, "too complex to validate (time limit reached)") == 0);
  double t2 = now();
  printf("regex budget: %.3f s for the default budget, %.3f s with a 10 ms deadline\n", t1 - t0, t2 - t1);
  if (t1 - t0 > 5) {
    printf("line %d: the default budget let a regex run %.1f s\n", __LINE__, t1 - t0);
    failures++;
  }
  lua_pop(L, 2);
  /* a long subject with a linear pattern passes within the default budget */
  buf big;
  buf_init(&big);
  buf_puts(&big, "\"");
  for (int i = 0; i < 20000; i++) buf_putc(&big, "abc"[i % 3]);
  buf_puts(&big, "\"");
  push_str("{\"pattern\":\"^[a-c]+$\"}");
  push_json(big.p, big.len);
  expect_at(__LINE__, 0, 0, NULL);
  push_str("{\"pattern\":\"^(?:[a-c]|-)*$\"}"); /* a frame per character */
  push_json(big.p, big.len);
  expect_at(__LINE__, 0, 0, NULL);
  buf_free(&big);
  buf_free(&err);
  buf_free(&o);
  buf_free(&v);
}

int main(void) {
  L = luaL_newstate();
  luaL_openlibs(L);
  json_push_array_mt(L);
  lua_setglobal(L, "arr_mt");
  json_pushnull(L);
  lua_setglobal(L, "json_null");

  test_recursive_branches();
  test_chains();
  test_memo_answers();
  test_unique_items();
  test_budget();
  test_regex_budget();

  assert(lua_gettop(L) == 0);
  lua_close(L);
  if (failures) {
    printf("%d failed\n", failures);
    return 1;
  }
  printf("test_validate_limits: all passed\n");
  return 0;
}
