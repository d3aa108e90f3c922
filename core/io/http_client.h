/* http_client.h — HTTP requests that block their thread, for the threads
 * that are not the engine's: the issuers' keys and introspection (core/transport)
 * and the OTLP exporter (trace_export.c). */
#ifndef LUAMCP_HTTP_CLIENT_H
#define LUAMCP_HTTP_CLIENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* A request from a thread of its own, never the engine's (it blocks for up
   to timeout s). */
typedef struct http_client_request {
  const char *url;
  double timeout;              /* seconds */
  size_t max;                  /* bytes of the body at most */
  const atomic_bool *cancel;   /* the transfer ends early once true (may be NULL) */
  const char *form;            /* POST this application/x-www-form-urlencoded body; NULL: GET */
  const char *body;            /* or POST these body_len bytes of content_type */
  size_t body_len;
  const char *content_type;
  const char *user, *password; /* HTTP Basic credentials, or NULL */
} http_client_request;
/* The body of a 200 appended to body, and the response's Cache-Control
   max-age in *max_age (-1: none; 0: no-store/no-cache); false with err for
   anything else (never naming the credentials). Redirects are not followed. */
bool http_client_fetch(const http_client_request *r, buf *body, long *max_age, char *err, size_t cap);

#endif
