/* json.h — strict JSON: validation, decoding into Lua values, encoding from
 * Lua values. The one place that decides how Lua tables map to JSON.
 *
 * Why not lua-cjson for this (DESIGN.md called json.c a thin layer over it):
 * Debian's cjson 2.1.0 decodes every number as a float, accepts NaN/hex,
 * never checks UTF-8, writes 14 significant digits, escapes '/', and has no
 * array marker. Fixing each of those around it costs a second pass over the
 * data; a strict parser of our own is one pass, runs on the transport threads
 * without a lua_State (validation), and keeps integers integers. cjson stays
 * available to scripts as require "cjson"; our null is its null (a NULL
 * light userdata), so values move between the two unchanged.
 *
 * Mapping (decode):  object -> table; array -> table with the array
 * metatable (json_push_array_mt); null -> NULL light userdata; integer
 * literals that fit in 64 bits -> Lua integers, other numbers -> floats.
 * Mapping (encode): a table is an array when it carries the array metatable,
 * or when it is non-empty and its keys are exactly 1..n; otherwise it is an
 * object (so an unmarked empty table is {}). Integers stay integers; floats
 * are written so they read back to the same double; '/' is not escaped;
 * bytes that are not UTF-8 become U+FFFD. */
#ifndef LUAMCP_JSON_H
#define LUAMCP_JSON_H

#include <stddef.h>
#include <stdbool.h>

#include "buf.h"

typedef struct lua_State lua_State;

#define JSON_MAX_DEPTH 256

/* A slice of a JSON text (raw, as received: strings keep quotes/escapes). */
typedef struct json_span {
  const char *p;
  size_t n;
} json_span;

/* Validate one complete JSON text. Returns true, or false with *err set to a
 * static message and *errpos (if non-NULL) to the byte offset. */
bool json_validate(const char *s, size_t n, const char **err, size_t *errpos);

/* Validate like json_validate; when the text is an object, also call fn for
   each top-level member (raw key with quotes, raw value) in one pass. */
typedef void (*json_member_fn)(void *ctx, json_span key, json_span value);
bool json_scan(const char *s, size_t n, json_member_fn fn, void *ctx, const char **err,
               size_t *errpos);

/* Decode one complete JSON text and push it. Returns true, or false with
 * nothing pushed and *err set to a static message. */
bool json_decode(lua_State *L, const char *s, size_t n, const char **err);

/* Iterate the members of a (validated) JSON object: call with *pos == 0
 * first; returns false at the end. key is the raw key (with quotes). */
bool json_object_next(json_span obj, size_t *pos, json_span *key,
                      json_span *value);
/* Iterate the elements of a (validated) JSON array the same way. */
bool json_array_next(json_span arr, size_t *pos, json_span *value);
/* Find several members in one walk: values[i] gets keys[i]'s value (n == 0
   when absent). Returns how many were found. */
size_t json_object_fields(json_span obj, const char *const *keys, json_span *values,
                          size_t nkeys);
/* Find a member by key (keys without escapes compare exactly). */
bool json_object_get(json_span obj, const char *key, json_span *value);
/* Does a raw JSON string token equal the C string? (handles escapes) */
bool json_string_eq(json_span tok, const char *s);
/* Unescape a raw JSON string token into out (NUL-terminated). */
void json_string_unescape(json_span tok, buf *out);
/* A code point (at most U+10FFFF) as UTF-8. */
void json_put_utf8(buf *b, unsigned cp);
/* The kind of a raw JSON value by its first byte: one of "{[\"tfn-0123456789". */
static inline char json_kind(json_span v) { return v.n ? v.p[0] : 0; }

/* Push the metatable that marks a table as a JSON array (created once per
 * state, kept in the registry). */
void json_push_array_mt(lua_State *L);
/* Mark the table at idx as a JSON array. */
void json_mark_array(lua_State *L, int idx);
/* The JSON classification of the table at idx: its array length when it
 * encodes as an array, -1 when it encodes as an object. */
long long json_table_array_len(lua_State *L, int idx);

/* Append the JSON encoding of the value at idx. Returns true, or false with
 * a message in err (the buffer may hold a partial encoding then). */
bool json_encode(lua_State *L, int idx, buf *b, char *err, size_t errlen);
/* The same, stricter, for what a handler returns: a table that mixes list
   items with named fields is an error (it would lose one or the other). */
bool json_encode_result(lua_State *L, int idx, buf *b, char *err, size_t errlen);
/* The same with object members in key order (keys must be strings): for
   what is encoded once and compared. */
bool json_encode_sorted(lua_State *L, int idx, buf *b, char *err, size_t errlen);
/* Append s as a JSON string literal (quotes included). */
void json_encode_string(buf *b, const char *s, size_t n);
/* Append a double so it reads back as the same value (integral values in
 * range are written without a fraction). NaN/inf are not valid JSON: the
 * caller checks. */
void json_encode_double(buf *b, double d);
/* Is s (n bytes) UTF-8 throughout (no overlong forms, no surrogates)? */
bool json_utf8_valid(const char *s, size_t n);

/* The light userdata that stands for JSON null (same as cjson.null). */
#define json_pushnull(L) lua_pushlightuserdata((L), NULL)
#define json_isnull(L, i) \
  (lua_type((L), (i)) == LUA_TLIGHTUSERDATA && lua_touserdata((L), (i)) == NULL)

#endif
