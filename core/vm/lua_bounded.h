/* lua_bounded.h — the standard library functions whose work a client's
 * number can make endless, again, so that the call's limits end them.
 *
 * Why: a C function runs where the count hook never fires, and some of
 * Lua 5.4's loop as many times as an argument says while allocating
 * nothing, so neither --timeout nor --memory-limit can stop them:
 * string.rep("", 2^62) repeats an empty copy 2^62 times; table.move(t, 1,
 * 2^62, 1, {}) moves 2^62 nils; table.insert(t, 1, v) and table.remove(t,
 * 1) shift up to #t elements, and a __len metamethod may say anything.
 * The replacements keep Lua's results and error messages (from ltablib.c
 * and lstrlib.c, MIT licence) and ask the interrupt check every
 * BOUNDED_CHECK_EVERY elements (string.rep: every doubling past a MiB), so
 * the call's deadline and the client's cancel end them as they end Lua
 * code. string.rep also builds its result by doubling: a few memcpy
 * instead of one per copy.
 *
 * The audit of the rest (each is bounded by its input or output, and so
 * by --max-message and --memory-limit, or runs Lua code that the hook
 * sees) is in SECURITY.md. The pattern functions are lua_pattern.c's. */
#ifndef LUAMCP_LUA_BOUNDED_H
#define LUAMCP_LUA_BOUNDED_H

#include "lua_pattern.h" /* lua_pattern_interrupt: the same check */

#define BOUNDED_CHECK_EVERY 4096

/* Replace string.rep, table.insert, table.remove and table.move in L's
   libraries (the tables in package.loaded: s:rep uses the new one too).
   check may be NULL: the functions then never stop. */
void lua_bounded_install(lua_State *L, lua_pattern_interrupt check);

#endif
