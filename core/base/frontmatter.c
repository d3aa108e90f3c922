/* frontmatter.c — the YAML front matter of SKILL.md (see frontmatter.h).
 * The subset and its errors follow the TypeScript SDK's reader, so a file
 * both accept reads the same in both, and the same as a full YAML parser. */
#include "frontmatter.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define MAX_DEPTH 32

typedef struct line {
  int no;
  size_t indent;    /* leading spaces */
  const char *raw;  /* the whole line, without its \r\n */
  size_t rawlen;
  const char *text; /* after leading spaces and tabs */
  size_t len;
  bool tab; /* a tab right after the leading spaces: indentation by tab */
} line;

typedef struct parser {
  line *ls;
  size_t n, i;
  int *err_line;
  buf *err;
  bool failed;
  size_t keys; /* so far, in every mapping: each new one is checked against its siblings */
} parser;

/* Front matter is a few fields: past this many keys in all, a file is refused
   rather than checked for duplicates in quadratic time. */
#define FM_KEYS_MAX 4096
/* Front matter holds a few fields: past this many bytes (to its closing
   "---") it is refused before a node is made (16 MiB of it took 0.6-0.9 GB) */
#define FM_BYTES_MAX (64 * 1024)

static bool fail(parser *p, int no, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* One more key (at line no): false, with the error, past FM_KEYS_MAX. */
static bool count_key(parser *p, int no) {
  if (++p->keys <= FM_KEYS_MAX) return true;
  return fail(p, no, "more than %d keys: front matter holds a few fields", FM_KEYS_MAX);
}

static bool fail(parser *p, int no, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(parser *p, int no, const char *fmt, ...) {
  if (p->failed) return false;
  p->failed = true;
  *p->err_line = no;
  va_list ap;
  va_start(ap, fmt);
  char msg[300];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  buf_puts(p->err, msg);
  return false;
}

/* {====== nodes */

static fm_node *add_kid(fm_node *parent, int no) {
  if (parent->nkids == parent->cap) {
    parent->cap = parent->cap ? parent->cap * 2 : 4;
    parent->kids = realloc(parent->kids, parent->cap * sizeof *parent->kids);
  }
  fm_node *k = &parent->kids[parent->nkids++];
  memset(k, 0, sizeof *k);
  k->line = no;
  return k;
}

static void set_text(fm_node *node, fm_kind kind, const char *s, size_t n) {
  node->kind = kind;
  free(node->s);
  node->s = malloc(n + 1);
  memcpy(node->s, s, n);
  node->s[n] = '\0';
  node->n = n;
}

void frontmatter_free(fm_node *root) {
  if (!root) return;
  for (size_t i = 0; i < root->nkids; i++) frontmatter_free(&root->kids[i]);
  free(root->kids);
  free(root->key);
  free(root->s);
  memset(root, 0, sizeof *root);
}

const fm_node *frontmatter_get(const fm_node *m, const char *key) {
  if (!m || m->kind != FM_MAP) return NULL;
  for (size_t i = 0; i < m->nkids; i++)
    if (strcmp(m->kids[i].key, key) == 0) return &m->kids[i];
  return NULL;
}

void frontmatter_json(const fm_node *node, buf *out) {
  switch (node->kind) {
    case FM_NULL: buf_puts(out, "null"); return;
    case FM_BOOL:
    case FM_NUM: buf_put(out, node->s, node->n); return;
    case FM_STR: json_encode_string(out, node->s, node->n); return;
    case FM_SEQ:
    case FM_MAP: {
      bool map = node->kind == FM_MAP;
      buf_putc(out, map ? '{' : '[');
      for (size_t i = 0; i < node->nkids; i++) {
        if (i) buf_putc(out, ',');
        if (map) {
          json_encode_string(out, node->kids[i].key, strlen(node->kids[i].key));
          buf_putc(out, ':');
        }
        frontmatter_json(&node->kids[i], out);
      }
      buf_putc(out, map ? '}' : ']');
      return;
    }
  }
}

/* }====== */

/* {====== scalars */

static bool is_ws(char c) { return c == ' ' || c == '\t'; }

static size_t skip_ws(const char *t, size_t len, size_t i) {
  while (i < len && is_ws(t[i])) i++;
  return i;
}

static size_t trim_end(const char *t, size_t len) {
  while (len && is_ws(t[len - 1])) len--;
  return len;
}

static bool is_seq_item(const char *t, size_t len) {
  return len && t[0] == '-' && (len == 1 || is_ws(t[1]));
}

/* a " #" or "\t#": where a comment starts in a plain value, or len */
static size_t comment_at(const char *t, size_t len) {
  for (size_t i = 1; i < len; i++)
    if (t[i] == '#' && is_ws(t[i - 1])) return i;
  return len;
}

static bool matches(const char *t, size_t n, const char *const *words) {
  for (; *words; words++)
    if (strlen(*words) == n && memcmp(t, *words, n) == 0) return true;
  return false;
}

static bool all_of(const char *t, size_t n, const char *set) {
  if (!n) return false;
  for (size_t i = 0; i < n; i++)
    if (!strchr(set, t[i])) return false;
  return true;
}

/* YAML 1.2 core schema floats: [-+]? ( . digits | digits [ . digits* ] ) ( [eE] [-+]? digits )? */
static bool is_float(const char *t, size_t n) {
  size_t i = 0, d = 0;
  if (i < n && (t[i] == '+' || t[i] == '-')) i++;
  if (i < n && t[i] == '.') {
    i++;
    while (i < n && t[i] >= '0' && t[i] <= '9') i++, d++;
    if (!d) return false;
  } else {
    while (i < n && t[i] >= '0' && t[i] <= '9') i++, d++;
    if (!d) return false;
    if (i < n && t[i] == '.') {
      i++;
      while (i < n && t[i] >= '0' && t[i] <= '9') i++;
    }
  }
  if (i < n && (t[i] == 'e' || t[i] == 'E')) {
    i++;
    if (i < n && (t[i] == '+' || t[i] == '-')) i++;
    size_t e = 0;
    while (i < n && t[i] >= '0' && t[i] <= '9') i++, e++;
    if (!e) return false;
  }
  return i == n;
}

static void put_number(fm_node *node, double d) {
  buf b;
  buf_init(&b);
  if (d == floor(d) && fabs(d) < 9007199254740992.0) buf_printf(&b, "%.0f", d);
  else json_encode_double(&b, d);
  set_text(node, FM_NUM, b.p, b.len);
  buf_free(&b);
}

/* A plain scalar's type under the core schema. */
static bool resolve_plain(parser *p, fm_node *node, const char *t, size_t n, int no) {
  static const char *const nulls[] = {"~", "null", "Null", "NULL", NULL};
  static const char *const trues[] = {"true", "True", "TRUE", NULL};
  static const char *const falses[] = {"false", "False", "FALSE", NULL};
  static const char *const specials[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
                                         "-.Inf", "-.INF", ".nan", ".NaN", ".NAN", NULL};
  char tmp[64];
  if (n == 0 || matches(t, n, nulls)) {
    node->kind = FM_NULL;
    return true;
  }
  if (matches(t, n, trues)) return set_text(node, FM_BOOL, "true", 4), true;
  if (matches(t, n, falses)) return set_text(node, FM_BOOL, "false", 5), true;
  if (matches(t, n, specials))
    return fail(p, no, "\"%.*s\" cannot be represented in JSON; quote it", (int)n, t);
  bool sign = t[0] == '+' || t[0] == '-';
  bool octal = n > 2 && memcmp(t, "0o", 2) == 0 && all_of(t + 2, n - 2, "01234567");
  bool hex = n > 2 && memcmp(t, "0x", 2) == 0 && all_of(t + 2, n - 2, "0123456789abcdefABCDEF");
  if ((octal || hex || all_of(t + sign, n - sign, "0123456789") || is_float(t, n)) && n < sizeof tmp) {
    memcpy(tmp, t, n);
    tmp[n] = '\0';
    double d = octal ? (double)strtoull(tmp + 2, NULL, 8) : hex ? (double)strtoull(tmp + 2, NULL, 16)
                                                                : strtod(tmp, NULL);
    if (!isfinite(d)) return fail(p, no, "\"%.*s\" cannot be represented in JSON; quote it", (int)n, t);
    put_number(node, d);
    return true;
  }
  set_text(node, FM_STR, t, n);
  return true;
}

#define UNCLOSED_QUOTE "a quoted value must close on the same line (multi-line quoted values are not supported)"

/* The quoted scalar at t[*i] into out; *i past its closing quote. */
static bool read_quoted(parser *p, const char *t, size_t len, size_t *i, int no, buf *out) {
  char q = t[*i];
  size_t k = *i + 1;
  out->len = 0;
  while (k < len) {
    char c = t[k];
    if (q == '\'') {
      if (c == '\'') {
        if (k + 1 < len && t[k + 1] == '\'') {
          buf_putc(out, '\'');
          k += 2;
          continue;
        }
        *i = k + 1;
        return true;
      }
      buf_putc(out, c);
      k++;
      continue;
    }
    if (c == '"') {
      *i = k + 1;
      return true;
    }
    if (c != '\\') {
      buf_putc(out, c);
      k++;
      continue;
    }
    if (k + 1 >= len) return fail(p, no, UNCLOSED_QUOTE);
    char e = t[k + 1];
    static const char from[] = "0abtnvfre \"/\\\t", to[] = "\0\a\b\t\n\v\f\r\x1b \"/\\\t";
    const char *s = e ? strchr(from, e) : NULL;
    if (s) {
      buf_putc(out, to[s - from]);
      k += 2;
    } else if (e == 'N') {
      buf_puts(out, "\xC2\x85");
      k += 2;
    } else if (e == '_') {
      buf_puts(out, "\xC2\xA0");
      k += 2;
    } else if (e == 'L' || e == 'P') {
      buf_puts(out, e == 'L' ? "\xE2\x80\xA8" : "\xE2\x80\xA9");
      k += 2;
    } else if (e == 'x' || e == 'u' || e == 'U') {
      size_t w = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      if (k + 2 + w > len || !all_of(t + k + 2, w, "0123456789abcdefABCDEF"))
        return fail(p, no, "invalid escape \"\\%c\"", e);
      char hex[9];
      memcpy(hex, t + k + 2, w);
      hex[w] = '\0';
      unsigned long cp = strtoul(hex, NULL, 16);
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return fail(p, no, "invalid escape \"\\%c%s\"", e, hex);
      json_put_utf8(out, (unsigned)cp);
      k += 2 + w;
    } else {
      return fail(p, no, "unknown escape \"\\%c\"", e);
    }
  }
  return fail(p, no, UNCLOSED_QUOTE);
}

/* Only a comment (or nothing) may follow a quoted or flow value. */
static bool only_comment(parser *p, const char *t, size_t len, size_t i, int no) {
  size_t k = skip_ws(t, len, i);
  if (k == len || (k > i && t[k] == '#')) return true;
  return fail(p, no, "unexpected text after the value");
}

/* key: its bytes and a NUL (the buf's length counts it); plain: not quoted.
   Refused where a full YAML parser would read the key otherwise: a NUL
   (an escape "\0" cut it short here), and the merge key << (YAML 1.1's
   merge, taken literally here). */
static bool key_ok(parser *p, const buf *key, bool plain, int no) {
  if (key->len == 0 || memchr(key->p, '\0', key->len - 1))
    return fail(p, no, "a key may not hold a NUL character");
  if (plain && strcmp(key->p, "<<") == 0) return fail(p, no, "the merge key \"<<\" is not supported");
  if (strcmp(key->p, "__proto__") == 0) return fail(p, no, "the key \"__proto__\" is not supported");
  return true;
}

/* }====== */

/* {====== flow collections: one line */

#define UNCLOSED_FLOW "a flow collection must close on the same line"

static bool read_flow(parser *p, fm_node *node, const char *t, size_t len, size_t *i, int no, int depth);

static bool flow_plain_start(parser *p, const char *t, size_t len, size_t i, int no) {
  char c = t[i];
  if (strchr("&*!", c)) return fail(p, no, "anchors, aliases and tags are not supported");
  bool sep_next = i + 1 >= len || strchr(" \t,[]{}", t[i + 1]);
  if (strchr("|>%@`#", c) || (strchr("-?:", c) && sep_next))
    return fail(p, no, "\"%c\" cannot start a plain value in a flow collection; quote it", c);
  return true;
}

static size_t flow_plain_end(const char *t, size_t len, size_t i) {
  for (; i < len; i++) {
    char c = t[i];
    if (strchr(",[]{}", c)) break;
    if (c == '#' && i && is_ws(t[i - 1])) break;
    if (c == ':' && (i + 1 >= len || strchr(" \t,[]{}", t[i + 1]))) break;
  }
  return i;
}

static bool read_flow_value(parser *p, fm_node *node, const char *t, size_t len, size_t *i, int no,
                            int depth) {
  size_t k = skip_ws(t, len, *i);
  if (k >= len) return fail(p, no, UNCLOSED_FLOW);
  if (t[k] == '[' || t[k] == '{') {
    *i = k;
    return read_flow(p, node, t, len, i, no, depth + 1);
  }
  if (t[k] == '"' || t[k] == '\'') {
    buf s;
    buf_init(&s);
    bool ok = read_quoted(p, t, len, &k, no, &s);
    if (ok) set_text(node, FM_STR, s.p ? s.p : "", s.len);
    buf_free(&s);
    *i = k;
    return ok;
  }
  if (!flow_plain_start(p, t, len, k, no)) return false;
  size_t end = flow_plain_end(t, len, k);
  if (end < len && t[end] == ':')
    return fail(p, no, "mappings inside flow collections are not supported; quote the value");
  size_t n = trim_end(t + k, end - k);
  if (!n) return fail(p, no, "empty value in a flow collection");
  *i = end;
  return resolve_plain(p, node, t + k, n, no);
}

/* The key of a flow mapping's member into key (*plain: not quoted); *i at
   its ':'. */
static bool read_flow_key(parser *p, const char *t, size_t len, size_t *i, int no, buf *key, bool *plain) {
  size_t k = skip_ws(t, len, *i);
  if (k >= len) return fail(p, no, UNCLOSED_FLOW);
  *plain = !(t[k] == '"' || t[k] == '\'');
  if (t[k] == '"' || t[k] == '\'') {
    if (!read_quoted(p, t, len, &k, no, key)) return false;
    k = skip_ws(t, len, k);
    if (k >= len || t[k] != ':') return fail(p, no, "expected \": \" after a key in a flow mapping");
    *i = k;
    return true;
  }
  if (t[k] == '[' || t[k] == '{')
    return fail(p, no, "complex keys (flow collections as keys) are not supported");
  if (!flow_plain_start(p, t, len, k, no)) return false;
  size_t end = flow_plain_end(t, len, k);
  size_t n = trim_end(t + k, end - k);
  if (!n || end >= len || t[end] != ':' || end + 1 >= len || !is_ws(t[end + 1]))
    return fail(p, no, "expected \"key: value\" in a flow mapping");
  fm_node probe = {0};
  bool ok = resolve_plain(p, &probe, t + k, n, no);
  bool str = probe.kind == FM_STR;
  frontmatter_free(&probe);
  if (!ok) return false;
  if (!str) return fail(p, no, "key \"%.*s\" must be a string; quote it", (int)n, t + k);
  key->len = 0;
  buf_put(key, t + k, n);
  *i = end;
  return true;
}

static bool read_flow(parser *p, fm_node *node, const char *t, size_t len, size_t *i, int no, int depth) {
  if (depth > MAX_DEPTH) return fail(p, no, "nesting deeper than %d levels is not supported", MAX_DEPTH);
  char open = t[*i], close = open == '[' ? ']' : '}';
  node->kind = open == '[' ? FM_SEQ : FM_MAP;
  size_t k = skip_ws(t, len, *i + 1);
  if (k < len && t[k] == close) {
    *i = k + 1;
    return true;
  }
  buf key;
  buf_init(&key);
  bool ok = true;
  for (;;) {
    if (open == '[') {
      ok = read_flow_value(p, add_kid(node, no), t, len, &k, no, depth);
    } else {
      bool flow_key_plain = false;
      ok = read_flow_key(p, t, len, &k, no, &key, &flow_key_plain);
      if (ok) {
        buf_putc(&key, '\0');
        ok = key_ok(p, &key, flow_key_plain, no) && count_key(p, no) && !frontmatter_get(node, key.p);
        if (ok) {
          fm_node *kid = add_kid(node, no);
          kid->key = strdup(key.p);
          k++;
          ok = read_flow_value(p, kid, t, len, &k, no, depth);
        } else if (!p->failed) {
          fail(p, no, "duplicate key \"%s\"", key.p);
        }
      }
    }
    if (!ok) break;
    k = skip_ws(t, len, k);
    if (k < len && t[k] == ',') {
      k = skip_ws(t, len, k + 1);
      if (k < len && t[k] == close) {
        k++;
        break;
      }
      continue;
    }
    if (k < len && t[k] == close) {
      k++;
      break;
    }
    ok = k >= len ? fail(p, no, UNCLOSED_FLOW) : fail(p, no, "unexpected \"%c\" in a flow collection", t[k]);
    break;
  }
  buf_free(&key);
  *i = k;
  return ok;
}

/* }====== */

/* {====== block structure */

static bool skippable(const line *l) { return l->len == 0 || l->text[0] == '#'; }

static line *peek(parser *p) {
  while (p->i < p->n && skippable(&p->ls[p->i])) p->i++;
  if (p->i >= p->n || p->failed) return NULL;
  line *l = &p->ls[p->i];
  if (l->tab) {
    fail(p, l->no, "tabs cannot be used for indentation");
    return NULL;
  }
  return l;
}

/* Is t a `key: value` line? 1 with the key (and where the value starts),
   0 if not, -1 on an error. */
static int match_key(parser *p, const char *t, size_t len, int no, buf *key, size_t *rest) {
  if (!len) return 0;
  char c = t[0];
  if (c == '"' || c == '\'') {
    size_t k = 0;
    if (!read_quoted(p, t, len, &k, no, key)) return -1;
    if (k < len && t[k] == ':' && (k + 1 == len || is_ws(t[k + 1]))) {
      buf_putc(key, '\0');
      if (!key_ok(p, key, false, no)) return -1;
      *rest = skip_ws(t, len, k + 1);
      return 1;
    }
    return 0;
  }
  if (c == '?') return fail(p, no, "complex keys (\"?\") are not supported"), -1;
  if (strchr("[]{}&*!|>%@`#,", c)) return 0;
  for (size_t k = 0; k < len; k++) {
    if (t[k] == '#' && k && is_ws(t[k - 1])) return 0;
    if (t[k] == ':' && (k + 1 == len || is_ws(t[k + 1]))) {
      size_t n = trim_end(t, k);
      if (!n) return 0;
      fm_node probe = {0};
      bool ok = resolve_plain(p, &probe, t, n, no);
      bool str = probe.kind == FM_STR;
      frontmatter_free(&probe);
      if (!ok) return -1;
      if (!str) return fail(p, no, "key \"%.*s\" must be a string; quote it", (int)n, t), -1;
      key->len = 0;
      buf_put(key, t, n);
      buf_putc(key, '\0');
      if (!key_ok(p, key, true, no)) return -1;
      *rest = skip_ws(t, len, k + 1);
      return 1;
    }
  }
  return 0;
}

static bool is_key_line(parser *p, const char *t, size_t len, int no, int *state) {
  buf key;
  buf_init(&key);
  size_t rest;
  *state = match_key(p, t, len, no, &key, &rest);
  buf_free(&key);
  return *state == 1;
}

static bool plain_ok(parser *p, const char *t, size_t n, int no) {
  for (size_t k = 0; k < n; k++)
    if (t[k] == ':' && (k + 1 == n || is_ws(t[k + 1])))
      return fail(p, no, "a plain value cannot contain \": \"; quote the value");
  return true;
}

static bool parse_map(parser *p, fm_node *node, size_t indent, int depth);
static bool parse_seq(parser *p, fm_node *node, size_t indent, int depth);
static bool parse_value(parser *p, fm_node *node, const char *rest, size_t rlen, const line *l,
                        size_t parent, int depth, bool compact);

static bool parse_plain(parser *p, fm_node *node, const char *first, size_t flen, int no, size_t parent) {
  size_t c = comment_at(first, flen), n = trim_end(first, c);
  if (!plain_ok(p, first, n, no)) return false;
  bool commented = c < flen;
  buf v;
  buf_init(&v);
  buf_put(&v, first, n);
  size_t blanks = 0;
  bool ok = true;
  while (ok && p->i < p->n) {
    const line *next = &p->ls[p->i];
    if (next->len == 0) {
      blanks++;
      p->i++;
      continue;
    }
    if (next->indent <= parent || next->text[0] == '#') break;
    if (next->tab) {
      ok = fail(p, next->no, "tabs cannot be used for indentation");
      break;
    }
    if (commented) {
      ok = fail(p, next->no, "a comment ends a plain value; quote a value that continues past it");
      break;
    }
    size_t pc = comment_at(next->text, next->len), pn = trim_end(next->text, pc);
    if (!(ok = plain_ok(p, next->text, pn, next->no))) break;
    commented = pc < next->len;
    if (blanks)
      for (size_t b = 0; b < blanks; b++) buf_putc(&v, '\n');
    else
      buf_putc(&v, ' ');
    buf_put(&v, next->text, pn);
    blanks = 0;
    p->i++;
  }
  if (ok) ok = resolve_plain(p, node, v.p ? v.p : "", v.len, no);
  buf_free(&v);
  return ok;
}

/* `|` and `>` with an optional chomping indicator (YAML 1.2 folding). */
static bool parse_block_scalar(parser *p, fm_node *node, const char *h, size_t hlen, int no, size_t parent) {
  char style = h[0], chomp = hlen > 1 && (h[1] == '+' || h[1] == '-') ? h[1] : 0;
  size_t k = 1 + (chomp != 0);
  if (k < hlen && h[k] >= '0' && h[k] <= '9')
    return fail(p, no, "block scalar indentation indicators are not supported");
  size_t after = skip_ws(h, hlen, k);
  if (after < hlen && !(after > k && h[after] == '#')) return fail(p, no, "invalid block scalar header");
  buf out;
  buf_init(&out);
  long content = -1;
  size_t leading = 0, empties = 0;
  bool any = false, more = false, folded = style == '>', ok = true;
  while (p->i < p->n) {
    const line *l = &p->ls[p->i];
    bool spaces_only = l->indent == l->rawlen;
    if (content < 0 && !spaces_only && l->indent > parent) {
      content = (long)l->indent;
      if (leading > l->indent) {
        ok = fail(p, l->no, "a leading blank line is indented more than the block scalar content");
        break;
      }
    }
    const char *c = NULL;
    size_t cn = 0;
    if (content >= 0 && l->indent >= (size_t)content) {
      c = l->raw + content;
      cn = l->rawlen - (size_t)content;
    } else if (spaces_only) {
      if (content < 0 && l->indent > leading) leading = l->indent;
    } else if (l->tab) {
      ok = fail(p, l->no, "tabs cannot be used for indentation");
      break;
    } else {
      break;
    }
    p->i++;
    if (!cn) { /* an empty line: counted, placed before the next content */
      empties++;
      continue;
    }
    if (folded) {
      if (c[0] == ' ' || c[0] == '\t') {
        more = true;
        for (size_t e = 0; e < (any ? 1 + empties : empties); e++) buf_putc(&out, '\n');
      } else if (more) {
        more = false;
        for (size_t e = 0; e < empties + 1; e++) buf_putc(&out, '\n');
      } else if (empties == 0) {
        if (any) buf_putc(&out, ' ');
      } else {
        for (size_t e = 0; e < empties; e++) buf_putc(&out, '\n');
      }
    } else {
      for (size_t e = 0; e < (any ? 1 + empties : empties); e++) buf_putc(&out, '\n');
    }
    buf_put(&out, c, cn);
    any = true;
    empties = 0;
  }
  if (ok) {
    if (chomp == '+')
      for (size_t e = 0; e < (any ? 1 + empties : empties); e++) buf_putc(&out, '\n');
    else if (!chomp && any)
      buf_putc(&out, '\n');
    set_text(node, FM_STR, out.p ? out.p : "", out.len);
  }
  buf_free(&out);
  return ok;
}

/* A value that starts on the line after its key. */
static bool parse_indented(parser *p, fm_node *node, size_t parent, int depth) {
  line *l = peek(p);
  if (!l) return false;
  if (is_seq_item(l->text, l->len)) return parse_seq(p, node, l->indent, depth);
  int state;
  if (is_key_line(p, l->text, l->len, l->no, &state)) {
    node->kind = FM_MAP;
    return parse_map(p, node, l->indent, depth);
  }
  if (state < 0) return false;
  p->i++;
  return parse_value(p, node, l->text, l->len, l, parent, depth, false);
}

static bool parse_value(parser *p, fm_node *node, const char *rest, size_t rlen, const line *l,
                        size_t parent, int depth, bool compact) {
  int no = l->no;
  if (rlen == 0 || rest[0] == '#') {
    line *next = peek(p);
    if (p->failed) return false;
    if (next && next->indent > parent) return parse_indented(p, node, parent, depth);
    if (compact && next && next->indent == parent && is_seq_item(next->text, next->len))
      return parse_seq(p, node, parent, depth);
    node->kind = FM_NULL;
    return true;
  }
  char c = rest[0];
  if (c == '|' || c == '>') return parse_block_scalar(p, node, rest, rlen, no, parent);
  if (c == '"' || c == '\'') {
    size_t k = 0;
    buf s;
    buf_init(&s);
    bool ok = read_quoted(p, rest, rlen, &k, no, &s) && only_comment(p, rest, rlen, k, no);
    if (ok) set_text(node, FM_STR, s.p ? s.p : "", s.len);
    buf_free(&s);
    return ok;
  }
  if (c == '[' || c == '{') {
    size_t k = 0;
    return read_flow(p, node, rest, rlen, &k, no, depth) && only_comment(p, rest, rlen, k, no);
  }
  if (strchr("&*!", c)) return fail(p, no, "anchors, aliases and tags are not supported");
  if (strchr("%@`,]}", c)) return fail(p, no, "\"%c\" cannot start a plain value; quote it", c);
  if (is_seq_item(rest, rlen) || (c == '?' && (rlen == 1 || is_ws(rest[1]))))
    return fail(p, no, "a nested collection must start on its own line");
  return parse_plain(p, node, rest, rlen, no, parent);
}

static bool parse_map(parser *p, fm_node *node, size_t indent, int depth) {
  if (depth > MAX_DEPTH)
    return fail(p, p->i < p->n ? p->ls[p->i].no : 0, "nesting deeper than %d levels is not supported", MAX_DEPTH);
  node->kind = FM_MAP;
  buf key;
  buf_init(&key);
  bool ok = true;
  for (line *l = peek(p); ok && l && l->indent >= indent; l = peek(p)) {
    if (l->indent > indent) {
      ok = fail(p, l->no, "unexpected indentation");
      break;
    }
    if (is_seq_item(l->text, l->len)) break;
    size_t rest = 0;
    int m = match_key(p, l->text, l->len, l->no, &key, &rest);
    if (m <= 0) {
      ok = m < 0 ? false : fail(p, l->no, "expected \"key: value\"");
      break;
    }
    if (!count_key(p, l->no)) {
      ok = false;
      break;
    }
    if (frontmatter_get(node, key.p)) {
      ok = fail(p, l->no, "duplicate key \"%s\"", key.p);
      break;
    }
    p->i++;
    fm_node *kid = add_kid(node, l->no);
    kid->key = strdup(key.p);
    ok = parse_value(p, kid, l->text + rest, l->len - rest, l, indent, depth + 1, true);
  }
  buf_free(&key);
  return ok && !p->failed;
}

static bool parse_seq(parser *p, fm_node *node, size_t indent, int depth) {
  if (depth > MAX_DEPTH)
    return fail(p, p->i < p->n ? p->ls[p->i].no : 0, "nesting deeper than %d levels is not supported", MAX_DEPTH);
  node->kind = FM_SEQ;
  for (line *l = peek(p); l && l->indent >= indent; l = peek(p)) {
    if (l->indent > indent) return fail(p, l->no, "unexpected indentation");
    if (!is_seq_item(l->text, l->len)) break;
    const char *after = l->text + 1;
    size_t alen = l->len - 1, skip = skip_ws(after, alen, 0);
    const char *rest = after + skip;
    size_t rlen = alen - skip, column = l->indent + 1 + skip;
    int state = 0;
    if (rlen && rest[0] != '#' &&
        (is_seq_item(rest, rlen) || is_key_line(p, rest, rlen, l->no, &state))) {
      size_t sp = 0;
      while (sp < alen && after[sp] == ' ') sp++;
      if (sp < alen && after[sp] == '\t') return fail(p, l->no, "tabs cannot be used for indentation");
      /* `- key: v` / `- - x`: the item is a collection at the column of its text */
      l->indent = column;
      l->text = rest;
      l->len = rlen;
      fm_node *item = add_kid(node, l->no);
      if (!(is_seq_item(rest, rlen) ? parse_seq(p, item, column, depth + 1)
                                      : parse_map(p, item, column, depth + 1)))
        return false;
      continue;
    }
    if (state < 0) return false;
    p->i++;
    if (!parse_value(p, add_kid(node, l->no), rest, rlen, l, indent, depth + 1, false)) return false;
  }
  return !p->failed;
}

/* }====== */

bool frontmatter_parse(const char *text, size_t n, fm_node *root, int *err_line, buf *err) {
  memset(root, 0, sizeof *root);
  root->kind = FM_MAP;
  root->line = 1;
  *err_line = 0;
  if (n >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) text += 3, n -= 3;
  /* the first line is exactly --- */
  size_t first = n >= 4 && memcmp(text, "---\n", 4) == 0 ? 4 : n >= 5 && memcmp(text, "---\r\n", 5) == 0 ? 5 : 0;
  if (!first) {
    *err_line = 1;
    buf_puts(err, "SKILL.md must begin with a \"---\" line (YAML front matter)");
    return false;
  }
  size_t cap = 16, count = 0;
  line *ls = malloc(cap * sizeof *ls);
  bool closed = false;
  int no = 2;
  for (size_t at = first; at < n; no++) {
    const char *nl = memchr(text + at, '\n', n - at);
    size_t end = nl ? (size_t)(nl - text) : n, len = end - at;
    const char *raw = text + at;
    at = nl ? end + 1 : n;
    if (len && raw[len - 1] == '\r') len--;
    if (len >= 3 && memcmp(raw, "---", 3) == 0 && trim_end(raw + 3, len - 3) == 0) {
      closed = true;
      break;
    }
    if (at > FM_BYTES_MAX) {
      free(ls);
      *err_line = no;
      buf_printf(err, "the front matter is larger than %d KiB: it holds a few fields (the rest of SKILL.md is the body)",
                 FM_BYTES_MAX / 1024);
      return false;
    }
    if (count == cap) ls = realloc(ls, (cap *= 2) * sizeof *ls);
    line *l = &ls[count++];
    size_t ind = 0;
    while (ind < len && raw[ind] == ' ') ind++;
    size_t t = skip_ws(raw, len, 0);
    *l = (line){no, ind, raw, len, raw + t, len - t, ind < len && raw[ind] == '\t'};
  }
  parser p = {.ls = ls, .n = count, .err_line = err_line, .err = err};
  bool ok = true;
  if (!closed) {
    ok = fail(&p, 1, "the front matter has no closing \"---\" line");
  } else {
    line *l = peek(&p);
    if (l) {
      int state;
      if (l->len >= 3 && memcmp(l->text, "\xEF\xBB\xBF", 3) == 0)
        ok = fail(&p, l->no, "a byte order mark inside the front matter is not supported");
      else if (is_seq_item(l->text, l->len) || !is_key_line(&p, l->text, l->len, l->no, &state))
        ok = p.failed ? false : fail(&p, l->no, "the front matter must be a mapping of keys to values");
      else if (parse_map(&p, root, l->indent, 0) && (l = peek(&p)) != NULL)
        ok = fail(&p, l->no, "unexpected content");
    }
    ok = ok && !p.failed;
  }
  free(ls);
  return ok;
}
