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

/* A request from a thread of its own, never the engine's (it blocks for up
   to timeout s): what the HTTP transport asks of an authorization server. */
typedef struct io_http_request {
  const char *url;
  double timeout;              /* seconds */
  size_t max;                  /* bytes of the body at most */
  const atomic_bool *cancel;   /* the transfer ends early once true (may be NULL) */
  const char *form;            /* POST this application/x-www-form-urlencoded body; NULL: GET */
  const char *body;            /* or POST these body_len bytes of content_type */
  size_t body_len;
  const char *content_type;
  const char *user, *password; /* HTTP Basic credentials, or NULL */
} io_http_request;
/* The body of a 200 appended to body, and the response's Cache-Control
   max-age in *max_age (-1: none; 0: no-store/no-cache); false with err for
   anything else (never naming the credentials). Redirects are not followed. */
bool io_http_blocking(const io_http_request *r, buf *body, long *max_age, char *err, size_t cap);

#endif
