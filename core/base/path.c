/* path.c — joining a relative path under a folder (see path.h). */
#include "path.h"

#include <string.h>

static size_t refuse(const char **why, const char *msg) {
  *why = msg;
  return (size_t)-1;
}

/* the length of the segment of rel that starts at i */
static size_t segment(const char *rel, size_t i, size_t rlen) {
  const char *slash = memchr(rel + i, '/', rlen - i);
  return slash ? (size_t)(slash - rel) - i : rlen - i;
}

size_t path_join(char *out, const char *base, size_t blen, const char *rel, size_t rlen,
                 const char **why) {
  if (rlen && rel[0] == '/') return refuse(why, "is absolute");
  if (memchr(rel, '\0', rlen) || memchr(base, '\0', blen)) return refuse(why, "holds a NUL byte");
  for (size_t i = 0; i < rlen;) { /* every segment, before anything is written */
    size_t len = segment(rel, i, rlen);
    if (len == 2 && rel[i] == '.' && rel[i + 1] == '.') return refuse(why, "has a '..' segment");
    i += len + 1;
  }
  if (blen == 0) base = ".", blen = 1;
  while (blen > 1 && base[blen - 1] == '/') blen--;
  memcpy(out, base, blen);
  size_t n = blen;
  for (size_t i = 0; i < rlen;) {
    size_t len = segment(rel, i, rlen);
    if (len && !(len == 1 && rel[i] == '.')) {
      if (out[n - 1] != '/') out[n++] = '/';
      memcpy(out + n, rel + i, len);
      n += len;
    }
    i += len + 1;
  }
  return n;
}
