/* check.h — the assert helper the C unit tests share: report file:line and
 * keep going, so one run shows every failure; main returns failures != 0. */
#ifndef LUAMCP_CHECK_H
#define LUAMCP_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures, check_total;

#define CHECK(cond)                                                      \
  do {                                                                   \
    check_total++;                                                       \
    if (!(cond)) {                                                       \
      check_failures++;                                                  \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                    \
  } while (0)

#define CHECK_STR(got, want)                                             \
  do {                                                                   \
    check_total++;                                                       \
    const char *g_ = (got), *w_ = (want);                                \
    if (!g_ || strcmp(g_, w_) != 0) {                                    \
      check_failures++;                                                  \
      fprintf(stderr, "%s:%d: got  %s\n%s:%d: want %s\n", __FILE__, __LINE__, \
              g_ ? g_ : "(null)", __FILE__, __LINE__, w_);               \
    }                                                                    \
  } while (0)

static inline int check_report(const char *name) {
  printf("%s: %d passed, %d failed\n", name, check_total - check_failures, check_failures);
  return check_failures != 0;
}

#endif
