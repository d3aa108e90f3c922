/* http_respond.c — the responses themselves, each built in one buffer and
 * sent with one write (two writes per response halved throughput:
 * docs/PERFORMANCE.md): the status line and headers every answer carries,
 * whole responses, and errors with a JSON-RPC body. */
#include "http_internal.h"

#include <stdio.h>

#include "jsonrpc.h"
#include "metrics.h"

const char *http_status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

/* Set by route() for the request a worker answers, when --cors allows its
   Origin: one load and a branch per answer when it does not. */
static _Thread_local const char *cors_headers;

void http_cors_set(const char *headers) { cors_headers = headers; }
const char *http_cors_current(void) { return cors_headers; }

void http_start_response(buf *b, int status, const char *extra) {
  if (metrics_on) { /* every answer of the MCP listener starts here */
    static const char *const classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
    static _Atomic(metric_series *) series[5]; /* found once each: workers answer concurrently */
    int k = status / 100 - 1;
    k = k >= 0 && k < 5 ? k : 4;
    metric_series *m = atomic_load_explicit(&series[k], memory_order_acquire);
    if (!m) atomic_store_explicit(&series[k], m = metric_at(M_HTTP_RESPONSES, &classes[k]), memory_order_release);
    metric_add(m, 1);
  }
  buf_printf(b, "HTTP/1.1 %d %s\r\nCache-Control: no-cache\r\nKeep-Alive: timeout=%d\r\n", status,
             http_status_text(status), KEEP_ALIVE_S);
  if (cors_headers) buf_puts(b, cors_headers);
  if (extra) buf_puts(b, extra);
}

bool http_send_all(struct mg_connection *conn, const buf *b) {
  if (mg_write(conn, b->p, b->len) == (int)b->len) return true;
  /* a response cut short: what civetweb would read or write next on this
     connection would not line up with it */
  mg_disable_connection_keep_alive(conn);
  return false;
}

/* A complete response with a body (or none), in one write. */
int http_respond(struct mg_connection *conn, int status, const char *extra,
                   const char *type, const char *body, size_t n) {
  buf b;
  buf_init(&b);
  http_start_response(&b, status, extra);
  if (type) buf_printf(&b, "Content-Type: %s\r\n", type);
  buf_printf(&b, "Content-Length: %zu\r\n\r\n", n);
  buf_put(&b, body, n);
  http_send_all(conn, &b);
  buf_free(&b);
  return status;
}

/* An HTTP error answering request id with a JSON-RPC error (data: a JSON
   value or NULL; extra: headers or NULL). */
int http_respond_rpc_error(struct mg_connection *conn, int status, json_span id, int code,
                             const char *msg, const char *data, const char *extra) {
  buf b;
  buf_init(&b);
  jsonrpc_write_error(&b, id, code, msg, data);
  int r = http_respond(conn, status, extra, "application/json", b.p, b.len - 1);
  buf_free(&b);
  return r;
}

/* An HTTP error with a JSON-RPC error body (id null: it answers no request
   the server accepted). */
int http_respond_error(struct mg_connection *conn, int status, int code, const char *msg,
                         const char *extra) {
  buf b;
  buf_init(&b);
  jsonrpc_write_error(&b, (json_span){0}, code, msg, NULL);
  int r = http_respond(conn, status, extra, "application/json", b.p, b.len - 1);
  buf_free(&b);
  return r;
}
