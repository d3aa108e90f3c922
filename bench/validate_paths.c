/* validate_paths.c — the compiled fast path (schema_validate_frozen) against
 * the walker (schema_validate) on the argument shapes tools/call meets.
 *
 *   validate_paths [walker|frozen|both] [N] [CASE]
 *
 * Validates each case's value (or CASE's only) N times (default 200000) by
 * the path(s) named and prints ns per validation. Cases: "echo" (one required string),
 * "typical" (strings, an integer range, an enum, an array of objects,
 * additionalProperties false), "pattern" (a string pattern and a format,
 * which the fast path hands to the walker). For instruction counts:
 *   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \
 *       /tmp/validate_paths frozen 20000 typical
 * Not part of the build; from the source tree, after cmake --build build:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Icore -I/usr/include/lua5.4 \
 *      bench/validate_paths.c build/libluamcp_core.a -llua5.4 -lpcre2-8 -lm \
 *      -o /tmp/validate_paths */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "buf.h"
#include "json.h"
#include "validate.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const struct { const char *name, *schema, *value; } cases[] = {
  {"echo", "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}",
   "{\"text\":\"hello world\"}"},
  {"typical",
   "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"query\",\"limit\"],"
   "\"properties\":{\"query\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200},"
   "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100},"
   "\"order\":{\"type\":\"string\",\"enum\":[\"asc\",\"desc\"]},"
   "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"k\"],"
   "\"properties\":{\"k\":{\"type\":\"string\"},\"v\":{\"type\":\"number\"}}}}}}",
   "{\"query\":\"gift ideas\",\"limit\":10,\"order\":\"asc\","
   "\"tags\":[{\"k\":\"a\",\"v\":1},{\"k\":\"b\",\"v\":2.5},{\"k\":\"c\"}]}"},
  {"pattern",
   "{\"type\":\"object\",\"required\":[\"id\"],\"properties\":{"
   "\"id\":{\"type\":\"string\",\"pattern\":\"^[a-z][a-z0-9_-]{2,31}$\"},"
   "\"mail\":{\"type\":\"string\",\"format\":\"email\"}}}",
   "{\"id\":\"user_name-42\",\"mail\":\"someone@example.com\"}"},
};

int main(int argc, char **argv) {
  const char *which = argc > 1 ? argv[1] : "both";
  long n = argc > 2 ? atol(argv[2]) : 200000;
  bool walker = strcmp(which, "frozen") != 0, frozen = strcmp(which, "walker") != 0;
  lua_State *L = luaL_newstate();
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    if (argc > 3 && strcmp(argv[3], cases[c].name) != 0) continue;
    const char *e = NULL;
    if (!json_decode(L, cases[c].schema, strlen(cases[c].schema), &e) ||
        !json_decode(L, cases[c].value, strlen(cases[c].value), &e)) {
      fprintf(stderr, "json: %s\n", e);
      return 2;
    }
    buf err;
    buf_init(&err);
    if (!schema_check(L, -2, &err) || !schema_validate(L, -2, -1, &err)) {
      fprintf(stderr, "%s: %.*s\n", cases[c].name, (int)err.len, err.p);
      return 2;
    }
    for (int path = 0; path < 2; path++) {
      if (!(path ? frozen : walker)) continue;
      double t0 = now();
      long ok = 0;
      for (long i = 0; i < n; i++)
        ok += path ? schema_validate_frozen(L, -2, -1, NULL) : schema_validate(L, -2, -1, NULL);
      double t1 = now();
      printf("%-8s %-6s %8.1f ns%s\n", cases[c].name, path ? "frozen" : "walker",
             (t1 - t0) * 1e9 / (double)n, ok == n ? "" : " (INVALID?)");
    }
    buf_free(&err);
    lua_pop(L, 2);
  }
  lua_close(L);
  return 0;
}
