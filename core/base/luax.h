/* luax.h — small Lua helpers the floors share. */
#ifndef LUAMCP_LUAX_H
#define LUAMCP_LUAX_H

typedef struct lua_State lua_State;

/* Push the weak-keyed table of L's registry at key (an address of the
   caller's), making it on first use: a cache that lets its keys go. */
void luax_push_weak_table(lua_State *L, const void *key);

#endif
