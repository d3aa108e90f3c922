/* path.h — a relative path put under a folder so that it cannot lead out
 * of it: mcp.path.join and mcp.path.app (lua_api.c), and widget files. */
#ifndef LUAMCP_PATH_H
#define LUAMCP_PATH_H

#include <stddef.h>

/* PATH_JOIN_ROOM(blen, rlen): what path_join may write (no NUL added). */
#define PATH_JOIN_ROOM(blen, rlen) ((blen) + (rlen) + 2)

/* Write base "/" rel to out (room for PATH_JOIN_ROOM) and return its
   length: rel's "." and empty segments dropped, base's trailing slashes
   too (an empty base is "."; an empty or "." rel gives base itself).
   Refused, (size_t)-1 with *why saying why (a static string), when rel is
   absolute, has a ".." segment anywhere (even one that would stay inside:
   "a/../b"), or rel or base holds a NUL byte. Nothing is looked up on disk:
   a symlink inside base is followed as usual. A backslash is an ordinary
   character, as on every POSIX system. */
size_t path_join(char *out, const char *base, size_t blen, const char *rel, size_t rlen,
                 const char **why);

#endif
