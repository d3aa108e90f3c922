/* app.c — load an app folder into a fresh lua_State (see app.h). */
#include "app.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <lua-cjson.h>

#include "call.h"
#include "db.h"
#include "embedded.h"
#include "json.h"
#include "lua_api.h"
#include "log.h"
#include "sandbox.h"

/* Load and run one script file in its own environment (a table that reads
   through to _G). Pushes the environment and the chunk's first result. */
static bool run_script(app *a, const char *path, const char *shown, buf *errors) {
  if (vm_load_expired(&a->vm)) return false; /* reported once, at the script that took it */
  lua_State *L = a->vm.L;
  buf src;
  buf_init(&src);
  if (!buf_read_file(&src, path)) {
    buf_printf(errors, "%s: cannot read: %s\n", shown, strerror(errno));
    buf_free(&src);
    return false;
  }
  char chunkname[1024];
  snprintf(chunkname, sizeof chunkname, "@%s", shown);
  int status = luaL_loadbufferx(L, src.p ? src.p : "", src.len, chunkname, "t");
  buf_free(&src);
  if (status != LUA_OK) {
    buf_printf(errors, "%s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    return false;
  }
  lua_newtable(L); /* env */
  lua_createtable(L, 0, 1);
  lua_pushglobaltable(L);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_setupvalue(L, -3, 1); /* the chunk's _ENV */
  lua_insert(L, -2);        /* env, chunk */
  if (vm_pcall(L, 0, 1, NULL) != LUA_OK) {
    buf_printf(errors, "%s\n", lua_tostring(L, -1));
    lua_pop(L, 2);
    return false;
  }
  return true;
}

/* app.lua's fields and their types (mcp.lua's _app_info at fn): one
   "app.lua:LINE: ..." line per problem. */
static bool check_app_info(lua_State *L, int fn, int info, const char *path, buf *errors) {
  buf src;
  buf_init(&src);
  buf_read_file(&src, path);
  lua_pushvalue(L, fn);
  lua_pushvalue(L, info);
  lua_pushstring(L, path);
  lua_pushlstring(L, src.p ? src.p : "", src.len);
  buf_free(&src);
  if (vm_pcall(L, 3, 1, NULL) != LUA_OK) {
    buf_printf(errors, "%s: %s\n", path, lua_tostring(L, -1));
    lua_pop(L, 1);
    return false;
  }
  bool ok = true;
  for (lua_Integer i = 1; lua_istable(L, -1) && i <= (lua_Integer)lua_rawlen(L, -1); i++) {
    lua_rawgeti(L, -1, i);
    buf_printf(errors, "%s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    ok = false;
  }
  lua_pop(L, 1);
  return ok;
}

static int is_lua_file(const struct dirent *d) {
  size_t n = strlen(d->d_name);
  return d->d_name[0] != '.' && n > 4 && strcmp(d->d_name + n - 4, ".lua") == 0;
}

static void join(char *out, size_t cap, const char *dir, const char *name) {
  if (strcmp(dir, ".") == 0) snprintf(out, cap, "%s", name);
  else snprintf(out, cap, "%s/%s", dir, name);
}

/* Run every .lua file of scripts/ in name order; report every failing file. */
/* Scripts are the .lua files right in scripts/ (reload watches that
   folder): a subfolder holding .lua files is said, not silently skipped. */
static void warn_subfolders(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char sub[4096 + 256];
    snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(sub, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    struct dirent **inner;
    int k = scandir(sub, &inner, is_lua_file, alphasort);
    if (k > 0)
      log_msg(LOG_WARNING, "%s/: %d .lua file%s not loaded (scripts are the .lua files directly in "
              "scripts/; modules for require go in lib/)", sub, k, k == 1 ? "" : "s");
    for (int i = 0; i < k; i++) free(inner[i]);
    if (k >= 0) free(inner);
  }
  closedir(d);
}

static bool load_scripts(app *a, buf *errors) {
  char dir[4096];
  join(dir, sizeof dir, a->dir, "scripts");
  struct dirent **names;
  int n = scandir(dir, &names, is_lua_file, alphasort);
  if (n < 0) {
    buf_printf(errors, "%s: cannot open the scripts folder: %s\n", dir, strerror(errno));
    return false;
  }
  bool ok = true;
  warn_subfolders(dir);
  for (int i = 0; i < n; i++) {
    char path[4096 + 256];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    if (run_script(a, path, path, errors)) lua_pop(a->vm.L, 2);
    else ok = false;
    free(names[i]);
  }
  free(names);
  return ok;
}

static int get_ref(lua_State *L, int module, const char *name) {
  lua_getfield(L, module, name);
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

/* {====== carrying mcp.state across a reload (between two lua_States) */

/* Push a copy of the value at fidx of `from` onto `to`: strings, numbers,
   booleans and tables (cycles kept, via seen: a table on `to` mapping the
   source table's address to its copy). Anything else becomes nil. */
static void copy_value(lua_State *from, int fidx, lua_State *to, int seen, int depth) {
  switch (lua_type(from, fidx)) {
    case LUA_TSTRING: {
      size_t n;
      const char *p = lua_tolstring(from, fidx, &n);
      lua_pushlstring(to, p, n);
      return;
    }
    case LUA_TNUMBER:
      if (lua_isinteger(from, fidx)) lua_pushinteger(to, lua_tointeger(from, fidx));
      else lua_pushnumber(to, lua_tonumber(from, fidx));
      return;
    case LUA_TBOOLEAN: lua_pushboolean(to, lua_toboolean(from, fidx)); return;
    case LUA_TLIGHTUSERDATA:
      if (lua_touserdata(from, fidx) == NULL) { /* JSON null */
        lua_pushlightuserdata(to, NULL);
        return;
      }
      break;
    case LUA_TTABLE: {
      const void *key = lua_topointer(from, fidx);
      if (lua_rawgetp(to, seen, key) == LUA_TTABLE) return;
      lua_pop(to, 1);
      if (depth > 100 || !lua_checkstack(to, 6) || !lua_checkstack(from, 4)) break;
      lua_newtable(to);
      lua_pushvalue(to, -1);
      lua_rawsetp(to, seen, key);
      int t = lua_gettop(to);
      if (lua_getmetatable(from, fidx)) { /* keep the JSON array mark */
        lua_pop(from, 1);
        if (json_table_array_len(from, fidx) >= 0 && lua_rawlen(from, fidx) == 0)
          json_mark_array(to, t);
      }
      fidx = lua_absindex(from, fidx);
      lua_pushnil(from);
      while (lua_next(from, fidx)) {
        copy_value(from, -2, to, seen, depth + 1);
        copy_value(from, -1, to, seen, depth + 1);
        if (lua_isnil(to, -2) || lua_isnil(to, -1)) lua_pop(to, 2);
        else lua_rawset(to, t);
        lua_pop(from, 1);
      }
      return;
    }
    default: break;
  }
  lua_pushnil(to);
}

/* Copy the previous version's mcp.state into the table at `into` of the new
   state (its own mcp.state, or the snapshot given to mcp.on_reload). */
static void carry_state(const app *previous, lua_State *to, int into) {
  lua_State *from = previous->vm.L;
  lua_rawgeti(from, LUA_REGISTRYINDEX, previous->state_ref);
  lua_pushvalue(to, into);
  int t = lua_gettop(to);
  lua_newtable(to);
  int seen = lua_gettop(to);
  lua_pushvalue(to, t);
  lua_rawsetp(to, seen, lua_topointer(from, -1)); /* the root maps to the existing table */
  lua_pushnil(from);
  while (lua_next(from, -2)) {
    copy_value(from, -2, to, seen, 1);
    copy_value(from, -1, to, seen, 1);
    if (lua_isnil(to, -2) || lua_isnil(to, -1)) lua_pop(to, 2);
    else lua_rawset(to, t);
    lua_pop(from, 1);
  }
  lua_pop(from, 1);
  lua_settop(to, t - 1);
}

/* }====== */

/* registry_build reads tables the scripts made (app.lua's, registration
   tables): a metamethod that raises must be a load error, not an abort. */
typedef struct build_args {
  int reg, info;
  const app_config *cfg;
  const skills_catalog *skills;
  buf *errors;
  registry *out;
} build_args;

/* the tables come as arguments: a C function sees only its own frame */
static int build_entry(lua_State *L) {
  build_args *b = lua_touserdata(L, 1);
  b->out = registry_build(L, 2, b->info ? 3 : 0, b->cfg->page_size, b->cfg->declare_all,
                          b->skills, b->errors);
  return 0;
}

static registry *build_protected(lua_State *L, int reg, int info, const app_config *cfg,
                                 const skills_catalog *skills, buf *errors) {
  build_args b = {.reg = reg, .info = info, .cfg = cfg, .skills = skills, .errors = errors};
  lua_pushcfunction(L, build_entry);
  lua_pushlightuserdata(L, &b);
  lua_pushvalue(L, reg);
  if (info) lua_pushvalue(L, info);
  if (vm_pcall(L, info ? 3 : 2, 0, NULL) != LUA_OK) {
    buf_printf(errors, "%s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    return NULL;
  }
  return b.out;
}

/* Run the embedded chunk `name` with the nargs values on top of L's stack,
   leaving nres results. */
static bool run_embedded(lua_State *L, const char *name, int nargs, int nres, buf *errors) {
  size_t len = 0;
  const char *src = embedded_source(name, &len);
  char chunk[32];
  snprintf(chunk, sizeof chunk, "=%s.lua", name);
  if (!src || luaL_loadbufferx(L, src, len, chunk, "t") != LUA_OK) {
    buf_printf(errors, "internal: %s\n", src ? lua_tostring(L, -1) : "a runtime chunk is not embedded");
    return false;
  }
  lua_insert(L, -nargs - 1);
  if (vm_pcall(L, nargs, nres, NULL) != LUA_OK) {
    buf_printf(errors, "internal: %s\n", lua_tostring(L, -1));
    return false;
  }
  return true;
}

/* The runtime, with the core table on top of L's stack and the registration
   table at reg: lua/internal.lua (the machinery: C keeps its result shapers),
   lua/store_db.lua (mcp.store on the database) and lua/mcp.lua (the module
   scripts require). Leaves the function that
   ends loading and app.lua's check on the stack. */
static bool load_runtime(app *a, int reg, buf *errors) {
  lua_State *L = a->vm.L;
  int core = lua_gettop(L);
  lua_pushvalue(L, core);
  if (!run_embedded(L, "internal", 1, 1, errors)) return false;
  int internal = lua_gettop(L);
  a->tool_result = get_ref(L, internal, "tool_result");
  a->prompt_result = get_ref(L, internal, "prompt_result");
  a->resource_result = get_ref(L, internal, "resource_result");
  /* mcp.store's database backend: a constructor mcp.lua calls with mcp.db */
  if (!run_embedded(L, "store_db", 0, 1, errors)) return false;
  lua_setfield(L, core, "store_db");
  lua_pushvalue(L, core);
  lua_pushvalue(L, reg);
  lua_pushvalue(L, internal);
  if (!run_embedded(L, "mcp", 3, 2, errors)) return false;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "mcp");
  lua_pop(L, 1);
  lua_getfield(L, internal, "app_info"); /* module, check, app_info */
  lua_remove(L, -3);
  return true;
}

/* An app half loaded (app_load_begin): its state, with the registration
   table at reg and lua_api_push_core's table above it. */
struct app_loading {
  app *a;
  app_config cfg; /* a copy: the rest of the load may run on another thread */
  int reg;
  int old_state; /* what mcp.on_reload gets (a ref), or LUA_NOREF without a previous version */
};

app_loading *app_load_begin(const char *dir, const app_config *cfg, const app *previous,
                            buf *errors) {
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    buf_printf(errors, "%s: not an app folder (%s)\n", dir,
               errno ? strerror(errno) : "not a directory");
    return NULL;
  }
  app *a = calloc(1, sizeof *a);
  a->dir = strdup(dir);
  static const vm_limits limits = {.interrupt = call_interrupt_reason, .in_call = call_running};
  if (!vm_open(&a->vm, a, cfg->allow_bytecode && !cfg->sandbox, &limits)) {
    buf_puts(errors, "cannot create a Lua state: out of memory\n");
    app_free(a);
    return NULL;
  }
  lua_State *L = a->vm.L;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_cjson);
  lua_setfield(L, -2, "cjson");
  lua_pop(L, 1);

  /* scripts may require their own modules from DIR/lib */
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  lua_pushfstring(L, "%s/lib/?.lua;%s/lib/?/init.lua;%s", dir, dir, lua_tostring(L, -1));
  lua_setfield(L, -3, "path");
  lua_pop(L, 2);

  /* the registration table that lua/mcp.lua fills */
  lua_createtable(L, 0, 4);
  int reg = lua_gettop(L);
  static const char *const lists[] = {"tools", "resources", "templates", "prompts"};
  for (size_t i = 0; i < 4; i++) {
    lua_newtable(L);
    lua_setfield(L, reg, lists[i]);
  }
  lua_pushstring(L, dir); /* for widget paths (lua_api.c) */
  lua_setfield(L, LUA_REGISTRYINDEX, APP_DIR_KEY);
  lua_api_push_core(L);
  lua_getfield(L, -1, "state");
  a->state_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  int old_state = LUA_NOREF; /* what mcp.on_reload gets: the state as it was */
  if (previous) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, a->state_ref);
    carry_state(previous, L, lua_gettop(L));
    lua_newtable(L);
    carry_state(previous, L, lua_gettop(L));
    old_state = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pop(L, 1);
  }
  app_loading *l = malloc(sizeof *l);
  *l = (app_loading){.a = a, .cfg = *cfg, .reg = reg, .old_state = old_state};
  return l;
}

/* app.lua: it returns a table or sets globals in its environment; the
   table of its fields is at *info after (0: no app.lua). */
static bool run_app_lua(app *a, int app_info, int *info, buf *errors) {
  lua_State *L = a->vm.L;
  char path[4096];
  join(path, sizeof path, a->dir, "app.lua");
  *info = 0;
  if (access(path, F_OK) != 0) return true;
  if (!run_script(a, path, path, errors)) return false;
  bool ok = true;
  /* a table returned, or globals set; anything else is a mistake that would
     otherwise serve as "luamcp-app 0.0.0" without a word */
  if (!lua_isnil(L, -1) && !lua_istable(L, -1)) {
    buf_printf(errors, "%s: returned a %s; return a table like { name = \"my-app\", version = \"1.0.0\" }\n",
               path, luaL_typename(L, -1));
    ok = false;
  } else if (lua_isnil(L, -1)) {
    lua_pushnil(L);
    if (lua_next(L, -3)) {
      lua_pop(L, 2); /* globals were set: they are the fields */
    } else {
      buf_printf(errors, "%s: returns nothing and sets no field: end it with return { name = ..., version = ... } "
                         "(a local table is not seen unless returned)\n", path);
      ok = false;
    }
  }
  *info = lua_istable(L, -1) ? lua_gettop(L) : lua_gettop(L) - 1;
  if (ok && !check_app_info(L, app_info, *info, path, errors)) ok = false;
  if (!sandbox_permissions(L, *info, path, errors)) ok = false;
  return ok;
}

/* What only all scripts together can tell (lua/internal.lua's check at
   index check): each problem a line of errors. */
static bool check_together(lua_State *L, int check, buf *errors) {
  bool ok = true;
  lua_pushvalue(L, check);
  if (vm_pcall(L, 0, 1, NULL) == LUA_OK) {
    for (lua_Integer i = 1; lua_istable(L, -1) && i <= (lua_Integer)lua_rawlen(L, -1); i++) {
      lua_rawgeti(L, -1, i);
      buf_printf(errors, "%s\n", lua_tostring(L, -1));
      lua_pop(L, 1);
      ok = false;
    }
  } else {
    buf_printf(errors, "internal: %s\n", lua_tostring(L, -1));
    ok = false;
  }
  lua_pop(L, 1);
  return ok;
}

/* mcp.on_reload(function(old_state)), when the app set one and a previous
   version ran, under the load's time limit */
static bool run_on_reload(app *a, int reg, int old_state, double load_timeout, buf *errors) {
  lua_State *L = a->vm.L;
  int top = lua_gettop(L);
  lua_getfield(L, reg, "on_reload");
  bool ok = true;
  if (old_state != LUA_NOREF && lua_isfunction(L, -1)) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, old_state);
    vm_limit_load(&a->vm, load_timeout);
    if (vm_pcall(L, 1, 0, NULL) != LUA_OK) {
      buf_printf(errors, "%s (in mcp.on_reload)\n", lua_tostring(L, -1));
      ok = false;
    }
    vm_limit_load(&a->vm, 0);
  }
  lua_settop(L, top);
  return ok;
}

/* The registration table, app.lua's fields and the skills' list, where the
   running version finds them. */
static void keep_registration(app *a, int reg, int info) {
  lua_State *L = a->vm.L;
  lua_pushvalue(L, reg);
  lua_setfield(L, LUA_REGISTRYINDEX, APP_REG_KEY);
  if (info && lua_istable(L, info)) {
    lua_pushvalue(L, info);
    lua_setfield(L, LUA_REGISTRYINDEX, APP_INFO_KEY);
  }
  if (a->skills->n) {
    skills_push_list(L, a->skills);
    lua_setfield(L, LUA_REGISTRYINDEX, APP_SKILLS_KEY);
  }
}

app *app_load_end(app_loading *begun, const atomic_bool *stop, buf *errors) {
  app_loading l = *begun;
  free(begun);
  app *a = l.a;
  const app_config *cfg = &l.cfg;
  lua_State *L = a->vm.L;
  a->vm.load_stop = stop;
  bool ok = load_runtime(a, l.reg, errors);
  int check = lua_gettop(L) - 1, app_info = lua_gettop(L), info = 0;
  if (ok && cfg->prelude) {
    ok = cfg->prelude(L, cfg->prelude_ud, errors);
    lua_settop(L, app_info);
  }
  /* lua/mcp.lua has taken what it needs of the debug library: from here on
     every line is the app's */
  if (ok && cfg->sandbox) ok = sandbox_install(L, a->dir, errors);
  if (ok) {
    /* app.lua and the scripts' top levels; without a time limit, the hook
       still watches *stop */
    double load_timeout = cfg->load_timeout > 0 ? cfg->load_timeout : HUGE_VAL;
    vm_limit_load(&a->vm, load_timeout);
    ok = run_app_lua(a, app_info, &info, errors);
    if (!load_scripts(a, errors)) ok = false;
    vm_limit_load(&a->vm, 0);
    a->skills = skills_load(a->dir, errors); /* a broken skill fails the load, as a script does */
    if (!a->skills) ok = false;
    if (ok) ok = check_together(L, check, errors);
    if (ok) ok = run_on_reload(a, l.reg, l.old_state, load_timeout, errors);
    if (ok) ok = (a->reg = build_protected(L, l.reg, info, cfg, a->skills, errors)) != NULL;
    if (ok) keep_registration(a, l.reg, info);
    /* last: what fails after them could not take them back */
    if (ok && cfg->migrate != APP_MIGRATE_NONE)
      ok = db_migrate(a->dir, cfg->migrate == APP_MIGRATE_SCRATCH, stop, errors);
  }
  luaL_unref(L, LUA_REGISTRYINDEX, l.old_state);
  lua_settop(L, 0);
  a->vm.load_stop = NULL; /* the caller's flag may go */
  if (!ok) {
    app_free(a);
    return NULL;
  }
  lua_gc(L, LUA_GCCOLLECT);
  return a;
}

app *app_load(const char *dir, const app_config *cfg, const app *previous, buf *errors) {
  app_loading *l = app_load_begin(dir, cfg, previous, errors);
  return l ? app_load_end(l, NULL, errors) : NULL;
}

void app_free(app *a) {
  if (!a) return;
  if (a->vm.L) registry_free(a->reg, a->vm.L);
  skills_free(a->skills);
  vm_close(&a->vm);
  free(a->dir);
  free(a);
}
