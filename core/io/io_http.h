/* io_http.h — mcp.http: HTTP(S) requests from handlers, on libcurl's multi
 * interface driven by the engine's loop (no thread per request). One curl
 * multi handle per process: connections and DNS answers are reused across
 * calls and across app reloads. */
#ifndef LUAMCP_IO_HTTP_H
#define LUAMCP_IO_HTTP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct lua_State lua_State;

/* Push the module table: request, get, post. */
void io_http_push(lua_State *L);

#endif
