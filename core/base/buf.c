/* buf.c — growable byte buffer (see buf.h). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(buf *b) { b->p = NULL; b->len = b->cap = 0; }

void buf_free(buf *b) {
  free(b->p);
  buf_init(b);
}

void buf_reserve(buf *b, size_t n) {
  if (b->cap - b->len > n) return; /* keep one byte spare for a NUL */
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->len <= n) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    fputs("luamcp: out of memory\n", stderr);
    abort();
  }
  b->p = p;
  b->cap = cap;
}

void buf_put(buf *b, const void *p, size_t n) {
  buf_reserve(b, n);
  memcpy(b->p + b->len, p, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void buf_puts(buf *b, const char *s) { buf_put(b, s, strlen(s)); }

void buf_printf(buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char tmp[256];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    buf_put(b, tmp, (size_t)n);
    return;
  }
  buf_reserve(b, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

char *buf_take(buf *b, size_t *len) {
  buf_reserve(b, 1);
  b->p[b->len] = '\0';
  char *p = b->p;
  if (len) *len = b->len;
  buf_init(b);
  return p;
}

void buf_put_int(buf *b, long long v) {
  char tmp[24], *p = tmp + sizeof tmp;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  do *--p = (char)('0' + u % 10);
  while (u /= 10);
  if (v < 0) *--p = '-';
  buf_put(b, p, (size_t)(tmp + sizeof tmp - p));
}

bool buf_read_file(buf *b, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_put(b, chunk, n);
  bool ok = !ferror(f);
  fclose(f);
  return ok;
}
