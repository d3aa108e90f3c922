/* validate_check.c — the check of a schema at registration (schema_check)
 * and what of it luamcp does not enforce (schema_unenforced). */
#include "validate.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "json.h"
#include "schema_format.h"
#include "schema_regex.h"
#include "validate_internal.h"

/* {====================================================== schema check */

static bool check_node(walker *w, int s);

static bool check_member(walker *w, int s, int key) {
  validate_push_member(w, key);
  bool ok = check_node(w, s);
  w->npath--;
  return ok;
}

static bool check_element(walker *w, int s, lua_Integer i) {
  validate_push_index(w, i);
  bool ok = check_node(w, s);
  w->npath--;
  return ok;
}

/* An array of schemas, non-empty where the keyword says so. */
static bool check_schema_array(walker *w, int x, bool nonempty) {
  lua_State *L = w->L;
  lua_Integer n = validate_array_len(L, x);
  if (n < 0 || (nonempty && n == 0))
    return validate_failf(w, nonempty ? "must be a non-empty array of schemas" : "must be an array of schemas");
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, x, i);
    bool ok = check_element(w, lua_gettop(L), i - 1);
    lua_pop(L, 1);
    if (!ok) return false;
  }
  return true;
}

/* An object whose members are schemas (properties, $defs). */
static bool check_schema_map(walker *w, int x) {
  lua_State *L = w->L;
  if (!validate_is_object(L, x)) return validate_failf(w, "must be an object");
  lua_pushnil(L);
  while (lua_next(L, x)) {
    int key = lua_gettop(L) - 1;
    if (lua_type(L, key) != LUA_TSTRING) return validate_failf(w, "member names must be strings");
    if (!check_member(w, key + 1, key)) return false;
    lua_pop(L, 1);
  }
  return true;
}

static bool check_type_name(walker *w, int t, const char *wrong) {
  if (lua_type(w->L, t) != LUA_TSTRING) return validate_failf(w, "%s", wrong);
  const char *name = lua_tostring(w->L, t);
  return validate_is_type_name(name) || validate_failf(w, "unknown type '%s'", name);
}

/* dependentRequired (schemas false) or dependencies (schemas true): an
   object of string arrays (or schemas). */
static bool check_dependency_map(walker *w, int x, bool schemas) {
  lua_State *L = w->L;
  if (!validate_is_object(L, x)) return validate_failf(w, "must be an object");
  lua_pushnil(L);
  while (lua_next(L, x)) {
    int key = lua_gettop(L) - 1, val = key + 1;
    if (lua_type(L, key) != LUA_TSTRING) return validate_failf(w, "member names must be strings");
    validate_push_member(w, key);
    bool ok;
    if (schemas && validate_is_schema(L, val)) {
      ok = check_node(w, val);
    } else {
      lua_Integer n = validate_array_len(L, val);
      ok = n >= 0;
      for (lua_Integer i = 1; ok && i <= n; i++) {
        ok = lua_rawgeti(L, val, i) == LUA_TSTRING;
        lua_pop(L, 1);
      }
      if (!ok) validate_failf(w, schemas ? "must be a schema or an array of strings" : "must be an array of strings");
    }
    w->npath--;
    if (!ok) return false;
    lua_pop(L, 1);
  }
  return true;
}

static bool check_keyword(walker *w, int s, int kw, int x, const int *slot) {
  lua_State *L = w->L;
  switch (kw) {
    case KW_SCHEMA: {
      if (lua_type(L, x) != LUA_TSTRING) return validate_failf(w, "must be a string");
      size_t n;
      const char *d = lua_tolstring(L, x, &n);
      if (validate_dialect(d, n) == DIALECT_UNKNOWN)
        return validate_failf(w, "unsupported dialect '%s' (use draft-07 or 2020-12)", d);
      return true;
    }
    case KW_REF: case KW_DYNAMICREF: {
      if (lua_type(L, x) != LUA_TSTRING) return validate_failf(w, "must be a string");
      size_t n;
      const char *ref = lua_tolstring(L, x, &n);
      if (!validate_ref_push(L, w->root, ref, n)) {
        if (n == 0 || ref[0] != '#')
          return validate_failf(w, "only references within the schema (\"#...\", or the exact URI of an $id) "
                          "are supported, got '%s'", ref);
        return validate_failf(w, "'%s' does not resolve", ref);
      }
      bool ok = validate_is_schema(L, -1);
      lua_pop(L, 1);
      return ok || validate_failf(w, "'%s' does not point to a schema", ref);
    }
    case KW_TYPE: {
      if (lua_type(L, x) == LUA_TSTRING) return check_type_name(w, x, "");
      lua_Integer n = validate_array_len(L, x);
      if (n <= 0) return validate_failf(w, "must be a type name or an array of type names");
      for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, x, i);
        validate_push_index(w, i - 1);
        bool ok = check_type_name(w, lua_gettop(L), "must be a type name");
        w->npath--;
        lua_pop(L, 1);
        if (!ok) return false;
      }
      return true;
    }
    case KW_ENUM:
      return validate_array_len(L, x) >= 0 || validate_failf(w, "must be an array");
    case KW_CONST:
      return true;
    case KW_MULTIPLEOF:
      if (lua_type(L, x) != LUA_TNUMBER || !(lua_tonumber(L, x) > 0))
        return validate_failf(w, "must be a number greater than 0");
      return true;
    case KW_MINIMUM: case KW_EXCLUSIVEMINIMUM:
    case KW_MAXIMUM: case KW_EXCLUSIVEMAXIMUM:
      return lua_type(L, x) == LUA_TNUMBER || validate_failf(w, "must be a number");
    case KW_MINLENGTH: case KW_MAXLENGTH: case KW_MINITEMS: case KW_MAXITEMS:
    case KW_MINPROPERTIES: case KW_MAXPROPERTIES: case KW_MINCONTAINS: case KW_MAXCONTAINS:
      return validate_count_arg(L, x) >= 0 || validate_failf(w, "must be a non-negative integer");
    case KW_UNIQUEITEMS:
      return lua_isboolean(L, x) || validate_failf(w, "must be a boolean");
    case KW_REQUIRED: {
      lua_Integer n = validate_array_len(L, x);
      if (n < 0) return validate_failf(w, "must be an array of strings");
      for (lua_Integer i = 1; i <= n; i++) {
        bool ok = lua_rawgeti(L, x, i) == LUA_TSTRING;
        lua_pop(L, 1);
        if (!ok) {
          validate_push_index(w, i - 1);
          return validate_failf(w, "must be a string");
        }
      }
      return true;
    }
    case KW_PROPERTIES: case KW_DEFS: case KW_DEFINITIONS: case KW_DEPENDENTSCHEMAS:
      return check_schema_map(w, x);
    case KW_PATTERNPROPERTIES: {
      if (!check_schema_map(w, x)) return false;
      /* each pattern compiles now, once, into the schema's cache */
      lua_pushnil(L);
      while (lua_next(L, x)) {
        lua_pop(L, 1);
        if (!schema_regex_get(L, x, lua_gettop(L), NULL)) {
          validate_push_member(w, lua_gettop(L));
          buf *b = validate_report(w);
          if (b) schema_regex_get(L, x, lua_gettop(L), b);
          w->npath--;
          return false;
        }
      }
      return true;
    }
    case KW_PATTERN: {
      if (lua_type(L, x) != LUA_TSTRING) return validate_failf(w, "must be a string");
      if (schema_regex_get(L, s, x, NULL)) return true;
      buf *b = validate_report(w);
      if (b) schema_regex_get(L, s, x, b);
      return false;
    }
    case KW_FORMAT:
      return lua_type(L, x) == LUA_TSTRING || validate_failf(w, "must be a string");
    case KW_DEPENDENTREQUIRED:
      return check_dependency_map(w, x, false);
    case KW_DEPENDENCIES:
      return check_dependency_map(w, x, true);
    case KW_ITEMS:
      if (lua_istable(L, x) && json_table_array_len(L, x) >= 0) {
        if (slot[KW_PREFIXITEMS])
          return validate_failf(w, "must be a schema, not an array, next to prefixItems");
        return check_schema_array(w, x, false);
      }
      return check_node(w, x);
    case KW_PREFIXITEMS:
      return check_schema_array(w, x, true);
    case KW_ALLOF: case KW_ANYOF: case KW_ONEOF:
      return check_schema_array(w, x, true);
    default: /* additionalProperties, additionalItems, not, if, then, else, contains,
                propertyNames, unevaluatedProperties, unevaluatedItems */
      return check_node(w, x);
  }
}

/* Stack: uses up to LEVEL_SLOTS above the top, leaves it as it was. */
static bool check_node(walker *w, int s) {
  lua_State *L = w->L;
  if (!validate_is_schema(L, s)) return validate_failf(w, "must be a schema (an object or a boolean)");
  if (lua_isboolean(L, s)) return true;
  if (w->depth >= MAX_DEPTH || !lua_checkstack(L, LEVEL_SLOTS))
    return validate_fatalf(w, "schema nesting too deep (a cycle?)"); /* the path would be huge */
  int top = lua_gettop(L), slot[KW_N];
  validate_scan_keywords(L, s, slot);
  w->depth++;
  bool ok = true;
  for (int kw = 0; kw < KW_N && ok; kw++) {
    if (!slot[kw]) continue;
    validate_push_keyword(w, kw);
    ok = check_keyword(w, s, kw, slot[kw], slot);
    w->npath--;
  }
  w->depth--;
  lua_settop(L, top);
  return ok;
}

bool schema_check(lua_State *L, int schema_idx, buf *err) {
  walker w;
  schema_idx = lua_absindex(L, schema_idx);
  validate_walker_init(&w, L, schema_idx, err);
  int top = lua_gettop(L);
  bool ok = check_node(&w, schema_idx);
  lua_settop(L, top);
  return ok;
}

/* }====================================================== */

/* {====================================================== unenforced keywords */

static void unenforced_note(walker *w, buf *out, int *count, const char *what) {
  if (out->len) buf_putc(out, '\n');
  if (w->npath) {
    validate_put_path(out, w);
    buf_puts(out, ": ");
  }
  buf_puts(out, what);
  ++*count;
}

static void unenforced_node(walker *w, int s, int seen, buf *out, int *count) {
  lua_State *L = w->L;
  if (!lua_istable(L, s) || w->depth >= MAX_DEPTH || !lua_checkstack(L, LEVEL_SLOTS)) return;
  if (!validate_first_visit(L, seen, s)) return;
  static const char *const notes[][2] = {
    {"$dynamicRef", "$dynamicRef is resolved as a $ref (no dynamic scope)"},
    {"$recursiveRef", "$recursiveRef is not supported (ignored)"},
    {"$vocabulary", "$vocabulary is ignored (every 2020-12 vocabulary applies)"},
    {"contentEncoding", "contentEncoding is an annotation (not checked)"},
    {"contentMediaType", "contentMediaType is an annotation (not checked)"},
    {"contentSchema", "contentSchema is an annotation (not checked)"},
  };
  for (size_t i = 0; i < sizeof notes / sizeof *notes; i++) {
    if (lua_getfield(L, s, notes[i][0]) != LUA_TNIL) unenforced_note(w, out, count, notes[i][1]);
    lua_pop(L, 1);
  }
  if (lua_getfield(L, s, "format") == LUA_TSTRING) {
    const char *f = lua_tostring(L, -1);
    buf msg;
    buf_init(&msg);
    if (!w->assert_format)
      buf_printf(&msg, "format '%s' is an annotation (not checked; app.lua schema = { format = \"assert\" } checks it)", f);
    else if (schema_format_check(f, "", 0) < 0)
      buf_printf(&msg, "format '%s' is not one the validator knows (not checked)", f);
    if (msg.len) {
      buf_putc(&msg, '\0');
      unenforced_note(w, out, count, msg.p);
    }
    buf_free(&msg);
  }
  lua_pop(L, 1);
  int top = lua_gettop(L), slot[KW_N];
  validate_scan_keywords(L, s, slot);
  w->depth++;
  for (int kw = 0; kw < KW_N; kw++) {
    int x = slot[kw], kind = x ? validate_subschema_kind(kw) : SUB_NONE;
    if (kind == SUB_ONE && kw == KW_ITEMS && lua_istable(L, x) && json_table_array_len(L, x) > 0)
      kind = SUB_LIST;
    if (kind == SUB_NONE) continue;
    validate_push_keyword(w, kw);
    if (kind == SUB_ONE) {
      unenforced_node(w, x, seen, out, count);
    } else if (lua_istable(L, x)) {
      lua_pushnil(L);
      while (lua_next(L, x)) {
        int key = lua_gettop(L) - 1;
        if (kind == SUB_LIST && lua_isinteger(L, key)) validate_push_index(w, lua_tointeger(L, key) - 1);
        else validate_push_member(w, key);
        unenforced_node(w, key + 1, seen, out, count);
        w->npath--;
        lua_pop(L, 1);
      }
    }
    w->npath--;
  }
  w->depth--;
  lua_settop(L, top);
}

int schema_unenforced(lua_State *L, int schema_idx, bool assert_format, buf *out) {
  walker w;
  schema_idx = lua_absindex(L, schema_idx);
  validate_walker_init(&w, L, schema_idx, NULL);
  w.assert_format = assert_format;
  int top = lua_gettop(L), count = 0;
  lua_newtable(L);
  unenforced_node(&w, schema_idx, top + 1, out, &count);
  lua_settop(L, top);
  return count;
}

/* }====================================================== */
