/* cmd_pack.c — luamcp pack: the app, this binary and its TLS shim as one
 * NAME-VERSION.mcpb (an MCP Bundle: a zip with manifest.json at its root,
 * what Claude Desktop installs with one click), and with --server-json the
 * MCP Registry's server.json naming it by its SHA-256.
 *
 * The manifest and server.json are made in Lua (lua/ship.lua) from what the
 * loaded app registered; this file walks the folder and writes the zip.
 *
 * The zip is written by libzip (Debian's libzip4, headers from libzip-dev),
 * loaded with dlopen when pack runs, as io_http.c loads libcurl: serve does
 * not gain a library it never uses, and a bundle's binary runs where libzip
 * is not installed. libzip rather than minizip (no unix modes without
 * reaching into its structures) or the zip program (a staging copy of the
 * tree, and one more program to find): it keeps each file's unix mode in
 * the external attributes, which `mcpb unpack` and Claude Desktop restore,
 * so bin/luamcp stays executable. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <nettle/sha2.h>
#include <zip.h>

#include "cli.h"
#include "pack_libs.h"

/* {====== libzip, loaded when needed */

static struct {
  zip_t *(*open)(const char *, int, int *);
  zip_source_t *(*source_buffer)(zip_t *, const void *, zip_uint64_t, int);
  zip_source_t *(*source_file)(zip_t *, const char *, zip_uint64_t, zip_int64_t);
  void (*source_free)(zip_source_t *);
  zip_int64_t (*file_add)(zip_t *, const char *, zip_source_t *, zip_flags_t);
  zip_int64_t (*dir_add)(zip_t *, const char *, zip_flags_t);
  int (*set_attributes)(zip_t *, zip_uint64_t, zip_flags_t, zip_uint8_t, zip_uint32_t);
  int (*set_compression)(zip_t *, zip_uint64_t, zip_int32_t, zip_uint32_t);
  int (*close)(zip_t *);
  void (*discard)(zip_t *);
  zip_error_t *(*get_error)(zip_t *);
  const char *(*error_strerror)(zip_error_t *);
  void (*error_init_with_code)(zip_error_t *, int);
  void (*error_fini)(zip_error_t *);
} Z;

static const char *load_libzip(void) {
  static const char *why;
  static bool done;
  if (done) return why;
  done = true;
  void *h = dlopen("libzip.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!h) return why = "libzip.so.4 is not installed (Debian: apt-get install libzip4)";
#define SYM(field, name) \
  if (!(*(void **)&Z.field = dlsym(h, name))) return why = "libzip lacks " name;
  SYM(open, "zip_open")
  SYM(source_buffer, "zip_source_buffer")
  SYM(source_file, "zip_source_file")
  SYM(source_free, "zip_source_free")
  SYM(file_add, "zip_file_add")
  SYM(dir_add, "zip_dir_add")
  SYM(set_attributes, "zip_file_set_external_attributes")
  SYM(set_compression, "zip_set_file_compression")
  SYM(close, "zip_close")
  SYM(discard, "zip_discard")
  SYM(get_error, "zip_get_error")
  SYM(error_strerror, "zip_error_strerror")
  SYM(error_init_with_code, "zip_error_init_with_code")
  SYM(error_fini, "zip_error_fini")
#undef SYM
  return NULL;
}

/* }====== */

typedef struct pack {
  zip_t *z;
  size_t files;
  const char *failed; /* the first error, or NULL */
  char why[512];
  char root[PATH_MAX]; /* the app folder, resolved: nothing outside it is packed */
  struct {             /* the folders packed so far: a link back to one is a cycle */
    dev_t dev;
    ino_t ino;
  } seen[256];
  size_t nseen;
} pack;

static void refuse(pack *p, const char *fmt, const char *a, const char *b) {
  if (p->failed) return;
  if (snprintf(p->why, sizeof p->why, fmt, a, b) >= (int)sizeof p->why) /* a long path: cut */
    memcpy(p->why + sizeof p->why - 4, "...", 4);
  p->failed = p->why;
}

/* May path (a file or folder of the app, maybe through symlinks) be
   packed? What it resolves to must be inside the app folder: a link to
   /etc/shadow is refused, not followed. */
static bool inside(pack *p, const char *path) {
  char real[PATH_MAX];
  if (!realpath(path, real)) return false;
  size_t n = strlen(p->root);
  if (strncmp(real, p->root, n) == 0 && (real[n] == '/' || real[n] == '\0')) return true;
  refuse(p, "%s: leads out of the app folder (to %s): not packed", path, real);
  return false;
}

/* A name an extractor would take for more than one plain file name: with
   a backslash (a separator on Windows: a\..\..\x escapes the bundle
   there), a colon (drive letters, alternate streams) or a control
   character. */
static bool plain_name(const char *name) {
  for (const unsigned char *c = (const unsigned char *)name; *c; c++)
    if (*c == '\\' || *c == ':' || *c < 0x20 || *c == 0x7f) return false;
  return strcmp(name, "..") != 0 && strcmp(name, ".") != 0;
}

static void add_entry(pack *p, const char *name, zip_source_t *src, mode_t mode) {
  if (p->failed) {
    if (src) Z.source_free(src);
    return;
  }
  zip_int64_t i = src ? Z.file_add(p->z, name, src, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE) : -1;
  if (i < 0) {
    if (src) Z.source_free(src);
    snprintf(p->why, sizeof p->why, "%s: %s", name, Z.error_strerror(Z.get_error(p->z)));
    p->failed = p->why;
    return;
  }
  /* unix mode in the high half, as zip(1) writes it */
  Z.set_attributes(p->z, (zip_uint64_t)i, 0, ZIP_OPSYS_UNIX,
                   ((zip_uint32_t)(S_IFREG | (mode & 0777))) << 16);
  /* the binaries and their libraries (most of the bytes): deflate's fastest
     level, a third of the time of its default for a few percent more */
  if (strncmp(name, "bin/", 4) == 0) Z.set_compression(p->z, (zip_uint64_t)i, ZIP_CM_DEFLATE, 1);
  p->files++;
}

static void pack_add_file(pack *p, const char *name, const char *path, mode_t mode) {
  add_entry(p, name, Z.source_file(p->z, path, 0, -1), mode);
}

/* A database file or one of its companions (-wal, -shm, -journal, mcp.db's
   .lock and .before-restore): the data of one installation, never shipped.
   *.sqlite* (mcp.db's db.sqlite, what a script made), *.db, *.db3. */
static bool db_file(const char *name) {
  if (strstr(name, ".sqlite")) return true;
  static const char *const tails[] = {"-wal", "-shm", "-journal", ".lock", ".before-restore"};
  size_t n = strlen(name);
  for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
    size_t t = strlen(tails[i]);
    if (n > t && strcmp(name + n - t, tails[i]) == 0) {
      n -= t;
      break;
    }
  }
  return (n > 3 && strncmp(name + n - 3, ".db", 3) == 0) || (n > 4 && strncmp(name + n - 4, ".db3", 4) == 0);
}

/* What pack leaves out is said (stderr), so that no one wonders where it went. */
static void left_out(const char *entry, const char *why) {
  fprintf(stderr, "luamcp: pack: left out %s (%s)\n", strncmp(entry, "app/", 4) == 0 ? entry + 4 : entry, why);
}

/* The app's own parts, under app/: app.lua, README*, and the folders an app
   is made of (README, "An app folder"), never dot files (.git, .luarc.json)
   nor earlier bundles, nor mcp.db's files. Not the whole folder: the example
   app is this repository's root. */
static void pack_add_tree(pack *p, const char *dir, const char *name) {
  struct stat ds;
  if (p->failed || stat(dir, &ds) != 0 || !inside(p, dir)) return;
  for (size_t i = 0; i < p->nseen; i++)
    if (p->seen[i].dev == ds.st_dev && p->seen[i].ino == ds.st_ino) return; /* packed already */
  if (p->nseen == sizeof p->seen / sizeof *p->seen) {
    refuse(p, "%s: more than 256 folders%s", dir, "");
    return;
  }
  p->seen[p->nseen].dev = ds.st_dev, p->seen[p->nseen].ino = ds.st_ino, p->nseen++;
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  char **names = NULL;
  size_t n = 0;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    names = realloc(names, (n + 1) * sizeof *names);
    names[n++] = strdup(de->d_name);
  }
  closedir(d);
  for (size_t i = 0; i < n; i++) { /* name order: the same bundle for the same tree */
    for (size_t j = i + 1; j < n; j++)
      if (strcmp(names[j], names[i]) < 0) {
        char *t = names[i];
        names[i] = names[j], names[j] = t;
      }
  }
  for (size_t i = 0; i < n; i++) {
    char path[PATH_MAX], entry[PATH_MAX];
    struct stat st;
    size_t len = strlen(names[i]);
    if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path ||
        snprintf(entry, sizeof entry, "%s/%s", name, names[i]) >= (int)sizeof entry ||
        stat(path, &st) != 0 || (len > 5 && strcmp(names[i] + len - 5, ".mcpb") == 0)) {
      free(names[i]);
      continue;
    }
    if (S_ISREG(st.st_mode) && db_file(names[i])) {
      left_out(entry, "a database file: one installation's data");
      free(names[i]);
      continue;
    }
    if (!plain_name(names[i])) {
      refuse(p, "%s: a name an unzip elsewhere would not take as one file name%s", path,
             " (a backslash, a colon or a control character)");
    } else if (S_ISDIR(st.st_mode)) {
      pack_add_tree(p, path, entry);
    } else if (S_ISREG(st.st_mode) && inside(p, path)) {
      pack_add_file(p, entry, path, st.st_mode);
    }
    free(names[i]);
  }
  free(names);
}

static void add_app(pack *p, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  static const char *const folders[] = {"scripts", "lib", "widgets", "skills", "migrations"};
  char path[PATH_MAX], entry[PATH_MAX];
  struct stat st;
  while ((de = readdir(d))) {
    const char *f = de->d_name;
    if (strcmp(f, "app.lua") != 0 && strncmp(f, "README", 6) != 0 && strncmp(f, "LICENSE", 7) != 0)
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, f);
    snprintf(entry, sizeof entry, "app/%s", f);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && plain_name(f) && inside(p, path))
      pack_add_file(p, entry, path, st.st_mode);
  }
  closedir(d);
  for (size_t i = 0; i < sizeof folders / sizeof *folders; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, folders[i]);
    snprintf(entry, sizeof entry, "app/%s", folders[i]);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) pack_add_tree(p, path, entry);
  }
  /* data/, where scripts may write: this installation's files, never shipped;
     the bundle gets the folder, empty, so that the scripts' writes still work */
  snprintf(path, sizeof path, "%s/data", dir);
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && !p->failed) {
    left_out("app/data/", "the folder scripts write in: its files are one installation's; it is packed empty");
    if (Z.dir_add(p->z, "app/data", ZIP_FL_ENC_UTF_8) < 0) {
      snprintf(p->why, sizeof p->why, "app/data/: %s", Z.error_strerror(Z.get_error(p->z)));
      p->failed = p->why;
    }
  }
}

/* The bundle's file name part: what a file name may hold of NAME. */
static void safe_name(char *out, size_t cap, const char *s) {
  size_t i = 0;
  for (; *s && i + 1 < cap; s++)
    out[i++] = (strchr("._-", *s) || (*s >= '0' && *s <= '9') || ((*s | 32) >= 'a' && (*s | 32) <= 'z'))
                   ? *s : '-';
  out[i] = '\0';
}

static bool sha256_file(const char *path, char hex[65]) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  struct sha256_ctx c;
  sha256_init(&c);
  unsigned char chunk[65536], digest[SHA256_DIGEST_SIZE];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) sha256_update(&c, n, chunk);
  bool ok = !ferror(f);
  fclose(f);
  sha256_digest(&c, sizeof digest, digest);
  for (int i = 0; i < SHA256_DIGEST_SIZE; i++) sprintf(hex + 2 * i, "%02x", digest[i]);
  return ok;
}

static bool write_text(const char *path, const char *text, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(text, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

static void set_string(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

/* --out DIR is made, with its parents, as `mkdir -p` would; false (and a
   message naming the folder) when it cannot be, or is not a folder. */
static bool make_out_dir(const char *out_dir) {
  char p[PATH_MAX];
  if (snprintf(p, sizeof p, "%s", out_dir) >= (int)sizeof p) {
    fprintf(stderr, "luamcp: pack: --out %s: the path is too long\n", out_dir);
    return false;
  }
  for (char *s = p + 1;; s++) {
    bool end = *s == '\0';
    if (*s != '/' && !end) continue;
    *s = '\0';
    struct stat st;
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
      fprintf(stderr, "luamcp: pack: cannot make the folder %s (for --out): %s\n", p, strerror(errno));
      return false;
    }
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
      fprintf(stderr, "luamcp: pack: --out %s: %s is not a folder\n", out_dir, p);
      return false;
    }
    if (end) return true;
    *s = '/';
  }
}

/* This binary, and the TLS shim beside it or installed in PREFIX/lib/luamcp
   (in the bundle it goes next to the binary, where luamcp looks first). */
static bool find_binaries(char exe[PATH_MAX], char *shim, size_t cap, bool *has_shim) {
  ssize_t n = readlink("/proc/self/exe", exe, PATH_MAX - 1);
  if (n <= 0) {
    fprintf(stderr, "luamcp: pack: cannot find this binary: %s\n", strerror(errno));
    return false;
  }
  exe[n] = '\0';
  int dirlen = (int)(strrchr(exe, '/') - exe);
  snprintf(shim, cap, "%.*s/libluamcp-tls.so", dirlen, exe);
  if (access(shim, R_OK) != 0) snprintf(shim, cap, "%.*s/../lib/luamcp/libluamcp-tls.so", dirlen, exe);
  *has_shim = access(shim, R_OK) == 0;
  return true;
}

/* manifest.json of a (made by lua/ship.lua), or NULL after saying why */
static char *make_manifest(app *a, const char *base, const pack_libs *pl, size_t *len) {
  lua_State *L = a->vm.L;
  struct utsname u;
  const char *platform = uname(&u) == 0 && strcmp(u.sysname, "Darwin") == 0 ? "darwin" : "linux";
  cli_push_app(a);
  lua_newtable(L);
  set_string(L, "name", a->reg->name ? a->reg->name : base);
  set_string(L, "version", a->reg->version ? a->reg->version : "0.0.0");
  set_string(L, "platform", platform);
  set_string(L, "binary", "bin/luamcp");
  if (pl->dir[0]) { /* the libraries bundled: the host needs this glibc and this machine */
    set_string(L, "glibc", pl->glibc);
    set_string(L, "arch", pl->arch);
    lua_createtable(L, (int)pl->n, 0);
    for (size_t i = 0; i < pl->n; i++) {
      lua_pushstring(L, pl->name[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "libraries");
  }
  buf err;
  buf_init(&err);
  if (!cli_ship_call(a, "manifest", 3, &err)) {
    fprintf(stderr, "luamcp: pack: %.*s\n", (int)err.len, err.p);
    buf_free(&err);
    return NULL;
  }
  buf_free(&err);
  const char *manifest = lua_tolstring(L, -1, len);
  char *copy = malloc(*len);
  memcpy(copy, manifest, *len);
  lua_pop(L, 1);
  return copy;
}

/* The bundle at path, written to tmp and renamed when whole; its files
   counted in *files. */
static bool write_bundle(const char *dir, const char *path, const char *tmp, char *manifest,
                         size_t mlen, const char *exe, const char *shim, bool has_shim,
                         const pack_libs *pl, size_t *files) {
  int zerr = 0;
  pack p = {.z = Z.open(tmp, ZIP_CREATE | ZIP_TRUNCATE, &zerr)};
  if (!p.z) {
    zip_error_t ze;
    Z.error_init_with_code(&ze, zerr);
    fprintf(stderr, "luamcp: pack: cannot write %s: %s\n", path, Z.error_strerror(&ze));
    Z.error_fini(&ze);
    free(manifest);
    return false;
  }
  /* the buffer is libzip's to free (freep = 1) once written */
  add_entry(&p, "manifest.json", Z.source_buffer(p.z, manifest, mlen, 1), 0644);
  /* the staged copies (their RUNPATH finds bin/lib/) when libraries are bundled */
  pack_add_file(&p, "bin/luamcp", pl->dir[0] ? pl->exe : exe, 0755);
  if (has_shim) pack_add_file(&p, "bin/libluamcp-tls.so", pl->shim[0] ? pl->shim : shim, 0755);
  for (size_t i = 0; i < pl->n; i++) {
    char from[PATH_MAX * 2], entry[PATH_MAX];
    snprintf(from, sizeof from, "%s/lib/%s", pl->dir, pl->name[i]);
    snprintf(entry, sizeof entry, "bin/lib/%s", pl->name[i]);
    pack_add_file(&p, entry, from, 0644);
  }
  if (!realpath(dir, p.root)) snprintf(p.root, sizeof p.root, "%s", dir);
  add_app(&p, dir);
  if (p.failed) fprintf(stderr, "luamcp: pack: %s\n", p.failed);
  else if (Z.close(p.z) != 0)
    fprintf(stderr, "luamcp: pack: writing %s: %s\n", path, Z.error_strerror(Z.get_error(p.z)));
  else p.z = NULL; /* written */
  if (p.z) {
    Z.discard(p.z);
    unlink(tmp);
    return false;
  }
  if (rename(tmp, path) != 0) {
    fprintf(stderr, "luamcp: pack: %s: %s\n", path, strerror(errno));
    unlink(tmp);
    return false;
  }
  *files = p.files;
  return true;
}

/* --server-json: server.json in out_dir naming the bundle (file at path) */
static bool write_server_json(app *a, const options *o, const char *out_dir, const char *path,
                              const char *file, const char *base, buf *msgs) {
  lua_State *L = a->vm.L;
  char hex[65];
  if (!sha256_file(path, hex)) {
    fprintf(stderr, "luamcp: pack: cannot read %s back\n", path);
    return false;
  }
  lua_getfield(L, LUA_REGISTRYINDEX, APP_INFO_KEY);
  lua_newtable(L);
  set_string(L, "version", a->reg->version ? a->reg->version : "0.0.0");
  set_string(L, "file", file);
  set_string(L, "sha256", hex);
  if (o->url) set_string(L, "url", o->url);
  buf err;
  buf_init(&err);
  bool ok = cli_ship_call(a, "server_json", 2, &err);
  if (!ok) fprintf(stderr, "luamcp: pack --server-json: %.*s\n", (int)err.len, err.p);
  buf_free(&err);
  if (!ok) return false;
  size_t slen;
  const char *text = lua_tolstring(L, -1, &slen);
  char sj[PATH_MAX + 32];
  snprintf(sj, sizeof sj, "%s/server.json", out_dir);
  if (!write_text(sj, text, slen)) {
    fprintf(stderr, "luamcp: pack: %s: %s\n", sj, strerror(errno));
    return false;
  }
  buf_printf(msgs, "%s: %s, sha256 %s\n", sj, a->reg->name ? a->reg->name : base, hex);
  return true;
}

int cmd_pack(options *o) {
  if (o->nargs != 1) cli_die_usage("%s", "pack needs APPDIR");
  const char *dir = o->args[0], *out_dir = o->out_dir ? o->out_dir : ".";
  const char *why = load_libzip();
  if (why) {
    fprintf(stderr, "luamcp: pack: %s\n", why);
    return 1;
  }
  char exe[PATH_MAX], shim[PATH_MAX + 64];
  bool has_shim;
  if (!find_binaries(exe, shim, sizeof shim, &has_shim)) return 1;
  int out = cli_protect_stdout();
  o->server.app.migrate = APP_MIGRATE_SCRATCH; /* a bundle's migrations apply, as check says */
  app *a = cli_load(dir, &o->server.app);
  if (!a) return 1;
  if (!make_out_dir(out_dir)) return 1; /* after the app loaded: no empty folder left */
  int status = 1;
  buf msgs;
  buf_init(&msgs);
  char base[256], file[600], path[PATH_MAX + 700], tmp[PATH_MAX + 720];
  safe_name(base, sizeof base, a->reg->name ? a->reg->name : "app");
  char version[128];
  safe_name(version, sizeof version, a->reg->version ? a->reg->version : "0.0.0");
  snprintf(file, sizeof file, "%s-%s.mcpb", base, version);
  snprintf(path, sizeof path, "%s/%s", out_dir, file);
  snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
  size_t mlen, files = 0;
  /* the shared libraries, so the bundle runs where none is installed; without
     patchelf the bundle is made as before, and says what it needs */
  pack_libs pl;
  char why_not[512];
  if (!pack_libs_stage(&pl, exe, has_shim ? shim : NULL, why_not, sizeof why_not))
    fprintf(stderr, "luamcp: pack: warning: no libraries bundled (%s): its luamcp runs only where "
                    "Debian 12's libraries are installed\n", why_not);
  char *manifest = make_manifest(a, base, &pl, &mlen);
  if (manifest && write_bundle(dir, path, tmp, manifest, mlen, exe, shim, has_shim, &pl, &files)) {
    struct stat st;
    stat(path, &st);
    buf_printf(&msgs, "%s: %zu files, %lld bytes\n", path, files, (long long)st.st_size);
    if (pl.dir[0])
      buf_printf(&msgs, "  with %zu shared libraries: runs on Linux %s with glibc %s or newer\n", pl.n, pl.arch,
                 pl.glibc);
    if (!o->server_json || write_server_json(a, o, out_dir, path, file, base, &msgs))
      status = write(out, msgs.p, msgs.len) == (ssize_t)msgs.len ? 0 : 1;
  }
  pack_libs_free(&pl);
  buf_free(&msgs);
  app_free(a);
  close(out);
  return status;
}
