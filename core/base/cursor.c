/* cursor.c — pagination cursors (see cursor.h). Format: "<offset hex>.<check
 * hex>" where check = a keyed 64-bit hash of (list, offset). */
#include "cursor.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* splitmix64 finaliser: cheap, well mixed; the key makes it unforgeable in
   practice for a cursor (it guards against mistakes, not a cryptanalyst). */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static uint64_t check_of(uint64_t key, int list, size_t offset) {
  return mix(key ^ mix((uint64_t)offset * 8 + (uint64_t)list));
}

void cursor_make(uint64_t key, int list, size_t offset, char out[CURSOR_MAX]) {
  snprintf(out, CURSOR_MAX, "%zx.%016llx", offset,
           (unsigned long long)check_of(key, list, offset));
}

bool cursor_parse(uint64_t key, int list, const char *s, size_t n, size_t *offset) {
  char tmp[CURSOR_MAX];
  if (n == 0 || n >= sizeof tmp) return false;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  size_t off;
  unsigned long long check;
  int used = 0;
  if (sscanf(tmp, "%zx.%16llx%n", &off, &check, &used) != 2 || (size_t)used != n)
    return false;
  if (check != check_of(key, list, off)) return false;
  /* only the spelling cursor_make writes: sscanf also takes blanks, a sign,
     0x, leading zeros and upper-case digits */
  char canon[CURSOR_MAX];
  cursor_make(key, list, off, canon);
  if (strcmp(canon, tmp) != 0) return false;
  *offset = off;
  return true;
}

uint64_t cursor_new_key(void) {
  uint64_t k;
  if (getrandom(&k, sizeof k, GRND_NONBLOCK) == (ssize_t)sizeof k) return k;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return mix((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)(uintptr_t)&k);
}
