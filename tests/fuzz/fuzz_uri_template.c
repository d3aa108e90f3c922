/* fuzz_uri_template.c — the URI template matcher (core/base/uri_template.c)
 * against a reference written from uri_template.h's rule alone (literals
 * exact; a variable takes 1+ bytes other than '/'; from the left, each
 * variable the longest value that lets the rest match), by memoised
 * recursion rather than the core's table. Input: the template, a newline,
 * the URI (any bytes). Checked: the same verdict (and BAD_TEMPLATE exactly
 * when uri_template_count says -1), the same values, and that
 * uri_template_decode of each value is no longer than it, with NUL bytes
 * reported. */
#include "fuzz.h"
#include "uri_template.h"

#define MAX_TOK 64
#define MAX_URI 256

typedef struct {
  const char *p;
  size_t len;
  bool var;
} tok;

static tok toks[MAX_TOK];
static int ntok;
static const char *uri;
static size_t n;
static signed char memo[MAX_TOK + 1][MAX_URI + 1]; /* -1 unknown */

/* Tokens the way RFC 6570 level 1 reads them; false when malformed (an
   unclosed or empty {}, a '{' inside a name) or too many. */
static bool tokens(const char *t) {
  ntok = 0;
  while (*t) {
    if (ntok == MAX_TOK) return false;
    if (*t == '{') {
      const char *close = t + 1;
      while (*close && *close != '}' && *close != '{') close++;
      if (*close != '}' || close == t + 1) return false;
      toks[ntok++] = (tok){t + 1, (size_t)(close - t - 1), true};
      t = close + 1;
    } else {
      const char *q = t;
      while (*q && *q != '{') q++;
      toks[ntok++] = (tok){t, (size_t)(q - t), false};
      t = q;
    }
  }
  return true;
}

/* Do tokens i.. match uri[j..n)? */
static bool rest(int i, size_t j) {
  if (i == ntok) return j == n;
  if (memo[i][j] >= 0) return memo[i][j];
  bool ok = false;
  if (!toks[i].var) {
    ok = n - j >= toks[i].len && memcmp(uri + j, toks[i].p, toks[i].len) == 0 &&
         rest(i + 1, j + toks[i].len);
  } else {
    for (size_t e = j + 1; e <= n && uri[e - 1] != '/' && !ok; e++) ok = rest(i + 1, e);
  }
  memo[i][j] = ok;
  return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *p = data, *end = data + size, *tp;
  size_t tn = fuzz_part(&p, end, '\n', &tp);
  if (memchr(tp, '\0', tn)) return 0; /* templates are C strings */
  char *tpl = fuzz_strndup(tp, tn);
  n = (size_t)(end - p);
  char *u = malloc(n ? n : 1); /* exactly the URI's bytes: ASan sees any overread */
  memcpy(u, p, n);
  uri = u;
  int count = uri_template_count(tpl);
  bool well_formed = tokens(tpl);
  uri_template_var vars[MAX_TOK];
  if (count < 0) {
    FUZZ_CHECK(!well_formed || ntok == MAX_TOK);
    FUZZ_CHECK(uri_template_match(tpl, uri, n, vars, 0) ==
               (n > URI_TEMPLATE_MAX_URI ? URI_TEMPLATE_TOO_LONG : URI_TEMPLATE_BAD_TEMPLATE));
  } else if (well_formed && n <= MAX_URI) {
    int nv = 0;
    for (int i = 0; i < ntok; i++) nv += toks[i].var;
    FUZZ_CHECK(nv == count);
    /* the wrong number of variables is refused */
    FUZZ_CHECK(uri_template_match(tpl, uri, n, vars, (size_t)count + 1) ==
               URI_TEMPLATE_BAD_TEMPLATE);
    memset(memo, -1, sizeof memo);
    bool want = rest(0, 0);
    uri_template_result r = uri_template_match(tpl, uri, n, vars, (size_t)count);
    FUZZ_CHECK(r == (want ? URI_TEMPLATE_MATCH : URI_TEMPLATE_NO_MATCH));
    if (want) {
      size_t j = 0;
      int v = 0;
      for (int i = 0; i < ntok; i++) {
        if (!toks[i].var) {
          j += toks[i].len;
          continue;
        }
        size_t best = 0;
        for (size_t e = j + 1; e <= n && uri[e - 1] != '/'; e++)
          if (rest(i + 1, e)) best = e;
        FUZZ_CHECK(best > j);
        FUZZ_CHECK(vars[v].name == toks[i].p && vars[v].name_len == toks[i].len);
        FUZZ_CHECK(vars[v].value == uri + j && vars[v].value_len == best - j);
        char out[MAX_URI];
        size_t m = uri_template_decode(vars[v].value, vars[v].value_len, out);
        bool has_nul = memchr(vars[v].value, '\0', vars[v].value_len) != NULL;
        if (has_nul) FUZZ_CHECK(m == (size_t)-1);
        if (m != (size_t)-1) FUZZ_CHECK(m <= vars[v].value_len && !memchr(out, '\0', m));
        v++;
        j = best;
      }
      FUZZ_CHECK(j == n);
    }
  }
  free(u);
  free(tpl);
  return 0;
}
