/* lua_pattern.c — string.find/match/gmatch/gsub with Lua 5.4's semantics
 * and a step count that lets an interrupt check end them (lua_pattern.h).
 *
 * The matcher is a backtracking interpreter of the pattern text, like
 * lstrlib.c's: it has to be, for the results and the errors to be the same
 * (errors are found lazily, where the match gets to; the recursion depth,
 * which "pattern too complex" bounds, depends on where it recurses). What
 * it adds is `budget`, the steps left before the next check: decremented
 * per pattern item tried, per character a repetition or %b scans, and in
 * proportion to the bytes of sets, back-references and gsub's output. */
#include "lua_pattern.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#define ESC '%'
#define MAX_DEPTH 200 /* Lua's MAXCCALLS: the matcher's recursion */
#ifndef LUA_MAXCAPTURES
#define LUA_MAXCAPTURES 32 /* lstrlib.c's default, and Debian's */
#endif
#define CAP_OPEN (-1) /* a capture whose ')' the match has not reached */
#define CAP_POS (-2)  /* a position capture, () */

#define uc(c) ((unsigned char)(c))

/* The interrupt check, shared by the four functions as their upvalue. */
typedef struct hold {
  lua_pattern_interrupt check;
} hold;

typedef struct mstate {
  const char *subj;     /* the subject */
  const char *subj_end; /* its end; a '\0' is there, as in every Lua string */
  const char *pat_end;  /* the pattern's end (a '\0' too) */
  lua_State *L;
  lua_pattern_interrupt check;
  int check_unread; /* check is still in upvalue 1 of the running function */
  ptrdiff_t budget; /* steps left before the next check */
  int depth;        /* recursion left */
  int level;        /* captures, open or closed */
  struct {
    const char *at;
    ptrdiff_t len; /* or CAP_OPEN, CAP_POS */
  } cap[LUA_MAXCAPTURES];
} mstate;

/* {====================================================== the budget */

static lua_pattern_interrupt check_of(lua_State *L) {
  const hold *h = lua_touserdata(L, lua_upvalueindex(1));
  return h ? h->check : NULL;
}

/* Out of steps: refill, and ask whether the call may go on. */
static void pattern_checkpoint(mstate *ms) __attribute__((noinline, cold));
static void pattern_checkpoint(mstate *ms) {
  ms->budget = PATTERN_CHECK_EVERY;
  if (ms->check_unread) { /* fetched only now: most calls never get here */
    ms->check = check_of(ms->L);
    ms->check_unread = 0;
  }
  if (ms->check) {
    const char *why = ms->check(ms->L);
    if (why) luaL_error(ms->L, "%s", why);
  }
}

static inline void spend(mstate *ms, ptrdiff_t steps) {
  if ((ms->budget -= steps) < 0) pattern_checkpoint(ms);
}

/* What testing one character against the item p..ep costs: sets are read
   byte by byte. */
static inline ptrdiff_t item_cost(const char *p, const char *ep) { return 1 + ((ep - p) >> 4); }

/* }====================================================== */

/* {====================================================== one item */

/* Where the single-character class at p ends (its suffix, if any, is
   there). */
static const char *item_end(mstate *ms, const char *p) {
  switch (*p++) {
    case ESC:
      if (p == ms->pat_end) luaL_error(ms->L, "malformed pattern (ends with '%%')");
      return p + 1;
    case '[':
      if (*p == '^') p++;
      do { /* the first character is a member even if it is ']' */
        if (p == ms->pat_end) luaL_error(ms->L, "malformed pattern (missing ']')");
        if (*p++ == ESC && p < ms->pat_end) p++; /* %] and the like */
      } while (*p != ']');
      return p + 1;
    default:
      return p;
  }
}

/* Is c in the class %cl (an upper-case letter: its complement; not a class
   letter: cl itself)? */
static int class_has(int c, int cl) {
  int r;
  switch (tolower(cl)) {
    case 'a': r = isalpha(c); break;
    case 'c': r = iscntrl(c); break;
    case 'd': r = isdigit(c); break;
    case 'g': r = isgraph(c); break;
    case 'l': r = islower(c); break;
    case 'p': r = ispunct(c); break;
    case 's': r = isspace(c); break;
    case 'u': r = isupper(c); break;
    case 'w': r = isalnum(c); break;
    case 'x': r = isxdigit(c); break;
    case 'z': r = (c == 0); break; /* deprecated, still accepted */
    default: return cl == c;
  }
  return islower(cl) ? r : !r;
}

/* Is c in the set p..last (p at its '[', last at its ']')? */
static int set_has(int c, const char *p, const char *last) {
  int in = 1;
  if (p[1] == '^') {
    in = 0;
    p++;
  }
  while (++p < last) {
    if (*p == ESC) {
      p++;
      if (class_has(c, uc(*p))) return in;
    } else if (p[1] == '-' && p + 2 < last) { /* a range */
      p += 2;
      if (uc(p[-2]) <= c && c <= uc(*p)) return in;
    } else if (uc(*p) == c) {
      return in;
    }
  }
  return !in;
}

/* How many of the n characters from s, in a row, match the item p..ep
   (want 1) or miss it (want 0). The class is looked at once, not per
   character: this is where repetitions, and the search for where a match
   can start, spend their time. */
#define RUN_WHILE(cond)                       \
  do {                                        \
    while (i < n && (cond) == want) i++;      \
    return i;                                 \
  } while (0)
#define RUN_CLASS(is) RUN_WHILE((!is(uc(s[i]))) == neg)

static inline __attribute__((always_inline)) ptrdiff_t run_of(const char *s, ptrdiff_t n,
                                                              const char *p, const char *ep,
                                                              int want) {
  ptrdiff_t i = 0;
  switch (*p) {
    case '.':
      return want ? n : 0;
    case '[':
      RUN_WHILE(set_has(uc(s[i]), p, ep - 1));
    case ESC: {
      int cl = uc(p[1]), neg = !islower(cl);
      switch (tolower(cl)) {
        case 'a': RUN_CLASS(isalpha);
        case 'c': RUN_CLASS(iscntrl);
        case 'd': RUN_CLASS(isdigit);
        case 'g': RUN_CLASS(isgraph);
        case 'l': RUN_CLASS(islower);
        case 'p': RUN_CLASS(ispunct);
        case 's': RUN_CLASS(isspace);
        case 'u': RUN_CLASS(isupper);
        case 'w': RUN_CLASS(isalnum);
        case 'x': RUN_CLASS(isxdigit);
        case 'z': RUN_WHILE((s[i] == 0) != neg);
        default: RUN_WHILE(uc(s[i]) == cl);
      }
    }
    default: {
      int c = uc(*p);
      if (!want) {
        const char *at = memchr(s, c, (size_t)n);
        return at ? at - s : n;
      }
      RUN_WHILE(uc(s[i]) == c);
    }
  }
}

/* run_of from s to the subject's end, counted, in pieces of what the
   budget allows (a check between them). A literal's misses are a memchr:
   a step per 16 bytes. */
static ptrdiff_t count_run(mstate *ms, const char *s, const char *p, const char *ep, int want) {
  int literal = *p != '.' && *p != '[' && *p != ESC;
  ptrdiff_t cost16 = (literal && !want) ? 1 : 16 * item_cost(p, ep); /* per 16 characters */
  ptrdiff_t i = 0, left = ms->subj_end - s;
  for (;;) {
    /* the budget may be below 0 here (match() takes some steps unchecked):
       the piece is never negative */
    ptrdiff_t piece = (ms->budget > 0 ? ms->budget : 0) * 16 / cost16 + 1;
    if (piece > left - i) piece = left - i;
    ptrdiff_t got = want ? run_of(s + i, piece, p, ep, 1) : run_of(s + i, piece, p, ep, 0);
    i += got;
    spend(ms, (got * cost16) >> 4);
    if (got < piece || i == left) return i;
  }
}

/* Does the character at s match the item p..ep? */
static inline int item_has(const mstate *ms, const char *s, const char *p, const char *ep) {
  if (s >= ms->subj_end) return 0;
  int c = uc(*s);
  switch (*p) {
    case '.': return 1;
    case ESC: return class_has(c, uc(p[1]));
    case '[': return set_has(c, p, ep - 1);
    default: return uc(*p) == c;
  }
}

/* }====================================================== */

/* {====================================================== the matcher */

static const char *match(mstate *ms, const char *s, const char *p);

/* %bxy at s (p points at x) */
static const char *balanced(mstate *ms, const char *s, const char *p) {
  if (p >= ms->pat_end - 1) luaL_error(ms->L, "malformed pattern (missing arguments to '%%b')");
  if (*s != *p) return NULL;
  int open = *p, close = p[1], nest = 1;
  while (++s < ms->subj_end) {
    spend(ms, 1);
    if (*s == close) {
      if (--nest == 0) return s + 1;
    } else if (*s == open) {
      nest++;
    }
  }
  return NULL; /* the subject ends unbalanced */
}

/* item* (greedy): the longest run first, then shorter ones */
static const char *longest(mstate *ms, const char *s, const char *p, const char *ep) {
  /* '.' takes everything: no need to look */
  ptrdiff_t i = *p == '.' ? ms->subj_end - s : count_run(ms, s, p, ep, 1);
  for (; i >= 0; i--) {
    const char *r = match(ms, s + i, ep + 1);
    if (r) return r;
  }
  return NULL;
}

/* item- (lazy): the shortest run first, then longer ones */
static const char *shortest(mstate *ms, const char *s, const char *p, const char *ep) {
  ptrdiff_t extra = item_cost(p, ep) - 1; /* match() counts the 1 */
  for (;;) {
    const char *r = match(ms, s, ep + 1);
    if (r) return r;
    if (!item_has(ms, s, p, ep)) return NULL;
    s++;
    ms->budget -= extra;
  }
}

static const char *open_capture(mstate *ms, const char *s, const char *p, ptrdiff_t what) {
  int l = ms->level;
  if (l >= LUA_MAXCAPTURES) luaL_error(ms->L, "too many captures");
  ms->cap[l].at = s;
  ms->cap[l].len = what;
  ms->level = l + 1;
  const char *r = match(ms, s, p);
  if (!r) ms->level--; /* undo it */
  return r;
}

static const char *close_capture(mstate *ms, const char *s, const char *p) {
  int l = ms->level - 1;
  while (l >= 0 && ms->cap[l].len != CAP_OPEN) l--;
  if (l < 0) luaL_error(ms->L, "invalid pattern capture");
  ms->cap[l].len = s - ms->cap[l].at;
  const char *r = match(ms, s, p);
  if (!r) ms->cap[l].len = CAP_OPEN; /* undo it */
  return r;
}

/* %1-%9 in a pattern: the text of that capture again */
static const char *back_reference(mstate *ms, const char *s, int digit) {
  int l = digit - '1';
  if (l < 0 || l >= ms->level || ms->cap[l].len == CAP_OPEN)
    luaL_error(ms->L, "invalid capture index %%%d", l + 1);
  size_t len = (size_t)ms->cap[l].len; /* a position capture: huge, fails */
  if ((size_t)(ms->subj_end - s) < len) return NULL;
  spend(ms, (ptrdiff_t)(len >> 5));
  return memcmp(ms->cap[l].at, s, len) == 0 ? s + len : NULL;
}

/* Match the pattern from p against the subject from s: where the match
   ends, or NULL. Tail positions loop instead of recursing; the recursion
   points are Lua's (captures, repetitions, '?'). */
static const char *match(mstate *ms, const char *s, const char *p) {
  if (ms->depth-- == 0) luaL_error(ms->L, "pattern too complex");
next:
  if (--ms->budget < 0) pattern_checkpoint(ms);
  if (p == ms->pat_end) goto done;
  switch (*p) {
    case '(':
      if (p[1] == ')') s = open_capture(ms, s, p + 2, CAP_POS);
      else s = open_capture(ms, s, p + 1, CAP_OPEN);
      goto done;
    case ')':
      s = close_capture(ms, s, p + 1);
      goto done;
    case '$':
      if (p + 1 != ms->pat_end) goto item; /* a '$' not at the end is itself */
      if (s != ms->subj_end) s = NULL;
      goto done;
    case ESC:
      switch (p[1]) {
        case 'b':
          s = balanced(ms, s, p + 2);
          if (!s) goto done;
          p += 4;
          goto next;
        case 'f': {
          p += 2;
          if (*p != '[') luaL_error(ms->L, "missing '[' after '%%f' in pattern");
          const char *ep = item_end(ms, p);
          int before = (s == ms->subj) ? '\0' : s[-1];
          ms->budget -= (ep - p) >> 3;
          if (!set_has(uc(before), p, ep - 1) && set_has(uc(*s), p, ep - 1)) {
            p = ep;
            goto next;
          }
          s = NULL;
          goto done;
        }
        case '0': case '1': case '2': case '3': case '4':
        case '5': case '6': case '7': case '8': case '9':
          s = back_reference(ms, s, uc(p[1]));
          if (!s) goto done;
          p += 2;
          goto next;
        default:
          goto item;
      }
    default:
    item: {
      const char *ep = item_end(ms, p); /* at the suffix, if any */
      ms->budget -= (ep - p) >> 4;
      if (!item_has(ms, s, p, ep)) {
        if (*ep == '*' || *ep == '?' || *ep == '-') { /* none is fine */
          p = ep + 1;
          goto next;
        }
        s = NULL; /* '+' or no suffix */
        goto done;
      }
      switch (*ep) {
        case '?': {
          const char *r = match(ms, s + 1, ep + 1);
          if (r) {
            s = r;
            goto done;
          }
          p = ep + 1;
          goto next;
        }
        case '+': s = longest(ms, s + 1, p, ep); goto done;
        case '*': s = longest(ms, s, p, ep); goto done;
        case '-': s = shortest(ms, s, p, ep); goto done;
        default:
          s++;
          p = ep;
          goto next;
      }
    }
  }
done:
  ms->depth++;
  return s;
}

/* }====================================================== */

/* {====================================================== captures out */

/* Capture i of the match s..e: its length and text (*cap), or CAP_POS with
   the position pushed. Without captures, "capture 0" is the whole match. */
static ptrdiff_t get_capture(mstate *ms, int i, const char *s, const char *e, const char **cap) {
  if (i >= ms->level) {
    if (i != 0) luaL_error(ms->L, "invalid capture index %%%d", i + 1);
    *cap = s;
    return e - s;
  }
  ptrdiff_t len = ms->cap[i].len;
  *cap = ms->cap[i].at;
  if (len == CAP_OPEN) luaL_error(ms->L, "unfinished capture");
  else if (len == CAP_POS) lua_pushinteger(ms->L, (lua_Integer)(ms->cap[i].at - ms->subj) + 1);
  return len;
}

static void push_capture(mstate *ms, int i, const char *s, const char *e) {
  const char *cap;
  ptrdiff_t len = get_capture(ms, i, s, e, &cap);
  if (len != CAP_POS) lua_pushlstring(ms->L, cap, (size_t)len);
}

/* All captures (s NULL: none stands for the whole match, as find wants). */
static int push_captures(mstate *ms, const char *s, const char *e) {
  int n = (ms->level == 0 && s) ? 1 : ms->level;
  luaL_checkstack(ms->L, n, "too many captures");
  for (int i = 0; i < n; i++) push_capture(ms, i, s, e);
  return n;
}

/* }====================================================== */

/* {====================================================== the functions */

/* check: the interrupt check, or, for the functions that have it as
   their upvalue 1, NULL: read when first needed */
static void prepare(mstate *ms, lua_State *L, const char *s, size_t ls, const char *p, size_t lp,
                    lua_pattern_interrupt check) {
  ms->L = L;
  ms->subj = s;
  ms->subj_end = s + ls;
  ms->pat_end = p + lp;
  ms->check = check;
  ms->check_unread = !check;
  ms->budget = PATTERN_CHECK_EVERY;
}

/* before each attempt */
static inline void restart(mstate *ms) {
  ms->level = 0;
  ms->depth = MAX_DEPTH;
}

/* A 1-based, possibly negative, start position as Lua's string functions
   read it. */
static size_t start_of(lua_Integer pos, size_t len) {
  if (pos > 0) return (size_t)pos;
  if (pos == 0) return 1;
  if (pos < -(lua_Integer)len) return 1;
  return len + (size_t)pos + 1;
}

static int has_specials(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    switch (p[i]) {
      case '^': case '$': case '*': case '+': case '?':
      case '.': case '(': case '[': case '%': case '-':
        return 1;
      default:
        break;
    }
  }
  return 0;
}

/* Must every match begin with one character of p's first item (no '*',
   '?' or '-' after it; not '.', which takes any)? Then the loops that try
   each start position skip the positions where it fails, which match()
   would reject at once: the same results, faster. Called only after a
   first match() read that item (so item_end raises nothing new); *ep: the
   item's end. */
static int must_begin(mstate *ms, const char *p, const char **ep) {
  if (p == ms->pat_end) return 0;
  switch (*p) {
    case '(': case ')': case '.':
      return 0;
    case '$':
      if (p + 1 == ms->pat_end) return 0;
      break;
    case ESC:
      if (p[1] == 'b' || p[1] == 'f' || (p[1] >= '0' && p[1] <= '9')) return 0;
      break;
    default:
      break;
  }
  *ep = item_end(ms, p);
  return **ep != '*' && **ep != '?' && **ep != '-';
}

/* The first p (lp bytes) in s (ls bytes), as Lua does it (memchr for the
   first byte, memcmp for the rest), each failed try counted. */
static const char *plain_find(mstate *ms, const char *s, size_t ls, const char *p, size_t lp) {
  if (lp == 0) return s;
  if (lp > ls) return NULL;
  const char *end = s + (ls - lp) + 1; /* where a match can no longer start */
  ptrdiff_t cost = 1 + (ptrdiff_t)(lp >> 5);
  while (s < end && (s = memchr(s, p[0], (size_t)(end - s))) != NULL) {
    if (memcmp(s + 1, p + 1, lp - 1) == 0) return s;
    s++;
    spend(ms, cost);
  }
  return NULL;
}

static int find_or_match(lua_State *L, int find) {
  size_t ls, lp;
  const char *s = luaL_checklstring(L, 1, &ls);
  const char *p = luaL_checklstring(L, 2, &lp);
  size_t init = start_of(luaL_optinteger(L, 3, 1), ls) - 1;
  if (init > ls) { /* starts after the end: nothing to find */
    luaL_pushfail(L);
    return 1;
  }
  if (find && (lua_toboolean(L, 4) || !has_specials(p, lp))) { /* a plain search */
    mstate ms;
    prepare(&ms, L, s, ls, p, lp, NULL);
    const char *at = plain_find(&ms, s + init, ls - init, p, lp);
    if (at) {
      lua_pushinteger(L, (lua_Integer)(at - s) + 1);
      lua_pushinteger(L, (lua_Integer)(at - s) + (lua_Integer)lp);
      return 2;
    }
  } else {
    mstate ms;
    const char *from = s + init;
    int anchor = (*p == '^');
    if (anchor) {
      p++;
      lp--;
    }
    prepare(&ms, L, s, ls, p, lp, NULL);
    int skip = -1; /* must_begin's answer, once asked */
    const char *first_end = NULL;
    for (;;) {
      restart(&ms);
      const char *e = match(&ms, from, p);
      if (e) {
        if (!find) return push_captures(&ms, from, e);
        lua_pushinteger(L, (lua_Integer)(from - s) + 1);
        lua_pushinteger(L, (lua_Integer)(e - s));
        return push_captures(&ms, NULL, NULL) + 2;
      }
      if (anchor || from == ms.subj_end) break;
      from++;
      if (skip < 0) skip = must_begin(&ms, p, &first_end);
      if (skip) {
        from += count_run(&ms, from, p, first_end, 0);
        if (from == ms.subj_end) break; /* the item cannot match there either */
      }
    }
  }
  luaL_pushfail(L);
  return 1;
}

static int str_find(lua_State *L) { return find_or_match(L, 1); }
static int str_match(lua_State *L) { return find_or_match(L, 0); }

typedef struct gmatch_state {
  const char *src;  /* where the next search starts */
  const char *p;    /* the pattern */
  const char *last; /* where the last match ended: no empty match there */
  mstate ms;
} gmatch_state;

static int gmatch_next(lua_State *L) {
  gmatch_state *gm = lua_touserdata(L, lua_upvalueindex(3));
  gm->ms.L = L; /* the loop may run on another coroutine */
  gm->ms.budget = PATTERN_CHECK_EVERY;
  int skip = -1; /* as in find_or_match */
  const char *first_end = NULL;
  for (const char *src = gm->src; src <= gm->ms.subj_end; src++) {
    restart(&gm->ms);
    const char *e = match(&gm->ms, src, gm->p);
    if (e && e != gm->last) {
      gm->src = gm->last = e;
      return push_captures(&gm->ms, src, e);
    }
    if (skip < 0) skip = must_begin(&gm->ms, gm->p, &first_end);
    if (skip && src < gm->ms.subj_end) src += count_run(&gm->ms, src + 1, gm->p, first_end, 0);
  }
  return 0;
}

static int str_gmatch(lua_State *L) {
  size_t ls, lp;
  const char *s = luaL_checklstring(L, 1, &ls);
  const char *p = luaL_checklstring(L, 2, &lp);
  size_t init = start_of(luaL_optinteger(L, 3, 1), ls) - 1;
  lua_pattern_interrupt check = check_of(L);
  lua_settop(L, 2); /* the closure keeps both strings alive */
  gmatch_state *gm = lua_newuserdatauv(L, sizeof *gm, 0);
  if (init > ls) init = ls + 1; /* past the end: no 's + init' overflow */
  prepare(&gm->ms, L, s, ls, p, lp, check);
  gm->ms.check_unread = 0; /* the iterator's upvalues are others */
  gm->src = s + init;
  gm->p = p;
  gm->last = NULL;
  lua_pushcclosure(L, gmatch_next, 3);
  return 1;
}

/* gsub's replacement string, with %0-%9 and %% */
static void add_string(mstate *ms, luaL_Buffer *b, const char *s, const char *e) {
  lua_State *L = ms->L;
  size_t l;
  const char *r = lua_tolstring(L, 3, &l);
  const char *p;
  while ((p = memchr(r, ESC, l)) != NULL) {
    luaL_addlstring(b, r, (size_t)(p - r));
    p++; /* the character after the '%': a '\0' ends every Lua string */
    if (*p == ESC) {
      luaL_addchar(b, *p);
    } else if (*p == '0') {
      luaL_addlstring(b, s, (size_t)(e - s));
    } else if (isdigit(uc(*p))) {
      const char *cap;
      ptrdiff_t len = get_capture(ms, *p - '1', s, e, &cap);
      if (len == CAP_POS) luaL_addvalue(b); /* the position get_capture pushed */
      else luaL_addlstring(b, cap, (size_t)len);
    } else {
      luaL_error(L, "invalid use of '%c' in replacement string", ESC);
    }
    l -= (size_t)(p + 1 - r);
    r = p + 1;
  }
  luaL_addlstring(b, r, l);
}

/* Add the replacement of the match s..e to b; whether anything changed
   (a function or table giving nil or false keeps the original text). */
static int add_value(mstate *ms, luaL_Buffer *b, const char *s, const char *e, int tr) {
  lua_State *L = ms->L;
  switch (tr) {
    case LUA_TFUNCTION: {
      lua_pushvalue(L, 3);
      int n = push_captures(ms, s, e);
      lua_call(L, n, 1);
      break;
    }
    case LUA_TTABLE:
      push_capture(ms, 0, s, e); /* the first capture is the key */
      lua_gettable(L, 3);
      break;
    default: /* a string or a number */
      add_string(ms, b, s, e);
      return 1;
  }
  if (!lua_toboolean(L, -1)) {
    lua_pop(L, 1);
    luaL_addlstring(b, s, (size_t)(e - s));
    return 0;
  }
  if (!lua_isstring(L, -1))
    return luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
  luaL_addvalue(b);
  return 1;
}

static int str_gsub(lua_State *L) {
  size_t ls, lp;
  const char *src = luaL_checklstring(L, 1, &ls);
  const char *p = luaL_checklstring(L, 2, &lp);
  const char *last = NULL;
  int tr = lua_type(L, 3);
  lua_Integer max = luaL_optinteger(L, 4, (lua_Integer)ls + 1);
  int anchor = (*p == '^');
  lua_Integer n = 0;
  int changed = 0;
  mstate ms;
  luaL_Buffer b;
  luaL_argexpected(L, tr == LUA_TNUMBER || tr == LUA_TSTRING || tr == LUA_TFUNCTION ||
                          tr == LUA_TTABLE, 3, "string/function/table");
  luaL_buffinit(L, &b);
  if (anchor) {
    p++;
    lp--;
  }
  prepare(&ms, L, src, ls, p, lp, NULL);
  int skip = -1; /* as in find_or_match */
  const char *first_end = NULL;
  while (n < max) {
    restart(&ms);
    const char *e = match(&ms, src, p);
    if (e && e != last) {
      size_t before = luaL_bufflen(&b);
      n++;
      changed = add_value(&ms, &b, src, e, tr) | changed;
      src = last = e;
      spend(&ms, (ptrdiff_t)((luaL_bufflen(&b) - before) >> 6)); /* the output's bytes */
    } else if (src < ms.subj_end) {
      luaL_addchar(&b, *src++);
      if (skip < 0 && !anchor) skip = must_begin(&ms, p, &first_end);
      if (skip > 0) { /* copy what cannot begin a match as it is */
        ptrdiff_t k = count_run(&ms, src, p, first_end, 0);
        luaL_addlstring(&b, src, (size_t)k);
        src += k;
      }
    } else {
      break;
    }
    if (anchor) break;
  }
  if (!changed) {
    lua_pushvalue(L, 1); /* the subject itself */
  } else {
    luaL_addlstring(&b, src, (size_t)(ms.subj_end - src));
    luaL_pushresult(&b);
  }
  lua_pushinteger(L, n);
  return 2;
}

/* }====================================================== */

void lua_pattern_install(lua_State *L, lua_pattern_interrupt check) {
  static const luaL_Reg fns[] = {
      {"find", str_find}, {"match", str_match}, {"gmatch", str_gmatch}, {"gsub", str_gsub},
      {NULL, NULL}};
  luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 0); /* the loaded one, or loads it */
  hold *h = lua_newuserdatauv(L, sizeof *h, 0);
  h->check = check;
  luaL_setfuncs(L, fns, 1);
  lua_pop(L, 1);
}
