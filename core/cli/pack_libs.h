/* pack_libs.h — the shared libraries a bundle carries (luamcp pack). */
#ifndef LUAMCP_PACK_LIBS_H
#define LUAMCP_PACK_LIBS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define PACK_LIBS_MAX 96

typedef struct pack_libs {
  char dir[PATH_MAX];        /* the staging folder (removed by pack_libs_free) */
  char exe[PATH_MAX + 16];   /* the binary's copy, its RUNPATH $ORIGIN/lib */
  char shim[PATH_MAX + 32];  /* the TLS shim's copy, or "" */
  size_t n;
  char *name[PACK_LIBS_MAX]; /* each library's file name (its soname) in lib/ */
  char glibc[16];            /* the newest GLIBC_x.y any of them needs: the host's minimum */
  char arch[32];             /* uname's machine: x86_64, aarch64 */
} pack_libs;

/* Copies exe (and shim when not NULL) to a staging folder with every shared
   library they and libcurl (mcp.http) load, glibc's own aside, each given a
   RUNPATH that finds the others beside it (patchelf). False, with why,
   when that cannot be done (no patchelf, a copy failed): the bundle then
   carries the binary alone. */
bool pack_libs_stage(pack_libs *pl, const char *exe, const char *shim, char *why, size_t cap);

/* The staging folder removed. */
void pack_libs_free(pack_libs *pl);

#endif
