/* lua_guard.c — text-only chunk loading and the panic report (see lua_guard.h). */
#include "lua_guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "log.h"
#include "luax.h"

/* The base and debug libraries' own functions, called by the guards (the
   same C functions in every state; no upvalue a script could take back). */
static lua_CFunction real_sethook, real_collectgarbage;
static bool (*in_call)(lua_State *L);

/* debug.sethook: a handler's coroutine carries the hook that enforces its
   deadline and cancellation; a script may not remove or replace it. */
static int guarded_sethook(lua_State *L) {
  if (!in_call || in_call(L))
    return luaL_error(L, "debug.sethook is not available in a handler or while the app loads: "
                         "the time limit runs on that hook");
  return real_sethook(L);
}

/* collectgarbage("stop") would let the heap grow past every call's memory
   cap and never shrink; so would a negative "step" (it puts the next
   collection off by that many KiB: -2^31 is 2 TiB) and a step multiplier
   below the default (the collector falls behind the allocations, at 1 by
   a hundred times). A pause is at most Lua's own ~1000 %. Everything else
   passes. */
static int guarded_collectgarbage(lua_State *L) {
  const char *opt = luaL_optstring(L, 1, "collect");
  const char *why = NULL;
  if (strcmp(opt, "stop") == 0) why = "\"stop\"";
  else if (strcmp(opt, "step") == 0 && luaL_optinteger(L, 2, 0) < 0) why = "\"step\", n < 0";
  else if (strcmp(opt, "setstepmul") == 0 && luaL_optinteger(L, 2, 100) < 100)
    why = "\"setstepmul\", n < 100";
  else if (strcmp(opt, "incremental") == 0 && luaL_optinteger(L, 3, 0) != 0 &&
           luaL_optinteger(L, 3, 0) < 100)
    why = "\"incremental\", pause, stepmul < 100";
  if (why)
    return luaL_error(L, "collectgarbage(%s) is not available: the server's memory depends on "
                         "the collector", why);
  return real_collectgarbage(L);
}

/* load(chunk [, chunkname [, mode [, env]]]): the mode is always "t". The
   original load is upvalue 1. */
static int text_load(lua_State *L) {
  if (lua_gettop(L) < 3) lua_settop(L, 3); /* an env (4th) stays in place */
  lua_pushliteral(L, "t");
  lua_replace(L, 3);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* loadfile(filename [, mode [, env]]) */
static int text_loadfile(lua_State *L) {
  const char *name = luaL_optstring(L, 1, NULL);
  int env = lua_gettop(L) >= 3 ? 3 : 0;
  if (luaL_loadfilex(L, name, "t") != LUA_OK) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  if (env) {
    lua_pushvalue(L, env);
    if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
  }
  return 1;
}

static int dofile_cont(lua_State *L, int status, lua_KContext k) {
  (void)status, (void)k;
  return lua_gettop(L) - 1;
}

/* dofile([filename]) */
static int text_dofile(lua_State *L) {
  const char *name = luaL_optstring(L, 1, NULL);
  lua_settop(L, 1);
  if (luaL_loadfilex(L, name, "t") != LUA_OK) return lua_error(L);
  lua_callk(L, 0, LUA_MULTRET, 0, dofile_cont);
  return dofile_cont(L, 0, 0);
}

/* package.searchers[2], text only: find NAME on package.path and load it. */
static int text_searcher(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "searchpath");
  lua_pushstring(L, name);
  lua_getfield(L, -3, "path");
  lua_call(L, 2, 2);
  if (lua_isnil(L, -2)) return 1; /* the message of what was tried */
  const char *file = lua_tostring(L, -2);
  if (luaL_loadfilex(L, file, "t") != LUA_OK)
    return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s", name, file,
                      lua_tostring(L, -1));
  lua_pushstring(L, file);
  return 2;
}

/* {====================================================== coroutines */

/* A coroutine gets its hook when it is made (Lua copies the maker's), so
   one made while the app loaded has none: resumed from a handler, its
   loops would escape the call's deadline, cancel and watchdog. Every
   resume (coroutine.resume, a wrap function, coroutine.close, which runs
   __close variables) therefore gives the coroutine the resumer's hook
   first, so it runs under the limits of the call that runs it, whoever
   made it. A coroutine the call's limit stopped is left as it is: Lua
   runs no hook on a coroutine whose hook raised, so its pending __close
   variables could not be bounded (the engine skips them for a call's own
   coroutine, engine.c's close_variables); coroutine.close then reports it
   instead of running them. */

static lua_CFunction real_resume, real_close;
static lua_pattern_interrupt interrupt;
static const char STOPPED_KEY = 0; /* registry: weak set of stopped coroutines */

static void carry_hook(lua_State *L, lua_State *co) {
  if (co && co != L) lua_sethook(co, lua_gethook(L), lua_gethookmask(L), lua_gethookcount(L));
}

static void push_stopped(lua_State *L) { luax_push_weak_table(L, &STOPPED_KEY); }

/* co failed: if the call is being stopped, that is why (its hook raised). */
static void note_if_stopped(lua_State *L, int co_index) {
  if (!interrupt || !interrupt(L)) return;
  push_stopped(L);
  lua_pushvalue(L, co_index);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

static bool was_stopped(lua_State *L, int co_index) {
  push_stopped(L);
  lua_pushvalue(L, co_index);
  bool stopped = lua_rawget(L, -2) != LUA_TNIL;
  lua_pop(L, 2);
  return stopped;
}

/* coroutine.resume(co, ...): the real one, after the hook. */
static int guarded_resume(lua_State *L) {
  lua_State *co = lua_tothread(L, 1);
  carry_hook(L, co);
  int n = real_resume(L); /* same stack, same frame: its errors read as before */
  if (co && n >= 1 && !lua_toboolean(L, -n)) note_if_stopped(L, 1);
  return n;
}

/* coroutine.close(co) */
static int guarded_close(lua_State *L) {
  lua_State *co = lua_tothread(L, 1);
  if (co && was_stopped(L, 1)) {
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "the coroutine was stopped by a call's time limit or cancel: its <close> "
                       "variables are not run");
    return 2;
  }
  carry_hook(L, co);
  return real_close(L);
}

/* lcorolib.c's auxresume (Lua 5.4, MIT licence) */
static int auxresume(lua_State *L, lua_State *co, int narg) {
  int nres;
  if (!lua_checkstack(co, narg)) {
    lua_pushliteral(L, "too many arguments to resume");
    return -1;
  }
  lua_xmove(L, co, narg);
  int status = lua_resume(co, L, narg, &nres);
  if (status == LUA_OK || status == LUA_YIELD) {
    if (!lua_checkstack(L, nres + 1)) {
      lua_pop(co, nres);
      lua_pushliteral(L, "too many results to resume");
      return -1;
    }
    lua_xmove(co, L, nres);
    return nres;
  }
  lua_xmove(co, L, 1);
  return -1;
}

/* A coroutine.wrap function: lcorolib.c's auxwrap, with the hook first. */
static int guarded_auxwrap(lua_State *L) {
  lua_State *co = lua_tothread(L, lua_upvalueindex(1));
  carry_hook(L, co);
  int r = auxresume(L, co, lua_gettop(L));
  if (r >= 0) return r;
  int stat = lua_status(co);
  if (stat != LUA_OK && stat != LUA_YIELD) { /* an error in the coroutine */
    if (interrupt && interrupt(L)) {
      lua_pushvalue(L, lua_upvalueindex(1));
      note_if_stopped(L, lua_gettop(L));
      lua_pop(L, 1);
    } else {
      stat = lua_resetthread(co); /* close its to-be-closed variables */
      lua_xmove(co, L, 1);        /* their error, or the coroutine's again */
    }
  }
  if (stat != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
  }
  return lua_error(L);
}

static int guarded_wrap(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_State *co = lua_newthread(L);
  lua_pushvalue(L, 1);
  lua_xmove(L, co, 1);
  lua_pushcclosure(L, guarded_auxwrap, 1);
  return 1;
}

/* }====================================================== */

static int panic(lua_State *L) {
  const char *msg = lua_tostring(L, -1);
  log_msg(LOG_ERROR, "internal error: a Lua error outside any protected call: %s",
          msg ? msg : "(not a string)");
  fflush(stderr);
  return 0; /* Lua aborts */
}

static void replace(lua_State *L, const char *lib, const char *name, lua_CFunction *real,
                    lua_CFunction guard) {
  if (lib) lua_getglobal(L, lib);
  else lua_pushglobaltable(L);
  if (lua_getfield(L, -1, name) == LUA_TFUNCTION && lua_tocfunction(L, -1)) {
    *real = lua_tocfunction(L, -1);
    lua_pushcfunction(L, guard);
    lua_setfield(L, -3, name);
  }
  lua_pop(L, 2);
}

void lua_guard_install(lua_State *L, bool allow_bytecode, lua_pattern_interrupt check,
                       bool (*running)(lua_State *L)) {
  lua_atpanic(L, panic);
  interrupt = check;
  in_call = running;
  replace(L, "debug", "sethook", &real_sethook, guarded_sethook);
  replace(L, NULL, "collectgarbage", &real_collectgarbage, guarded_collectgarbage);
  replace(L, "coroutine", "resume", &real_resume, guarded_resume);
  replace(L, "coroutine", "close", &real_close, guarded_close);
  lua_getglobal(L, "coroutine");
  lua_pushcfunction(L, guarded_wrap);
  lua_setfield(L, -2, "wrap");
  lua_pop(L, 1);
  if (allow_bytecode) return;
  lua_getglobal(L, "load");
  lua_pushcclosure(L, text_load, 1);
  lua_setglobal(L, "load");
  lua_pushcfunction(L, text_loadfile);
  lua_setglobal(L, "loadfile");
  lua_pushcfunction(L, text_dofile);
  lua_setglobal(L, "dofile");
  lua_getglobal(L, "package");
  if (lua_getfield(L, -1, "searchers") == LUA_TTABLE) {
    lua_pushcfunction(L, text_searcher);
    lua_rawseti(L, -2, 2);
  }
  lua_pop(L, 2);
}
