/* fuzz.h — what the libFuzzer targets share: a check that aborts (libFuzzer
 * keeps the input), and cutting an input into parts. */
#ifndef LUAMCP_FUZZ_H
#define LUAMCP_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);       \
      abort();                                                                        \
    }                                                                                 \
  } while (0)

/* The next part of [*p, end) up to (not including) sep; *p moves past it. */
static inline size_t fuzz_part(const uint8_t **p, const uint8_t *end, uint8_t sep,
                               const uint8_t **start) {
  *start = *p;
  const uint8_t *q = *p < end ? memchr(*p, sep, (size_t)(end - *p)) : NULL;
  size_t n = (size_t)((q ? q : end) - *p);
  *p = q ? q + 1 : end;
  return n;
}

/* A NUL-terminated heap copy (free it). */
static inline char *fuzz_strndup(const uint8_t *p, size_t n) {
  char *s = malloc(n + 1);
  if (!s) abort();
  memcpy(s, p, n);
  s[n] = '\0';
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
