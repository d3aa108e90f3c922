/* validate_attacks.c — time the validation of issue 15's two attacks on tool
 * arguments, as tools/call does it (schema_validate_frozen, default limits).
 *
 *   anyof DEPTH    {"a": [[[..."x"...]]]} against a recursive anyOf of two
 *                  array branches (every branch fails at every level)
 *   unique N [dup] {"a": [N distinct objects]} against uniqueItems, with
 *                  dup: plus one equal to the first at the end
 *
 * Not part of the build; from the source tree, after cmake --build build:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Icore -I/usr/include/lua5.4 \
 *      bench/validate_attacks.c build/libluamcp_core.a -llua5.4 -lm -o /tmp/validate_attacks
 *   /tmp/validate_attacks anyof 30; /tmp/validate_attacks unique 16000 dup */
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

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "anyof") && strcmp(argv[1], "unique"))) {
    fprintf(stderr, "usage: %s anyof DEPTH | unique N [dup]\n", argv[0]);
    return 2;
  }
  lua_State *L = luaL_newstate();
  buf s, v;
  buf_init(&s);
  buf_init(&v);
  int n = atoi(argv[2]);
  if (strcmp(argv[1], "anyof") == 0) {
    buf_puts(&s, "{\"$defs\":{\"node\":{\"anyOf\":[{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}},"
                 "{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"},\"minItems\":0}]}},"
                 "\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/node\"}}}");
    buf_puts(&v, "{\"a\":");
    for (int i = 0; i < n; i++) buf_putc(&v, '[');
    buf_puts(&v, "\"x\"");
    for (int i = 0; i < n; i++) buf_putc(&v, ']');
    buf_putc(&v, '}');
  } else {
    buf_puts(&s, "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"uniqueItems\":true}}}");
    buf_puts(&v, "{\"a\":[");
    for (int i = 0; i < n; i++) buf_printf(&v, "%s{\"id\":%d,\"k\":\"v\"}", i ? "," : "", i);
    if (argc > 3) buf_puts(&v, ",{\"k\":\"v\",\"id\":0}");
    buf_puts(&v, "]}");
  }
  const char *e = NULL;
  if (!json_decode(L, s.p, s.len, &e) || !json_decode(L, v.p, v.len, &e)) {
    fprintf(stderr, "json: %s\n", e);
    return 2;
  }
  buf err;
  buf_init(&err);
  double t0 = now();
  bool ok = schema_validate_frozen(L, 1, 2, &err);
  double t1 = now();
  printf("%s %d (%zu bytes): %s%s%.*s in %.6f s\n", argv[1], n, v.len, ok ? "valid" : "invalid",
         ok ? "" : ": ", (int)err.len, err.p ? err.p : "", t1 - t0);
  buf_free(&err);
  buf_free(&s);
  buf_free(&v);
  lua_close(L);
  return 0;
}
