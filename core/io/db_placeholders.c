/* db_placeholders.c — ? and :name to $n (db_placeholders.h), by one pass
 * that skips what PostgreSQL's lexer would not read as SQL tokens. */
#include "db_placeholders.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

static bool ident_start(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80; }
static bool ident_char(unsigned char c) { return ident_start(c) || (c >= '0' && c <= '9') || c == '$'; }

/* the end of a quoted run that began at s[i] (the quote), doubled quotes
   inside; backslash: E'…' escapes */
/* s[i-1] ends an identifier (which may hold '$'), not a number or a $n */
static bool in_ident(const char *s, size_t i) {
  size_t k = i;
  while (k > 0 && ident_char((unsigned char)s[k - 1])) k--;
  return k < i && ident_start((unsigned char)s[k]);
}

static size_t skip_quoted(const char *s, size_t i, size_t n, char q, bool backslash) {
  for (i++; i < n; i++) {
    if (backslash && s[i] == '\\') {
      i++;
      continue;
    }
    if (s[i] == q) {
      if (i + 1 < n && s[i + 1] == q) {
        i++;
        continue;
      }
      return i + 1;
    }
  }
  return n;
}

static size_t skip_block_comment(const char *s, size_t i, size_t n) {
  int depth = 0;
  while (i < n) {
    if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') depth++, i += 2;
    else if (i + 1 < n && s[i] == '*' && s[i + 1] == '/') {
      i += 2;
      if (--depth == 0) return i;
    } else i++;
  }
  return n;
}

/* s[i] is '$': the length of its $tag$ opener, or 0 (not one) */
static size_t dollar_tag(const char *s, size_t i, size_t n) {
  size_t j = i + 1;
  if (j < n && s[j] == '$') return 2;
  if (j >= n || !ident_start((unsigned char)s[j])) return 0;
  while (j < n && ident_char((unsigned char)s[j]) && s[j] != '$') j++;
  return j < n && s[j] == '$' ? j - i + 1 : 0;
}

static size_t skip_dollar(const char *s, size_t i, size_t n, size_t tag) {
  for (size_t j = i + tag; j + tag <= n; j++)
    if (s[j] == '$' && memcmp(s + j, s + i, tag) == 0) return j + tag;
  return n;
}

static void free_names(char **names, int n) {
  for (int k = 0; k < n; k++) free(names[k]);
  free(names);
}

bool db_placeholders_translate(const char *s, size_t n, db_placeholders *out, char *why,
                               size_t cap) {
  memset(out, 0, sizeof *out);
  buf b;
  buf_init(&b);
  buf_reserve(&b, n + 16);
  char **names = NULL;
  int count = 0, names_cap = 0, kind = DB_PH_NONE;
  size_t i = 0, copied = 0;
  const char *fail = NULL;
  while (i < n && !fail) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\'') {
      bool e = i > copied && (s[i - 1] == 'E' || s[i - 1] == 'e') && /* not a :name's last letter */
               !in_ident(s, i - 1);
      i = skip_quoted(s, i, n, '\'', e);
    } else if (c == '"') {
      i = skip_quoted(s, i, n, '"', false);
    } else if (c == '-' && i + 1 < n && s[i + 1] == '-') {
      const char *nl = memchr(s + i, '\n', n - i);
      i = nl ? (size_t)(nl - s) + 1 : n;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      i = skip_block_comment(s, i, n);
    } else if (c == '$' && !in_ident(s, i)) {
      size_t tag = dollar_tag(s, i, n);
      i = tag ? skip_dollar(s, i, n, tag) : i + 1;
    } else if (c == '?' || (c == ':' && i + 1 < n && ident_start((unsigned char)s[i + 1]) &&
                            !(i > 0 && s[i - 1] == ':'))) {
      int want = c == '?' ? DB_PH_POSITIONAL : DB_PH_NAMED;
      if (kind != DB_PH_NONE && kind != want) {
        fail = "the statement mixes ? and :name parameters";
        break;
      }
      kind = want;
      buf_put(&b, s + copied, i - copied);
      int number;
      if (c == '?') {
        number = ++count;
        i++;
      } else {
        size_t j = i + 1;
        while (j < n && ident_char((unsigned char)s[j])) j++;
        size_t len = j - i - 1;
        number = 0;
        for (int k = 0; k < count && !number; k++)
          if (strlen(names[k]) == len && memcmp(names[k], s + i + 1, len) == 0) number = k + 1;
        if (!number) {
          if (count == names_cap) {
            int nc = names_cap ? names_cap * 2 : 8;
            char **p = realloc(names, (size_t)nc * sizeof *p);
            if (!p) {
              fail = "out of memory";
              break;
            }
            names = p, names_cap = nc;
          }
          if (count < DB_PLACEHOLDERS_MAX) {
            if (!(names[count] = malloc(len + 1))) {
              fail = "out of memory";
              break;
            }
            memcpy(names[count], s + i + 1, len);
            names[count][len] = 0;
          }
          number = ++count;
        }
        i = j;
      }
      if (count > DB_PLACEHOLDERS_MAX) {
        fail = "the statement has more than 65535 parameters";
        if (kind == DB_PH_NAMED) count--;
        break;
      }
      /* $n glued to a word would be read as part of it (a$1 is a name) */
      if (b.len && ident_char((unsigned char)b.p[b.len - 1])) buf_putc(&b, ' ');
      buf_printf(&b, "$%d", number);
      if (i < n && ident_char((unsigned char)s[i])) buf_putc(&b, ' ');
      copied = i;
    } else if (c == ':' && i + 1 < n && s[i + 1] == ':') {
      i += 2;
    } else {
      i++;
    }
  }
  if (fail) {
    snprintf(why, cap, "%s", fail);
    if (kind == DB_PH_NAMED) free_names(names, count);
    else free(names);
    buf_free(&b);
    return false;
  }
  buf_put(&b, s + copied, n - copied);
  out->sql = buf_take(&b, &out->len);
  out->kind = kind;
  out->n = count;
  out->names = kind == DB_PH_NAMED ? names : (free(names), NULL);
  return true;
}

void db_placeholders_free(db_placeholders *p) {
  if (!p) return;
  free(p->sql);
  if (p->names) free_names(p->names, p->n);
  memset(p, 0, sizeof *p);
}

size_t db_placeholders_statement_end(const char *s, size_t n, size_t i) {
  size_t start = i;
  while (i < n) {
    char c = s[i];
    if (c == ';') return i + 1;
    if (c == '\'') {
      bool e = i > start && (s[i - 1] == 'E' || s[i - 1] == 'e') && !in_ident(s, i - 1);
      i = skip_quoted(s, i, n, '\'', e);
    } else if (c == '"') {
      i = skip_quoted(s, i, n, '"', false);
    } else if (c == '-' && i + 1 < n && s[i + 1] == '-') {
      const char *nl = memchr(s + i, '\n', n - i);
      i = nl ? (size_t)(nl - s) + 1 : n;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      i = skip_block_comment(s, i, n);
    } else if (c == '$' && !in_ident(s, i)) {
      size_t tag = dollar_tag(s, i, n);
      i = tag ? skip_dollar(s, i, n, tag) : i + 1;
    } else {
      i++;
    }
  }
  return n;
}
