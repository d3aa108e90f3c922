/* pack_libs.c — the shared libraries a bundle carries, so that its luamcp
 * runs on a system where none of them is installed (a bare Debian, another
 * distribution with the same glibc or newer).
 *
 * Which libraries: those this very process has loaded (dl_iterate_phdr:
 * the paths the loader really resolved, no ldd to parse), plus what the TLS
 * shim and libcurl load when dlopened here once. glibc's own (libc, libm,
 * ld-linux, ...) stay the host's: they must match its kernel interface and
 * each other, so the bundle says the newest GLIBC_ version they need instead.
 *
 * How they are found: patchelf gives the binary's copy a RUNPATH of
 * $ORIGIN/lib and each library's copy $ORIGIN (their own dependencies,
 * and what dlopen loads later: RUNPATH is not inherited), rather than a
 * wrapper script setting LD_LIBRARY_PATH, which every program the app runs
 * (mcp.exec, os.execute) would inherit and load our copies through. */
#include "pack_libs.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* glibc's own libraries, by soname prefix: never bundled */
static bool glibc_own(const char *name) {
  static const char *const own[] = {"ld-linux", "libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so",
                                    "libresolv.so", "libnss_", "libutil.so", "libanl.so", "libmvec.so",
                                    "linux-vdso", "linux-gate", "ld64.so"};
  for (size_t i = 0; i < sizeof own / sizeof *own; i++)
    if (strncmp(name, own[i], strlen(own[i])) == 0) return true;
  return false;
}

typedef struct {
  const char *skip; /* the TLS shim: packed as bin/libluamcp-tls.so, not a library of lib/ */
  char *path[PACK_LIBS_MAX];
  size_t n;
  bool full;
} found;

static int collect(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  found *f = data;
  const char *p = info->dlpi_name;
  if (!p || p[0] != '/') return 0; /* the executable itself, the vDSO */
  const char *base = strrchr(p, '/') + 1;
  if (glibc_own(base) || strcmp(base, f->skip) == 0) return 0;
  for (size_t i = 0; i < f->n; i++)
    if (strcmp(strrchr(f->path[i], '/') + 1, base) == 0) return 0;
  if (f->n == PACK_LIBS_MAX) return f->full = true, 0;
  f->path[f->n++] = strdup(p);
  return 0;
}

static bool copy_file(const char *from, const char *to, mode_t mode) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0) return false;
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  bool ok = out >= 0;
  char chunk[65536];
  ssize_t n;
  while (ok && (n = read(in, chunk, sizeof chunk)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
    } else ok = write(out, chunk, (size_t)n) == n;
  }
  close(in);
  if (out >= 0 && close(out) != 0) ok = false;
  return ok;
}

/* patchelf --set-rpath RPATH FILE: true when it ran and succeeded */
static bool set_rpath(const char *file, const char *rpath) {
  char *argv[] = {"patchelf", "--set-rpath", (char *)rpath, (char *)file, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawnp(&pid, "patchelf", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return false;
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The newest "GLIBC_2.N" named in file (its version needs are strings of
   .dynstr: a scan finds them without parsing .gnu.version_r), kept in best
   when newer. */
static void glibc_needed(const char *file, int *major, int *minor) {
  FILE *f = fopen(file, "rb");
  if (!f) return;
  static const char tag[] = "GLIBC_";
  char chunk[65536 + 16];
  size_t keep = 0, n;
  while ((n = fread(chunk + keep, 1, sizeof chunk - keep - 1, f)) > 0) {
    size_t len = keep + n;
    chunk[len] = '\0';
    for (size_t i = 0; i + 6 < len; i++) {
      if (memcmp(chunk + i, tag, 6) != 0) continue;
      int a, b;
      if (sscanf(chunk + i + 6, "%d.%d", &a, &b) == 2 && (a > *major || (a == *major && b > *minor)))
        *major = a, *minor = b;
    }
    keep = len < 16 ? len : 16; /* a tag across the chunk's end */
    memmove(chunk, chunk + len - keep, keep);
  }
  fclose(f);
}

static bool fail(char *why, size_t cap, const char *what, const char *path) {
  snprintf(why, cap, "%s%s", what, path ? path : "");
  return false;
}

bool pack_libs_stage(pack_libs *pl, const char *exe, const char *shim, char *why, size_t cap) {
  memset(pl, 0, sizeof *pl);
  struct utsname u;
  snprintf(pl->arch, sizeof pl->arch, "%.31s", uname(&u) == 0 ? u.machine : "unknown");
  /* what the shim and libcurl would load: dlopen them here once */
  if (shim) dlopen(shim, RTLD_LAZY | RTLD_LOCAL);
  dlopen("libcurl.so.4", RTLD_LAZY | RTLD_LOCAL);
  found f = {.skip = "libluamcp-tls.so"};
  dl_iterate_phdr(collect, &f);
  bool ok = false;
  const char *tmp = getenv("TMPDIR");
  snprintf(pl->dir, sizeof pl->dir, "%s/luamcp-pack-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (f.full) {
    fail(why, cap, "more shared libraries than a bundle takes", NULL);
    goto out;
  }
  if (!mkdtemp(pl->dir)) {
    fail(why, cap, "cannot make a staging folder in ", tmp && *tmp ? tmp : "/tmp");
    pl->dir[0] = '\0';
    goto out;
  }
  char lib[PATH_MAX + 8], to[PATH_MAX * 2];
  snprintf(lib, sizeof lib, "%s/lib", pl->dir);
  snprintf(pl->exe, sizeof pl->exe, "%s/luamcp", pl->dir);
  if (mkdir(lib, 0755) != 0 || !copy_file(exe, pl->exe, 0755)) {
    fail(why, cap, "cannot copy ", exe);
    goto out;
  }
  if (!set_rpath(pl->exe, "$ORIGIN/lib")) {
    fail(why, cap, "patchelf did not run (Debian: apt-get install patchelf)", NULL);
    goto out;
  }
  int major = 0, minor = 0;
  glibc_needed(pl->exe, &major, &minor);
  if (shim) {
    snprintf(pl->shim, sizeof pl->shim, "%s/libluamcp-tls.so", pl->dir);
    if (!copy_file(shim, pl->shim, 0755) || !set_rpath(pl->shim, "$ORIGIN/lib")) {
      fail(why, cap, "cannot stage ", shim);
      goto out;
    }
    glibc_needed(pl->shim, &major, &minor);
  }
  for (size_t i = 0; i < f.n; i++) {
    const char *base = strrchr(f.path[i], '/') + 1;
    snprintf(to, sizeof to, "%s/%s", lib, base);
    if (!copy_file(f.path[i], to, 0644) || !set_rpath(to, "$ORIGIN")) {
      fail(why, cap, "cannot stage ", f.path[i]);
      goto out;
    }
    glibc_needed(to, &major, &minor);
    pl->name[pl->n++] = strdup(base);
  }
  snprintf(pl->glibc, sizeof pl->glibc, "%d.%d", major, minor);
  ok = true;
out:
  for (size_t i = 0; i < f.n; i++) free(f.path[i]);
  if (!ok) pack_libs_free(pl);
  return ok;
}

void pack_libs_free(pack_libs *pl) {
  if (pl->dir[0]) {
    char p[PATH_MAX * 2];
    for (size_t i = 0; i < pl->n; i++) {
      snprintf(p, sizeof p, "%s/lib/%s", pl->dir, pl->name[i]);
      unlink(p);
    }
    /* a failure part-way leaves copies not yet in name[]: remove what lib/ holds */
    snprintf(p, sizeof p, "%s/lib", pl->dir);
    DIR *d = opendir(p);
    if (d) {
      struct dirent *de;
      char q[PATH_MAX * 2 + 256];
      while ((de = readdir(d)))
        if (de->d_name[0] != '.') snprintf(q, sizeof q, "%s/%s", p, de->d_name), unlink(q);
      closedir(d);
    }
    rmdir(p);
    if (pl->exe[0]) unlink(pl->exe);
    if (pl->shim[0]) unlink(pl->shim);
    rmdir(pl->dir);
  }
  for (size_t i = 0; i < pl->n; i++) free(pl->name[i]);
  memset(pl, 0, sizeof *pl);
}
