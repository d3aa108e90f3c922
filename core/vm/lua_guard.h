/* lua_guard.h — what a script may not do to the VM that runs it.
 *
 * Binary chunks: Lua does not verify bytecode, so load() of crafted or
 * corrupted bytes can crash the process. load, loadfile, dofile and
 * require (its Lua-file searcher) accept only source text unless the app
 * is served with bytecode allowed.
 *
 * The limits: debug.sethook inside a handler (the count hook enforces the
 * call's deadline and cancellation) and collectgarbage("stop"), a
 * negative "step" or a step multiplier below the default (each leaves the
 * garbage of one call after another uncollected: the heap would outgrow
 * every memory cap) raise an error.
 *
 * Coroutines: every resume gives the coroutine the resumer's hook, so one
 * made while the app loaded (with no hook) runs under the limits of the
 * call that resumes it (coroutine.resume, wrap functions, coroutine.close).
 *
 * The panic handler is the last resort: an error outside every protected
 * call is a bug of ours; it is reported with its message before the abort
 * rather than as a bare "PANIC". */
#ifndef LUAMCP_LUA_GUARD_H
#define LUAMCP_LUA_GUARD_H

#include <stdbool.h>

#include "lua_pattern.h" /* lua_pattern_interrupt */

/* Install the guards in L (after luaL_openlibs). check tells whether the
   running call is being stopped (its deadline, a cancel): NULL if not;
   running whether L runs inside a handler's call (NULL: always). */
void lua_guard_install(lua_State *L, bool allow_bytecode, lua_pattern_interrupt check,
                       bool (*running)(lua_State *L));

#endif
