/* sandbox.h — `--sandbox`: what an app the user did not write may reach
 * outside the Lua VM.
 *
 * A file of its own because it is a policy, not a safety net: lua_guard.c
 * keeps the VM itself sound for every app (text-only chunks, the hook that
 * carries the deadline, the collector); the sandbox is on only when asked and
 * narrows what an app may touch outside the VM — processes, files, the
 * environment, the network.
 *
 * Under --sandbox (installed after lua/mcp.lua has loaded, before app.lua):
 *   - gone (a call raises "... is not allowed under --sandbox"): os.execute,
 *     io.popen, os.exit, os.tmpname, io.tmpfile, package.loadlib,
 *     string.dump, os.setlocale with a locale (querying is fine), and every
 *     debug.* function but debug.traceback (the global and
 *     package.loaded.debug are the same reduced table);
 *   - files: io.open, io.lines, io.input, io.output, loadfile, dofile and
 *     require resolve their path with realpath (relative paths from the
 *     server's working directory, as everywhere) and refuse what does not
 *     end up inside the app folder: "..", absolute paths, symlinks leading
 *     out. Reading: anywhere in the app folder. Writing (a write mode,
 *     io.output, os.remove, os.rename): only inside DIR/data/, when that is
 *     a real folder of the app (not a symlink out), so an app cannot rewrite
 *     its own app.lua (its permissions) or scripts;
 *   - require: package.preload, then Lua source files on package.path that
 *     resolve inside the app folder (package.path starts as DIR/lib/?.lua;
 *     DIR/lib/?/init.lua); the C searchers are gone and package.cpath is "";
 *     package.searchpath finds only files inside the folder too;
 *   - os.getenv(NAME) only for the names in permissions.env;
 *   - mcp.exec, mcp.http, mcp.socket only as app.lua declares:
 *       permissions = { exec = { "git", "date" },          -- argv[0], exactly
 *                       http = { "https://api.example.com/v1/" }, -- URL prefixes
 *                       socket = { "127.0.0.1:6379", "unix:/run/x.sock" },
 *                       env = { "HOME", "API_KEY" } }       -- os.getenv, children
 *     A child of mcp.exec starts from PATH and the permissions.env names
 *     only (then its env= on top, which may not set LD_* or GCONV_PATH);
 *     its cwd= must be inside the app folder. A redirect mcp.http follows
 *     must be covered by a prefix too.
 * Without --sandbox `permissions` is checked (a malformed one is a load
 * error) but not enforced. */
#ifndef LUAMCP_SANDBOX_H
#define LUAMCP_SANDBOX_H

#include <stdbool.h>

#include "buf.h"

typedef struct lua_State lua_State;
typedef struct sandbox sandbox;

/* Sandbox L, whose app folder is dir. False, with a line in errors, when
   dir cannot be resolved. */
bool sandbox_install(lua_State *L, const char *dir, buf *errors);

/* Read app.lua's `permissions` from the table at info (0: no app.lua):
   checked always, kept for the checks below when L is sandboxed. False,
   with "file: ..." lines in errors, when it is malformed. Raw access only
   (the table is the script's). */
bool sandbox_permissions(lua_State *L, int info, const char *file, buf *errors);

/* L's sandbox, or NULL when L is not sandboxed. */
const sandbox *sandbox_of(lua_State *L);

/* The checks of the I/O modules. Each raises a Lua error at the script's
   line, naming the permission that is missing. */
void sandbox_check_exec(lua_State *L, const sandbox *sb, const char *prog, const char *cwd);
/* a name a child's env= sets */
void sandbox_check_child_env(lua_State *L, const sandbox *sb, const char *name);
/* what a child's environment starts from (NULL-terminated) */
char **sandbox_environ(const sandbox *sb);
void sandbox_check_url(lua_State *L, const sandbox *sb, const char *url);
/* the same without Lua (a redirect, on the loop) */
bool sandbox_url_allowed(const sandbox *sb, const char *url);
/* port < 0: a unix socket at path host */
void sandbox_check_socket(lua_State *L, const sandbox *sb, const char *host, long port);

#endif
