/* health.h — GET /healthz and /readyz, on the MCP listener and the
 * --metrics one, without a token (docs/http.md):
 *   /healthz  alive: 200, or 503 when the engine has been held past
 *             --unhealthy-after by one thing (a blocking C call, a looping
 *             __gc): a supervisor restarts what answers 503 here;
 *   /readyz   ready: 200 once the app is loaded and every dependency it was
 *             given answers (Redis for --store and --bus, the issuers' keys
 *             when authorization is on); else 503 naming what is not.
 * Cheap (no allocation but the answer's, no lock the engine holds), never
 * logged: a load balancer polls them every second. */
#ifndef LUAMCP_HEALTH_H
#define LUAMCP_HEALTH_H

#include <stdbool.h>

#include "server.h"

struct mg_connection;
typedef struct http_server http_server;

/* What the checks ask: the server (NULL: not serving yet), the HTTP
   transport's authorization (NULL: none), the stall that is unhealthy. */
void health_use(server *srv, double unhealthy_after);
void health_use_http(http_server *hs);
/* uri is /healthz or /readyz: answered (the status); else 0. */
int health_route(struct mg_connection *conn, const char *uri);

#endif
