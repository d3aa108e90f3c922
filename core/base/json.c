/* json.c — strict JSON parsing (validate or decode into Lua) and encoding
 * from Lua. See json.h for the mapping and why this is not lua-cjson. */
#include "json.h"

#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

/* {====================================================== parser */

/* One parser serves both jobs: with L == NULL it only validates; with a
   state it also pushes what it reads. */
typedef struct parser {
  const char *p, *end;
  lua_State *L;
  const char *err;
  int depth;
  buf scratch; /* unescaped strings and long numbers */
} parser;

static bool fail(parser *ps, const char *msg) {
  if (!ps->err) ps->err = msg;
  return false;
}

static void skip_ws(parser *ps) {
  const char *p = ps->p;
  while (p < ps->end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
    p++;
  ps->p = p;
}

/* Length of the UTF-8 sequence at p (1..4), or 0 if it is not valid UTF-8
   (overlong forms, surrogates and code points past U+10FFFF rejected). */
static size_t utf8_seq_len(const unsigned char *p, const unsigned char *end) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  size_t n;
  unsigned min;
  if (c >= 0xC2 && c <= 0xDF) n = 2, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, min = 0x10000;
  else return 0;
  if ((size_t)(end - p) < n) return 0;
  unsigned cp = c & (0x3F >> (n - 1));
  for (size_t i = 1; i < n; i++) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool json_utf8_valid(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  while (p < end) {
    size_t k = utf8_seq_len(p, end);
    if (!k) return false;
    p += k;
  }
  return true;
}

void json_put_utf8(buf *b, unsigned cp) {
  if (cp < 0x80) buf_putc(b, (char)cp);
  else if (cp < 0x800) {
    buf_putc(b, (char)(0xC0 | (cp >> 6)));
    buf_putc(b, (char)(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    buf_putc(b, (char)(0xE0 | (cp >> 12)));
    buf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3F)));
    buf_putc(b, (char)(0x80 | (cp & 0x3F)));
  } else {
    buf_putc(b, (char)(0xF0 | (cp >> 18)));
    buf_putc(b, (char)(0x80 | ((cp >> 12) & 0x3F)));
    buf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3F)));
    buf_putc(b, (char)(0x80 | (cp & 0x3F)));
  }
}

static int hex4(const char *p) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else return -1;
  }
  return v;
}

/* Decode the escape at p (just after the backslash) into out (if non-NULL);
   returns the pointer after it, or NULL. Lone surrogates become U+FFFD. */
static const char *read_escape(const char *p, const char *end, buf *out) {
  if (p >= end) return NULL;
  char c = *p++;
  const char *simple = strchr("\"\\/bfnrt", c);
  if (c && simple) {
    static const char map[] = "\"\\/\b\f\n\r\t";
    if (out) buf_putc(out, map[simple - "\"\\/bfnrt"]);
    return p;
  }
  if (c != 'u' || end - p < 4) return NULL;
  int cp = hex4(p);
  if (cp < 0) return NULL;
  p += 4;
  if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' &&
      p[1] == 'u') {
    int lo = hex4(p + 2);
    if (lo >= 0xDC00 && lo <= 0xDFFF) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      p += 6;
    }
  }
  if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
  if (out) json_put_utf8(out, (unsigned)cp);
  return p;
}

/* Bytes a string scan must stop at: quote, backslash, controls, non-ASCII. */
static const unsigned char string_stop[256] = {
    [0 ... 31] = 1, ['"'] = 1, ['\\'] = 1, [128 ... 255] = 1};

/* Parse a string at ps->p (on the opening quote). With a state, push it. */
static bool parse_string(parser *ps) {
  const char *p = ps->p + 1, *end = ps->end;
  const char *run = p;
  bool escaped = false;
  if (ps->L) ps->scratch.len = 0;
  for (;;) {
    while (p < end && !string_stop[(unsigned char)*p]) p++;
    if (p >= end) return fail(ps, "unterminated string");
    unsigned char c = (unsigned char)*p;
    if (c == '"') break;
    if (c < 0x20) return fail(ps, "control character in string");
    if (c == '\\') {
      if (ps->L) buf_put(&ps->scratch, run, (size_t)(p - run));
      escaped = true;
      p = read_escape(p + 1, end, ps->L ? &ps->scratch : NULL);
      if (!p) return fail(ps, "bad escape in string");
      run = p;
      continue;
    }
    if (c < 0x80) {
      p++;
      continue;
    }
    size_t n = utf8_seq_len((const unsigned char *)p, (const unsigned char *)end);
    if (!n) return fail(ps, "invalid UTF-8 in string");
    p += n;
  }
  if (ps->L) {
    if (escaped) {
      buf_put(&ps->scratch, run, (size_t)(p - run));
      lua_pushlstring(ps->L, ps->scratch.p, ps->scratch.len);
    } else {
      lua_pushlstring(ps->L, ps->p + 1, (size_t)(p - (ps->p + 1)));
    }
  }
  ps->p = p + 1;
  return true;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool parse_number(parser *ps) {
  const char *p = ps->p, *end = ps->end, *start = p;
  bool neg = false, integral = true;
  if (*p == '-') neg = true, p++;
  if (p >= end || !is_digit(*p)) return fail(ps, "bad number");
  if (*p == '0') p++;
  else
    while (p < end && is_digit(*p)) p++;
  if (p < end && *p == '.') {
    integral = false;
    p++;
    if (p >= end || !is_digit(*p)) return fail(ps, "bad number");
    while (p < end && is_digit(*p)) p++;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    integral = false;
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    if (p >= end || !is_digit(*p)) return fail(ps, "bad number");
    while (p < end && is_digit(*p)) p++;
  }
  ps->p = p;
  if (integral && p - start - neg <= 18) { /* fits in an int64: no overflow possible */
    if (!ps->L) return true;
  } else {
    /* a float (or a huge integer): refuse what a double cannot hold, in
       both modes, so validation and decoding agree */
    char tmp[64];
    size_t len = (size_t)(p - start);
    double d;
    if (len < sizeof tmp) {
      memcpy(tmp, start, len);
      tmp[len] = '\0';
      d = strtod(tmp, NULL);
    } else {
      buf b;
      buf_init(&b);
      buf_put(&b, start, len);
      buf_putc(&b, '\0');
      d = strtod(b.p, NULL);
      buf_free(&b);
    }
    if (isinf(d)) return fail(ps, "number out of range");
    if (!ps->L) return true;
    if (!integral) {
      lua_pushnumber(ps->L, d);
      return true;
    }
  }
  if (integral) {
    /* accumulate as unsigned; fall back to a float past int64 */
    uint64_t v = 0;
    bool overflow = false;
    for (const char *q = start + neg; q < p; q++) {
      unsigned d = (unsigned)(*q - '0');
      if (v > (UINT64_MAX - d) / 10) { overflow = true; break; }
      v = v * 10 + d;
    }
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    if (!overflow && v <= lim) {
      lua_pushinteger(ps->L, neg ? (lua_Integer)(0 - v) : (lua_Integer)v);
      return true;
    }
  }
  ps->scratch.len = 0;
  buf_put(&ps->scratch, start, (size_t)(p - start));
  buf_putc(&ps->scratch, '\0');
  lua_pushnumber(ps->L, strtod(ps->scratch.p, NULL));
  return true;
}

static bool parse_literal(parser *ps, const char *lit, size_t n) {
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, lit, n) != 0)
    return fail(ps, "unexpected character");
  ps->p += n;
  return true;
}

static bool parse_value(parser *ps);

static bool parse_array(parser *ps) {
  lua_State *L = ps->L;
  ps->p++;
  if (L) {
    lua_createtable(L, 4, 0);
    json_push_array_mt(L);
    lua_setmetatable(L, -2);
  }
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == ']') {
    ps->p++;
    return true;
  }
  for (lua_Integer i = 1;; i++) {
    if (!parse_value(ps)) return false;
    if (L) lua_rawseti(L, -2, i);
    skip_ws(ps);
    if (ps->p >= ps->end) return fail(ps, "unterminated array");
    char c = *ps->p++;
    if (c == ']') return true;
    if (c != ',') return fail(ps, "expected ',' or ']' in array");
  }
}

static bool parse_object(parser *ps) {
  lua_State *L = ps->L;
  ps->p++;
  if (L) lua_createtable(L, 0, 4);
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == '}') {
    ps->p++;
    return true;
  }
  for (;;) {
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '"') return fail(ps, "expected a key");
    if (!parse_string(ps)) return false;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') return fail(ps, "expected ':'");
    ps->p++;
    if (!parse_value(ps)) return false;
    if (L) lua_rawset(L, -3);
    skip_ws(ps);
    if (ps->p >= ps->end) return fail(ps, "unterminated object");
    char c = *ps->p++;
    if (c == '}') return true;
    if (c != ',') return fail(ps, "expected ',' or '}' in object");
  }
}

static bool parse_value(parser *ps) {
  skip_ws(ps);
  if (ps->p >= ps->end) return fail(ps, "unexpected end of input");
  switch (*ps->p) {
    case '"': return parse_string(ps);
    case '{':
    case '[': {
      if (++ps->depth > JSON_MAX_DEPTH) return fail(ps, "nesting too deep");
      if (ps->L && !lua_checkstack(ps->L, 4)) return fail(ps, "nesting too deep");
      bool ok = *ps->p == '{' ? parse_object(ps) : parse_array(ps);
      ps->depth--;
      return ok;
    }
    case 't':
      if (!parse_literal(ps, "true", 4)) return false;
      if (ps->L) lua_pushboolean(ps->L, 1);
      return true;
    case 'f':
      if (!parse_literal(ps, "false", 5)) return false;
      if (ps->L) lua_pushboolean(ps->L, 0);
      return true;
    case 'n':
      if (!parse_literal(ps, "null", 4)) return false;
      if (ps->L) json_pushnull(ps->L);
      return true;
    default:
      if (*ps->p == '-' || is_digit(*ps->p)) return parse_number(ps);
      return fail(ps, "unexpected character");
  }
}

static bool parse_document(parser *ps) {
  if (!parse_value(ps)) return false;
  skip_ws(ps);
  if (ps->p != ps->end) return fail(ps, "trailing characters after JSON value");
  return true;
}

/* Like parse_document, but when the text is an object, report each
   top-level member as it goes: validation and lookup in one pass. */
static bool scan_document(parser *ps, json_member_fn fn, void *ctx) {
  skip_ws(ps);
  if (!fn || ps->p >= ps->end || *ps->p != '{') return parse_document(ps);
  ps->p++;
  ps->depth = 1;
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == '}') ps->p++;
  else
    for (;;) {
      skip_ws(ps);
      if (ps->p >= ps->end || *ps->p != '"') return fail(ps, "expected a key");
      json_span key = {ps->p, 0};
      if (!parse_string(ps)) return false;
      key.n = (size_t)(ps->p - key.p);
      skip_ws(ps);
      if (ps->p >= ps->end || *ps->p != ':') return fail(ps, "expected ':'");
      ps->p++;
      skip_ws(ps);
      json_span value = {ps->p, 0};
      if (!parse_value(ps)) return false;
      value.n = (size_t)(ps->p - value.p);
      fn(ctx, key, value);
      skip_ws(ps);
      if (ps->p >= ps->end) return fail(ps, "unterminated object");
      char c = *ps->p++;
      if (c == '}') break;
      if (c != ',') return fail(ps, "expected ',' or '}' in object");
    }
  skip_ws(ps);
  if (ps->p != ps->end) return fail(ps, "trailing characters after JSON value");
  return true;
}

bool json_scan(const char *s, size_t n, json_member_fn fn, void *ctx, const char **err,
               size_t *errpos) {
  parser ps = {.p = s, .end = s + n};
  buf_init(&ps.scratch);
  bool ok = scan_document(&ps, fn, ctx);
  if (!ok) {
    if (err) *err = ps.err;
    if (errpos) *errpos = (size_t)(ps.p - s);
  }
  return ok;
}

bool json_validate(const char *s, size_t n, const char **err, size_t *errpos) {
  parser ps = {.p = s, .end = s + n};
  buf_init(&ps.scratch);
  bool ok = parse_document(&ps);
  if (!ok) {
    if (err) *err = ps.err;
    if (errpos) *errpos = (size_t)(ps.p - s);
  }
  return ok;
}

bool json_decode(lua_State *L, const char *s, size_t n, const char **err) {
  int top = lua_gettop(L);
  parser ps = {.p = s, .end = s + n, .L = L};
  buf_init(&ps.scratch);
  bool ok = parse_document(&ps);
  buf_free(&ps.scratch);
  if (!ok) {
    lua_settop(L, top);
    if (err) *err = ps.err;
  }
  return ok;
}

/* }====================================================== */

/* {====================================================== raw access */

/* These walk text that has already been validated, so they only need to
   find where each value ends: bracket and quote matching, no checks. */
static const char *raw_skip(const char *p, const char *end) {
  int depth = 0;
  do {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t' || *p == ',' ||
                       *p == ':'))
      p++;
    if (p >= end) return NULL;
    switch (*p) {
      case '"': { /* memchr to each quote: a byte-at-a-time loop was most of a large call */
        const char *start = ++p;
        for (;;) {
          const char *q = memchr(p, '"', (size_t)(end - p));
          if (!q) return NULL;
          size_t bs = 0; /* an odd run of backslashes before it escapes it */
          while (q - bs > start && q[-1 - (ptrdiff_t)bs] == '\\') bs++;
          p = q + 1;
          if (bs % 2 == 0) break;
        }
        break;
      }
      case '{':
      case '[':
        depth++;
        p++;
        break;
      case '}':
      case ']':
        depth--;
        p++;
        break;
      default: /* number or literal */
        while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' &&
               *p != '\r' && *p != '\t')
          p++;
    }
  } while (depth > 0);
  return depth == 0 ? p : NULL;
}

/* The value at p of a container, and where the walk goes on after it. */
static bool next_value(json_span in, const char *p, size_t *pos, json_span *value) {
  const char *v = p;
  p = raw_skip(p, in.p + in.n);
  if (!p) return false;
  value->p = v;
  value->n = (size_t)(p - v);
  *pos = (size_t)(p - in.p);
  return true;
}

bool json_object_next(json_span obj, size_t *pos, json_span *key,
                      json_span *value) {
  const char *end = obj.p + obj.n;
  const char *p = obj.p + (*pos ? *pos : 1);
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t' ||
                     *p == ','))
    p++;
  if (p >= end || *p != '"') return false;
  const char *k = p;
  p = raw_skip(p, end);
  if (!p) return false;
  key->p = k;
  key->n = (size_t)(p - k);
  while (p < end && *p != ':') p++;
  p++;
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  return next_value(obj, p, pos, value);
}

bool json_array_next(json_span arr, size_t *pos, json_span *value) {
  const char *end = arr.p + arr.n;
  const char *p = arr.p + (*pos ? *pos : 1);
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t' || *p == ','))
    p++;
  if (p >= end || *p == ']') return false;
  return next_value(arr, p, pos, value);
}

bool json_string_eq(json_span tok, const char *s) {
  size_t n = strlen(s);
  if (tok.n < 2 || tok.p[0] != '"') return false;
  /* raw bytes decide only when there is no escape ("\\n" is a newline,
     not the two characters of s) */
  if (!memchr(tok.p, '\\', tok.n)) return tok.n == n + 2 && memcmp(tok.p + 1, s, n) == 0;
  buf b;
  buf_init(&b);
  json_string_unescape(tok, &b);
  bool eq = b.len == n && memcmp(b.p, s, n) == 0;
  buf_free(&b);
  return eq;
}

size_t json_object_fields(json_span obj, const char *const *keys, json_span *values,
                          size_t nkeys) {
  size_t pos = 0, found = 0;
  json_span k, v;
  for (size_t i = 0; i < nkeys; i++) values[i] = (json_span){0};
  while (json_object_next(obj, &pos, &k, &v))
    for (size_t i = 0; i < nkeys; i++)
      if (json_string_eq(k, keys[i])) {
        if (!values[i].n) found++;
        values[i] = v;
        break;
      }
  return found;
}

bool json_object_get(json_span obj, const char *key, json_span *value) {
  size_t pos = 0;
  json_span k, v;
  bool found = false;
  while (json_object_next(obj, &pos, &k, &v))
    if (json_string_eq(k, key)) *value = v, found = true; /* last one wins */
  return found;
}

void json_string_unescape(json_span tok, buf *out) {
  const char *p = tok.p + 1, *end = tok.p + tok.n - 1;
  while (p < end) {
    const char *bs = memchr(p, '\\', (size_t)(end - p));
    if (!bs) {
      buf_put(out, p, (size_t)(end - p));
      break;
    }
    buf_put(out, p, (size_t)(bs - p));
    p = read_escape(bs + 1, end, out);
    if (!p) break;
  }
  buf_reserve(out, 1);
  out->p[out->len] = '\0';
}

/* }====================================================== */

/* {====================================================== encoder */

static const char array_mt_key = 'A'; /* registry key: its address */

void json_push_array_mt(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &array_mt_key) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "array");
  lua_setfield(L, -2, "__jsontype");
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &array_mt_key);
}

void json_mark_array(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  json_push_array_mt(L);
  lua_setmetatable(L, idx);
}

long long json_table_array_len(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_getmetatable(L, idx)) {
    json_push_array_mt(L);
    bool marked = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (marked) return (long long)lua_rawlen(L, idx);
  }
  lua_Unsigned n = lua_rawlen(L, idx);
  if (n == 0) return -1;
  lua_Unsigned count = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (!lua_isinteger(L, -1)) {
      lua_pop(L, 1);
      return -1;
    }
    lua_Integer k = lua_tointeger(L, -1);
    if (k < 1 || (lua_Unsigned)k > n) {
      lua_pop(L, 1);
      return -1;
    }
    count++;
  }
  return count == n ? (long long)n : -1;
}

void json_encode_string(buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  buf_reserve(b, n + 2);
  buf_putc(b, '"');
  while (p < end) {
    const unsigned char *run = p;
    while (p < end && !string_stop[*p]) p++;
    if (p > run) buf_put(b, run, (size_t)(p - run));
    if (p >= end) break;
    unsigned char c = *p;
    if (c >= 0x80) {
      size_t len = utf8_seq_len(p, end);
      if (len) buf_put(b, p, len), p += len;
      else buf_put(b, "\xEF\xBF\xBD", 3), p++; /* U+FFFD */
      continue;
    }
    p++;
    switch (c) {
      case '"': buf_put(b, "\\\"", 2); break;
      case '\\': buf_put(b, "\\\\", 2); break;
      case '\n': buf_put(b, "\\n", 2); break;
      case '\r': buf_put(b, "\\r", 2); break;
      case '\t': buf_put(b, "\\t", 2); break;
      case '\b': buf_put(b, "\\b", 2); break;
      case '\f': buf_put(b, "\\f", 2); break;
      default: {
        char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        buf_put(b, u, 6);
      }
    }
  }
  buf_putc(b, '"');
}

void json_encode_double(buf *b, double d) {
  if (d == floor(d) && fabs(d) < 1e15) {
    buf_printf(b, "%.0f", d);
    if (d == 0 && signbit(d)) { /* keep "-0" out of replies: it reads as 0 */
      b->len -= 2;
      buf_putc(b, '0');
    }
    return;
  }
  char tmp[32];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, d);
    if (prec == 17 || strtod(tmp, NULL) == d) break;
  }
  buf_puts(b, tmp);
}

typedef struct encoder {
  lua_State *L;
  buf *b;
  char *err;
  size_t errlen;
  bool sorted; /* object members in key order */
  bool strict; /* a table of list items and named fields is an error */
  /* where the failure was (".items[3].score"), built while unwinding */
  char path[160];
  size_t plen;
  bool nopath; /* a cycle: its path would be the cycle, over and over */
} encoder;

static bool enc_fail(encoder *e, const char *msg, const char *what) {
  snprintf(e->err, e->errlen, "%s%s", msg, what ? what : "");
  return false;
}

/* Put a step in front of the failure's path: ".key" (or ["key"]) or "[i]". */
static void path_prepend(encoder *e, const char *key, size_t kn, long long index) {
  char seg[80];
  int n;
  if (e->nopath) return;
  if (key) {
    bool plain = kn > 0 && kn <= 40;
    for (size_t i = 0; plain && i < kn; i++)
      plain = (key[i] >= 'a' && key[i] <= 'z') || (key[i] >= 'A' && key[i] <= 'Z') || key[i] == '_' ||
              (i > 0 && key[i] >= '0' && key[i] <= '9');
    n = plain ? snprintf(seg, sizeof seg, ".%.*s", (int)kn, key)
              : snprintf(seg, sizeof seg, "[\"%.*s\"]", (int)(kn < 40 ? kn : 40), key);
  } else {
    n = snprintf(seg, sizeof seg, "[%lld]", index);
  }
  if (n <= 0 || (size_t)n >= sizeof seg || e->plen + (size_t)n >= sizeof e->path) return;
  memmove(e->path + n, e->path, e->plen);
  memcpy(e->path, seg, (size_t)n);
  e->plen += (size_t)n;
}

typedef struct sort_key {
  const char *s;
  size_t n;
  int ref; /* position of the key on the stack */
} sort_key;

static int cmp_keys(const void *a, const void *b) {
  const sort_key *x = a, *y = b;
  size_t n = x->n < y->n ? x->n : y->n;
  int c = memcmp(x->s, y->s, n);
  return c ? c : (x->n > y->n) - (x->n < y->n);
}

static bool encode_value(encoder *e, int idx, int depth);


/* Object members in key order: stable output, for what is encoded once
   and compared (list snapshots across reloads, the digests of MRTR). Keys
   must be strings. Each key stays on the stack while its members are
   written (no re-interning to look it up again); few keys: no malloc. */
static bool encode_sorted_object(encoder *e, int idx, int depth) {
  lua_State *L = e->L;
  sort_key local[16], *keys = local;
  size_t n = 0, cap = 16;
  int base = lua_gettop(L);
  bool ok = true;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      ok = enc_fail(e, "cannot encode a table key of type ", luaL_typename(L, -1));
      break;
    }
    if (!lua_checkstack(L, 4)) {
      ok = enc_fail(e, "cannot encode: out of stack", NULL);
      break;
    }
    if (n == cap) {
      sort_key *k = malloc((cap *= 2) * sizeof *k);
      memcpy(k, keys, n * sizeof *k);
      if (keys != local) free(keys);
      keys = k;
    }
    keys[n].s = lua_tolstring(L, -1, &keys[n].n);
    keys[n].ref = lua_gettop(L);
    n++;
    lua_pushvalue(L, -1); /* lua_next takes the copy; the key stays */
  }
  if (ok) {
    if (n > 8) qsort(keys, n, sizeof *keys, cmp_keys);
    else /* insertion sort: a few keys, no call per comparison */
      for (size_t i = 1; i < n; i++) {
        sort_key k = keys[i];
        size_t j = i;
        for (; j > 0 && cmp_keys(&keys[j - 1], &k) > 0; j--) keys[j] = keys[j - 1];
        keys[j] = k;
      }
    buf_putc(e->b, '{');
    for (size_t i = 0; i < n && ok; i++) {
      if (i) buf_putc(e->b, ',');
      json_encode_string(e->b, keys[i].s, keys[i].n);
      buf_putc(e->b, ':');
      lua_pushvalue(L, keys[i].ref);
      lua_rawget(L, idx);
      ok = encode_value(e, lua_gettop(L), depth + 1);
      if (!ok) path_prepend(e, keys[i].s, keys[i].n, 0);
      lua_pop(L, 1);
    }
    if (ok) buf_putc(e->b, '}');
  }
  if (keys != local) free(keys);
  lua_settop(L, base);
  return ok;
}

static bool encode_table(encoder *e, int idx, int depth) {
  lua_State *L = e->L;
  if (depth > JSON_MAX_DEPTH) {
    e->nopath = true;
    return enc_fail(e, "cannot encode: nesting too deep (a cycle?)", NULL);
  }
  if (!lua_checkstack(L, 4)) return enc_fail(e, "cannot encode: out of stack", NULL);
  long long n = json_table_array_len(L, idx);
  buf *b = e->b;
  if (n >= 0) {
    buf_putc(b, '[');
    for (long long i = 1; i <= n; i++) {
      if (i > 1) buf_putc(b, ',');
      lua_rawgeti(L, idx, (lua_Integer)i);
      if (lua_isnil(L, -1)) buf_put(b, "null", 4); /* a hole in a marked array */
      else if (!encode_value(e, lua_gettop(L), depth + 1)) {
        path_prepend(e, NULL, 0, i);
        return false;
      }
      lua_pop(L, 1);
    }
    buf_putc(b, ']');
    return true;
  }
  if (e->sorted) return encode_sorted_object(e, idx, depth);
  buf_putc(b, '{');
  bool first = true, named = false, numbered = false;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (!first) buf_putc(b, ',');
    first = false;
    int kt = lua_type(L, -2);
    const char *k = NULL;
    size_t kn = 0;
    if (kt == LUA_TSTRING) {
      k = lua_tolstring(L, -2, &kn);
      json_encode_string(b, k, kn);
      named = true;
    } else if (kt == LUA_TNUMBER) {
      numbered = true;
      /* tostring on a copy: lua_tolstring on the key would break lua_next */
      lua_pushvalue(L, -2);
      size_t kn;
      const char *k = lua_tolstring(L, -1, &kn);
      json_encode_string(b, k, kn);
      lua_pop(L, 1);
    } else {
      return enc_fail(e, "cannot encode a table key of type ", luaL_typename(L, -2));
    }
    if (e->strict && named && numbered)
      return enc_fail(e, "a table mixes list items and named fields (make it a list or a record)",
                      NULL);
    buf_putc(b, ':');
    if (!encode_value(e, lua_gettop(L), depth + 1)) {
      if (k) path_prepend(e, k, kn, 0);
      return false;
    }
    lua_pop(L, 1);
  }
  buf_putc(b, '}');
  return true;
}

static bool encode_value(encoder *e, int idx, int depth) {
  lua_State *L = e->L;
  switch (lua_type(L, idx)) {
    case LUA_TSTRING: {
      size_t n;
      const char *s = lua_tolstring(L, idx, &n);
      json_encode_string(e->b, s, n);
      return true;
    }
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) {
        buf_put_int(e->b, (long long)lua_tointeger(L, idx));
      } else {
        double d = lua_tonumber(L, idx);
        if (isnan(d) || isinf(d))
          return enc_fail(e, "cannot encode NaN or infinity as JSON", NULL);
        json_encode_double(e->b, d);
      }
      return true;
    case LUA_TBOOLEAN:
      if (lua_toboolean(L, idx)) buf_put(e->b, "true", 4);
      else buf_put(e->b, "false", 5);
      return true;
    case LUA_TNIL:
      buf_put(e->b, "null", 4);
      return true;
    case LUA_TLIGHTUSERDATA:
      if (lua_touserdata(L, idx) == NULL) {
        buf_put(e->b, "null", 4);
        return true;
      }
      break;
    case LUA_TTABLE:
      return encode_table(e, idx, depth);
    default:
      break;
  }
  return enc_fail(e, "cannot encode a value of type ", luaL_typename(L, idx));
}

static bool encode_with(lua_State *L, int idx, buf *b, char *err, size_t errlen, bool sorted,
                        bool strict) {
  encoder e = {.L = L, .b = b, .err = err, .errlen = errlen, .sorted = sorted, .strict = strict};
  int top = lua_gettop(L);
  bool ok = encode_value(&e, lua_absindex(L, idx), 0);
  lua_settop(L, top);
  if (!ok && e.plen) {
    size_t n = strlen(err);
    const char *p = e.path[0] == '.' ? e.path + 1 : e.path;
    snprintf(err + n, errlen > n ? errlen - n : 0, " (at %.*s)",
             (int)(e.plen - (size_t)(p - e.path)), p);
  }
  return ok;
}

bool json_encode_sorted(lua_State *L, int idx, buf *b, char *err, size_t errlen) {
  return encode_with(L, idx, b, err, errlen, true, false);
}

bool json_encode(lua_State *L, int idx, buf *b, char *err, size_t errlen) {
  return encode_with(L, idx, b, err, errlen, false, false);
}

bool json_encode_result(lua_State *L, int idx, buf *b, char *err, size_t errlen) {
  return encode_with(L, idx, b, err, errlen, false, true);
}

/* }====================================================== */
