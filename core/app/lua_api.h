/* lua_api.h — the C functions behind require "mcp": the `core` table that
 * lua/mcp.lua builds on (JSON, base64, schema checks), and the per-call
 * `ctx` object handed to every handler. */
#ifndef LUAMCP_LUA_API_H
#define LUAMCP_LUA_API_H

typedef struct lua_State lua_State;
typedef struct call call;
typedef struct principal principal;

/* Push the core table (one per state). */
void lua_api_push_core(lua_State *L);
/* Push a new ctx object for c; returns a handle for lua_api_close_ctx
   (valid while the object is referenced). */
void *lua_api_push_ctx(lua_State *L, call *c);
/* Mark the ctx finished: later use raises "call context is closed". */
void lua_api_close_ctx(void *ctx);
/* Push ctx.auth for p (ctx_auth.c): a read-only table, or nil for NULL. */
void ctx_auth_push(lua_State *L, const principal *p);
/* A completion function that offers nothing (arguments without one). */
int lua_api_no_completions(lua_State *L);

#endif
