/* fuzz_json.c — decode -> Lua -> encode (core/base/json.c), with value
 * equality. On any bytes:
 *   - json_validate, json_scan and json_decode agree on what is JSON;
 *   - a decoded value encodes (json_encode) to valid JSON that decodes to an
 *     equal value: same types, numbers equal, strings byte-equal, arrays
 *     (the array metatable, or keys 1..n) and objects alike, member for
 *     member;
 *   - json_encode_sorted is canonical: the value and its round trip give
 *     the same bytes, and so does that output decoded and sorted again. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "fuzz.h"
#include "json.h"

static lua_State *L;

/* Are the values at a and b (absolute indexes) equal as JSON? */
static bool same(int a, int b, int depth) {
  int ta = lua_type(L, a), tb = lua_type(L, b);
  if (ta != tb) return false;
  switch (ta) {
    case LUA_TNUMBER:
      return lua_rawequal(L, a, b);
    case LUA_TSTRING: {
      size_t na, nb;
      const char *sa = lua_tolstring(L, a, &na), *sb = lua_tolstring(L, b, &nb);
      return na == nb && memcmp(sa, sb, na) == 0;
    }
    case LUA_TBOOLEAN:
      return lua_toboolean(L, a) == lua_toboolean(L, b);
    case LUA_TLIGHTUSERDATA:
      return json_isnull(L, a) && json_isnull(L, b);
    case LUA_TTABLE:
      break;
    default:
      return false;
  }
  if (depth > JSON_MAX_DEPTH + 2) return false;
  if (json_table_array_len(L, a) != json_table_array_len(L, b)) return false;
  /* every key of a is in b with an equal value, and b has no more keys */
  size_t ka = 0, kb = 0;
  lua_pushnil(L);
  while (lua_next(L, a)) {
    ka++;
    lua_pushvalue(L, -2);
    lua_rawget(L, b);
    bool eq = !lua_isnil(L, -1) && same(lua_absindex(L, -2), lua_absindex(L, -1), depth + 1);
    lua_pop(L, 2);
    if (!eq) {
      lua_pop(L, 1);
      return false;
    }
  }
  lua_pushnil(L);
  while (lua_next(L, b)) kb++, lua_pop(L, 1);
  return ka == kb;
}

static void counter(void *ctx, json_span key, json_span value) {
  (void)key, (void)value;
  ++*(size_t *)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!L) L = luaL_newstate();
  const char *s = (const char *)data;
  const char *err = NULL;
  bool valid = json_validate(s, size, &err, NULL);
  FUZZ_CHECK(valid || (err && *err));
  size_t members = 0;
  FUZZ_CHECK(json_scan(s, size, counter, &members, NULL, NULL) == valid);
  bool decoded = json_decode(L, s, size, NULL);
  FUZZ_CHECK(decoded == valid);
  if (!decoded) {
    FUZZ_CHECK(lua_gettop(L) == 0);
    return 0;
  }
  FUZZ_CHECK(lua_gettop(L) == 1);
  char msg[128];
  buf a, b, c;
  buf_init(&a), buf_init(&b), buf_init(&c);
  FUZZ_CHECK(json_encode(L, 1, &a, msg, sizeof msg));
  FUZZ_CHECK(json_validate(a.p, a.len, NULL, NULL));
  FUZZ_CHECK(json_decode(L, a.p, a.len, NULL));
  FUZZ_CHECK(same(1, 2, 0));
  /* canonical: the sorted encodings of the value and of its round trip */
  FUZZ_CHECK(json_encode_sorted(L, 1, &b, msg, sizeof msg));
  FUZZ_CHECK(json_encode_sorted(L, 2, &c, msg, sizeof msg));
  FUZZ_CHECK(b.len == c.len && memcmp(b.p, c.p, b.len) == 0);
  FUZZ_CHECK(json_decode(L, b.p, b.len, NULL));
  FUZZ_CHECK(same(1, 3, 0));
  c.len = 0;
  FUZZ_CHECK(json_encode_sorted(L, 3, &c, msg, sizeof msg));
  FUZZ_CHECK(b.len == c.len && memcmp(b.p, c.p, b.len) == 0);
  buf_free(&a), buf_free(&b), buf_free(&c);
  lua_settop(L, 0);
  return 0;
}
