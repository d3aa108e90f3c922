/* test_path.c — core/base/path.c: what path_join writes, and what it refuses. */
#include <string.h>

#include "check.h"
#include "path.h"

static const char *join(const char *base, const char *rel, size_t rlen) {
  static char out[256];
  const char *why = NULL;
  size_t n = path_join(out, base, strlen(base), rel, rlen, &why);
  if (n == (size_t)-1) return why;
  CHECK(n <= PATH_JOIN_ROOM(strlen(base), rlen));
  out[n] = '\0';
  return out;
}
#define J(base, rel) join(base, rel, strlen(rel))

int main(void) {
  CHECK_STR(J("data", "a.txt"), "data/a.txt");
  CHECK_STR(J("data", "sub/a.txt"), "data/sub/a.txt");
  CHECK_STR(J("data///", ".//sub/./a.txt/"), "data/sub/a.txt");
  CHECK_STR(J("data", ""), "data");
  CHECK_STR(J("data", "."), "data");
  CHECK_STR(J("", "a"), "./a");
  CHECK_STR(J("/", "a"), "/a");
  CHECK_STR(J("/srv/app", "..."), "/srv/app/...");
  CHECK_STR(J("data", "a..b/..c/d.."), "data/a..b/..c/d..");
  CHECK_STR(J("data", "a\\..\\b"), "data/a\\..\\b"); /* a backslash is a character */
  CHECK_STR(J("data", ".."), "has a '..' segment");
  CHECK_STR(J("data", "../x"), "has a '..' segment");
  CHECK_STR(J("data", "a/.."), "has a '..' segment");
  CHECK_STR(J("data", "a/../b"), "has a '..' segment"); /* would stay inside: still no */
  CHECK_STR(J("data", "a//..//b"), "has a '..' segment");
  CHECK_STR(J("data", "/etc/passwd"), "is absolute");
  CHECK_STR(join("data", "a\0../b", 6), "holds a NUL byte");
  const char *why;
  char out[16];
  CHECK(path_join(out, "d\0x", 3, "a", 1, &why) == (size_t)-1);
  return check_report("test_path");
}
