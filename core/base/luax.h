/* luax.h — small Lua helpers the floors share. */
#ifndef LUAMCP_LUAX_H
#define LUAMCP_LUAX_H

typedef struct lua_State lua_State;

/* Push the weak-keyed table of L's registry at key (an address of the
   caller's), making it on first use: a cache that lets its keys go. */
void luax_push_weak_table(lua_State *L, const void *key);
/* t[key] of the table at idx without metamethods (its type): tables a
   script handed us are its own, and a failing __index would run outside
   any protected call. */
int luax_rawfield(lua_State *L, int idx, const char *key);
/* luaL_error's, at the stack level given (luaL_where's): never returns. */
int luax_raise_at(lua_State *L, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same with the message already on top of the stack. */
int luax_error_at(lua_State *L, int level);

#endif
