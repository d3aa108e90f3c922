/* sandbox.c — --sandbox (see sandbox.h): the replaced library functions,
 * paths confined to the app folder, and app.lua's permissions. */
#include "sandbox.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#define SANDBOX_KEY "luamcp.sandbox.policy" /* the userdata (its metatable has the type name) */
#define SANDBOX_TYPE "luamcp.sandbox"

struct sandbox {
  char *root; /* realpath of the app folder */
  char *data; /* realpath of root/data when it is a folder inside root, else NULL */
  /* permissions (NULL-terminated; NULL: none declared) */
  char **exec, **http, **socket, **env;
  char **environ; /* a child's environment: PATH and the permissions.env names */
};

/* The library's own functions, called once a path or a name passed (the
   same C functions in every state). */
static lua_CFunction real_open, real_lines, real_input, real_output, real_remove, real_rename,
    real_loadfile, real_dofile, real_getenv, real_setlocale;

static void make_environ(sandbox *sb);

static void free_list(char **l) {
  for (char **p = l; p && *p; p++) free(*p);
  free(l);
}

static int sandbox_gc(lua_State *L) {
  sandbox *sb = lua_touserdata(L, 1);
  free(sb->root);
  free(sb->data);
  free_list(sb->exec), free_list(sb->http), free_list(sb->socket), free_list(sb->env);
  free_list(sb->environ);
  memset(sb, 0, sizeof *sb);
  return 0;
}

const sandbox *sandbox_of(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, SANDBOX_KEY);
  const sandbox *sb = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return sb;
}

static bool listed(char *const *list, const char *s) {
  for (; list && *list; list++)
    if (strcmp(*list, s) == 0) return true;
  return false;
}

/* {====== paths */

/* p is dir or below it */
static bool within(const char *p, const char *dir) {
  size_t n = strlen(dir);
  if (n == 1 && dir[0] == '/') return true;
  return strncmp(p, dir, n) == 0 && (p[n] == 0 || p[n] == '/');
}

/* Resolve path into out: with follow, what it names (realpath); without,
   the entry itself (its folder resolved, the last part as it is: a symlink
   stays one). A missing last part resolves too (*exists false); a missing
   folder, a dangling symlink or a loop do not (false). */
static bool resolve(const char *path, bool follow, char out[PATH_MAX], bool *exists) {
  *exists = false;
  if (follow && realpath(path, out)) {
    *exists = true;
    return true;
  }
  char tmp[PATH_MAX];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof tmp) return false;
  memcpy(tmp, path, n + 1);
  while (n > 1 && tmp[n - 1] == '/') tmp[--n] = 0;
  char *slash = strrchr(tmp, '/');
  const char *dir = ".", *base = tmp;
  if (slash == tmp) dir = "/", base = tmp + 1;
  else if (slash) *slash = 0, dir = tmp, base = slash + 1;
  if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) return false;
  char d[PATH_MAX];
  if (!realpath(dir, d)) return false;
  if (snprintf(out, PATH_MAX, "%s/%s", strcmp(d, "/") == 0 ? "" : d, base) >= PATH_MAX)
    return false;
  struct stat st;
  *exists = lstat(out, &st) == 0;
  /* there, yet realpath failed: a dangling symlink (it could create a file
     anywhere) or a loop */
  return !(follow && *exists);
}

/* The resolved path for `what` on path (write: in data/), into out; raises
   when it is not allowed. */
static void confine(lua_State *L, const char *what, const char *path, bool write, bool follow,
                    char out[PATH_MAX]) {
  const sandbox *sb = sandbox_of(L);
  bool exists;
  if (!resolve(path, follow, out, &exists))
    luaL_error(L, "%s('%s') is not allowed under --sandbox: the path does not resolve to a file "
                  "inside the app folder (%s)", what, path, sb->root);
  if (!write) {
    if (!within(out, sb->root))
      luaL_error(L, "%s('%s') is not allowed under --sandbox: only files inside the app folder "
                    "(%s) may be read", what, path, sb->root);
    return;
  }
  if (!sb->data)
    luaL_error(L, "%s('%s') is not allowed under --sandbox: files may be written only inside "
                  "the app's data/ folder (%s/data), and there is none", what, path, sb->root);
  /* data itself is a folder: what may be written is below it */
  if (!within(out, sb->data) || strcmp(out, sb->data) == 0)
    luaL_error(L, "%s('%s') is not allowed under --sandbox: files may be written only inside "
                  "the app's data/ folder (%s)", what, path, sb->data);
}

/* Put the confined path of the string at idx in its place. */
static void confine_arg(lua_State *L, int idx, const char *what, bool write, bool follow) {
  char out[PATH_MAX];
  size_t len;
  const char *path = luaL_checklstring(L, idx, &len);
  if (strlen(path) != len) luaL_error(L, "%s: the path holds a NUL byte", what);
  confine(L, what, path, write, follow, out);
  lua_pushstring(L, out);
  lua_replace(L, idx);
}

static int sb_open(lua_State *L) {
  const char *mode = luaL_optstring(L, 2, "r");
  confine_arg(L, 1, "io.open", strpbrk(mode, "wa+") != NULL, true);
  return real_open(L);
}

static int sb_lines(lua_State *L) {
  if (!lua_isnoneornil(L, 1)) confine_arg(L, 1, "io.lines", false, true);
  return real_lines(L);
}

static int sb_input(lua_State *L) {
  if (lua_type(L, 1) == LUA_TSTRING) confine_arg(L, 1, "io.input", false, true);
  return real_input(L);
}

static int sb_output(lua_State *L) {
  if (lua_type(L, 1) == LUA_TSTRING) confine_arg(L, 1, "io.output", true, true);
  return real_output(L);
}

static int sb_remove(lua_State *L) {
  confine_arg(L, 1, "os.remove", true, false);
  return real_remove(L);
}

static int sb_rename(lua_State *L) {
  confine_arg(L, 1, "os.rename", true, false);
  confine_arg(L, 2, "os.rename", true, false);
  return real_rename(L);
}

/* loadfile and dofile without a name read stdin (/dev/null when serving) */
static int sb_loadfile(lua_State *L) {
  if (!lua_isnoneornil(L, 1)) confine_arg(L, 1, "loadfile", false, true);
  return real_loadfile(L);
}

static int sb_dofile(lua_State *L) {
  if (!lua_isnoneornil(L, 1)) confine_arg(L, 1, "dofile", false, true);
  return real_dofile(L);
}

/* NAME on the templates of path (";"-separated, "?" for NAME with sep
   turned into rep), as package.searchpath does, but only files that resolve
   inside the app folder count: one elsewhere is "not found", with the same
   message as a missing one (no oracle of what exists outside). Found: pushes
   the file name, resolved into out, true. Not: pushes the list of what was
   tried, false. */
static bool search(lua_State *L, const char *name, const char *path, const char *sep,
                   const char *rep, char out[PATH_MAX]) {
  const sandbox *sb = sandbox_of(L);
  int base = lua_gettop(L);
  if (*sep) name = luaL_gsub(L, name, sep, rep);
  lua_pushliteral(L, ""); /* what was tried */
  for (const char *p = path; *p;) {
    const char *end = strchr(p, ';');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n) {
      lua_pushlstring(L, p, n);
      const char *file = luaL_gsub(L, lua_tostring(L, -1), "?", name);
      bool exists;
      if (resolve(file, true, out, &exists) && exists && within(out, sb->root) &&
          access(out, R_OK) == 0) {
        lua_replace(L, base + 1);
        lua_settop(L, base + 1);
        return true;
      }
      lua_pushfstring(L, "\n\tno file '%s'", file);
      lua_replace(L, -3); /* over the template */
      lua_pop(L, 1);
      lua_concat(L, 2);
    }
    p += n + (end ? 1 : 0);
  }
  if (lua_gettop(L) > base + 1) lua_replace(L, base + 1); /* over the name sep was turned in */
  lua_settop(L, base + 1);
  return false;
}

/* package.searchpath(name, path [, sep [, rep]]) */
static int sb_searchpath(lua_State *L) {
  char out[PATH_MAX];
  const char *name = luaL_checkstring(L, 1), *path = luaL_checkstring(L, 2);
  if (search(L, name, path, luaL_optstring(L, 3, "."), luaL_optstring(L, 4, "/"), out)) return 1;
  lua_pushnil(L);
  lua_insert(L, -2);
  return 2;
}

/* package.searchers[2]: NAME on package.path, Lua source inside the app
   folder only. Upvalue 1: the package table. */
static int sb_searcher(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  lua_getfield(L, lua_upvalueindex(1), "path");
  const char *path = lua_tostring(L, -1);
  if (!path) return luaL_error(L, "'package.path' must be a string");
  char out[PATH_MAX];
  if (!search(L, name, path, ".", "/", out)) {
    lua_pushliteral(L, "\n\t(C modules and files outside the app folder are not allowed "
                       "under --sandbox)");
    lua_concat(L, 2);
    return 1;
  }
  if (luaL_loadfilex(L, out, "t") != LUA_OK)
    return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s", name,
                      lua_tostring(L, -2), lua_tostring(L, -1));
  lua_insert(L, -2); /* the chunk, then the file name */
  return 2;
}

/* }====== */

/* {====== what is gone, and what asks app.lua */

/* Upvalue 1: the message. */
static int sandbox_refused(lua_State *L) {
  return luaL_error(L, "%s", lua_tostring(L, lua_upvalueindex(1)));
}

static void refuse(lua_State *L, int t, const char *name, const char *shown, const char *hint) {
  lua_pushfstring(L, "%s is not allowed under --sandbox%s", shown, hint);
  lua_pushcclosure(L, sandbox_refused, 1);
  lua_setfield(L, t, name);
}

static int sb_getenv(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  if (!listed(sandbox_of(L)->env, name))
    return luaL_error(L, "os.getenv('%s') is not allowed under --sandbox: app.lua's "
                         "permissions.env does not list it", name);
  return real_getenv(L);
}

static int sb_setlocale(lua_State *L) {
  if (!lua_isnoneornil(L, 1))
    return luaL_error(L, "os.setlocale with a locale is not allowed under --sandbox: the locale "
                         "is the whole server's");
  return real_setlocale(L);
}

/* Put guard in t[name], keeping the library's function in *real. */
static void wrap(lua_State *L, int t, const char *name, lua_CFunction *real, lua_CFunction guard) {
  lua_getfield(L, t, name);
  lua_CFunction f = lua_tocfunction(L, -1);
  lua_pop(L, 1);
  /* set by the first app loaded (before any call runs), the same after */
  if (f && f != guard && !*real) *real = f;
  if (!*real) { /* not the library's: nothing to guard, so nothing at all */
    refuse(L, t, name, name, "");
    return;
  }
  lua_pushcfunction(L, guard);
  lua_setfield(L, t, name);
}

/* The debug library a sandboxed script sees: traceback, the rest refused. */
static void reduced_debug(lua_State *L) {
  lua_getglobal(L, "debug");
  int real = lua_gettop(L);
  lua_newtable(L);
  int t = lua_gettop(L);
  if (lua_istable(L, real)) {
    lua_pushnil(L);
    while (lua_next(L, real)) {
      const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
      if (k && strcmp(k, "traceback") == 0) {
        lua_setfield(L, t, k);
        continue;
      }
      lua_pop(L, 1);
      if (!k) continue;
      char shown[64];
      snprintf(shown, sizeof shown, "debug.%s", k);
      refuse(L, t, k, shown, " (only debug.traceback is)");
    }
  }
  lua_pushvalue(L, t);
  lua_setglobal(L, "debug");
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushvalue(L, t);
  lua_setfield(L, -2, "debug");
  lua_settop(L, real - 1);
}

bool sandbox_install(lua_State *L, const char *dir, buf *errors) {
  char root[PATH_MAX], data[PATH_MAX + 8];
  if (!realpath(dir, root)) {
    buf_printf(errors, "%s: cannot resolve the app folder: %s\n", dir, strerror(errno));
    return false;
  }
  sandbox *sb = lua_newuserdatauv(L, sizeof *sb, 0);
  memset(sb, 0, sizeof *sb);
  if (luaL_newmetatable(L, SANDBOX_TYPE)) {
    lua_pushcfunction(L, sandbox_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, SANDBOX_KEY);
  sb->root = strdup(root);
  snprintf(data, sizeof data, "%s/data", root);
  char real_data[PATH_MAX];
  struct stat st;
  if (realpath(data, real_data) && within(real_data, root) && strcmp(real_data, root) != 0 &&
      stat(real_data, &st) == 0 && S_ISDIR(st.st_mode))
    sb->data = strdup(real_data);
  make_environ(sb);

  static const char *const use_exec = " (declare the program in app.lua's permissions.exec "
                                      "and run it with mcp.exec)";
  lua_getglobal(L, "os");
  int os = lua_gettop(L);
  refuse(L, os, "execute", "os.execute", use_exec);
  refuse(L, os, "exit", "os.exit", "");
  refuse(L, os, "tmpname", "os.tmpname", " (write inside the app's data/ folder)");
  wrap(L, os, "remove", &real_remove, sb_remove);
  wrap(L, os, "rename", &real_rename, sb_rename);
  wrap(L, os, "getenv", &real_getenv, sb_getenv);
  wrap(L, os, "setlocale", &real_setlocale, sb_setlocale);
  lua_getglobal(L, "io");
  int io = lua_gettop(L);
  refuse(L, io, "popen", "io.popen", use_exec);
  refuse(L, io, "tmpfile", "io.tmpfile", " (write inside the app's data/ folder)");
  wrap(L, io, "open", &real_open, sb_open);
  wrap(L, io, "lines", &real_lines, sb_lines);
  wrap(L, io, "input", &real_input, sb_input);
  wrap(L, io, "output", &real_output, sb_output);
  lua_getglobal(L, "string"); /* also getmetatable("").__index */
  refuse(L, lua_gettop(L), "dump", "string.dump", "");
  lua_pushglobaltable(L);
  int g = lua_gettop(L);
  wrap(L, g, "loadfile", &real_loadfile, sb_loadfile);
  wrap(L, g, "dofile", &real_dofile, sb_dofile);
  lua_getglobal(L, "package");
  int pkg = lua_gettop(L);
  refuse(L, pkg, "loadlib", "package.loadlib", "");
  lua_pushcfunction(L, sb_searchpath);
  lua_setfield(L, pkg, "searchpath");
  lua_pushliteral(L, "");
  lua_setfield(L, pkg, "cpath");
  lua_pushfstring(L, "%s/lib/?.lua;%s/lib/?/init.lua", root, root);
  lua_setfield(L, pkg, "path");
  lua_newtable(L); /* searchers: preload, then Lua files inside the folder */
  lua_getfield(L, pkg, "searchers");
  lua_rawgeti(L, -1, 1);
  lua_rawseti(L, -3, 1);
  lua_pop(L, 1);
  lua_pushvalue(L, pkg);
  lua_pushcclosure(L, sb_searcher, 1);
  lua_rawseti(L, -2, 2);
  lua_setfield(L, pkg, "searchers");
  lua_settop(L, os - 1);
  reduced_debug(L);
  return true;
}

/* }====== */

/* {====== permissions */

/* scheme://authority lowercased, "/" added when there is no path. NULL
   when url is not http(s)://host... */
static char *normal_url(const char *url) {
  size_t skip = strncasecmp(url, "http://", 7) == 0 ? 7 : strncasecmp(url, "https://", 8) == 0 ? 8 : 0;
  if (!skip) return NULL;
  size_t auth = skip + strcspn(url + skip, "/?#");
  if (auth == skip) return NULL;
  size_t n = strlen(url);
  char *out = malloc(n + 2);
  if (!out) return NULL;
  for (size_t i = 0; i < auth; i++) out[i] = (char)((url[i] >= 'A' && url[i] <= 'Z') ? url[i] + 32 : url[i]);
  size_t o = auth;
  if (url[auth] != '/') out[o++] = '/';
  memcpy(out + o, url + auth, n - auth + 1);
  return out;
}

/* The path of a normalised URL has a "." or ".." segment, or an encoded
   dot (which a server may decode into one): it could climb out of a prefix. */
static bool dot_segments(const char *u) {
  const char *p = strchr(strstr(u, "://") + 3, '/');
  size_t n = strcspn(p, "?#");
  for (size_t i = 0; i + 2 < n; i++)
    if (p[i] == '%' && p[i + 1] == '2' && (p[i + 2] == 'e' || p[i + 2] == 'E')) return true;
  for (size_t i = 0; i < n; i++) {
    if (p[i] != '/') continue;
    size_t s = i + 1, e = s;
    while (e < n && p[e] != '/') e++;
    if ((e - s == 1 && p[s] == '.') || (e - s == 2 && p[s] == '.' && p[s + 1] == '.')) return true;
  }
  return false;
}

bool sandbox_url_allowed(const sandbox *sb, const char *url) {
  char *u = normal_url(url);
  bool ok = false;
  if (u && !dot_segments(u))
    for (char **p = sb->http; p && *p && !ok; p++) ok = strncmp(u, *p, strlen(*p)) == 0;
  free(u);
  return ok;
}

void sandbox_check_url(lua_State *L, const sandbox *sb, const char *url) {
  if (!sandbox_url_allowed(sb, url))
    luaL_error(L, "mcp.http: %s is not allowed under --sandbox: no prefix in app.lua's "
                  "permissions.http covers it", url);
}

/* "host:port" as declared: the host lowercased, an IPv6 address in [] */
static char *socket_name(const char *host, long port) {
  size_t n = strlen(host) + 32;
  char *out = malloc(n);
  if (!out) return NULL;
  if (port < 0) snprintf(out, n, "unix:%s", host);
  else snprintf(out, n, strchr(host, ':') ? "[%s]:%ld" : "%s:%ld", host, port);
  for (char *p = out; port >= 0 && *p; p++)
    if (*p >= 'A' && *p <= 'Z') *p = (char)(*p + 32);
  return out;
}

void sandbox_check_socket(lua_State *L, const sandbox *sb, const char *host, long port) {
  char *name = socket_name(host, port);
  bool ok = name && listed(sb->socket, name);
  if (ok) {
    free(name);
    return;
  }
  lua_pushstring(L, name ? name : host);
  free(name);
  luaL_error(L, "mcp.socket: connecting to %s is not allowed under --sandbox: app.lua's "
                "permissions.socket does not list it", lua_tostring(L, -1));
}

void sandbox_check_exec(lua_State *L, const sandbox *sb, const char *prog, const char *cwd) {
  if (!listed(sb->exec, prog))
    luaL_error(L, "mcp.exec: running '%s' is not allowed under --sandbox: app.lua's "
                  "permissions.exec does not list it", prog);
  char out[PATH_MAX];
  bool exists;
  if (cwd && !(resolve(cwd, true, out, &exists) && exists && within(out, sb->root)))
    luaL_error(L, "mcp.exec: cwd '%s' is not allowed under --sandbox: it must be a folder "
                  "inside the app folder (%s)", cwd, sb->root);
}

void sandbox_check_child_env(lua_State *L, const sandbox *sb, const char *name) {
  (void)sb;
  if (strncmp(name, "LD_", 3) == 0 || strcmp(name, "GCONV_PATH") == 0)
    luaL_error(L, "mcp.exec: setting %s is not allowed under --sandbox: it makes any program "
                  "load code of the script's choosing", name);
}

char **sandbox_environ(const sandbox *sb) { return sb->environ; }

/* A child's environment: PATH and the permissions.env names, from ours. */
static void make_environ(sandbox *sb) {
  size_t n = 0;
  for (char **p = sb->env; p && *p; p++) n++;
  free_list(sb->environ);
  sb->environ = calloc(n + 2, sizeof *sb->environ);
  if (!sb->environ) return;
  size_t k = 0;
  const char *path = getenv("PATH");
  if (path && (sb->environ[k] = malloc(strlen(path) + 6))) sprintf(sb->environ[k++], "PATH=%s", path);
  for (char **p = sb->env; p && *p; p++) {
    const char *v = getenv(*p);
    if (!v || strcmp(*p, "PATH") == 0 || strchr(*p, '=')) continue;
    if ((sb->environ[k] = malloc(strlen(*p) + strlen(v) + 2))) sprintf(sb->environ[k++], "%s=%s", *p, v);
  }
}

/* t[key] (raw) as a list of non-empty strings; each passes check (NULL:
   any). Pushes nothing; fills *out when given. */
static bool read_list(lua_State *L, int t, const char *key, const char *file,
                      char *(*check)(const char *), char ***out, buf *errors) {
  lua_pushstring(L, key);
  int ty = lua_rawget(L, t);
  bool ok = true;
  if (ty == LUA_TNIL) {
    lua_pop(L, 1);
    return true;
  }
  size_t n = ty == LUA_TTABLE ? lua_rawlen(L, -1) : 0;
  if (ty != LUA_TTABLE) {
    buf_printf(errors, "%s: permissions.%s must be a list of strings\n", file, key);
    lua_pop(L, 1);
    return false;
  }
  char **list = calloc(n + 1, sizeof *list);
  for (size_t i = 0; list && i < n && ok; i++) {
    size_t len;
    const char *s = lua_rawgeti(L, -1, (lua_Integer)i + 1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
    if (!s || !len || strlen(s) != len) {
      buf_printf(errors, "%s: permissions.%s[%zu] must be a non-empty string\n", file, key, i + 1);
      ok = false;
    } else if (!(list[i] = check ? check(s) : strdup(s))) {
      buf_printf(errors, "%s: permissions.%s[%zu] '%s': %s\n", file, key, i + 1, s,
                 strcmp(key, "http") == 0 ? "not an http:// or https:// URL prefix with a host"
                                          : "not host:port (1-65535), [ipv6]:port or unix:/path");
      ok = false;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (ok && out) *out = list;
  else free_list(list);
  return ok;
}

/* a declared socket: host:port, [v6]:port or unix:/path, normalised */
static char *socket_entry(const char *s) {
  if (strncmp(s, "unix:", 5) == 0) return s[5] ? strdup(s) : NULL;
  const char *colon = strrchr(s, ':');
  if (!colon || colon == s) return NULL;
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (!colon[1] || *end || port < 1 || port > 65535) return NULL;
  char host[256];
  size_t hl = (size_t)(colon - s);
  if (s[0] == '[') {
    if (hl < 3 || s[hl - 1] != ']') return NULL;
    s++, hl -= 2;
  } else if (memchr(s, ':', hl)) {
    return NULL; /* an IPv6 address needs its [] */
  }
  if (hl >= sizeof host) return NULL;
  memcpy(host, s, hl);
  host[hl] = 0;
  return socket_name(host, port);
}

static char *http_entry(const char *s) { return normal_url(s); }

bool sandbox_permissions(lua_State *L, int info, const char *file, buf *errors) {
  if (!info) return true;
  info = lua_absindex(L, info);
  lua_pushliteral(L, "permissions");
  int ty = lua_rawget(L, info);
  if (ty == LUA_TNIL) {
    lua_pop(L, 1);
    return true;
  }
  if (ty != LUA_TTABLE) {
    buf_printf(errors, "%s: permissions must be a table { exec = {...}, http = {...}, "
                       "socket = {...}, env = {...} }\n", file);
    lua_pop(L, 1);
    return false;
  }
  int t = lua_gettop(L);
  bool ok = true;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    if (!k || (strcmp(k, "exec") && strcmp(k, "http") && strcmp(k, "socket") && strcmp(k, "env"))) {
      buf_printf(errors, "%s: permissions: unknown field '%s' (exec, http, socket, env)\n", file,
                 k ? k : luaL_typename(L, -1));
      ok = false;
    }
  }
  sandbox *sb = (sandbox *)sandbox_of(L);
  ok = read_list(L, t, "exec", file, NULL, sb ? &sb->exec : NULL, errors) && ok;
  ok = read_list(L, t, "http", file, http_entry, sb ? &sb->http : NULL, errors) && ok;
  ok = read_list(L, t, "socket", file, socket_entry, sb ? &sb->socket : NULL, errors) && ok;
  ok = read_list(L, t, "env", file, NULL, sb ? &sb->env : NULL, errors) && ok;
  lua_pop(L, 1);
  if (sb && ok) make_environ(sb);
  return ok;
}

/* }====== */
