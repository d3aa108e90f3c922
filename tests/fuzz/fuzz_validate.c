/* fuzz_validate.c — the JSON Schema validator (core/schema/validate.c): a random
 * schema x a random value. Input: the schema's JSON, a newline, the
 * value's JSON. Each runs on a budget of steps (schema_validate_limited),
 * so no input can hang it. Checked:
 *   - schema_check answers, with a message when it refuses;
 *   - any schema, checked or not, never crashes the walker, which leaves
 *     the stack as it found it and explains every false;
 *   - for a schema that passed schema_check: the frozen fast path
 *     (schema_validate_frozen_limited) and the walker agree on valid or
 *     invalid whenever neither ran out of steps, and asking the frozen
 *     path a second time (its cache now warm) gives the same answer. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "fuzz.h"
#include "json.h"
#include "validate.h"

#define STEPS 20000

static lua_State *L;

static bool run(bool frozen, buf *err, bool *exhausted) {
  schema_limits lim = {.max_steps = STEPS};
  int top = lua_gettop(L);
  err->len = 0;
  bool ok = frozen ? schema_validate_frozen_limited(L, 1, 2, err, &lim)
                   : schema_validate_limited(L, 1, 2, err, &lim);
  FUZZ_CHECK(lua_gettop(L) == top);
  FUZZ_CHECK(ok || err->len > 0);
  FUZZ_CHECK(!(ok && lim.exhausted));
  *exhausted = lim.exhausted;
  return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!L) L = luaL_newstate();
  const uint8_t *p = data, *end = data + size, *sp, *vp;
  size_t sn = fuzz_part(&p, end, '\n', &sp);
  size_t vn = (size_t)(end - p);
  vp = p;
  lua_settop(L, 0);
  if (!json_decode(L, (const char *)sp, sn, NULL)) return 0;
  if (!lua_istable(L, 1)) return 0; /* the API takes a schema table */
  if (!json_decode(L, (const char *)vp, vn, NULL)) return 0;
  buf err;
  buf_init(&err);
  bool checked = schema_check(L, 1, &err);
  FUZZ_CHECK(lua_gettop(L) == 2);
  FUZZ_CHECK(checked || err.len > 0);
  bool ex_walk, ex_fast, ex_again;
  bool walk = run(false, &err, &ex_walk);
  if (checked) {
    bool fast = run(true, &err, &ex_fast);
    bool again = run(true, &err, &ex_again);
    if (!ex_walk && !ex_fast) {
      if (walk != fast) {
        fprintf(stderr, "walker says %s, frozen path says %s\n", walk ? "valid" : "invalid",
                fast ? "valid" : "invalid");
        FUZZ_CHECK(walk == fast);
      }
    }
    if (!ex_fast && !ex_again) FUZZ_CHECK(fast == again);
  }
  buf_free(&err);
  lua_settop(L, 0);
  /* the frozen cache is weak: let the collector have the old schemas */
  lua_gc(L, LUA_GCSTEP, 0);
  return 0;
}
