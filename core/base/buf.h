/* buf.h — a growable byte buffer: the one way the core builds output. */
#ifndef LUAMCP_BUF_H
#define LUAMCP_BUF_H

#include <stdbool.h>
#include <stddef.h>

/* Once anything is written, p is NUL-terminated (p[len] == 0), so the
   text can be passed where a C string is expected. */
typedef struct buf {
  char *p;
  size_t len, cap;
} buf;

void buf_init(buf *b);
void buf_free(buf *b);
/* Make room for n more bytes; aborts on out-of-memory (the core cannot
   answer anything sensible without memory, and half a reply is worse). */
void buf_reserve(buf *b, size_t n);
void buf_put(buf *b, const void *p, size_t n);
void buf_puts(buf *b, const char *s);
void buf_printf(buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Append a string literal (its length known at compile time). */
#define buf_lit(b, lit) buf_put((b), "" lit, sizeof(lit) - 1)
/* Decimal digits of v (without printf's cost per number). */
void buf_put_int(buf *b, long long v);
static inline void buf_putc(buf *b, char c) {
  if (b->cap - b->len < 2) buf_reserve(b, 1);
  b->p[b->len++] = c;
  b->p[b->len] = '\0';
}

/* Hand the bytes over (NUL-terminated); the buffer is empty afterwards. */
char *buf_take(buf *b, size_t *len);

/* Append the whole file at path; false (errno set) when it cannot be
   opened or read. */
bool buf_read_file(buf *b, const char *path);

#endif
