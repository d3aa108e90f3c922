/* vm.c — an app version's Lua state (see vm.h). */
#include "vm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "clock.h"
#include "lua_bounded.h"
#include "lua_guard.h"

#define LOAD_HOOK_COUNT 1000 /* VM instructions between two looks at the clock */

/* Refuse only growth past the ceiling, as Lua's own test allocator does:
   shrinking and freeing must always succeed. */
static void *vm_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  vm *v = ud;
  if (!ptr) osize = 0;
  if (nsize == 0) {
    free(ptr);
    v->mem_used -= osize;
    return NULL;
  }
  if (nsize > osize && v->mem_ceiling && v->mem_used + (nsize - osize) > v->mem_ceiling)
    return NULL;
  void *p = realloc(ptr, nsize);
  if (p) v->mem_used = v->mem_used - osize + nsize;
  return p;
}

static vm *vm_of(lua_State *L) {
  void *ud;
  lua_getallocf(L, &ud);
  return ud;
}

/* No debug.sethook while a limit runs on the hook: in a call, or loading. */
static bool limited(lua_State *L) {
  vm *v = vm_of(L);
  return v->load_deadline > 0 || (v->in_call && v->in_call(L));
}

static bool load_stopped(const vm *v) {
  return v->load_stop && atomic_load_explicit(v->load_stop, memory_order_relaxed);
}

static void load_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  vm *v = vm_of(L);
  bool stopped = load_stopped(v);
  if (!stopped && (v->load_deadline <= 0 || clock_now() < v->load_deadline)) return;
  lua_sethook(L, load_hook, LUA_MASKCOUNT, 1); /* every instruction now: a pcall cannot swallow it */
  /* the line running (level 0: a hook runs in the interrupted function) */
  lua_Debug at;
  char where[256] = "";
  if (lua_getstack(L, 0, &at) && lua_getinfo(L, "Sl", &at) && at.currentline > 0)
    snprintf(where, sizeof where, "%s:%d: ", at.short_src, at.currentline);
  if (stopped) luaL_error(L, "%sloading stopped", where); /* shutdown, or a newer change */
  luaL_error(L, "%sloading took longer than --load-timeout (%f s): a loop at the top level of "
                "a script?", where, (lua_Number)v->load_seconds);
}

bool vm_load_expired(const vm *v) {
  return load_stopped(v) || (v->load_deadline > 0 && clock_now() >= v->load_deadline);
}

void vm_limit_load(vm *v, double seconds) {
  if (seconds > 0) {
    v->load_deadline = clock_now() + seconds;
    v->load_seconds = seconds;
    lua_sethook(v->L, load_hook, LUA_MASKCOUNT, LOAD_HOOK_COUNT);
  } else {
    v->load_deadline = 0;
    lua_sethook(v->L, NULL, 0, 0);
  }
}

bool vm_open(vm *v, void *owner, bool allow_bytecode, const vm_limits *limits) {
  memset(v, 0, sizeof *v);
  v->owner = owner;
  v->in_call = limits->in_call;
  v->L = lua_newstate(vm_alloc, v);
  if (!v->L) return false;
  lua_State *L = v->L;
  /* the extra space holds a coroutine's call (call_of); threads copy the
     main thread's, so it must say "no call" */
  memset(lua_getextraspace(L), 0, LUA_EXTRASPACE);
  luaL_openlibs(L);
  lua_guard_install(L, allow_bytecode, limits->interrupt, limited);
  /* string.find & co. that stop at the call's deadline or cancel, which
     the count hook cannot do inside one C call (lua_pattern.h) */
  lua_pattern_install(L, limits->interrupt);
  /* string.rep, table.insert/remove/move: loops a client's number can
     make endless in C (lua_bounded.h) */
  lua_bounded_install(L, limits->interrupt);
  return true;
}

void vm_close(vm *v) {
  if (v->L) lua_close(v->L);
  v->L = NULL;
}

static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int vm_pcall(lua_State *L, int nargs, int nresults, buf *traceback) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  int status = lua_pcall(L, nargs, nresults, base);
  lua_remove(L, base);
  if (status != LUA_OK) {
    size_t n;
    const char *full = lua_tolstring(L, -1, &n);
    if (!full) full = "(error)", n = 7;
    const char *tb = strstr(full, "\nstack traceback:");
    if (traceback) buf_put(traceback, full, n);
    if (tb) {
      lua_pushlstring(L, full, (size_t)(tb - full));
      lua_remove(L, -2);
    }
  }
  return status;
}
