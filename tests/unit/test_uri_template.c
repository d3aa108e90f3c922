/* test_uri_template.c — core/base/uri_template.c: fixed cases (backtracking,
 * adjacent variables, the length cap, decoding), then random templates x
 * URIs against two references: glibc's POSIX regexec on the template made
 * a regular expression (each {var} is ([^/]+), POSIX's subexpression rule
 * is the split rule uri_template.h states) and a plain backtracking matcher
 * that tries the longest value first. Last, the worst case for backtracking
 * (many adjacent variables, a long URI that fails at its end) timed. */
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "uri_template.h"

#define MAXV 16

/* match and render "name=value;..." (values decoded, NUL shown as \0) */
static const char *m(const char *tpl, const char *uri) {
  static char out[4096];
  uri_template_var v[MAXV];
  int k = uri_template_count(tpl);
  if (k < 0 || k > MAXV) return "bad";
  uri_template_result r = uri_template_match(tpl, uri, strlen(uri), v, (size_t)k);
  if (r == URI_TEMPLATE_NO_MATCH) return "no";
  if (r == URI_TEMPLATE_TOO_LONG) return "too long";
  if (r != URI_TEMPLATE_MATCH) return "bad";
  size_t o = 0;
  for (int i = 0; i < k; i++) {
    char d[1024];
    size_t n = uri_template_decode(v[i].value, v[i].value_len, d);
    o += (size_t)snprintf(out + o, sizeof out - o, "%s%.*s=%.*s", i ? ";" : "", (int)v[i].name_len,
                          v[i].name, n == (size_t)-1 ? 2 : (int)n, n == (size_t)-1 ? "\\0" : d);
  }
  return out;
}

static void fixed(void) {
  /* backtracking: the literal after a variable may also be inside it */
  CHECK_STR(m("{name}.txt", "a.txt.txt"), "name=a.txt");
  CHECK_STR(m("{name}.txt", "a.txt"), "name=a");
  CHECK_STR(m("{name}.txt", ".txt"), "no");
  CHECK_STR(m("{name}.txt", "a.txt.tx"), "no");
  CHECK_STR(m("file:///{dir}/{name}.txt", "file:///d/x.txt.txt"), "dir=d;name=x.txt");
  CHECK_STR(m("{a}.{b}", "x.y.z"), "a=x.y;b=z"); /* the leftmost takes the longest */
  CHECK_STR(m("{a}-{b}-{c}", "1-2-3-4-5"), "a=1-2-3;b=4;c=5");
  /* adjacent variables */
  CHECK_STR(m("{a}{b}", "xyz"), "a=xy;b=z");
  CHECK_STR(m("{a}{b}", "x"), "no");
  CHECK_STR(m("{a}{b}{c}", "xyz"), "a=x;b=y;c=z");
  CHECK_STR(m("{a}{b}/{c}", "xy/z"), "a=x;b=y;c=z");
  /* a variable never takes '/', but takes an encoded one */
  CHECK_STR(m("mcp://test/notes/{folder}/{name}", "mcp://test/notes/work/todo"), "folder=work;name=todo");
  CHECK_STR(m("mcp://test/notes/{folder}/{name}", "mcp://test/notes/a/b/c"), "no");
  CHECK_STR(m("mcp://test/notes/{folder}/{name}", "mcp://test/notes/only-one"), "no");
  CHECK_STR(m("mcp://test/notes/{folder}/{name}", "mcp://test/notes//x"), "no");
  CHECK_STR(m("file:///{path}", "file:///..%2F..%2Fetc%2Fpasswd"), "path=../../etc/passwd");
  CHECK_STR(m("x/{a}", "x/%7Bb%7D{c}"), "a={b}{c}");
  CHECK_STR(m("x/{a}", "x/"), "no");
  CHECK_STR(m("x/{a}", "y/z"), "no");
  CHECK_STR(m("{a}", ""), "no");
  /* decoding: %XX only; lone '%' stays; NUL reported */
  CHECK_STR(m("{a}", "%41%2f%zz%4"), "a=A/%zz%4");
  CHECK_STR(m("{a}", "100%"), "a=100%");
  CHECK_STR(m("{a}", "a%00.txt"), "a=\\0");
  /* an exact literal, bytes as they are */
  CHECK_STR(m("a%2F{b}", "a%2Fc"), "b=c");
  CHECK_STR(m("a%2F{b}", "a/c"), "no");
  /* not level-1 templates */
  CHECK(uri_template_count("x/{a") == -1);
  CHECK(uri_template_count("x/{}") == -1);
  CHECK(uri_template_count("x/{a{b}") == -1);
  CHECK(uri_template_count("x/{a}/{b}") == 2);
  CHECK(uri_template_count("plain") == 0);
  uri_template_var v[2];
  CHECK(uri_template_match("x/{a", "x/b", 3, v, 1) == URI_TEMPLATE_BAD_TEMPLATE);
  CHECK(uri_template_match("x/{a}", "x/b", 3, v, 2) == URI_TEMPLATE_BAD_TEMPLATE);

  /* the length cap: URI_TEMPLATE_MAX_URI bytes match, one more does not */
  char *big = malloc(URI_TEMPLATE_MAX_URI + 2);
  memset(big, 'a', URI_TEMPLATE_MAX_URI + 1);
  big[URI_TEMPLATE_MAX_URI + 1] = '\0';
  CHECK(uri_template_match("{a}", big, URI_TEMPLATE_MAX_URI, v, 1) == URI_TEMPLATE_MATCH);
  CHECK(v[0].value_len == URI_TEMPLATE_MAX_URI);
  CHECK(uri_template_match("{a}", big, URI_TEMPLATE_MAX_URI + 1, v, 1) == URI_TEMPLATE_TOO_LONG);
  free(big);

  /* any byte in the URI: a NUL is a character like another */
  CHECK(uri_template_match("{a}.txt", "x\0y.txt", 7, v, 1) == URI_TEMPLATE_MATCH && v[0].value_len == 3);
}

/* {====== the references */

typedef struct tok {
  char lit[8];
  bool var;
} tok;

/* backtracking, longest value first: the first success is the split */
static bool bt(const tok *t, int k, const char *u, size_t n, size_t j, size_t *ends) {
  if (k == 0) return j == n;
  if (!t->var) {
    size_t len = strlen(t->lit);
    return j + len <= n && memcmp(u + j, t->lit, len) == 0 && bt(t + 1, k - 1, u, n, j + len, ends);
  }
  size_t s = j;
  while (s < n && u[s] != '/') s++;
  for (size_t e = s; e > j; e--) {
    *ends = e;
    if (bt(t + 1, k - 1, u, n, e, ends + 1)) return true;
  }
  return false;
}

static void to_template(const tok *t, int k, char *out) {
  char *o = out;
  for (int i = 0; i < k; i++) {
    if (t[i].var) o += sprintf(o, "{v%d}", i);
    else o += sprintf(o, "%s", t[i].lit);
  }
  *o = '\0';
}

static void to_regex(const tok *t, int k, char *out) {
  char *o = out;
  *o++ = '^';
  for (int i = 0; i < k; i++) {
    if (t[i].var) {
      o += sprintf(o, "([^/]+)");
      continue;
    }
    for (const char *c = t[i].lit; *c; c++) {
      if (strchr(".[]()*+?{}|^$\\", *c)) *o++ = '\\';
      *o++ = *c;
    }
  }
  *o++ = '$';
  *o = '\0';
}

/* }====== */

static unsigned long long rng = 88172645463325252ull;
static unsigned rnd(unsigned n) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (unsigned)(rng % n);
}

/* pieces URIs and literals are made of: '/', '.', braces, encoded slashes */
static const char *const PIECES[] = {"a", "b", ".", "/", "%", "2", "F", "%2F", "{", "}", ".t", "a."};
#define NPIECES (sizeof PIECES / sizeof PIECES[0])

static void random_cases(int rounds) {
  int matched = 0, refused = 0;
  for (int round = 0; round < rounds; round++) {
    tok t[MAXV];
    int k = 1 + (int)rnd(6), nvars = 0;
    for (int i = 0; i < k; i++) {
      /* literals are never adjacent (the template would read as one) */
      t[i].var = (i > 0 && !t[i - 1].var) ? true : rnd(2);
      t[i].lit[0] = '\0';
      if (t[i].var) {
        nvars++;
        continue;
      }
      for (int p = 1 + (int)rnd(2); p-- > 0;) {
        const char *piece = PIECES[rnd(NPIECES)];
        if (strchr(piece, '{') || strchr(piece, '}')) piece = "-";
        strcat(t[i].lit, piece);
      }
    }
    char tpl[256], re[512], uri[256];
    to_template(t, k, tpl);
    to_regex(t, k, re);
    /* an expansion with random values (most match), sometimes mutated */
    uri[0] = '\0';
    for (int i = 0; i < k; i++) {
      if (!t[i].var) {
        strcat(uri, t[i].lit);
        continue;
      }
      for (int p = (int)rnd(4); p-- >= 0;) {
        const char *piece = PIECES[rnd(NPIECES)];
        strcat(uri, piece[0] == '/' && rnd(4) ? "x" : piece);
      }
    }
    size_t n = strlen(uri);
    if (rnd(3) == 0 && n) { /* drop, change or add one byte */
      size_t at = rnd((unsigned)n);
      switch (rnd(3)) {
      case 0: memmove(uri + at, uri + at + 1, n - at), n--; break;
      case 1: uri[at] = PIECES[rnd(NPIECES)][0]; break;
      default: memmove(uri + at + 1, uri + at, n - at + 1), uri[at] = '/', n++;
      }
    }

    uri_template_var v[MAXV];
    uri_template_result r = uri_template_match(tpl, uri, n, v, (size_t)nvars);
    regex_t rx;
    if (regcomp(&rx, re, REG_EXTENDED) != 0) {
      fprintf(stderr, "regcomp failed: %s\n", re);
      check_failures++;
      continue;
    }
    regmatch_t g[MAXV + 1];
    bool want = regexec(&rx, uri, (size_t)nvars + 1, g, 0) == 0;
    regfree(&rx);
    size_t ends[MAXV];
    bool bt_want = bt(t, k, uri, n, 0, ends);
    bool got = r == URI_TEMPLATE_MATCH;
    check_total++;
    if (got != want || got != bt_want) {
      check_failures++;
      fprintf(stderr, "%s on '%s': ours %d, regexec %d, backtracking %d\n", tpl, uri, got, want, bt_want);
      continue;
    }
    if (!got) {
      refused++;
      continue;
    }
    matched++;
    /* the same split as both references, and it expands back to the URI */
    char again[256] = "";
    for (int i = 0, vi = 0; i < k; i++) {
      if (!t[i].var) {
        strcat(again, t[i].lit);
        continue;
      }
      size_t off = (size_t)(v[vi].value - uri);
      check_total++;
      if ((regoff_t)off != g[vi + 1].rm_so || (regoff_t)(off + v[vi].value_len) != g[vi + 1].rm_eo ||
          off + v[vi].value_len != ends[vi] || v[vi].value_len == 0 ||
          memchr(v[vi].value, '/', v[vi].value_len)) {
        check_failures++;
        fprintf(stderr, "%s on '%s': variable %d is [%zu,%zu), regexec [%d,%d), backtracking ends %zu\n",
                tpl, uri, vi, off, off + v[vi].value_len, (int)g[vi + 1].rm_so, (int)g[vi + 1].rm_eo,
                ends[vi]);
      }
      strncat(again, v[vi].value, v[vi].value_len);
      vi++;
    }
    CHECK(strcmp(again, uri) == 0);
  }
  printf("random: %d rounds, %d matched, %d did not\n", rounds, matched, refused);
  CHECK(matched > rounds / 4 && refused > rounds / 10); /* both kinds were tried */
}

/* 20 adjacent variables over URI_TEMPLATE_MAX_URI bytes with no '/', failing
   only at the last byte: O(n^20) splits for a backtracker, one pass per
   token here */
static void worst_case(void) {
  char tpl[256] = "";
  for (int i = 0; i < 20; i++) sprintf(tpl + strlen(tpl), "{v%d}", i);
  strcat(tpl, "!");
  char *uri = malloc(URI_TEMPLATE_MAX_URI + 1);
  memset(uri, 'a', URI_TEMPLATE_MAX_URI);
  uri_template_var v[20];
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  int runs = 100;
  for (int i = 0; i < runs; i++)
    CHECK(uri_template_match(tpl, uri, URI_TEMPLATE_MAX_URI, v, 20) == URI_TEMPLATE_NO_MATCH);
  uri[URI_TEMPLATE_MAX_URI - 1] = '!';
  CHECK(uri_template_match(tpl, uri, URI_TEMPLATE_MAX_URI, v, 20) == URI_TEMPLATE_MATCH);
  CHECK(v[0].value_len == URI_TEMPLATE_MAX_URI - 20 && v[19].value_len == 1);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ms = ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6) / runs;
  printf("worst case: 20 adjacent variables x %d bytes: %.3f ms a match\n", URI_TEMPLATE_MAX_URI, ms);
  CHECK(ms < 50); /* about 0.3 ms unoptimized; ASan some times that */
  free(uri);
}

int main(int argc, char **argv) {
  fixed();
  random_cases(argc > 1 ? atoi(argv[1]) : 50000);
  worst_case();
  return check_report("test_uri_template");
}
