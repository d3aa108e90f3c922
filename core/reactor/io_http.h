/* io_http.h — mcp.http: HTTP(S) requests from handlers, on libcurl's multi
 * interface driven by the engine's loop (no thread per request). One curl
 * multi handle per process: connections and DNS answers are reused across
 * calls and across app reloads. */
#ifndef LUAMCP_IO_HTTP_H
#define LUAMCP_IO_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

typedef struct lua_State lua_State;

/* Push the module table: request, get, post. */
void io_http_push(lua_State *L);

/* A GET from a thread of its own, never the engine's (it blocks for up to
   timeout s): what the HTTP transport fetches from an authorization server.
   The body of a 200 (at most max bytes) appended to body and the response's
   Cache-Control max-age in *max_age (-1: none; 0: no-store/no-cache); false
   with err for anything else. Redirects are not followed. The transfer ends
   early once *cancel is true (may be NULL). */
bool io_http_get_blocking(const char *url, double timeout, size_t max, buf *body, long *max_age,
                          const atomic_bool *cancel, char *err, size_t cap);

#endif
