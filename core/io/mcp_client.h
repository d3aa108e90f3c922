/* mcp_client.h — the C half of mcp.client (lua/client.lua holds the
 * protocol): stdio upstreams, each a child process kept for the whole
 * process (across calls and hot reloads) and shared by the calls that use
 * it, with JSON-RPC ids routed back to the call that asked; and the CLIENT
 * span and metric of every upstream request, whatever its transport. */
#ifndef LUAMCP_MCP_CLIENT_H
#define LUAMCP_MCP_CLIENT_H

typedef struct lua_State lua_State;

/* Push the table lua/client.lua drives: stdio(name, key, argv, env, cwd,
   max_message) -> link, link:send/wait/forget/notify/state/set_state/pid,
   span(upstream, method, target) -> span, span:finish(outcome [, error]). */
void mcp_client_push(lua_State *L);

/* The server ends: every stdio upstream's child is killed and its handles
   closed, so that the engine's loop can close (before engine_free). */
void mcp_client_close_all(void);

#endif
