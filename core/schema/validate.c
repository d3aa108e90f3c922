/* validate.c — JSON Schema validation of Lua values, by the walker and by
 * the compiled fast path of frozen schemas (see validate.h; the check of a
 * schema itself is validate_check.c). */
#include "validate.h"

#include <math.h>
#include <float.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>

#include <lauxlib.h>
#include <lua.h>

#include "clock.h"
#include "json.h"
#include "luax.h"
#include "schema_format.h"
#include "schema_regex.h"
#include "validate_internal.h"


/* {====================================================== keywords */


#define KW(s) {s, sizeof(s) - 1}
static const struct { const char *name; size_t len; } keywords[KW_N] = {
  KW("$schema"), KW("$ref"), KW("$dynamicRef"), KW("type"), KW("enum"), KW("const"),
  KW("minimum"), KW("exclusiveMinimum"), KW("maximum"), KW("exclusiveMaximum"),
  KW("multipleOf"), KW("minLength"), KW("maxLength"), KW("pattern"), KW("format"),
  KW("required"), KW("dependentRequired"), KW("minProperties"), KW("maxProperties"),
  KW("properties"), KW("patternProperties"), KW("additionalProperties"), KW("propertyNames"),
  KW("dependentSchemas"), KW("dependencies"),
  KW("minItems"), KW("maxItems"), KW("prefixItems"), KW("items"), KW("additionalItems"),
  KW("uniqueItems"), KW("contains"), KW("minContains"), KW("maxContains"),
  KW("allOf"), KW("anyOf"), KW("oneOf"), KW("not"), KW("if"), KW("then"), KW("else"),
  KW("unevaluatedProperties"), KW("unevaluatedItems"),
  KW("$defs"), KW("definitions"),
};
#undef KW

/* keyword_id's index: the first keyword of each (length, first byte), and
   the next one of the same pair; built once. */
#define KW_MAXLEN 24
static signed char kw_first[KW_MAXLEN][128], kw_next[KW_N];
static pthread_once_t kw_once = PTHREAD_ONCE_INIT;

static void kw_index(void) {
  memset(kw_first, -1, sizeof kw_first);
  for (int i = KW_N - 1; i >= 0; i--) {
    signed char *f = &kw_first[keywords[i].len][(unsigned char)keywords[i].name[0]];
    kw_next[i] = *f;
    *f = (signed char)i;
  }
}

static int keyword_id(const char *s, size_t n) {
  if (n >= KW_MAXLEN || (unsigned char)s[0] >= 128) return -1;
  pthread_once(&kw_once, kw_index);
  for (int i = kw_first[n][(unsigned char)s[0]]; i >= 0; i = kw_next[i])
    if (memcmp(keywords[i].name, s, n) == 0) return i;
  return -1;
}

/* Push the value of each keyword the schema table at s holds and note its
   stack index in slot[] (0 when absent): one pass over the table, whatever
   it holds, and no strings made for keywords it lacks. Pushes at most KW_N. */
void validate_scan_keywords(lua_State *L, int s, int slot[KW_N]) {
  memset(slot, 0, KW_N * sizeof *slot);
  lua_pushnil(L);
  while (lua_next(L, s)) {
    int kw = -1;
    if (lua_type(L, -2) == LUA_TSTRING) {
      size_t n;
      const char *k = lua_tolstring(L, -2, &n);
      kw = keyword_id(k, n);
    }
    if (kw < 0) {
      lua_pop(L, 1);
      continue;
    }
    lua_insert(L, -2); /* keep the value below the key lua_next needs */
    slot[kw] = lua_gettop(L) - 1;
  }
}

/* {====== the keyword cache of registered schemas
   A tool's schemas are read once and then validate every call; scanning a
   schema table's keys each time was a large share of an echo call
   (docs/PERFORMANCE.md). The cache maps each schema table (weakly) to a
   table holding [1] = a bitmask of its keywords and [kw + 2] = each one's
   value, so a node costs one lookup plus one per keyword it has. */

static const char cache_key = 0; /* its address names the cache in the registry */

/* Push the cache table of L's state. */
static void push_cache(lua_State *L) { luax_push_weak_table(L, &cache_key); }

/* scan_keywords for the schema table at s, through the cache at cache:
   pushes the same values, fills the same slots. */
static void cached_keywords(lua_State *L, int cache, int s, int slot[KW_N]) {
  lua_pushvalue(L, s);
  if (lua_rawget(L, cache) == LUA_TTABLE) {
    int c = lua_gettop(L);
    lua_rawgeti(L, c, 1);
    lua_Integer mask = lua_tointeger(L, -1);
    lua_pop(L, 1);
    memset(slot, 0, KW_N * sizeof *slot);
    for (unsigned long long m = (unsigned long long)mask; m; m &= m - 1) {
      int kw = __builtin_ctzll(m);
      lua_rawgeti(L, c, kw + 2);
      slot[kw] = lua_gettop(L);
    }
    return; /* the compiled table stays below the values: popped with them */
  }
  lua_pop(L, 1);
  validate_scan_keywords(L, s, slot);
  lua_Integer mask = 0;
  lua_createtable(L, KW_N + 1, 0);
  for (int kw = 0; kw < KW_N; kw++)
    if (slot[kw]) {
      mask |= (lua_Integer)1 << kw;
      lua_pushvalue(L, slot[kw]);
      lua_rawseti(L, -2, kw + 2);
    }
  lua_pushinteger(L, mask);
  lua_rawseti(L, -2, 1);
  lua_pushvalue(L, s);
  lua_insert(L, -2);
  lua_rawset(L, cache);
}

/* }====== */

/* Which $schema values we accept; draft-06/07 differ from 2019-09/2020-12
   for our keywords only in that $ref hides its siblings. */
int validate_dialect(const char *s, size_t n) {
  static const char *const ref_alone[] = {"json-schema.org/draft-07/schema",
                                          "json-schema.org/draft-06/schema"};
  static const char *const current[] = {"json-schema.org/draft/2020-12/schema",
                                        "json-schema.org/draft/2019-09/schema"};
  if (n > 8 && memcmp(s, "https://", 8) == 0) s += 8, n -= 8;
  else if (n > 7 && memcmp(s, "http://", 7) == 0) s += 7, n -= 7;
  else return DIALECT_UNKNOWN;
  if (n && s[n - 1] == '#') n--;
  for (int i = 0; i < 2; i++) {
    if (strlen(ref_alone[i]) == n && memcmp(s, ref_alone[i], n) == 0)
      return DIALECT_REF_ALONE;
    if (strlen(current[i]) == n && memcmp(s, current[i], n) == 0)
      return DIALECT_CURRENT;
  }
  return DIALECT_UNKNOWN;
}

/* }====================================================== */

/* {====================================================== Lua values as JSON */

enum { K_NULL, K_BOOLEAN, K_INTEGER, K_NUMBER, K_STRING, K_ARRAY, K_OBJECT, K_OTHER };
static const char *const kind_names[] = {"null", "boolean", "number", "number",
                                         "string", "array", "object"};

/* The JSON kind of the value at idx (nil counts as null: it is what a
   missing value looks like); *len gets an array's length. */
static int kind_of(lua_State *L, int idx, lua_Integer *len) {
  switch (lua_type(L, idx)) {
    case LUA_TNONE: case LUA_TNIL: return K_NULL;
    case LUA_TBOOLEAN: return K_BOOLEAN;
    case LUA_TNUMBER: return lua_isinteger(L, idx) ? K_INTEGER : K_NUMBER;
    case LUA_TSTRING: return K_STRING;
    case LUA_TLIGHTUSERDATA: return lua_touserdata(L, idx) ? K_OTHER : K_NULL;
    case LUA_TTABLE: {
      long long n = json_table_array_len(L, idx);
      if (n < 0) return K_OBJECT;
      *len = (lua_Integer)n;
      return K_ARRAY;
    }
    default: return K_OTHER;
  }
}

/* Length of the table at idx read where a keyword wants an array: a JSON
   array, or an empty table (Lua cannot tell {} from []); else -1. */
lua_Integer validate_array_len(lua_State *L, int idx) {
  if (!lua_istable(L, idx)) return -1;
  long long n = json_table_array_len(L, idx);
  if (n >= 0) return (lua_Integer)n;
  lua_pushnil(L);
  if (lua_next(L, idx)) {
    lua_pop(L, 2);
    return -1;
  }
  return 0;
}

/* A table read where a keyword wants an object: anything but a non-empty array. */
bool validate_is_object(lua_State *L, int idx) {
  return lua_istable(L, idx) && json_table_array_len(L, idx) <= 0;
}

/* A schema: a boolean, or a table that is not an array. */
bool validate_is_schema(lua_State *L, int idx) {
  return lua_isboolean(L, idx) ||
         (lua_istable(L, idx) && json_table_array_len(L, idx) < 0);
}

/* The non-negative integer at idx (an integral float will do), or -1. */
lua_Integer validate_count_arg(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TNUMBER) return -1;
  int ok;
  lua_Integer n = lua_tointegerx(L, idx, &ok);
  return ok && n >= 0 ? n : -1;
}

/* Does the value at v (of kind k) have the JSON Schema type named t? */
static bool has_type(lua_State *L, int v, int k, const char *t) {
  switch (k) {
    case K_NULL: return strcmp(t, "null") == 0;
    case K_BOOLEAN: return strcmp(t, "boolean") == 0;
    case K_INTEGER: return strcmp(t, "integer") == 0 || strcmp(t, "number") == 0;
    case K_NUMBER: {
      if (strcmp(t, "number") == 0) return true;
      double d = lua_tonumber(L, v);
      return strcmp(t, "integer") == 0 && isfinite(d) && d == floor(d);
    }
    case K_STRING: return strcmp(t, "string") == 0;
    case K_ARRAY: return strcmp(t, "array") == 0;
    case K_OBJECT: return strcmp(t, "object") == 0;
    default: return false;
  }
}

bool validate_is_type_name(const char *t) {
  static const char *const names[] = {"null", "boolean", "integer", "number",
                                      "string", "array", "object"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strcmp(t, names[i]) == 0) return true;
  return false;
}

/* Is the number at v a multiple of the positive number at m? Floats are
   binary, so 0.0075 / 0.0001 is 74.99999999999999: a quotient within a few
   ulps of an integer counts. fmod is exact, and covers quotients that
   overflow. */
static bool is_multiple(lua_State *L, int v, int m) {
  if (lua_isinteger(L, v) && lua_isinteger(L, m)) {
    lua_Integer im = lua_tointeger(L, m);
    if (im > 0) return lua_tointeger(L, v) % im == 0;
  }
  double dv = lua_tonumber(L, v), dm = lua_tonumber(L, m);
  if (!(dm > 0) || !isfinite(dv)) return !(dm > 0); /* a bad multipleOf: ignore */
  if (fmod(dv, dm) == 0) return true;
  double q = dv / dm, r = nearbyint(q);
  return isfinite(q) && fabs(q - r) <= 4 * DBL_EPSILON * fabs(r);
}

/* Code points in a UTF-8 string: the bytes that do not continue a sequence. */
static size_t utf8_length(const char *s, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < n; i++)
    count += ((unsigned char)s[i] & 0xC0) != 0x80;
  return count;
}

/* }====================================================== */

/* {====================================================== $ref */

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A JSON pointer token that indexes an array: "0" or [1-9][0-9]*. */
static bool array_index(const char *t, const char *end, lua_Integer *i) {
  size_t n = (size_t)(end - t);
  if (n == 0 || n > 18 || (t[0] == '0' && n > 1)) return false;
  lua_Integer v = 0;
  for (; t < end; t++) {
    if (*t < '0' || *t > '9') return false;
    v = v * 10 + (*t - '0');
  }
  *i = v;
  return true;
}

/* Push the token [t, end) with ~1 -> '/' and ~0 -> '~' undone. */
static void push_token(lua_State *L, const char *t, const char *end) {
  if (!memchr(t, '~', (size_t)(end - t))) {
    lua_pushlstring(L, t, (size_t)(end - t));
    return;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (; t < end; t++) {
    if (*t == '~' && t + 1 < end && (t[1] == '0' || t[1] == '1'))
      luaL_addchar(&b, *++t == '0' ? '~' : '/');
    else
      luaL_addchar(&b, *t);
  }
  luaL_pushresult(&b);
}

/* {====== anchors and identifiers
   "$ref": "#name" names the subschema with "$anchor" (or "$dynamicAnchor")
   "name", or, in draft-06/07, "$id": "#name"; "$ref": "URI[#...]" names
   the subschema whose "$id" is exactly URI (no relative resolution). Both
   are found by one walk over the root's subschemas, remembered per root
   (weakly): "#name" -> subschema, "URI" -> subschema. */

static const char anchor_key = 0; /* its address names the anchor maps in the registry */

/* Does the schema keyword named k hold a schema, a map or an array of them? */
int validate_subschema_kind(int kw) {
  switch (kw) {
    case KW_PROPERTIES: case KW_PATTERNPROPERTIES: case KW_DEFS: case KW_DEFINITIONS:
    case KW_DEPENDENTSCHEMAS: case KW_DEPENDENCIES:
      return SUB_MAP;
    case KW_ALLOF: case KW_ANYOF: case KW_ONEOF: case KW_PREFIXITEMS:
      return SUB_LIST;
    case KW_ITEMS: case KW_ADDITIONALITEMS: case KW_ADDITIONALPROPERTIES: case KW_NOT:
    case KW_IF: case KW_THEN: case KW_ELSE: case KW_CONTAINS: case KW_PROPERTYNAMES:
    case KW_UNEVALUATEDPROPERTIES: case KW_UNEVALUATEDITEMS:
      return SUB_ONE;
    default:
      return SUB_NONE;
  }
}

/* Note one name of the schema at s (depth levels below the root) in the
   map at map: the one nearest the root wins, so that the answer does not
   depend on the order pairs() meets names used twice; depths at map + 2. */
static void note_name(lua_State *L, int map, int s, const char *prefix, int str, int depth) {
  if (lua_type(L, str) != LUA_TSTRING) return;
  lua_pushstring(L, prefix);
  lua_pushvalue(L, str);
  lua_concat(L, 2);
  size_t n;
  const char *k = lua_tolstring(L, -1, &n);
  if (!*prefix && n > 1 && k[n - 1] == '#') { /* "URI#" is "URI" */
    lua_pushlstring(L, k, n - 1);
    lua_replace(L, -2);
  }
  int key = lua_gettop(L), depths = map + 2;
  lua_pushvalue(L, key);
  int t = lua_rawget(L, depths);
  if (t == LUA_TNIL || lua_tointeger(L, -1) > depth) {
    lua_pushvalue(L, key);
    lua_pushinteger(L, depth);
    lua_rawset(L, depths);
    lua_pushvalue(L, key);
    lua_pushvalue(L, s);
    lua_rawset(L, map);
  }
  lua_settop(L, key - 1);
}

/* Is this the first time the table at s is met (noting it in the set at seen)? */
bool validate_first_visit(lua_State *L, int seen, int s) {
  lua_pushvalue(L, s);
  bool met = lua_rawget(L, seen) != LUA_TNIL;
  lua_pop(L, 1);
  if (met) return false;
  lua_pushvalue(L, s);
  lua_pushboolean(L, 1);
  lua_rawset(L, seen);
  return true;
}

static void gather_names(lua_State *L, int s, int map, int seen, int depth) {
  if (!lua_istable(L, s) || depth > MAX_DEPTH || !lua_checkstack(L, 8)) return;
  if (!validate_first_visit(L, seen, s)) return;
  lua_getfield(L, s, "$anchor");
  note_name(L, map, s, "#", lua_gettop(L), depth);
  lua_getfield(L, s, "$dynamicAnchor");
  note_name(L, map, s, "#", lua_gettop(L), depth);
  lua_getfield(L, s, "$id");
  int id = lua_gettop(L);
  note_name(L, map, s, "", id, depth); /* "#x" too (draft-07) */
  lua_settop(L, id - 3);
  lua_pushnil(L);
  while (lua_next(L, s)) {
    int key = lua_gettop(L) - 1, val = key + 1, kind = SUB_NONE;
    if (lua_type(L, key) == LUA_TSTRING) {
      size_t n;
      const char *k = lua_tolstring(L, key, &n);
      int kw = keyword_id(k, n);
      if (kw >= 0) kind = validate_subschema_kind(kw);
      if (kind == SUB_ONE && kw == KW_ITEMS && lua_istable(L, val) && json_table_array_len(L, val) > 0)
        kind = SUB_LIST; /* draft-07 tuple items */
    }
    if (kind == SUB_ONE) {
      gather_names(L, val, map, seen, depth + 1);
    } else if ((kind == SUB_MAP || kind == SUB_LIST) && lua_istable(L, val)) {
      lua_pushnil(L);
      while (lua_next(L, val)) {
        gather_names(L, lua_gettop(L), map, seen, depth + 1);
        lua_pop(L, 1);
      }
    }
    lua_settop(L, key);
  }
}

/* Push the subschema the name (an "#anchor" or an "$id" URI) [k, k+n)
   names in the root at root, or nothing (false). The map is rebuilt once
   when a name is missing from it: the root may have changed since. */
static bool name_push(lua_State *L, int root, const char *k, size_t n) {
  luax_push_weak_table(L, &anchor_key);
  int maps = lua_gettop(L), map = maps + 1;
  lua_pushvalue(L, root);
  bool fresh = lua_rawget(L, maps) != LUA_TTABLE;
  for (;;) {
    if (fresh) {
      lua_settop(L, maps);
      lua_newtable(L);
      lua_newtable(L); /* the tables seen */
      lua_newtable(L); /* each name's depth */
      gather_names(L, root, map, map + 1, 0);
      lua_settop(L, map);
      lua_pushvalue(L, root);
      lua_pushvalue(L, map);
      lua_rawset(L, maps);
    }
    lua_pushlstring(L, k, n);
    if (lua_rawget(L, map) != LUA_TNIL) {
      lua_replace(L, maps);
      lua_settop(L, maps);
      return true;
    }
    if (fresh) {
      lua_settop(L, maps - 1);
      return false;
    }
    fresh = true;
  }
}

/* }====== */

/* Push what the reference ref names in the root schema at root: "#" and
   "#/json/pointer" (%-decoded first, then split: RFC 6901, section 6),
   "#anchor", or "URI", "URI#/pointer", "URI#anchor" for a URI some $id
   names exactly. Returns false, pushing nothing, when it names nothing. */
bool validate_ref_push(lua_State *L, int root, const char *ref, size_t n) {
  if (n == 0) return false;
  int top = lua_gettop(L);
  const char *hash = memchr(ref, '#', n);
  int base = root;
  if (hash != ref) { /* a URI first: an $id must name it */
    if (!name_push(L, root, ref, hash ? (size_t)(hash - ref) : n)) return false;
    base = lua_gettop(L);
    if (!hash || (size_t)(hash - ref) + 1 == n) return true;
    n -= (size_t)(hash - ref);
    ref = hash;
  }
  const char *p = ref + 1, *end = ref + n;
  if (p < end && *p != '/') { /* "#name": an anchor */
    if (!name_push(L, root, ref, n)) goto fail;
    if (lua_gettop(L) > top + 1) lua_replace(L, top + 1);
    return true;
  }
  if (memchr(p, '%', (size_t)(end - p))) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    while (p < end) {
      int hi, lo;
      if (*p == '%' && end - p >= 3 && (hi = hex_digit(p[1])) >= 0 &&
          (lo = hex_digit(p[2])) >= 0) {
        luaL_addchar(&b, (char)(hi << 4 | lo));
        p += 3;
      } else {
        luaL_addchar(&b, *p++);
      }
    }
    luaL_pushresult(&b);
    size_t dn;
    p = lua_tolstring(L, -1, &dn);
    end = p + dn;
  }
  lua_pushvalue(L, base);
  while (p < end) {
    const char *t = ++p;
    while (p < end && *p != '/') p++;
    int cur = lua_gettop(L);
    if (!lua_istable(L, cur)) goto fail;
    lua_Integer i;
    if (json_table_array_len(L, cur) >= 0 && array_index(t, p, &i)) {
      lua_rawgeti(L, cur, i + 1);
    } else {
      push_token(L, t, p);
      lua_rawget(L, cur);
    }
    if (lua_isnil(L, -1)) goto fail;
    lua_replace(L, cur);
  }
  if (lua_gettop(L) > top + 1) { /* drop the base and the decoded text */
    lua_replace(L, top + 1);
    lua_settop(L, top + 1);
  }
  return true;
fail:
  lua_settop(L, top);
  return false;
}

/* }====================================================== */

/* {====================================================== paths and messages */


void validate_push_keyword(walker *w, int kw) {
  validate_push_name(w, keywords[kw].name, keywords[kw].len);
}

void validate_push_name(walker *w, const char *k, size_t n) {
  w->path[w->npath].key = k;
  w->path[w->npath++].n = n;
}

void validate_push_index(walker *w, lua_Integer i) {
  w->path[w->npath].key = NULL;
  w->path[w->npath++].n = (size_t)i;
}

/* Push the member name at stack index key (kept there while it is used). */
void validate_push_member(walker *w, int key) {
  lua_State *L = w->L;
  if (lua_type(L, key) == LUA_TSTRING) {
    size_t n;
    const char *k = lua_tolstring(L, key, &n);
    validate_push_name(w, k, n);
  } else if (lua_isinteger(L, key)) {
    validate_push_index(w, lua_tointeger(L, key)); /* a Lua-made table, shown raw */
  } else {
    validate_push_name(w, "?", 1);
  }
}

/* Names print bare ("a.b"); anything else as a JSON string (a["x y"]). */
static bool is_plain_name(const char *s, size_t n) {
  if (n == 0 || (s[0] >= '0' && s[0] <= '9')) return false;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '-' || c >= 0x80))
      return false;
  }
  return true;
}

void validate_put_path(buf *b, const walker *w) {
  for (int i = 0; i < w->npath; i++) {
    const seg *s = &w->path[i];
    if (!s->key) {
      buf_printf(b, "[%lld]", (long long)(lua_Integer)s->n);
    } else if (is_plain_name(s->key, s->n)) {
      if (i) buf_putc(b, '.');
      buf_put(b, s->key, s->n);
    } else {
      buf_putc(b, '[');
      json_encode_string(b, s->key, s->n);
      buf_putc(b, ']');
    }
  }
}

/* Start a failure message: NULL while quiet (or once a fatal failure is
   on its way up: a comparison the budget cut short says nothing), else the
   error buffer with "path: " written. */
buf *validate_report(walker *w) {
  if (w->quiet || !w->err || w->fatal) return NULL;
  if (w->npath) {
    validate_put_path(w->err, w);
    buf_puts(w->err, ": ");
  }
  return w->err;
}

static void put_vfmt(buf *b, const char *fmt, va_list ap) {
  va_list aq;
  va_copy(aq, ap);
  int n = vsnprintf(NULL, 0, fmt, aq);
  va_end(aq);
  if (n < 0) return;
  buf_reserve(b, (size_t)n + 1);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

__attribute__((format(printf, 2, 3)))
bool validate_failf(walker *w, const char *fmt, ...) {
  buf *b = validate_report(w);
  if (b) {
    va_list ap;
    va_start(ap, fmt);
    put_vfmt(b, fmt, ap);
    va_end(ap);
  }
  return false;
}

/* A failure no branch may turn into success; reported even when quiet. */
__attribute__((format(printf, 2, 3)))
bool validate_fatalf(walker *w, const char *fmt, ...) {
  w->fatal = true;
  if (w->err) {
    va_list ap;
    va_start(ap, fmt);
    put_vfmt(w->err, fmt, ap);
    va_end(ap);
  }
  return false;
}

/* Append the number at idx as JSON would write it. */
static void put_number(buf *b, lua_State *L, int idx) {
  if (lua_isinteger(L, idx)) buf_printf(b, "%lld", (long long)lua_tointeger(L, idx));
  else json_encode_double(b, lua_tonumber(L, idx));
}

/* Append the value at idx as JSON, or its Lua type name if it has none. */
static void put_json(buf *b, lua_State *L, int idx) {
  size_t len = b->len;
  char e[64];
  if (!json_encode(L, idx, b, e, sizeof e)) {
    b->len = len;
    buf_puts(b, luaL_typename(L, idx));
  }
}

static const char *plural(lua_Integer n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

/* }====================================================== */

/* {====================================================== the budget */

/* Validating a client's value runs in C, outside the count hook that ends a
   call at its --timeout, so the walker keeps its own account: every schema
   applied to a value, every value hashed or compared, costs a step. Past
   max_steps, or once the clock (read every CLOCK_EVERY steps) passes the
   deadline, the validation is fatal: everything returns false at once and
   the caller reports "too complex" (see put_exhausted). */

static void budget_start(walker *w) {
  w->steps = 0;
  w->exhausted = LIMIT_NONE;
  w->next_check = w->max_steps < CLOCK_EVERY ? w->max_steps + 1 : CLOCK_EVERY;
}

static void budget_init(walker *w, const schema_limits *lim) {
  w->max_steps = lim && lim->max_steps ? lim->max_steps : SCHEMA_DEFAULT_STEPS;
  w->deadline = lim ? lim->deadline : 0;
  w->assert_format = lim && lim->assert_format;
  budget_start(w);
}

static bool budget_check(walker *w) {
  if (w->exhausted) return false;
  if (w->steps > w->max_steps) {
    w->exhausted = LIMIT_WORK;
  } else if (w->deadline > 0 && clock_now() >= w->deadline) {
    w->exhausted = LIMIT_TIME;
  } else {
    unsigned long room = w->max_steps - w->steps;
    w->next_check = w->steps + (room < CLOCK_EVERY ? room + 1 : CLOCK_EVERY);
    return true;
  }
  w->fatal = true; /* next_check stays behind: every later step lands here */
  return false;
}

/* Take n steps: false once the budget is spent. */
static inline bool spend(walker *w, unsigned long n) {
  w->steps += n;
  return w->steps < w->next_check || budget_check(w);
}

/* A regex match spends steps too: its bytes, and PCRE2's backtracking
   units beyond the first cheap try (REGEX_UNITS_PER_STEP to a step, about
   what a walker step costs in time). A match that would need more units
   than the budget has left is stopped by PCRE2's match limit and ends the
   validation as "too complex", like the budget itself. */
#define REGEX_UNITS_PER_STEP 16UL /* PCRE2: ~14 ns a unit; a step: ~150-250 ns */

/* Does the pattern string at pat (held by the table at holder) match
   [s, s+n)? 1 or 0; -1 when the budget ran out (fatal); -3 when the
   pattern does not compile (an unchecked schema: ignored). */
static int regex_test(walker *w, int holder, int pat, const char *s, size_t n) {
  const schema_regex *re = schema_regex_get(w->L, holder, pat, NULL);
  if (!re) return -3;
  unsigned long room = w->steps < w->max_steps ? w->max_steps - w->steps : 0, units;
  unsigned long max_units = room > SCHEMA_REGEX_MAX_UNITS / REGEX_UNITS_PER_STEP
                                ? SCHEMA_REGEX_MAX_UNITS
                                : room * REGEX_UNITS_PER_STEP + 1;
  int r = schema_regex_match(w->L, re, s, n, max_units, w->deadline, &units);
  if (r == REGEX_LIMIT || r == REGEX_TIME) {
    w->exhausted = r == REGEX_TIME ? LIMIT_TIME : LIMIT_WORK;
    w->fatal = true;
    return -1;
  }
  if (!spend(w, 1 + n / 64 + units / REGEX_UNITS_PER_STEP)) return -1;
  return r;
}

static void put_exhausted(buf *b, int why) {
  if (b) buf_puts(b, why == LIMIT_TIME ? "too complex to validate (time limit reached)"
                                       : "too complex to validate (work limit reached)");
}

/* }====================================================== */

/* {====================================================== the memo
   anyOf/oneOf/allOf/not/$ref apply several schemas to one value, and a
   recursive schema can meet the same (subschema, value) pair along
   exponentially many paths: anyOf [{items: {$ref: node}}, {items: {$ref:
   node}, ...}] doubles at each level of nesting. So the result of each
   schema those keywords apply is remembered per validation, keyed by the
   schema table and the value's identity (a table's or string's address,
   a number's bits): each pair is then evaluated once, and the work is at
   most (schema nodes) x (value nodes). Results are only stored once
   complete (a pair met again while in progress is a $ref cycle, left to
   the depth limit) and never when fatal. A stored false is only reused
   where no message is wanted: the walk that writes one recomputes the
   failing path, whose parts that passed are found in the memo. */

static uint64_t mix64(uint64_t x) { /* splitmix64's finalizer */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/* The identity of the value at v, as far as validation can tell. */
static void value_key(lua_State *L, int v, uint64_t *bits, uint32_t *tag) {
  int t = lua_type(L, v);
  *tag = (uint32_t)t;
  switch (t) {
    case LUA_TNONE: case LUA_TNIL: *tag = LUA_TNIL; *bits = 0; break;
    case LUA_TBOOLEAN: *bits = (uint64_t)lua_toboolean(L, v); break;
    case LUA_TNUMBER:
      if (lua_isinteger(L, v)) {
        *bits = (uint64_t)lua_tointeger(L, v);
      } else {
        double d = lua_tonumber(L, v);
        memcpy(bits, &d, sizeof d);
        *tag = 0x100 | LUA_TNUMBER;
      }
      break;
    default: *bits = (uint64_t)(uintptr_t)lua_topointer(L, v); break; /* kept alive by the value */
  }
}

static size_t memo_hash(const void *s, uint64_t v, uint32_t tag) {
  return (size_t)mix64((uint64_t)(uintptr_t)s ^ mix64(v + tag));
}

/* -1: not known, else the stored result. */
static int memo_get(const walker *w, const void *s, uint64_t v, uint32_t tag) {
  const memo *m = &w->memo;
  if (!m->e) return -1;
  for (size_t i = memo_hash(s, v, tag) & m->mask;; i = (i + 1) & m->mask) {
    const mentry *e = &m->e[i];
    if (!e->s) return -1;
    if (e->s == s && e->v == v && e->tag == tag) return (int)e->ok;
  }
}

static void memo_insert(memo *m, const mentry *x) {
  size_t i = memo_hash(x->s, x->v, x->tag) & m->mask;
  while (m->e[i].s) i = (i + 1) & m->mask;
  m->e[i] = *x;
  m->count++;
}

/* Past the walker's own slots the memo lives in a userdata at
   w->memo_slot, so a memory error in the middle leaves nothing to free;
   growing replaces it. */
static void memo_put(walker *w, const void *s, uint64_t v, uint32_t tag, bool ok) {
  lua_State *L = w->L;
  memo *m = &w->memo;
  if (!w->memo_slot) return;
  if (!m->e) {
    memset(w->memo_small, 0, sizeof w->memo_small);
    m->e = w->memo_small;
    m->mask = MEMO_SMALL - 1;
    m->count = 0;
  }
  if (2 * (m->count + 1) > m->mask + 1) {
    size_t slots = 4 * (m->mask + 1);
    if (slots > MEMO_MAX_SLOTS || !lua_checkstack(L, 1)) return;
    memo n = {slots - 1, 0, lua_newuserdatauv(L, slots * sizeof(mentry), 0)};
    memset(n.e, 0, slots * sizeof(mentry));
    for (size_t i = 0; i <= m->mask; i++)
      if (m->e[i].s) memo_insert(&n, &m->e[i]);
    lua_replace(L, w->memo_slot); /* the old userdata, if any, is garbage */
    *m = n;
  }
  memo_insert(m, &(mentry){s, v, tag, ok});
}

/* }====================================================== */

/* {====================================================== JSON equality and hashing */

/* JSON equality of the values at a and b: numbers compare by value
   (1 == 1.0), arrays and objects never equal each other. False also when
   the budget runs out (w->fatal says which). */
static bool json_equal(walker *w, int a, int b, int depth) {
  lua_State *L = w->L;
  if (!spend(w, 1)) return false;
  if (lua_rawequal(L, a, b)) return true; /* also numbers across subtypes */
  if (depth > MAX_EQ_DEPTH || !lua_checkstack(L, 6)) return false;
  a = lua_absindex(L, a);
  b = lua_absindex(L, b);
  lua_Integer na = 0, nb = 0;
  int ka = kind_of(L, a, &na), kb = kind_of(L, b, &nb);
  if (ka != kb) return false;
  if (ka == K_NULL) return true;
  if (ka == K_ARRAY) {
    if (na != nb) return false;
    for (lua_Integer i = 1; i <= na; i++) {
      lua_rawgeti(L, a, i);
      lua_rawgeti(L, b, i);
      bool eq = json_equal(w, -2, -1, depth + 1);
      lua_pop(L, 2);
      if (!eq) return false;
    }
    return true;
  }
  if (ka != K_OBJECT) return false; /* scalars that were not rawequal */
  lua_Integer count = 0;
  lua_pushnil(L);
  while (lua_next(L, a)) {
    lua_pushvalue(L, -2);
    lua_rawget(L, b);
    bool eq = !lua_isnil(L, -1) && json_equal(w, -2, -1, depth + 1);
    lua_pop(L, 2);
    if (!eq) {
      lua_pop(L, 1);
      return false;
    }
    count++;
  }
  lua_pushnil(L);
  while (lua_next(L, b)) {
    lua_pop(L, 1);
    if (--count < 0) { /* more members than a: no need to count them all */
      lua_pop(L, 1);
      return false;
    }
  }
  return count == 0;
}

/* A hash of the value at idx that json_equal respects: equal values hash
   alike (1 and 1.0, objects whatever their key order, null and a hole).
   0 once the budget runs out. */
static uint64_t json_hash(walker *w, int idx, int depth) {
  lua_State *L = w->L;
  if (!spend(w, 1)) return 0;
  if (depth > MAX_EQ_DEPTH || !lua_checkstack(L, 6)) return 0x5eed; /* json_equal says "different" */
  idx = lua_absindex(L, idx);
  lua_Integer len = 0;
  switch (kind_of(L, idx, &len)) {
    case K_NULL: return 0x6e756c6cULL;
    case K_BOOLEAN: return lua_toboolean(L, idx) ? 0x74727565ULL : 0x66616c73ULL;
    case K_INTEGER: case K_NUMBER: {
      int exact;
      lua_Integer i = lua_tointegerx(L, idx, &exact); /* only a float with an integral value */
      if (exact) return mix64((uint64_t)i ^ 0x4e554dULL);
      double d = lua_tonumber(L, idx);
      uint64_t bits;
      memcpy(&bits, &d, sizeof d);
      return mix64(bits ^ 0x464c54ULL);
    }
    case K_STRING: {
      size_t n;
      const unsigned char *p = (const unsigned char *)lua_tolstring(L, idx, &n);
      if (!spend(w, n / 64)) return 0;
      uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
      for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
      return mix64(h);
    }
    case K_ARRAY: {
      uint64_t h = 0x415252ULL ^ (uint64_t)len;
      for (lua_Integer i = 1; i <= len; i++) {
        lua_rawgeti(L, idx, i);
        h = mix64(h + json_hash(w, -1, depth + 1));
        lua_pop(L, 1);
      }
      return h;
    }
    case K_OBJECT: {
      uint64_t h = 0x4f424aULL; /* a sum of the members: their order does not count */
      lua_pushnil(L);
      while (lua_next(L, idx)) {
        int val = lua_gettop(L);
        uint64_t k = json_hash(w, val - 1, depth + 1);
        h += mix64(k ^ mix64(json_hash(w, val, depth + 1) + 0x9e3779b97f4a7c15ULL));
        lua_pop(L, 1);
      }
      return h;
    }
    default: return mix64((uint64_t)(uintptr_t)lua_topointer(L, idx)); /* equal only to itself */
  }
}

/* }====================================================== */

/* {====================================================== validation */

static bool validate_node(walker *w, int s, int v);

/* validate_node through the memo: for the schemas anyOf, oneOf, allOf, not
   and $ref apply, which may meet the same value many times over. */
static bool validate_shared(walker *w, int s, int v) {
  lua_State *L = w->L;
  if (!lua_istable(L, s) || !w->memo_slot) return validate_node(w, s, v);
  const void *sp = lua_topointer(L, s);
  uint64_t bits;
  uint32_t tag;
  value_key(L, v, &bits, &tag);
  int known = memo_get(w, sp, bits, tag);
  if (known == 1 || (known == 0 && (w->quiet || !w->err))) return spend(w, 1) && known;
  bool ok = validate_node(w, s, v);
  if (!w->fatal && known < 0) memo_put(w, sp, bits, tag, ok);
  return ok;
}

/* Validate the value at v against the schema at s, one path step down. */
static bool validate_member(walker *w, int s, int v, int key) {
  validate_push_member(w, key);
  bool ok = validate_node(w, s, v);
  w->npath--;
  return ok;
}

static bool validate_element(walker *w, int s, int v, lua_Integer i) {
  validate_push_index(w, i);
  bool ok = validate_node(w, s, v);
  w->npath--;
  return ok;
}

/* type: a name or a list of names. */
static bool validate_type(walker *w, int t, int v, int k) {
  lua_State *L = w->L;
  lua_Integer n = 0;
  if (lua_type(L, t) == LUA_TSTRING) {
    if (has_type(L, v, k, lua_tostring(L, t))) return true;
  } else {
    n = validate_array_len(L, t);
    if (n < 0) return true; /* not a type: schema_check reports it */
    for (lua_Integer i = 1; i <= n; i++) {
      bool ok = lua_rawgeti(L, t, i) == LUA_TSTRING && has_type(L, v, k, lua_tostring(L, -1));
      lua_pop(L, 1);
      if (ok) return true;
    }
  }
  buf *b = validate_report(w);
  if (!b) return false;
  buf_puts(b, "expected ");
  if (lua_type(L, t) == LUA_TSTRING) {
    buf_puts(b, lua_tostring(L, t));
  } else {
    for (lua_Integer i = 1; i <= n; i++) {
      if (lua_rawgeti(L, t, i) == LUA_TSTRING) {
        if (i > 1) buf_puts(b, i == n ? " or " : ", ");
        buf_puts(b, lua_tostring(L, -1));
      }
      lua_pop(L, 1);
    }
  }
  buf_printf(b, ", got %s", k == K_OTHER ? luaL_typename(L, v) : kind_names[k]);
  return false;
}

static bool validate_enum(walker *w, int e, int v) {
  lua_State *L = w->L;
  lua_Integer n = validate_array_len(L, e);
  if (n < 0) return true;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, e, i);
    bool eq = json_equal(w, v, -1, 0);
    lua_pop(L, 1);
    if (eq) return true;
  }
  if (n == 0) return validate_failf(w, "no value allowed (empty enum)");
  buf *b = validate_report(w);
  if (!b) return false;
  buf_puts(b, n == 1 ? "must be " : "must be one of ");
  for (lua_Integer i = 1; i <= n && i <= ENUM_SHOW; i++) {
    if (i > 1) buf_puts(b, ", ");
    lua_rawgeti(L, e, i);
    put_json(b, L, lua_gettop(L));
    lua_pop(L, 1);
  }
  if (n > ENUM_SHOW) buf_puts(b, ", ...");
  return false;
}

static bool fail_bound(walker *w, const char *rel, int bound) {
  buf *b = validate_report(w);
  if (b) {
    buf_printf(b, "must be %s ", rel);
    put_number(b, w->L, bound);
  }
  return false;
}

static bool validate_number(walker *w, const int *slot, int v) {
  lua_State *L = w->L;
  int x;
#define NUMBER_SLOT(kw) ((x = slot[kw]) && lua_type(L, x) == LUA_TNUMBER)
  if (NUMBER_SLOT(KW_MINIMUM) && lua_compare(L, v, x, LUA_OPLT))
    return fail_bound(w, ">=", x);
  if (NUMBER_SLOT(KW_EXCLUSIVEMINIMUM) && !lua_compare(L, x, v, LUA_OPLT))
    return fail_bound(w, ">", x);
  if (NUMBER_SLOT(KW_MAXIMUM) && lua_compare(L, x, v, LUA_OPLT))
    return fail_bound(w, "<=", x);
  if (NUMBER_SLOT(KW_EXCLUSIVEMAXIMUM) && !lua_compare(L, v, x, LUA_OPLT))
    return fail_bound(w, "<", x);
  if (NUMBER_SLOT(KW_MULTIPLEOF) && !is_multiple(L, v, x))
    return fail_bound(w, "a multiple of", x);
#undef NUMBER_SLOT
  return true;
}

/* The string at v: minLength, maxLength, pattern (held by the schema table
   at self), format when asserted. */
static bool validate_string(walker *w, int self, const int *slot, int v) {
  lua_State *L = w->L;
  lua_Integer min = slot[KW_MINLENGTH] ? validate_count_arg(L, slot[KW_MINLENGTH]) : -1;
  lua_Integer max = slot[KW_MAXLENGTH] ? validate_count_arg(L, slot[KW_MAXLENGTH]) : -1;
  int pat = slot[KW_PATTERN], fmt = w->assert_format ? slot[KW_FORMAT] : 0;
  if (min < 0 && max < 0 && !pat && !fmt) return true;
  size_t n;
  const char *s = lua_tolstring(L, v, &n);
  if (min >= 0 || max >= 0) {
    lua_Integer len = (lua_Integer)utf8_length(s, n);
    if (len < min)
      return validate_failf(w, "must be at least %lld %s long", (long long)min,
                   plural(min, "character", "characters"));
    if (max >= 0 && len > max)
      return validate_failf(w, "must be at most %lld %s long", (long long)max,
                   plural(max, "character", "characters"));
  }
  if (pat && lua_type(L, pat) == LUA_TSTRING) {
    int r = regex_test(w, self, pat, s, n);
    if (r == -1) return false;
    if (r == 0) return validate_failf(w, "must match the pattern /%s/", lua_tostring(L, pat));
  }
  if (fmt && lua_type(L, fmt) == LUA_TSTRING) {
    if (!spend(w, 1 + n / 64)) return false;
    const char *name = lua_tostring(L, fmt);
    if (schema_format_check(name, s, n) == 0) return validate_failf(w, "must be a valid %s", name);
  }
  return true;
}

/* additionalProperties or unevaluatedProperties false: the member at key. */
static bool fail_unexpected(walker *w, int key) {
  if (lua_type(w->L, key) == LUA_TSTRING)
    return validate_failf(w, "unexpected property '%s'", lua_tostring(w->L, key));
  return validate_failf(w, "unexpected property");
}

/* dependentRequired (schemas false), dependentSchemas or draft-07's
   dependencies (schemas true: a member's value may be either): for each
   member of the map at x that the object at v has, the names it requires
   or the schema the whole object must then match. */
static bool validate_dependencies(walker *w, int x, int v, bool schemas) {
  lua_State *L = w->L;
  if (!lua_istable(L, x)) return true;
  lua_pushnil(L);
  while (lua_next(L, x)) {
    int key = lua_gettop(L) - 1, dep = key + 1;
    if (lua_type(L, key) != LUA_TSTRING) {
      lua_pop(L, 1);
      continue;
    }
    lua_pushvalue(L, key);
    bool present = lua_rawget(L, v) != LUA_TNIL;
    lua_pop(L, 1);
    lua_Integer n;
    if (!present) {
    } else if (schemas && validate_is_schema(L, dep)) {
      if (!validate_shared(w, dep, v)) return false;
    } else if ((n = validate_array_len(L, dep)) > 0) {
      for (lua_Integer i = 1; i <= n; i++) {
        if (lua_rawgeti(L, dep, i) == LUA_TSTRING) {
          lua_pushvalue(L, -1);
          if (lua_rawget(L, v) == LUA_TNIL)
            return validate_failf(w, "property '%s' requires property '%s'", lua_tostring(L, key),
                         lua_tostring(L, -2));
          lua_pop(L, 1);
        }
        lua_pop(L, 1);
      }
    }
    lua_settop(L, key);
  }
  return true;
}

static bool validate_object(walker *w, const int *slot, int v) {
  lua_State *L = w->L;
  int x;
  if ((x = slot[KW_REQUIRED])) {
    lua_Integer n = validate_array_len(L, x);
    for (lua_Integer i = 1; i <= n; i++) {
      if (lua_rawgeti(L, x, i) == LUA_TSTRING) {
        lua_pushvalue(L, -1);
        if (lua_rawget(L, v) == LUA_TNIL)
          return validate_failf(w, "missing required property '%s'", lua_tostring(L, -2));
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
  }
  lua_Integer min = slot[KW_MINPROPERTIES] ? validate_count_arg(L, slot[KW_MINPROPERTIES]) : -1;
  lua_Integer max = slot[KW_MAXPROPERTIES] ? validate_count_arg(L, slot[KW_MAXPROPERTIES]) : -1;
  if (min >= 0 || max >= 0) {
    lua_Integer count = 0;
    lua_pushnil(L);
    while (lua_next(L, v)) {
      lua_pop(L, 1);
      count++;
    }
    if (!spend(w, (unsigned long)count / 16)) return false;
    if (count < min)
      return validate_failf(w, "must have at least %lld %s", (long long)min,
                   plural(min, "property", "properties"));
    if (max >= 0 && count > max)
      return validate_failf(w, "must have at most %lld %s", (long long)max,
                   plural(max, "property", "properties"));
  }
  if ((x = slot[KW_DEPENDENTREQUIRED]) && !validate_dependencies(w, x, v, false)) return false;
  int props = slot[KW_PROPERTIES], extra = slot[KW_ADDITIONALPROPERTIES];
  int pats = slot[KW_PATTERNPROPERTIES];
  if (props && !lua_istable(L, props)) props = 0;
  if (pats && !lua_istable(L, pats)) pats = 0;
  if (extra || pats) {
    /* every member: its own schema, those of the patterns it matches, else
       additionalProperties */
    bool refuse = extra && lua_isboolean(L, extra) && !lua_toboolean(L, extra);
    lua_pushnil(L);
    while (lua_next(L, v)) {
      int key = lua_gettop(L) - 1, val = key + 1;
      bool named = false, matched = false;
      if (props) {
        lua_pushvalue(L, key);
        if (lua_rawget(L, props) != LUA_TNIL) {
          named = true;
          if (!validate_member(w, val + 1, val, key)) return false;
        }
        lua_settop(L, val);
      }
      if (pats && lua_type(L, key) == LUA_TSTRING) {
        size_t kn;
        const char *ks = lua_tolstring(L, key, &kn);
        lua_pushnil(L);
        while (lua_next(L, pats)) {
          int r = lua_type(L, -2) == LUA_TSTRING ? regex_test(w, pats, lua_gettop(L) - 1, ks, kn) : 0;
          if (r == -1) return false;
          if (r == 1) {
            matched = true;
            if (!validate_member(w, lua_gettop(L), val, key)) return false;
          }
          lua_pop(L, 1);
        }
      }
      if (!named && !matched && extra) {
        if (refuse) return fail_unexpected(w, key);
        if (!validate_member(w, extra, val, key)) return false;
      }
      lua_settop(L, key);
    }
  } else if (props) {
    /* only the members the schema names: usually fewer than the value has */
    lua_pushnil(L);
    while (lua_next(L, props)) {
      int key = lua_gettop(L) - 1;
      if (lua_type(L, key) == LUA_TSTRING) {
        lua_pushvalue(L, key);
        if (lua_rawget(L, v) != LUA_TNIL &&
            !validate_member(w, key + 1, key + 2, key))
          return false;
      }
      lua_settop(L, key);
    }
  }
  if ((x = slot[KW_PROPERTYNAMES])) {
    /* each member name, as a string */
    lua_pushnil(L);
    while (lua_next(L, v)) {
      int key = lua_gettop(L) - 1;
      lua_pushvalue(L, key);
      if (lua_type(L, -1) == LUA_TNUMBER) lua_tostring(L, -1); /* the copy becomes its JSON name */
      if (!validate_member(w, x, key + 2, key)) return false;
      lua_settop(L, key);
    }
  }
  if ((x = slot[KW_DEPENDENTSCHEMAS]) && !validate_dependencies(w, x, v, true)) return false;
  if ((x = slot[KW_DEPENDENCIES]) && !validate_dependencies(w, x, v, true)) return false;
  return true;
}

/* An item of a long array, for uniqueItems. */
typedef struct hitem {
  uint64_t h;
  lua_Integer i;
} hitem;

static int hitem_cmp(const void *pa, const void *pb) {
  const hitem *a = pa, *b = pb;
  if (a->h != b->h) return a->h < b->h ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

/* Find items *i < *j of the array at v (length len) that are equal: the
   first item with an equal one before it is *j, the first of those *i.
   Short arrays compare pairwise, allocating nothing; longer ones hash each
   item (json_hash), sort by hash and compare only within a run of equal
   hashes, so n items cost O(n log n) rather than n^2 comparisons. False
   also when the budget runs out (w->fatal). */
static bool find_duplicate(walker *w, int v, lua_Integer len, lua_Integer *i,
                           lua_Integer *j) {
  lua_State *L = w->L;
  if (len <= UNIQUE_PAIRWISE) {
    for (*i = 1; *i < len; ++*i) {
      lua_rawgeti(L, v, *i);
      for (*j = *i + 1; *j <= len; ++*j) {
        lua_rawgeti(L, v, *j);
        bool eq = json_equal(w, -2, -1, 0);
        lua_pop(L, 1);
        if (eq) return lua_pop(L, 1), true;
        if (w->fatal) break;
      }
      lua_pop(L, 1);
      if (w->fatal) return false;
    }
    return false;
  }
  if (!lua_checkstack(L, 4)) return validate_fatalf(w, "schema nesting too deep"); /* as validate_node says */
  int top = lua_gettop(L);
  hitem *t = lua_newuserdatauv(L, (size_t)len * sizeof *t, 0); /* freed by the GC, even on error */
  for (lua_Integer k = 1; k <= len; k++) {
    lua_rawgeti(L, v, k); /* a hole reads as null */
    t[k - 1] = (hitem){json_hash(w, -1, 0), k};
    lua_pop(L, 1);
    if (w->fatal) return lua_settop(L, top), false;
  }
  qsort(t, (size_t)len, sizeof *t, hitem_cmp);
  lua_Integer best_i = 0, best_j = 0;
  for (lua_Integer a = 0, b; a < len; a = b) {
    for (b = a + 1; b < len && t[b].h == t[a].h; b++) {}
    /* a run of equal hashes, by index: the first item equal to an earlier
       one is this run's answer (its items before it are all different) */
    bool found = false;
    for (lua_Integer k = a + 1; k < b && !found; k++) {
      if (best_j && t[k].i >= best_j) break;
      lua_rawgeti(L, v, t[k].i);
      for (lua_Integer r = a; r < k && !found; r++) {
        lua_rawgeti(L, v, t[r].i);
        if (json_equal(w, -2, -1, 0)) {
          found = true;
          best_i = t[r].i;
          best_j = t[k].i;
        }
        lua_pop(L, 1);
        if (w->fatal) return lua_settop(L, top), false;
      }
      lua_pop(L, 1);
    }
  }
  lua_settop(L, top);
  if (!best_j) return false;
  *i = best_i;
  *j = best_j;
  return true;
}

static bool matches(walker *w, int s, int v);

/* contains, with minContains (default 1) and maxContains. */
static bool validate_contains(walker *w, int x, const int *slot, int v, lua_Integer len) {
  lua_State *L = w->L;
  lua_Integer min = slot[KW_MINCONTAINS] ? validate_count_arg(L, slot[KW_MINCONTAINS]) : 1;
  lua_Integer max = slot[KW_MAXCONTAINS] ? validate_count_arg(L, slot[KW_MAXCONTAINS]) : -1;
  if (min < 0) min = 1;
  lua_Integer count = 0;
  for (lua_Integer i = 1; i <= len && (max >= 0 ? count <= max : count < min); i++) {
    lua_rawgeti(L, v, i);
    bool ok = matches(w, x, lua_gettop(L));
    lua_pop(L, 1);
    if (w->fatal) return false;
    count += ok;
  }
  if (count < min) {
    if (min == 1) return validate_failf(w, "must contain an item that matches the contains schema");
    return validate_failf(w, "must contain at least %lld items that match the contains schema", (long long)min);
  }
  if (max >= 0 && count > max)
    return validate_failf(w, "must contain at most %lld %s that %s the contains schema", (long long)max,
                 plural(max, "item", "items"), plural(max, "matches", "match"));
  return true;
}

static bool validate_array(walker *w, const int *slot, int v, lua_Integer len) {
  lua_State *L = w->L;
  lua_Integer min = slot[KW_MINITEMS] ? validate_count_arg(L, slot[KW_MINITEMS]) : -1;
  lua_Integer max = slot[KW_MAXITEMS] ? validate_count_arg(L, slot[KW_MAXITEMS]) : -1;
  if (len < min)
    return validate_failf(w, "must have at least %lld %s", (long long)min, plural(min, "item", "items"));
  if (max >= 0 && len > max)
    return validate_failf(w, "must have at most %lld %s", (long long)max, plural(max, "item", "items"));
  /* 2020-12: prefixItems, then items for the rest; draft-07: an array of
     items, then additionalItems for the rest */
  int prefix = slot[KW_PREFIXITEMS], rest = slot[KW_ITEMS];
  if (!prefix && rest && lua_istable(L, rest) && json_table_array_len(L, rest) >= 0) {
    prefix = rest;
    rest = slot[KW_ADDITIONALITEMS];
  }
  lua_Integer np = prefix ? validate_array_len(L, prefix) : 0;
  if (np < 0) np = 0;
  if (rest && lua_isboolean(L, rest) && !lua_toboolean(L, rest) && len > np)
    return validate_failf(w, "must have at most %lld %s", (long long)np, plural(np, "item", "items"));
  lua_Integer last = rest ? len : (np < len ? np : len);
  for (lua_Integer i = 1; i <= last; i++) {
    int top = lua_gettop(L), sub = rest;
    if (i <= np) {
      lua_rawgeti(L, prefix, i);
      sub = top + 1;
    }
    lua_rawgeti(L, v, i); /* a hole in a marked array reads as null */
    bool ok = validate_element(w, sub, lua_gettop(L), i - 1);
    lua_settop(L, top);
    if (!ok) return false;
  }
  int x = slot[KW_UNIQUEITEMS];
  if (x && lua_toboolean(L, x) && lua_isboolean(L, x)) {
    lua_Integer i = 0, j = 0;
    if (find_duplicate(w, v, len, &i, &j))
      return validate_failf(w, "must not contain duplicates (items %lld and %lld are equal)",
                   (long long)(i - 1), (long long)(j - 1));
    if (w->fatal) return false;
  }
  if ((x = slot[KW_CONTAINS]) && !validate_contains(w, x, slot, v, len)) return false;
  return true;
}

/* Try the schema at s quietly: does the value at v match it? Fatal
   failures are left in w->fatal for the caller to pass on. */
static bool matches(walker *w, int s, int v) {
  w->quiet++;
  bool ok = validate_shared(w, s, v);
  w->quiet--;
  return ok;
}

static bool validate_combinators(walker *w, const int *slot, int v) {
  lua_State *L = w->L;
  int x;
  lua_Integer n;
  if ((x = slot[KW_ALLOF]) && (n = validate_array_len(L, x)) > 0) {
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, x, i);
      bool ok = validate_shared(w, lua_gettop(L), v);
      lua_pop(L, 1);
      if (!ok) return false;
    }
  }
  if ((x = slot[KW_ANYOF]) && (n = validate_array_len(L, x)) > 0) {
    bool any = false;
    for (lua_Integer i = 1; i <= n && !any; i++) {
      lua_rawgeti(L, x, i);
      any = matches(w, lua_gettop(L), v);
      lua_pop(L, 1);
      if (w->fatal) return false;
    }
    if (!any) return validate_failf(w, "must match at least one schema in anyOf");
  }
  if ((x = slot[KW_ONEOF]) && (n = validate_array_len(L, x)) > 0) {
    lua_Integer first = -1, second = -1;
    for (lua_Integer i = 1; i <= n && second < 0; i++) {
      lua_rawgeti(L, x, i);
      bool ok = matches(w, lua_gettop(L), v);
      lua_pop(L, 1);
      if (w->fatal) return false;
      if (ok) *(first < 0 ? &first : &second) = i - 1;
    }
    if (first < 0) return validate_failf(w, "must match exactly one schema in oneOf (matched none)");
    if (second >= 0)
      return validate_failf(w, "must match exactly one schema in oneOf (matched %lld and %lld)",
                   (long long)first, (long long)second);
  }
  if ((x = slot[KW_NOT])) {
    bool ok = matches(w, x, v);
    if (w->fatal) return false;
    if (ok) return validate_failf(w, "must not match the schema in not");
  }
  if ((x = slot[KW_IF]) && (slot[KW_THEN] || slot[KW_ELSE])) {
    bool ok = matches(w, x, v);
    if (w->fatal) return false;
    int branch = ok ? slot[KW_THEN] : slot[KW_ELSE];
    if (branch && !validate_shared(w, branch, v)) return false;
  }
  return true;
}

/* $ref or $dynamicRef (resolved as a $ref: no dynamic scope) at x. */
static bool apply_ref(walker *w, int x, int v) {
  lua_State *L = w->L;
  size_t n;
  const char *ref = lua_tolstring(L, x, &n);
  if (!validate_ref_push(L, w->root, ref, n)) {
    if (ref[0] != '#') return validate_fatalf(w, "unsupported $ref '%s' (only local ones)", ref);
    return validate_fatalf(w, "$ref '%s' does not resolve", ref);
  }
  bool ok = validate_shared(w, lua_gettop(L), v);
  lua_pop(L, 1);
  return ok;
}

static bool validate_unevaluated(walker *w, const int *slot, int v, int k, lua_Integer len);

/* The keywords (their values in slot[]) of the schema table at self. */
static bool apply(walker *w, int self, const int *slot, int v) {
  lua_State *L = w->L;
  int x;
  if ((x = slot[KW_REF]) && lua_type(L, x) == LUA_TSTRING) {
    bool ok = apply_ref(w, x, v);
    if (!ok || w->ref_alone) return ok;
  }
  if ((x = slot[KW_DYNAMICREF]) && lua_type(L, x) == LUA_TSTRING && !apply_ref(w, x, v))
    return false;
  lua_Integer len = 0;
  int k = kind_of(L, v, &len);
  if ((x = slot[KW_TYPE]) && !validate_type(w, x, v, k)) return false;
  if ((x = slot[KW_ENUM]) && !validate_enum(w, x, v)) return false;
  if ((x = slot[KW_CONST]) && !json_equal(w, v, x, 0)) {
    buf *b = validate_report(w);
    if (b) {
      buf_puts(b, "must be ");
      put_json(b, L, x);
    }
    return false;
  }
  switch (k) {
    case K_INTEGER: case K_NUMBER:
      if (!validate_number(w, slot, v)) return false;
      break;
    case K_STRING:
      if (!validate_string(w, self, slot, v)) return false;
      break;
    case K_OBJECT:
      if (!validate_object(w, slot, v)) return false;
      break;
    case K_ARRAY:
      if (!validate_array(w, slot, v, len)) return false;
      break;
  }
  if (!validate_combinators(w, slot, v)) return false;
  if ((k == K_OBJECT && slot[KW_UNEVALUATEDPROPERTIES]) ||
      (k == K_ARRAY && slot[KW_UNEVALUATEDITEMS]))
    return validate_unevaluated(w, slot, v, k, len);
  return true;
}

/* Stack: uses up to LEVEL_SLOTS above the top, leaves it as it was. */
static bool validate_node(walker *w, int s, int v) {
  lua_State *L = w->L;
  if (!spend(w, 1)) return false;
  if (lua_isboolean(L, s)) return lua_toboolean(L, s) || validate_failf(w, "not allowed");
  if (!lua_istable(L, s)) return true; /* not a schema: schema_check says so */
  if (w->depth >= MAX_DEPTH || !lua_checkstack(L, LEVEL_SLOTS))
    return validate_fatalf(w, "schema nesting too deep");
  int top = lua_gettop(L), slot[KW_N];
  if (w->cache) cached_keywords(L, w->cache, s, slot);
  else validate_scan_keywords(L, s, slot);
  if (w->depth == 0 && slot[KW_SCHEMA] && lua_type(L, slot[KW_SCHEMA]) == LUA_TSTRING) {
    size_t n;
    const char *d = lua_tolstring(L, slot[KW_SCHEMA], &n);
    w->ref_alone = validate_dialect(d, n) == DIALECT_REF_ALONE;
  }
  w->depth++;
  bool ok = apply(w, s, slot, v);
  w->depth--;
  lua_settop(L, top);
  return ok;
}

/* {====== unevaluatedProperties / unevaluatedItems
   The members (items) some keyword of the node, or of a subschema applied
   in place that the value passes, has evaluated: properties,
   patternProperties, additionalProperties, prefixItems, items,
   additionalItems, contains, a nested unevaluated*, through $ref, allOf,
   the anyOf/oneOf branches that match, if/then/else, dependentSchemas. The
   rest go to the unevaluated* schema. */

typedef struct evaluated {
  int set;  /* stack index of a table: member name (item index) -> true */
  bool all; /* everything was */
} evaluated;

static void collect_node(walker *w, int s, int v, int k, lua_Integer len, evaluated *e);

static void mark(lua_State *L, const evaluated *e, int key) {
  lua_pushvalue(L, key);
  lua_pushboolean(L, 1);
  lua_rawset(L, e->set);
}

/* What the keywords in slot[] evaluated of the value at v (kind k, length
   len), the node itself valid for it; self: the node whose unevaluated*
   is being applied (it does not count itself). */
static void collect_slots(walker *w, const int *slot, int v, int k, lua_Integer len,
                          evaluated *e, bool self) {
  lua_State *L = w->L;
  int x;
  for (int r = KW_REF; r <= KW_DYNAMICREF; r++) {
    if ((x = slot[r]) && lua_type(L, x) == LUA_TSTRING) {
      size_t n;
      const char *ref = lua_tolstring(L, x, &n);
      if (validate_ref_push(L, w->root, ref, n)) {
        collect_node(w, lua_gettop(L), v, k, len, e);
        lua_pop(L, 1);
      }
      if (r == KW_REF && w->ref_alone) return;
    }
  }
  if (e->all || w->fatal) return;
  if (k == K_OBJECT) {
    if ((!self && slot[KW_UNEVALUATEDPROPERTIES]) || slot[KW_ADDITIONALPROPERTIES]) {
      e->all = true;
      return;
    }
    if ((x = slot[KW_PROPERTIES]) && lua_istable(L, x)) {
      lua_pushnil(L);
      while (lua_next(L, x)) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        if (lua_rawget(L, v) != LUA_TNIL) mark(L, e, lua_gettop(L) - 1);
        lua_pop(L, 1);
      }
    }
    if ((x = slot[KW_PATTERNPROPERTIES]) && lua_istable(L, x)) {
      lua_pushnil(L);
      while (lua_next(L, v)) {
        lua_pop(L, 1);
        int key = lua_gettop(L);
        if (lua_type(L, key) != LUA_TSTRING) continue;
        size_t kn;
        const char *ks = lua_tolstring(L, key, &kn);
        lua_pushnil(L);
        while (lua_next(L, x)) {
          lua_pop(L, 1);
          int r = lua_type(L, -1) == LUA_TSTRING ? regex_test(w, x, lua_gettop(L), ks, kn) : 0;
          if (r == -1) return;
          if (r == 1) {
            mark(L, e, key);
            lua_pop(L, 1);
            break;
          }
        }
      }
    }
    for (int d = KW_DEPENDENTSCHEMAS; d <= KW_DEPENDENCIES; d++) {
      if (!(x = slot[d]) || !lua_istable(L, x)) continue;
      lua_pushnil(L);
      while (lua_next(L, x)) {
        int key = lua_gettop(L) - 1;
        if (lua_type(L, key) == LUA_TSTRING && validate_is_schema(L, key + 1)) {
          lua_pushvalue(L, key);
          if (lua_rawget(L, v) != LUA_TNIL) collect_node(w, key + 1, v, k, len, e);
        }
        lua_settop(L, key);
      }
    }
  } else if (k == K_ARRAY) {
    if (!self && slot[KW_UNEVALUATEDITEMS]) {
      e->all = true;
      return;
    }
    int prefix = slot[KW_PREFIXITEMS], rest = slot[KW_ITEMS];
    if (!prefix && rest && lua_istable(L, rest) && json_table_array_len(L, rest) >= 0) {
      prefix = rest;
      rest = slot[KW_ADDITIONALITEMS];
    }
    if (rest) {
      e->all = true;
      return;
    }
    lua_Integer np = prefix ? validate_array_len(L, prefix) : 0;
    for (lua_Integer i = 1; i <= np && i <= len; i++) {
      lua_pushboolean(L, 1);
      lua_rawseti(L, e->set, i);
    }
    if ((x = slot[KW_CONTAINS])) {
      for (lua_Integer i = 1; i <= len; i++) {
        lua_rawgeti(L, v, i);
        bool ok = matches(w, x, lua_gettop(L));
        lua_pop(L, 1);
        if (w->fatal) return;
        if (ok) {
          lua_pushboolean(L, 1);
          lua_rawseti(L, e->set, i);
        }
      }
    }
  }
  lua_Integer n;
  if ((x = slot[KW_ALLOF]) && (n = validate_array_len(L, x)) > 0)
    for (lua_Integer i = 1; i <= n && !e->all; i++) {
      lua_rawgeti(L, x, i);
      collect_node(w, lua_gettop(L), v, k, len, e);
      lua_pop(L, 1);
    }
  for (int c = KW_ANYOF; c <= KW_ONEOF; c++)
    if ((x = slot[c]) && (n = validate_array_len(L, x)) > 0)
      for (lua_Integer i = 1; i <= n && !e->all && !w->fatal; i++) {
        lua_rawgeti(L, x, i);
        if (matches(w, lua_gettop(L), v)) collect_node(w, lua_gettop(L), v, k, len, e);
        lua_pop(L, 1);
      }
  if ((x = slot[KW_IF]) && !e->all) {
    if (matches(w, x, v)) {
      collect_node(w, x, v, k, len, e);
      if (slot[KW_THEN]) collect_node(w, slot[KW_THEN], v, k, len, e);
    } else if (slot[KW_ELSE]) {
      collect_node(w, slot[KW_ELSE], v, k, len, e);
    }
  }
}

static void collect_node(walker *w, int s, int v, int k, lua_Integer len, evaluated *e) {
  lua_State *L = w->L;
  if (e->all || w->fatal || !lua_istable(L, s) || !spend(w, 1)) return;
  if (w->depth >= MAX_DEPTH || !lua_checkstack(L, LEVEL_SLOTS)) {
    validate_fatalf(w, "schema nesting too deep");
    return;
  }
  int top = lua_gettop(L), slot[KW_N];
  if (w->cache) cached_keywords(L, w->cache, s, slot);
  else validate_scan_keywords(L, s, slot);
  w->depth++;
  collect_slots(w, slot, v, k, len, e, false);
  w->depth--;
  lua_settop(L, top);
}

static bool validate_unevaluated(walker *w, const int *slot, int v, int k, lua_Integer len) {
  lua_State *L = w->L;
  int x = slot[k == K_OBJECT ? KW_UNEVALUATEDPROPERTIES : KW_UNEVALUATEDITEMS];
  if (lua_isboolean(L, x) && lua_toboolean(L, x)) return true;
  if (!lua_checkstack(L, 8)) return validate_fatalf(w, "schema nesting too deep");
  lua_newtable(L);
  evaluated e = {lua_gettop(L), false};
  collect_slots(w, slot, v, k, len, &e, true);
  if (w->fatal) return false;
  if (e.all) return true;
  bool refuse = lua_isboolean(L, x);
  if (k == K_ARRAY) {
    for (lua_Integer i = 1; i <= len; i++) {
      if (lua_rawgeti(L, e.set, i) != LUA_TNIL) {
        lua_pop(L, 1);
        continue;
      }
      lua_pop(L, 1);
      if (refuse) {
        validate_push_index(w, i - 1);
        validate_failf(w, "unexpected item (unevaluatedItems)");
        w->npath--;
        return false;
      }
      lua_rawgeti(L, v, i);
      bool ok = validate_element(w, x, lua_gettop(L), i - 1);
      lua_pop(L, 1);
      if (!ok) return false;
    }
    return true;
  }
  lua_pushnil(L);
  while (lua_next(L, v)) {
    int key = lua_gettop(L) - 1, val = key + 1;
    lua_pushvalue(L, key);
    if (lua_rawget(L, e.set) == LUA_TNIL) {
      if (refuse) return fail_unexpected(w, key);
      if (!validate_member(w, x, val, key)) return false;
    }
    lua_settop(L, key);
  }
  return true;
}

/* }====== */

void validate_walker_init(walker *w, lua_State *L, int root, buf *err) {
  w->L = L;
  w->root = root;
  w->cache = 0;
  w->err = err;
  w->quiet = w->depth = w->npath = 0;
  w->fatal = w->ref_alone = false;
  w->memo_slot = 0;
  w->memo.e = NULL;
  budget_init(w, NULL);
}

/* Reserve the memo's stack slot (nil until the first entry). */
static void memo_init(walker *w) {
  lua_pushnil(w->L);
  w->memo_slot = lua_gettop(w->L);
}

/* The end of a validation: false with the budget's message when it ran
   out (err was NULL in the fast path, and nothing else was written). */
static bool finish(walker *w, bool ok, buf *err, schema_limits *lim) {
  if (lim) lim->exhausted = w->exhausted != LIMIT_NONE;
  if (!w->exhausted) return ok;
  put_exhausted(err, w->exhausted);
  return false;
}

bool schema_validate_limited(lua_State *L, int schema_idx, int value_idx, buf *err,
                             schema_limits *lim) {
  walker w; /* path[] is written before it is read: no need to clear it */
  schema_idx = lua_absindex(L, schema_idx);
  value_idx = lua_absindex(L, value_idx);
  validate_walker_init(&w, L, schema_idx, err);
  budget_init(&w, lim);
  int top = lua_gettop(L);
  memo_init(&w);
  bool ok = validate_node(&w, schema_idx, value_idx);
  lua_settop(L, top);
  return finish(&w, ok, err, lim);
}

bool schema_validate(lua_State *L, int schema_idx, int value_idx, buf *err) {
  return schema_validate_limited(L, schema_idx, value_idx, err, NULL);
}

/* {====== the compiled fast path of schema_validate_frozen
   Most tool schemas are objects of typed properties. Their tables compile
   once into a tree of fnodes that answers valid/invalid with a few API
   calls per value (the walker cost ~3k instructions per echo call). A node
   with any keyword the tree does not model is "slow": the walker checks
   that subschema. When the tree says invalid, the walker runs again from
   the root for the message, so every answer and message is the walker's;
   the tree only has to be right when it says valid. */

#define FAST_DEPTH 32 /* deeper (or cyclic) schemas are left to the walker */

typedef struct fnode fnode;
typedef struct fprop {
  const char *name; /* a key of the schema's properties table (kept alive by it) */
  size_t len;
  fnode *node;
} fprop;

struct fnode {
  int slow;            /* > 0: the walker checks the subschema at this index of the anchor list */
  unsigned types;      /* kinds (1 << K_*) the type keyword allows */
  bool integral;       /* "integer": a float with an integral value is one too */
  bool closed;         /* additionalProperties: false */
  size_t nprops, nreq;
  fprop *props;
  fprop *req;          /* required names (node unused) */
  fnode *items;        /* every element's schema, or NULL */
};

typedef struct ftree {
  fnode *root;
  bool ref_alone; /* the root's $schema is draft-06/07 */
} ftree;

static void fnode_free(fnode *n) {
  if (!n) return;
  for (size_t i = 0; i < n->nprops; i++) fnode_free(n->props[i].node);
  fnode_free(n->items);
  free(n->props);
  free(n->req);
  free(n);
}

static int ftree_gc(lua_State *L) {
  ftree *t = lua_touserdata(L, 1);
  fnode_free(t->root);
  t->root = NULL;
  return 0;
}

static unsigned type_mask(const char *t, bool *integral) {
  static const char *const names[] = {"null", "boolean", "integer", "number", "string", "array", "object"};
  static const unsigned masks[] = {1u << K_NULL, 1u << K_BOOLEAN, 1u << K_INTEGER,
                                   1u << K_INTEGER | 1u << K_NUMBER, 1u << K_STRING,
                                   1u << K_ARRAY, 1u << K_OBJECT};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strcmp(t, names[i]) == 0) {
      *integral = i == 2;
      return masks[i];
    }
  return 0;
}

/* A slow node for the subschema at s: anchored at the end of the list at
   anchors, so validation can push it. */
static fnode *slow_node(lua_State *L, int s, int anchors) {
  fnode *n = calloc(1, sizeof *n);
  lua_pushvalue(L, s);
  n->slow = (int)lua_rawlen(L, anchors) + 1;
  lua_rawseti(L, anchors, n->slow);
  return n;
}

/* Compile the schema at s; stack use is bounded per level (LEVEL_SLOTS). */
static fnode *fast_compile(lua_State *L, int s, int anchors, int depth, bool assert_format) {
  if (!lua_istable(L, s) || depth > FAST_DEPTH || !lua_checkstack(L, LEVEL_SLOTS))
    return slow_node(L, s, anchors);
  int top = lua_gettop(L), slot[KW_N];
  validate_scan_keywords(L, s, slot);
  bool simple = true;
  for (int kw = 0; kw < KW_N && simple; kw++)
    if (slot[kw] && kw != KW_SCHEMA && kw != KW_TYPE && kw != KW_PROPERTIES &&
        kw != KW_REQUIRED && kw != KW_ADDITIONALPROPERTIES && kw != KW_ITEMS &&
        kw != KW_DEFS && kw != KW_DEFINITIONS && (kw != KW_FORMAT || assert_format))
      simple = false; /* format: an annotation, unless asserted */
  fnode *n = calloc(1, sizeof *n);
  n->types = ~0u;
  int x;
  if (simple && (x = slot[KW_TYPE])) {
    n->types = lua_type(L, x) == LUA_TSTRING ? type_mask(lua_tostring(L, x), &n->integral) : 0;
    simple = n->types != 0; /* a list of types, or a name we do not know */
  }
  if (simple && (x = slot[KW_ADDITIONALPROPERTIES])) {
    simple = lua_isboolean(L, x); /* a schema for the others: the walker's */
    n->closed = simple && !lua_toboolean(L, x);
  }
  if (simple && (x = slot[KW_REQUIRED])) {
    lua_Integer len = validate_array_len(L, x);
    simple = len >= 0;
    if (simple && len > 0) n->req = calloc((size_t)len, sizeof *n->req);
    for (lua_Integer i = 1; simple && i <= len; i++) {
      simple = lua_rawgeti(L, x, i) == LUA_TSTRING;
      if (simple) {
        fprop *r = &n->req[n->nreq++];
        r->name = lua_tolstring(L, -1, &r->len); /* the required list keeps it alive */
      }
      lua_pop(L, 1);
    }
  }
  if (simple && (x = slot[KW_ITEMS])) {
    /* one schema for every element (a list is the draft-07 tuple form) */
    simple = lua_istable(L, x) && json_table_array_len(L, x) < 0;
    if (simple) n->items = fast_compile(L, x, anchors, depth + 1, assert_format);
  }
  if (simple && (x = slot[KW_PROPERTIES])) {
    simple = lua_istable(L, x) && json_table_array_len(L, x) <= 0;
    size_t count = 0;
    lua_pushnil(L);
    while (simple && lua_next(L, x)) {
      lua_pop(L, 1);
      simple = lua_type(L, -1) == LUA_TSTRING; /* other keys: as the walker sees them */
      count++;
    }
    if (simple && count) {
      n->props = calloc(count, sizeof *n->props);
      lua_pushnil(L);
      while (lua_next(L, x)) {
        fprop *p = &n->props[n->nprops++];
        p->name = lua_tolstring(L, -2, &p->len);
        p->node = fast_compile(L, lua_gettop(L), anchors, depth + 1, assert_format);
        lua_pop(L, 1);
      }
    }
  }
  lua_settop(L, top);
  if (!simple) {
    fnode_free(n);
    return slow_node(L, s, anchors);
  }
  return n;
}

static bool fast_valid(walker *w, const fnode *n, int v, int anchors, int depth) {
  lua_State *L = w->L;
  if (n->slow) {
    lua_rawgeti(L, anchors, n->slow);
    w->depth = depth; /* a root-level slow node reads $schema, as the walker does */
    bool ok = validate_node(w, lua_gettop(L), v) && !w->fatal;
    lua_pop(L, 1);
    return ok;
  }
  lua_Integer len = 0;
  int k = kind_of(L, v, &len);
  if (!(n->types & (1u << k))) {
    double d;
    if (!(k == K_NUMBER && n->integral && isfinite(d = lua_tonumber(L, v)) && d == floor(d)))
      return false;
  }
  if (k == K_ARRAY && n->items) {
    if (!lua_checkstack(L, 4)) return false;
    for (lua_Integer i = 1; i <= len; i++) {
      lua_rawgeti(L, v, i); /* a hole in a marked array reads as null, as for the walker */
      bool ok = fast_valid(w, n->items, lua_gettop(L), anchors, depth + 1);
      lua_pop(L, 1);
      if (!ok) return false;
    }
    return true;
  }
  if (k != K_OBJECT) return true;
  if (!lua_checkstack(L, 4)) return false;
  for (size_t i = 0; i < n->nreq; i++) {
    lua_pushlstring(L, n->req[i].name, n->req[i].len);
    bool missing = lua_rawget(L, v) == LUA_TNIL;
    lua_pop(L, 1);
    if (missing) return false;
  }
  for (size_t i = 0; i < n->nprops; i++) {
    lua_pushlstring(L, n->props[i].name, n->props[i].len);
    bool ok = lua_rawget(L, v) == LUA_TNIL || fast_valid(w, n->props[i].node, lua_gettop(L), anchors, depth + 1);
    lua_pop(L, 1);
    if (!ok) return false;
  }
  if (n->closed) {
    lua_pushnil(L);
    while (lua_next(L, v)) {
      lua_pop(L, 1);
      size_t kn;
      const char *key = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &kn) : NULL;
      bool known = false;
      for (size_t i = 0; key && i < n->nprops && !known; i++)
        known = n->props[i].len == kn && memcmp(n->props[i].name, key, kn) == 0;
      if (!known) {
        lua_pop(L, 1);
        return false;
      }
    }
  }
  return true;
}

/* their addresses name the compiled trees in the registry: [1] for those
   that assert format */
static const char fast_key[2] = {0};

/* Push the compiled tree of the root schema at s (its anchor list is the
   userdata's user value), compiling it on first use. */
static ftree *push_tree(lua_State *L, int s, bool assert_format) {
  luax_push_weak_table(L, &fast_key[assert_format]);
  lua_pushvalue(L, s);
  if (lua_rawget(L, -2) == LUA_TUSERDATA) {
    lua_remove(L, -2);
    return lua_touserdata(L, -1);
  }
  lua_pop(L, 1);
  ftree *t = lua_newuserdatauv(L, sizeof *t, 1);
  t->root = NULL;
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, ftree_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_newtable(L); /* the anchor list */
  int anchors = lua_gettop(L);
  t->root = fast_compile(L, s, anchors, 0, assert_format);
  t->ref_alone = false;
  if (lua_istable(L, s)) {
    if ((lua_pushliteral(L, "$schema"), lua_rawget(L, s)) == LUA_TSTRING) {
      size_t n;
      const char *d = lua_tolstring(L, -1, &n);
      t->ref_alone = validate_dialect(d, n) == DIALECT_REF_ALONE;
    }
    lua_pop(L, 1);
  }
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, s);
  lua_pushvalue(L, -2);
  lua_rawset(L, -4); /* trees[s] = t */
  lua_remove(L, -2);
  return t;
}

bool schema_validate_frozen_limited(lua_State *L, int schema_idx, int value_idx, buf *err,
                                    schema_limits *lim) {
  schema_idx = lua_absindex(L, schema_idx);
  value_idx = lua_absindex(L, value_idx);
  int top = lua_gettop(L);
  walker w;
  validate_walker_init(&w, L, schema_idx, NULL);
  budget_init(&w, lim);
  memo_init(&w);
  push_cache(L);
  w.cache = lua_gettop(L);
  ftree *t = push_tree(L, schema_idx, w.assert_format);
  lua_getiuservalue(L, -1, 1);
  int anchors = lua_gettop(L);
  w.quiet = 1;
  w.ref_alone = t->ref_alone;
  bool ok = fast_valid(&w, t->root, value_idx, anchors, 0);
  if (!ok && !w.exhausted) {
    /* invalid: the walker says why (and has the last word), from the root,
       with the memo of the first pass and a fresh step count */
    w.err = err;
    w.quiet = w.depth = w.npath = 0;
    w.fatal = w.ref_alone = false;
    budget_start(&w);
    ok = validate_node(&w, schema_idx, value_idx);
  }
  lua_settop(L, top);
  return finish(&w, ok, err, lim);
}

bool schema_validate_frozen(lua_State *L, int schema_idx, int value_idx, buf *err) {
  return schema_validate_frozen_limited(L, schema_idx, value_idx, err, NULL);
}

/* }====== */

/* }====================================================== */
