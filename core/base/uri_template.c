/* uri_template.c — RFC 6570 level-1 template matching (see uri_template.h).
 *
 * The template is cut into tokens (literal runs and variables). can[t][j]
 * says whether tokens t.. match the URI from byte j to its end; it is
 * filled from the last token back, one pass over the URI per token. The
 * split is then read forwards: each variable takes the longest value in
 * its segment after which can[] of the next token holds. */
#include "uri_template.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct token {
  const char *p; /* the literal, or the variable's name */
  size_t len;
  bool var;
} token;

/* The tokens of tpl into out (room for strlen(tpl) + 1), or -1. */
static long tokenize(const char *tpl, token *out) {
  long k = 0;
  const char *s = tpl;
  while (*s) {
    if (*s == '{') {
      const char *name = s + 1;
      size_t len = strcspn(name, "{}");
      if (name[len] != '}' || len == 0) return -1;
      out[k++] = (token){name, len, true};
      s = name + len + 1;
    } else {
      size_t len = strcspn(s, "{");
      out[k++] = (token){s, len, false};
      s += len;
    }
  }
  return k;
}

int uri_template_count(const char *tpl) {
  int vars = 0;
  for (const char *s = tpl; *s; s++) {
    if (*s != '{') continue;
    size_t len = strcspn(s + 1, "{}");
    if (s[1 + len] != '}' || len == 0) return -1;
    vars++;
    s += len + 1;
  }
  return vars;
}

uri_template_result uri_template_match(const char *tpl, const char *uri, size_t n,
                                       uri_template_var *vars, size_t nvars) {
  if (n > URI_TEMPLATE_MAX_URI) return URI_TEMPLATE_TOO_LONG;
  size_t tlen = strlen(tpl), row = n + 1;
  token *tok = malloc((tlen + 1) * sizeof *tok);
  if (!tok) return URI_TEMPLATE_NO_MEMORY;
  long k = tokenize(tpl, tok);
  if (k < 0) {
    free(tok);
    return URI_TEMPLATE_BAD_TEMPLATE;
  }
  /* the shortest URI the template can match: a quick no */
  size_t least = 0, nv = 0;
  for (long t = 0; t < k; t++) least += tok[t].var ? (nv++, 1) : tok[t].len;
  if (nv != nvars) {
    free(tok);
    return URI_TEMPLATE_BAD_TEMPLATE;
  }
  if (least > n) {
    free(tok);
    return URI_TEMPLATE_NO_MATCH;
  }
  unsigned char *can = calloc((size_t)(k + 1), row);
  if (!can) {
    free(tok);
    return URI_TEMPLATE_NO_MEMORY;
  }
#define CAN(t, j) can[(size_t)(t) * row + (j)]
  CAN(k, n) = 1;
  for (long t = k - 1; t >= 0; t--) {
    if (!tok[t].var) {
      size_t len = tok[t].len;
      for (size_t j = 0; j + len <= n; j++)
        CAN(t, j) = CAN(t + 1, j + len) && memcmp(uri + j, tok[t].p, len) == 0;
      continue;
    }
    /* a value from j may end at any e in (j, first '/' at or after j] */
    bool end_ahead = false; /* some such e has CAN(t + 1, e) */
    for (size_t j = n; j-- > 0;) {
      if (uri[j] == '/') {
        end_ahead = false;
        continue;
      }
      if (CAN(t + 1, j + 1)) end_ahead = true;
      CAN(t, j) = end_ahead;
    }
  }
  uri_template_result r = URI_TEMPLATE_NO_MATCH;
  if (CAN(0, 0)) {
    size_t j = 0, v = 0;
    for (long t = 0; t < k; t++) {
      if (!tok[t].var) {
        j += tok[t].len;
        continue;
      }
      size_t best = 0; /* found: CAN(0, 0) says there is one */
      for (size_t e = j + 1; e <= n && uri[e - 1] != '/'; e++)
        if (CAN(t + 1, e)) best = e;
      vars[v++] = (uri_template_var){tok[t].p, tok[t].len, uri + j, best - j};
      j = best;
    }
    r = URI_TEMPLATE_MATCH;
  }
#undef CAN
  free(can);
  free(tok);
  return r;
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

size_t uri_template_decode(const char *p, size_t n, char *out) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    int hi, lo;
    if (p[i] == '%' && i + 2 < n && (hi = hexval(p[i + 1])) >= 0 && (lo = hexval(p[i + 2])) >= 0) {
      out[m] = (char)(hi * 16 + lo);
      i += 2;
    } else {
      out[m] = p[i];
    }
    if (out[m++] == '\0') return (size_t)-1;
  }
  return m;
}
