/* io_http.h — mcp.http: HTTP(S) requests from handlers, on libcurl's multi
 * interface driven by the engine's loop (no thread per request). One curl
 * multi handle per process: connections and DNS answers are reused across
 * calls and across app reloads. */
#ifndef LUAMCP_IO_HTTP_H
#define LUAMCP_IO_HTTP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct lua_State lua_State;

#include <uv.h>

/* Push the module table: request, get, post. */
void io_http_push(lua_State *L);

/* POST body to url with headers ("Name: value", NULL-terminated) on the
   same multi handle, and drop the answer: for a message nobody waits for
   (mcp.client's notifications/cancelled to an HTTP upstream). False if it
   could not be started. */
bool io_http_send(uv_loop_t *loop, const char *url, const char *const *headers, const char *body,
                  size_t len, long timeout_ms);

#endif
