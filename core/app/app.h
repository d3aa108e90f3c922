/* app.h — one loaded version of an app folder: its lua_State (with the
 * memory-accounting allocator), the mcp module, and the registry snapshot
 * built from its scripts. A reload makes a new app; the old one lives until
 * its last in-flight call ends (refs). */
#ifndef LUAMCP_APP_H
#define LUAMCP_APP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "registry.h"
#include "skills.h"
#include "vm.h"

typedef struct app {
  vm vm; /* its Lua state, as the engine runs it (vm.L) */
  char *dir;
  registry *reg;
  skills_catalog *skills; /* skills/NAME/SKILL.md (skills.h); empty without skills/ */
  /* refs into vm.L for the result shapers in lua/mcp.lua */
  int tool_result, prompt_result, resource_result;
  int state_ref; /* mcp.state, carried over to the next version */
} app;

/* The app folder is in its state's registry under this key. */
#define APP_DIR_KEY "luamcp.appdir"
/* ... and, once loaded, what app.lua said (a table; absent without app.lua)
   and the registration table lua/mcp.lua filled: what `luamcp list` and
   `luamcp pack` read (lua/ship.lua) */
#define APP_INFO_KEY "luamcp.appinfo"
#define APP_REG_KEY "luamcp.appreg"
/* ... and the skills as `luamcp list` shows them (skills_push_list) */
#define APP_SKILLS_KEY "luamcp.appskills"

typedef struct app_config {
  size_t page_size;  /* items per list page */
  bool allow_bytecode; /* load() etc. may take binary chunks (lua_guard.h) */
  bool sandbox;      /* --sandbox: an app the user did not write (sandbox.h);
                        never together with allow_bytecode */
  bool declare_all;  /* declare tools/resources/prompts even when empty (they
                        may appear on reload) */
  double load_timeout; /* seconds loading may take (--load-timeout, vm_limit_load); 0: no limit */
  /* run once lua/mcp.lua is loaded, before app.lua and the scripts (with
     the debug library still whole): luamcp test puts its fakes in place.
     False with its problem appended to errors fails the load. */
  bool (*prelude)(lua_State *L, void *ud, buf *errors);
  void *prelude_ud;
  /* once everything else loaded: the app's migrations (db_migrate), on
     mcp.db's file (a reload's: the version before serves on when they
     fail) or on a scratch database in memory (luamcp check) */
  enum { APP_MIGRATE_NONE, APP_MIGRATE_DATA, APP_MIGRATE_SCRATCH } migrate;
} app_config;

/* Load DIR (app.lua, then every scripts/NAME.lua, and skills/). On any problem returns
   NULL and appends one "file:line: message" line per problem to errors.
   With a previous version, its mcp.state is copied over first and the new
   scripts' mcp.on_reload hook (if any) is called with it. */
app *app_load(const char *dir, const app_config *cfg, const app *previous, buf *errors);
/* The same in two halves, so that a reload can run the scripts on a thread
   of its own while the previous version serves: app_load_begin makes the
   fresh state and copies previous's mcp.state into it, on the thread that
   may touch previous (the engine's run-lock holder; it also sets the
   guards' process-wide functions, lua_guard.h); app_load_end runs the
   rest (app.lua, the scripts, skills, mcp.on_reload, the registry) on any
   one thread, and stops at the next hook once *stop (if given) is set: a
   load that never ends on its own (a loop at a script's top level) is
   stopped at shutdown. app_load_end takes (frees) what app_load_begin
   returned; either one returns NULL with the problems in errors. */
typedef struct app_loading app_loading;
app_loading *app_load_begin(const char *dir, const app_config *cfg, const app *previous,
                            buf *errors);
app *app_load_end(app_loading *l, const atomic_bool *stop, buf *errors);
void app_free(app *a);

#endif
