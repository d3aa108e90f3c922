/* schema_regex.c — ECMA-262 regexes of JSON Schemas on PCRE2 (see schema_regex.h).
 * Its own file: the ECMA-to-PCRE2 translation, the per-schema cache of
 * compiled patterns and the bounded matcher are one job, apart from the
 * keyword logic of validate.c. */
#include "schema_regex.h"
#include "clock.h"
#include "luax.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

/* The first match limit tried, and the factor between tries. */
#define FIRST_UNITS 1000UL
#define UNITS_FACTOR 8UL
/* The heap (KiB) one match may use for backtracking frames. */
#define HEAP_KIB 16384
/* A format "regex" value comes from a client: its length is bounded. */
#define MAX_PATTERN 65536

struct schema_regex {
  pcre2_code *code;
};

/* {====== ECMA-262 -> PCRE2 */

/* ECMA's \s: WhiteSpace and LineTerminator (PCRE2's \s without UCP is ASCII). */
#define ECMA_SPACE "\\s\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
/* ECMA's `.`: anything but a LineTerminator. */
#define ECMA_DOT "[^\\n\\r\\u2028\\u2029]" /* (PCRE2_ALT_BSUX spells code points this way) */

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* ECMA-262 names General_Category values long or short; PCRE2 10.42 knows
   the short ones. ("digit" is no ECMA name, but the test suite uses it.) */
static const char *const gc_names[][2] = {
  {"Letter", "L"}, {"Cased_Letter", "LC"}, {"Uppercase_Letter", "Lu"}, {"Lowercase_Letter", "Ll"},
  {"Titlecase_Letter", "Lt"}, {"Modifier_Letter", "Lm"}, {"Other_Letter", "Lo"}, {"Mark", "M"},
  {"Combining_Mark", "M"}, {"Nonspacing_Mark", "Mn"}, {"Spacing_Mark", "Mc"},
  {"Enclosing_Mark", "Me"}, {"Number", "N"}, {"Decimal_Number", "Nd"}, {"digit", "Nd"},
  {"Letter_Number", "Nl"}, {"Other_Number", "No"}, {"Punctuation", "P"}, {"punct", "P"},
  {"Connector_Punctuation", "Pc"}, {"Dash_Punctuation", "Pd"}, {"Open_Punctuation", "Ps"},
  {"Close_Punctuation", "Pe"}, {"Initial_Punctuation", "Pi"}, {"Final_Punctuation", "Pf"},
  {"Other_Punctuation", "Po"}, {"Symbol", "S"}, {"Math_Symbol", "Sm"}, {"Currency_Symbol", "Sc"},
  {"Modifier_Symbol", "Sk"}, {"Other_Symbol", "So"}, {"Separator", "Z"},
  {"Space_Separator", "Zs"}, {"Line_Separator", "Zl"}, {"Paragraph_Separator", "Zp"},
  {"Other", "C"}, {"Control", "Cc"}, {"cntrl", "Cc"}, {"Format", "Cf"}, {"Surrogate", "Cs"},
  {"Private_Use", "Co"}, {"Unassigned", "Cn"},
};

static bool name_is(const char *s, size_t n, const char *name) {
  return strlen(name) == n && memcmp(s, name, n) == 0;
}

/* Write \p{...} (at s, the brace's contents [v, v+n)) as PCRE2 reads it. */
static void put_property(buf *out, char p, const char *v, size_t n) {
  buf_printf(out, "\\%c{", p);
  const char *eq = memchr(v, '=', n);
  if (eq) {
    size_t kn = (size_t)(eq - v);
    if (name_is(v, kn, "Script_Extensions") || name_is(v, kn, "scx")) buf_puts(out, "scx:");
    n -= kn + 1;
    v = eq + 1;
  }
  const char *shown = NULL;
  for (size_t i = 0; i < sizeof gc_names / sizeof *gc_names && !shown; i++)
    if (name_is(v, n, gc_names[i][0])) shown = gc_names[i][1];
  if (shown) buf_puts(out, shown);
  else buf_put(out, v, n);
  buf_putc(out, '}');
}

static bool refuse(buf *err, const char *what, const char *s, size_t n, size_t at) {
  if (err) buf_printf(err, "not an ECMA-262 regular expression: %s at offset %zu of /%.*s/", what, at,
                      (int)(n > 200 ? 200 : n), s);
  return false;
}

/* Write the PCRE2 spelling of the ECMA-262 pattern [s, s+n) to out. */
static bool translate(const char *s, size_t n, buf *out, buf *err) {
  bool in_class = false;
  for (size_t i = 0; i < n;) {
    char c = s[i];
    if (c == '\\') {
      if (i + 1 >= n) return refuse(err, "a trailing backslash", s, n, i);
      char d = s[i + 1];
      switch (d) {
        case 's': buf_puts(out, in_class ? ECMA_SPACE : "[" ECMA_SPACE "]"); break;
        case 'S':
          /* inside a class PCRE2's (ASCII) \S stands: see docs/lua-api.md */
          buf_puts(out, in_class ? "\\S" : "[^" ECMA_SPACE "]");
          break;
        case 'v': buf_puts(out, "\\x0b"); break; /* PCRE2: vertical space class */
        case 'c':
          if (i + 2 >= n || !is_alpha(s[i + 2])) return refuse(err, "\\c without a letter", s, n, i);
          buf_put(out, s + i, 3);
          i++;
          break;
        case 'k': case 'p': case 'P': case 'u': {
          /* \k<name>, \p{...}, \u{...}: copied whole, the brace is no quantifier */
          char open = d == 'k' ? '<' : '{', close = d == 'k' ? '>' : '}';
          const char *end = i + 2 < n && s[i + 2] == open ? memchr(s + i + 3, close, n - i - 3) : NULL;
          if (!end) {
            if (d == 'u') { /* \uhhhh */
              buf_put(out, s + i, 2);
              break;
            }
            return refuse(err, d == 'k' ? "\\k without <name>" : "\\p without {property}", s, n, i);
          }
          size_t len = (size_t)(end - (s + i)) + 1;
          if (d == 'p' || d == 'P') put_property(out, d, s + i + 3, len - 4);
          else buf_put(out, s + i, len);
          i += len - 2;
          break;
        }
        case 'd': case 'D': case 'w': case 'W': case 'b': case 'B': case 'f': case 'n': case 'r':
        case 't': case 'x':
          buf_put(out, s + i, 2);
          break;
        default:
          if (is_alpha(d)) return refuse(err, "an escape ECMA-262 does not have", s, n, i);
          buf_put(out, s + i, 2); /* a digit (back reference, \0) or an identity escape */
      }
      i += 2;
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      if (c == '[') buf_puts(out, "\\["); /* PCRE2 would read [:alpha:] */
      else buf_putc(out, c);
      i++;
      continue;
    }
    switch (c) {
      case '[':
        in_class = true;
        buf_putc(out, c);
        i++;
        if (i < n && s[i] == '^') buf_putc(out, s[i++]);
        if (i < n && s[i] == ']') { /* [] and [^]: PCRE2_ALLOW_EMPTY_CLASS */
          buf_putc(out, s[i++]);
          in_class = false;
        }
        continue;
      case '.': buf_puts(out, ECMA_DOT); i++; continue;
      case '(':
        if (i + 1 < n && s[i + 1] == '*') return refuse(err, "a (* verb", s, n, i);
        if (i + 1 < n && s[i + 1] == '?') {
          char e = i + 2 < n ? s[i + 2] : 0, f = i + 3 < n ? s[i + 3] : 0;
          size_t take;
          if (e == ':' || e == '=' || e == '!') take = 3;
          else if (e == '<' && (f == '=' || f == '!')) take = 4;
          else if (e == '<' && (is_alpha(f) || f == '_' || f == '$')) take = 3;
          else return refuse(err, "a (? group ECMA-262 does not have", s, n, i);
          buf_put(out, s + i, take);
          i += take;
          continue;
        }
        break;
      case '*': case '+': case '?': case '}':
        buf_putc(out, c);
        i++;
        if (i < n && s[i] == '?') buf_putc(out, s[i++]); /* lazy */
        else if (i < n && s[i] == '+') return refuse(err, "a possessive quantifier", s, n, i);
        continue;
      default:
        break;
    }
    buf_putc(out, c);
    i++;
  }
  return true;
}

/* Compile [s, s+n): NULL with a message in err when it is not ECMA-262 or
   PCRE2 cannot compile it. */
static pcre2_code *regex_compile(const char *s, size_t n, buf *err) {
  if (n > MAX_PATTERN) {
    if (err) buf_printf(err, "regular expression longer than %d bytes", MAX_PATTERN);
    return NULL;
  }
  buf t;
  buf_init(&t);
  if (!translate(s, n, &t, err)) {
    buf_free(&t);
    return NULL;
  }
  pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
  if (!cc) {
    buf_free(&t);
    if (err) buf_puts(err, "out of memory compiling a regular expression");
    return NULL;
  }
  pcre2_set_compile_extra_options(cc, PCRE2_EXTRA_ALT_BSUX);
  pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
  int code;
  PCRE2_SIZE at;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)(t.p ? t.p : ""), t.len,
                                 PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY |
                                     PCRE2_ALLOW_EMPTY_CLASS | PCRE2_NEVER_BACKSLASH_C,
                                 &code, &at, cc);
  pcre2_compile_context_free(cc);
  buf_free(&t);
  if (!re && err) {
    PCRE2_UCHAR msg[160];
    if (pcre2_get_error_message(code, msg, sizeof msg) < 0) strcpy((char *)msg, "error");
    buf_printf(err, "bad regular expression /%.*s/: %s", (int)(n > 200 ? 200 : n), s, (char *)msg);
  }
  return re;
}

bool schema_regex_valid(const char *src, size_t n, buf *err) {
  pcre2_code *re = regex_compile(src, n, err);
  pcre2_code_free(re);
  return re != NULL;
}

/* }====== */

/* {====== the cache: holder table (weak) -> { [pattern] = userdata | false } */

static const char cache_key = 0, state_key = 0; /* their addresses name them in the registry */

static int regex_gc(lua_State *L) {
  schema_regex *r = lua_touserdata(L, 1);
  pcre2_code_free(r->code);
  r->code = NULL;
  return 0;
}

const schema_regex *schema_regex_get(lua_State *L, int holder, int str, buf *err) {
  holder = lua_absindex(L, holder);
  str = lua_absindex(L, str);
  luaL_checkstack(L, 6, NULL);
  int top = lua_gettop(L);
  luax_push_weak_table(L, &cache_key);
  int cache = lua_gettop(L);
  lua_pushvalue(L, holder);
  if (lua_rawget(L, cache) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, holder);
    lua_pushvalue(L, -2);
    lua_rawset(L, cache);
  }
  int mine = lua_gettop(L);
  lua_pushvalue(L, str);
  int t = lua_rawget(L, mine);
  schema_regex *r = NULL;
  if (t == LUA_TUSERDATA) {
    r = lua_touserdata(L, -1);
  } else if (t == LUA_TNIL) {
    lua_pop(L, 1);
    size_t n;
    const char *src = lua_tolstring(L, str, &n);
    lua_pushvalue(L, str);
    r = lua_newuserdatauv(L, sizeof *r, 0);
    r->code = NULL;
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, regex_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    r->code = regex_compile(src, n, err); /* owned by the userdata from here on */
    if (!r->code) {
      lua_pop(L, 1);
      lua_pushboolean(L, 0);
      r = NULL;
    }
    lua_rawset(L, mine);
  } else if (err) {
    size_t n;
    const char *src = lua_tolstring(L, str, &n);
    pcre2_code_free(regex_compile(src, n, err)); /* again, for the message */
  }
  lua_settop(L, top);
  return r;
}

/* }====== */

/* {====== matching */

typedef struct mstate {
  pcre2_match_data *md;
  pcre2_match_context *mc;
} mstate;

static int mstate_gc(lua_State *L) {
  mstate *m = lua_touserdata(L, 1);
  pcre2_match_data_free(m->md);
  pcre2_match_context_free(m->mc);
  m->md = NULL;
  m->mc = NULL;
  return 0;
}

/* L's match data and context (one ovector pair: we only ask whether it
   matches), made on first use. NULL when out of memory. */
static mstate *state_of(lua_State *L) {
  mstate *m;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &state_key) == LUA_TUSERDATA) {
    m = lua_touserdata(L, -1);
  } else {
    lua_pop(L, 1);
    m = lua_newuserdatauv(L, sizeof *m, 0);
    m->md = NULL;
    m->mc = NULL;
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, mstate_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &state_key);
    m->mc = pcre2_match_context_create(NULL);
    if (m->mc) pcre2_set_heap_limit(m->mc, HEAP_KIB);
  }
  lua_pop(L, 1); /* the registry keeps it */
  if (m->mc && !m->md) m->md = pcre2_match_data_create(1, NULL);
  return m->md && m->mc ? m : NULL;
}

int schema_regex_match(lua_State *L, const schema_regex *re, const char *s, size_t n,
                       unsigned long max_units, double deadline, unsigned long *units) {
  *units = 0;
  if (max_units > SCHEMA_REGEX_MAX_UNITS) max_units = SCHEMA_REGEX_MAX_UNITS;
  luaL_checkstack(L, 2, NULL);
  mstate *m = state_of(L);
  if (!m) return REGEX_LIMIT;
  unsigned long limit = FIRST_UNITS < max_units ? FIRST_UNITS : max_units, spent = 0;
  for (int tries = 0;; tries++) {
    pcre2_set_match_limit(m->mc, (uint32_t)limit);
    pcre2_set_depth_limit(m->mc, (uint32_t)limit);
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, 0, 0, m->md, m->mc);
    spent += limit;
    bool again = rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT;
    if (tries > 0) *units = spent; /* the first, small try is the usual cost: free */
    if (tries > 1 || rc == PCRE2_ERROR_HEAPLIMIT) {
      /* the match data may keep a large frame vector: start afresh */
      pcre2_match_data_free(m->md);
      m->md = NULL;
      if (again && limit < max_units) m->md = pcre2_match_data_create(1, NULL);
    }
    if (!again) {
      if (rc >= 0) return REGEX_YES;
      if (rc == PCRE2_ERROR_NOMATCH || (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21))
        return REGEX_NO; /* or not UTF-8 */
      return REGEX_LIMIT; /* the heap limit, or no memory */
    }
    if (limit >= max_units || !m->md) return REGEX_LIMIT;
    if (deadline > 0 && clock_now() >= deadline) return REGEX_TIME;
    limit = max_units / UNITS_FACTOR < limit ? max_units : limit * UNITS_FACTOR;
  }
}

/* }====== */
