/* metrics_http.c — GET /metrics on a listener of its own (metrics_http.h). */
#include "metrics_http.h"

#include <stdio.h>
#include <string.h>

#include <civetweb.h>

#include "health.h"
#include "http_stop.h"
#include "log.h"
#include "metrics.h"

static struct mg_context *ctx;
static char listen_host[64]; /* what it listens on: http_stop_listener connects there */

static int answer(struct mg_connection *conn, int status, const char *type, const char *body,
                  size_t n) {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n"
            "Connection: close\r\n\r\n",
            status, status == 200 ? "OK" : status == 405 ? "Method Not Allowed" : "Not Found", type,
            n);
  if (strcmp(mg_get_request_info(conn)->request_method, "HEAD") != 0) mg_write(conn, body, n);
  return status;
}

static int on_request(struct mg_connection *conn, void *ud) {
  (void)ud;
  const struct mg_request_info *ri = mg_get_request_info(conn);
  int health = health_route(conn, ri->local_uri);
  if (health) return health;
  if (strcmp(ri->local_uri, "/metrics") != 0) return answer(conn, 404, "text/plain", "not found\n", 10);
  if (strcmp(ri->request_method, "GET") != 0 && strcmp(ri->request_method, "HEAD") != 0)
    return answer(conn, 405, "text/plain", "GET only\n", 9);
  buf b;
  buf_init(&b);
  metrics_render(&b);
  int s = answer(conn, 200, "text/plain; version=0.0.4; charset=utf-8", b.p ? b.p : "", b.len);
  buf_free(&b);
  return s;
}

/* civetweb's own error answers (a head too slow or malformed): its page
   builds a Date header with gmtime(), which is not thread-safe, and
   workers timing out slow connections at once raced on it (TSan). */
static int civetweb_error(struct mg_connection *conn, int status, const char *msg) {
  (void)msg;
  char body[64];
  int n = snprintf(body, sizeof body, "error %d\n", status);
  mg_printf(conn, "HTTP/1.1 %d Error\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
            "Connection: close\r\n\r\n%s", status, n, body);
  return 0;
}

static int quiet(const struct mg_connection *conn, const char *msg) {
  (void)conn;
  log_msg(LOG_DEBUG, "metrics listener: %s", msg);
  return 1;
}

bool metrics_http_start(const char *host, int port, char *why, size_t cap) {
  char ports[128];
  snprintf(ports, sizeof ports, "%s:%d", strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, port);
  /* civetweb gives each connection a worker until its request is read:
     connections that never finish their headers hold one each for
     request_timeout_ms (the whole of the headers, not each byte). A
     scrape's request comes in one packet, so a second is plenty, and 8
     such connections delay a scrape by about that much, not by 20 s as 2
     workers and 5 s did. A listener for operators: bind it privately. */
  const char *opts[] = {"listening_ports", ports, "num_threads", "8", "request_timeout_ms", "1000",
                        "enable_keep_alive", "no", NULL};
  struct mg_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.log_message = quiet;
  cb.http_error = civetweb_error;
  mg_init_library(0);
  metrics_on = true; /* before the listener: a scrape never sees it off */
  ctx = mg_start(&cb, NULL, opts);
  if (!ctx) {
    metrics_on = false;
    snprintf(why, cap, "--metrics: cannot listen on %s", ports);
    return false;
  }
  snprintf(listen_host, sizeof listen_host, "%s", host);
  mg_set_request_handler(ctx, "/", on_request, NULL);
  struct mg_server_port sp[1];
  int bound = mg_get_server_ports(ctx, 1, sp) == 1 ? sp[0].port : port; /* port 0: the one given */
  log_msg(LOG_INFO, "metrics on http://%s:%d/metrics",
          strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, bound);
  return true;
}

void metrics_http_stop(void) {
  http_stop_listener(ctx, listen_host);
  ctx = NULL;
}
