/* health.c — /healthz and /readyz (health.h). */
#include "health.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <civetweb.h>

#include "http_internal.h"
#include "json.h"

static _Atomic(server *) serving;
static _Atomic(http_server *) http;
static double unhealthy_after = 10;

void health_use(server *srv, double after) {
  if (after > 0) unhealthy_after = after;
  atomic_store(&serving, srv);
}

void health_use_http(http_server *hs) { atomic_store(&http, hs); }

static int answer(struct mg_connection *conn, int status, const char *what, const char *why) {
  buf b;
  buf_init(&b);
  buf_printf(&b, "{\"status\":\"%s\"", what);
  if (why) {
    buf_puts(&b, ",\"reason\":");
    json_encode_string(&b, why, strlen(why));
  }
  buf_puts(&b, "}\n");
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\n\r\n",
            status, status == 200 ? "OK" : "Service Unavailable", b.len);
  if (strcmp(mg_get_request_info(conn)->request_method, "HEAD") != 0) mg_write(conn, b.p, b.len);
  buf_free(&b);
  return status;
}

int health_route(struct mg_connection *conn, const char *uri) {
  bool live = strcmp(uri, "/healthz") == 0, ready = strcmp(uri, "/readyz") == 0;
  if (!live && !ready) return 0;
  server *srv = atomic_load(&serving);
  char why[512];
  if (!srv) return answer(conn, 503, live ? "starting" : "not ready", "the app is loading");
  double stalled = engine_stalled_for(server_engine(srv));
  if (stalled >= unhealthy_after) {
    snprintf(why, sizeof why, "the engine has been held for %.0f s by one call (a blocking C call or a "
             "looping __gc)", stalled);
    return answer(conn, 503, live ? "unhealthy" : "not ready", why);
  }
  if (live) return answer(conn, 200, "ok", NULL);
  http_server *hs = atomic_load(&http);
  if (!server_ready(srv, why, sizeof why) || (hs && !http_keys_ready(hs, why, sizeof why)))
    return answer(conn, 503, "not ready", why);
  return answer(conn, 200, "ready", NULL);
}
