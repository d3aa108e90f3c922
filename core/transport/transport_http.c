/* transport_http.c — Streamable HTTP on civetweb (see transport_http.h):
 * the handlers and the server; the rest is in the files http_internal.h
 * names.
 *
 * A POST's answer travels through an hstream: the engine writes whole
 * JSON-RPC lines into it (outlet.write) and finishes it when the request is
 * over; the civetweb worker that owns the connection waits on the stream
 * and relays: one JSON body when the only line is the final answer, SSE
 * events otherwise. A GET stream is an hstream the engine keeps as the
 * session's standalone outlet. Every response is built in one buffer and
 * sent with one write (two writes per response halved throughput:
 * docs/PERFORMANCE.md).
 *
 * Idle and hostile peers (issue 15): civetweb gives every connection a
 * worker from the moment it is accepted, so what can hold one is bounded:
 * the request head must arrive within --header-timeout (civetweb's
 * request_timeout_ms, which also bounds a read or write that makes no
 * progress), the body within --body-timeout, GET streams are capped below
 * --threads (--max-streams; 503 past it) so request workers remain. Per
 * remote address: live sessions (--max-sessions-per-peer) and an
 * initialize token bucket (--init-rate); a session that never sent
 * notifications/initialized ends after --init-timeout idle. A stream's
 * unsent lines are capped (--stream-buffer): past it a resumable stream is
 * parked — its response ends, its lines go to the replay ring only, and a
 * GET with Last-Event-ID picks it up — and any other stream is dropped.
 * Request framing is checked before anything else (Content-Length with
 * Transfer-Encoding is 400; civetweb would read the body as chunked and
 * take the rest as a second request). */
#include "http_internal.h"
#include "health.h"
#include "http_stop.h"
#include "clock.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <strings.h>

#include "jsonrpc.h"
#include "log.h"
#include "embedded.h"
#include "envelope.h"
#include "http_headers.h"

/* {====== POST: parse -> check -> admit -> submit -> relay
   Each step answers the request itself when it refuses it, and says so by
   returning the status it sent (0: go on). */

typedef struct post {
  http_server *srv;
  struct mg_connection *conn;
  char *data; /* the body, NUL-terminated; the engine takes it at submit */
  size_t len;
  jsonrpc_msg m; /* parsed once: the engine takes it as it is */
  const char *version_header; /* MCP-Protocol-Version, or NULL */
  bool per_request; /* of a per-request revision (its envelope says so: 2026-07-28 on) */
  envelope env;     /* ... read and checked here, handed to the server */
  bool init;    /* initialize */
  session *s;   /* its session (a reference), once admitted */
  char extra[128]; /* headers of the response: Mcp-Session-Id for a new session */
  peer *held;   /* a subscriptions/listen stream's place in the pool */
  principal *who; /* its token's (the caller's reference), or NULL */
} post;

/* Refuse what is not a JSON-RPC body we take (415, 406, 413, 417, 408, 400);
   read and parse it. */
static int post_parse(post *p) {
  struct mg_connection *conn = p->conn;
  const char *type = mg_get_header(conn, "Content-Type");
  if (!type || strncasecmp(type, "application/json", 16) != 0)
    return http_respond_error(conn, 415, JSONRPC_INVALID_REQUEST,
                              "Content-Type must be application/json", NULL);
  const char *accept = mg_get_header(conn, "Accept");
  if (!http_accepts(accept, "application/json") || !http_accepts(accept, "text/event-stream"))
    return http_respond_error(conn, 406, JSONRPC_INVALID_REQUEST,
                              "Accept must list application/json and text/event-stream", NULL);
  const struct mg_request_info *ri = mg_get_request_info(conn);
  size_t max = p->srv->opt.max_body;
  if (ri->content_length > (long long)max)
    return http_respond_error(conn, 413, JSONRPC_INVALID_REQUEST, "Request body too large", NULL);
  const char *expect = mg_get_header(conn, "Expect");
  if (expect && strcmp(ri->http_version, "1.1") == 0) { /* HTTP/1.0 ignores it */
    if (strcasecmp(expect, "100-continue") != 0)
      return http_respond_error(conn, 417, JSONRPC_INVALID_REQUEST,
                                "Expectation Failed: only 100-continue is known", NULL);
    /* the client waits for this before it sends the body (civetweb sends
       it only for its own file and CGI handlers) */
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    mg_write(conn, cont, sizeof cont - 1);
  }
  buf body;
  buf_init(&body);
  int refused = http_read_body(p->srv, conn, &body, max);
  if (refused) {
    buf_free(&body);
    if (refused == 408) { /* the rest of it may still come: the connection closes */
      mg_disable_connection_keep_alive(conn);
      return http_respond_error(conn, 408, JSONRPC_INVALID_REQUEST,
                                "Request Timeout: the body did not come in time",
                                "Connection: close\r\n");
    }
    return http_respond_error(conn, 413, JSONRPC_INVALID_REQUEST, "Request body too large", NULL);
  }
  p->data = buf_take(&body, &p->len);
  jsonrpc_parse(p->data, p->len, &p->m);
  if (p->m.kind == JSONRPC_INVALID)
    return http_respond_error(conn, 400, p->m.error_code, p->m.error_msg, NULL);
  p->init = p->m.kind == JSONRPC_REQUEST && jsonrpc_method_is(&p->m, "initialize");
  return 0;
}

/* The revision: the body's envelope decides it, the headers must agree
   (400, with the request's id where there is one). */
static int post_check(post *p) {
  struct mg_connection *conn = p->conn;
  const jsonrpc_msg *m = &p->m;
  const char *hv = p->version_header = mg_get_header(conn, "MCP-Protocol-Version");
  p->per_request = envelope_claimed(m);
  if (!p->per_request && hv && proto_per_request(proto_from_name(hv, strlen(hv))) &&
      m->kind == JSONRPC_REQUEST) {
    server_count_refused(m, proto_from_name(hv, strlen(hv)));
    return http_respond_rpc_error(conn, 400, m->id, JSONRPC_INVALID_PARAMS,
                                  "Invalid params: a 2026-07-28 request carries its _meta envelope "
                                  "(io.modelcontextprotocol/protocolVersion, .../clientCapabilities)",
                                  NULL, NULL);
  }
  if (!p->per_request && hv && !proto_from_name(hv, strlen(hv))) {
    if (m->kind == JSONRPC_REQUEST) server_count_refused(m, PROTO_NONE);
    char msg[128];
    snprintf(msg, sizeof msg, "Bad Request: unsupported MCP-Protocol-Version %.40s", hv);
    return http_respond_error(conn, 400, JSONRPC_INVALID_REQUEST, msg, NULL);
  }
  if (!p->per_request || m->kind != JSONRPC_REQUEST) return 0;
  /* the header's version against the body's, then the envelope, then the
     other standard headers (400, with the id; the TypeScript SDK's order) */
  envelope *env = &p->env;
  buf msg, edata;
  buf_init(&msg), buf_init(&edata);
  int code = envelope_read(m, env, &msg, &edata);
  if (hv && env->version.n >= 2 && json_kind(env->version) == '"' &&
      (strlen(hv) != env->version.n - 2 || memcmp(hv, env->version.p + 1, env->version.n - 2) != 0)) {
    msg.len = edata.len = 0;
    buf_printf(&msg, "Header mismatch: MCP-Protocol-Version header '%.40s' does not match the "
                     "body's %.*s", hv, (int)env->version.n, env->version.p);
    code = MCP_HEADER_MISMATCH;
  }
  if (!code)
    code = http_headers_check(m, env->revision, hv, mg_get_header(conn, "Mcp-Method"),
                             mg_get_header(conn, "Mcp-Name"), &msg);
  int r = 0;
  if (code) {
    server_count_refused(m, code == MCP_UNSUPPORTED_VERSION ? PROTO_NONE : env->revision);
    buf_putc(&msg, '\0');
    buf_putc(&edata, '\0');
    r = http_respond_rpc_error(conn, 400, m->id, code, msg.p, edata.len > 1 ? edata.p : NULL, NULL);
  }
  buf_free(&msg), buf_free(&edata);
  return r;
}

/* initialize: a new session, if this address may have one more now. */
static int post_new_session(post *p) {
  http_server *srv = p->srv;
  const char *refusal = NULL;
  char said[320]; /* a refusal that names the flag to change it */
  char retry[64] = "Retry-After: 5\r\n";
  int code = 503;
  pthread_mutex_lock(&srv->lock);
  if (srv->opt.max_sessions && srv->nsessions >= srv->opt.max_sessions) {
    /* a flood of initialize must not grow memory without end */
    refusal = "Too many sessions: try again later";
  } else {
    char addr[48];
    http_peer_address(srv, p->conn, addr, sizeof addr);
    peer *pe = http_peer_get(srv, addr);
    double t = clock_now();
    http_peer_refill(srv, pe, t);
    code = 429; /* this peer's doing: others are still served */
    double wait = 0;
    if (srv->opt.max_sessions_per_peer && pe->nsessions >= srv->opt.max_sessions_per_peer &&
        !http_evict_idle(srv, pe, t, &wait)) {
      snprintf(said, sizeof said, "Too many sessions from this address (--max-sessions-per-peer %zu): "
               "end some (DELETE) or try again later", srv->opt.max_sessions_per_peer);
      refusal = said;
      snprintf(retry, sizeof retry, "Retry-After: %d\r\n", (int)ceil(wait));
    } else if (srv->opt.init_rate > 0 && pe->tokens < 1) {
      /* a load test from one address meets this first: say what changes it */
      snprintf(said, sizeof said, "Too many initialize requests from this address (--init-rate %g per "
               "second): try again later; to load-test from one address, start the server with "
               "--init-rate 0 (no limit) or a higher rate", srv->opt.init_rate);
      refusal = said;
      snprintf(retry, sizeof retry, "Retry-After: %d\r\n",
               (int)ceil((1 - pe->tokens) / srv->opt.init_rate));
    } else {
      if (srv->opt.init_rate > 0) pe->tokens -= 1;
      hsession *hs = http_session_create(srv, pe, p->who);
      p->s = hs->s;
      session_ref(p->s);
      snprintf(p->extra, sizeof p->extra, "Mcp-Session-Id: %s\r\n", hs->id);
    }
  }
  pthread_mutex_unlock(&srv->lock);
  if (!refusal) return 0;
  /* a flooding peer's idle keep-alive would hold a worker 0.5 s more */
  mg_disable_connection_keep_alive(p->conn);
  strcat(retry, "Connection: close\r\n");
  return http_respond_error(p->conn, code, JSONRPC_INTERNAL_ERROR, refusal, retry);
}

/* Its session: none for a 2026-07-28 request (stateless by the revision:
   a stray Mcp-Session-Id is ignored) or under --stateless, a new one for
   initialize, else the one its Mcp-Session-Id names; and a place in the
   stream pool for a request that stays open (subscriptions/listen). */
static int post_admit(post *p) {
  http_server *srv = p->srv;
  if (p->per_request) {
    p->s = http_stateless_session(srv, p->conn);
  } else if (srv->opt.stateless) {
    if (p->init) {
      p->s = session_new();
      p->s->ephemeral = true;
    } else {
      p->s = http_stateless_session(srv, p->conn);
    }
  } else if (p->init) {
    int r = post_new_session(p);
    if (r) return r;
  } else {
    bool ack = p->m.kind == JSONRPC_NOTIFICATION &&
               jsonrpc_method_is(&p->m, "notifications/initialized");
    int status = 0;
    p->s = http_lookup_session(srv, p->conn, &status, ack, p->who);
    if (!p->s)
      return http_respond_error(p->conn, status, JSONRPC_INVALID_REQUEST,
                                status == 400 ? "Bad Request: Mcp-Session-Id header is required"
                                              : "Session not found",
                                NULL);
  }
  if (p->m.kind == JSONRPC_REQUEST && jsonrpc_method_is(&p->m, "subscriptions/listen")) {
    const char *why = NULL;
    int refused = http_stream_admit(srv, p->conn, &p->held, &why, true);
    if (refused)
      return http_respond_rpc_error(p->conn, refused, p->m.id, JSONRPC_INTERNAL_ERROR, why, NULL,
                                    "Retry-After: 5\r\nConnection: close\r\n");
  }
  return 0;
}

/* The Mcp-Param-* headers, "Name\0value\0..." (names as sent), for the
   tool's x-mcp-header parameters. */
static char *param_headers(struct mg_connection *conn, size_t *len) {
  const struct mg_request_info *ri = mg_get_request_info(conn);
  buf params;
  buf_init(&params);
  for (int i = 0; i < ri->num_headers; i++)
    if (strncasecmp(ri->http_headers[i].name, "Mcp-Param-", 10) == 0) {
      buf_puts(&params, ri->http_headers[i].name + 10);
      buf_putc(&params, '\0');
      buf_puts(&params, ri->http_headers[i].value);
      buf_putc(&params, '\0');
    }
  return buf_take(&params, len);
}

/* The request's traceparent/tracestate headers, or NULL. */
static const trace_ctx *trace_parent(struct mg_connection *conn, trace_ctx *ctx) {
  const char *tp = mg_get_header(conn, "traceparent"), *ts = mg_get_header(conn, "tracestate");
  return tp && trace_parse(tp, strlen(tp), ts, ts ? strlen(ts) : 0, ctx) ? ctx : NULL;
}

/* Hand the request to the server and relay its answer until it is over or
   the client goes away. The engine owns p->data from here. */
static int post_submit_and_relay(post *p) {
  http_server *srv = p->srv;
  trace_ctx parent;
  struct mg_connection *conn = p->conn;
  bool in_session = !srv->opt.stateless && !p->init && !p->per_request;
  hstream *st = http_stream_new(srv);
  st->per_request = p->per_request;
  if (p->per_request) {
    st->req_s = p->s;
    session_ref(p->s);
    st->req_id = strndup(p->m.id.p, p->m.id.n);
    st->req_id_len = p->m.id.n;
  }
  if (in_session) {
    pthread_mutex_lock(&srv->lock);
    hsession *hs = http_session_find(srv, mg_get_header(conn, "Mcp-Session-Id"));
    if (hs) http_remember_stream(hs, st);
    pthread_mutex_unlock(&srv->lock);
  }
  size_t plen = 0;
  char *params = p->per_request ? param_headers(conn, &plen) : NULL;
  /* the envelope as read here: the server does not read it again */
  server_submit_http(srv->srv, p->s, &st->out, p->data, p->len, &p->m,
                     p->per_request && p->m.kind == JSONRPC_REQUEST ? &p->env : NULL, params, plen,
                     p->who, trace_on ? trace_parent(conn, &parent) : NULL);
  p->data = NULL;
  int status = http_relay(srv, conn, st, false, 0, p->extra[0] ? p->extra : NULL);
  if (p->held) {
    /* the client closed it: its listener goes now, filter and all, not at
       the next notification */
    pthread_mutex_lock(&st->lock);
    bool open = !st->finished;
    pthread_mutex_unlock(&st->lock);
    if (open) {
      atomic_fetch_add(&st->refs, 1); /* the message's, until the engine is done with it */
      server_stream_closed(srv->srv, p->s, &st->out);
    }
    http_stream_release(srv, p->held, true);
    p->held = NULL;
  }
  if (in_session) {
    pthread_mutex_lock(&st->lock);
    bool resumable = st->sse;
    pthread_mutex_unlock(&st->lock);
    if (!resumable) http_forget_stream(srv, mg_get_header(conn, "Mcp-Session-Id"), st);
  }
  http_stream_unref(st);
  return status;
}

static int handle_post(http_server *srv, struct mg_connection *conn, principal *who) {
  post p = {.srv = srv, .conn = conn, .who = who};
  int status = post_parse(&p);
  if (!status) status = post_check(&p);
  if (!status) status = post_admit(&p);
  if (!status && p.m.kind != JSONRPC_REQUEST) { /* notifications and responses: 202 */
    server_submit(srv->srv, p.s, NULL, p.data, p.len, &p.m);
    p.data = NULL;
    status = http_respond(conn, 202, NULL, NULL, "", 0);
  } else if (!status) {
    status = post_submit_and_relay(&p);
  }
  if (p.held) http_stream_release(srv, p.held, true);
  /* a stateless request's session goes with its last reference */
  if (p.s) session_unref(p.s);
  free(p.data);
  return status;
}

/* }====== */

/* GET: the session's standalone stream, or the resumption of one. */
static int handle_get(http_server *srv, struct mg_connection *conn, const principal *who) {
  if (srv->opt.stateless)
    return http_respond_error(conn, 405, JSONRPC_INVALID_REQUEST,
                         "This server is stateless: no standalone stream", "Allow: POST\r\n");
  if (!http_accepts(mg_get_header(conn, "Accept"), "text/event-stream"))
    return http_respond_error(conn, 406, JSONRPC_INVALID_REQUEST, "Accept must list text/event-stream",
                         NULL);
  int status = 0;
  session *s = http_lookup_session(srv, conn, &status, false, who);
  if (!s)
    return http_respond_error(conn, status, JSONRPC_INVALID_REQUEST,
                         status == 400 ? "Bad Request: Mcp-Session-Id header is required"
                                       : "Session not found",
                         NULL);
  peer *held = NULL;
  const char *why = NULL;
  int refused = http_stream_admit(srv, conn, &held, &why, false);
  if (refused) {
    session_unref(s);
    return http_respond_error(conn, refused, JSONRPC_INTERNAL_ERROR, why,
                         "Retry-After: 5\r\nConnection: close\r\n");
  }
  const char *last = mg_get_header(conn, "Last-Event-ID");
  unsigned long long sid = 0, seq = 0;
  hstream *resume = NULL;
  if (last && sscanf(last, "%llu-%llu", &sid, &seq) == 2) {
    pthread_mutex_lock(&srv->lock);
    hsession *hs = http_session_find(srv, mg_get_header(conn, "Mcp-Session-Id"));
    for (size_t i = 0; hs && i < hs->nrecent; i++)
      if (hs->recent[i]->id == sid) {
        resume = hs->recent[i];
        atomic_fetch_add(&resume->refs, 1);
      }
    pthread_mutex_unlock(&srv->lock);
  }
  int r;
  if (resume) { /* the rest of that stream, on this connection */
    r = http_relay(srv, conn, resume, true, seq, NULL);
    http_stream_unref(resume);
  } else {
    hstream *st = http_stream_new(srv);
    pthread_mutex_lock(&srv->lock);
    hsession *hs = http_session_find(srv, mg_get_header(conn, "Mcp-Session-Id"));
    if (hs) http_remember_stream(hs, st);
    pthread_mutex_unlock(&srv->lock);
    server_attach(srv->srv, s, &st->out);
    r = http_relay(srv, conn, st, true, 0, NULL);
    http_stream_unref(st);
  }
  http_stream_release(srv, held, false);
  session_unref(s);
  return r;
}

static int handle_delete(http_server *srv, struct mg_connection *conn, const principal *who) {
  if (srv->opt.stateless)
    return http_respond_error(conn, 405, JSONRPC_INVALID_REQUEST, "This server is stateless",
                         "Allow: POST\r\n");
  const char *id = mg_get_header(conn, "Mcp-Session-Id");
  if (!id)
    return http_respond_error(conn, 400, JSONRPC_INVALID_REQUEST,
                         "Bad Request: Mcp-Session-Id header is required", NULL);
  pthread_mutex_lock(&srv->lock);
  hsession *hs = http_session_find(srv, id);
  if (hs && !http_session_owned(hs, who)) hs = NULL; /* another's: not there for this one */
  if (hs) http_session_remove(srv, hs);
  pthread_mutex_unlock(&srv->lock);
  if (!hs) return http_respond_error(conn, 404, JSONRPC_INVALID_REQUEST, "Session not found", NULL);
  return http_respond(conn, 200, NULL, NULL, "", 0);
}

static int serve_mcp(http_server *srv, struct mg_connection *conn);
static int serve_as(http_server *srv, struct mg_connection *conn, principal *who);

/* Count the handlers running, so shutdown can wait for the last answers to
   be written before civetweb stops (it writes nothing after mg_stop). */
static int handle_mcp(struct mg_connection *conn, void *cbdata) {
  http_server *srv = cbdata;
  pthread_mutex_lock(&srv->idle_lock);
  srv->active++;
  pthread_mutex_unlock(&srv->idle_lock);
  int status = serve_mcp(srv, conn);
  pthread_mutex_lock(&srv->idle_lock);
  if (--srv->active == 0) pthread_cond_broadcast(&srv->idle);
  pthread_mutex_unlock(&srv->idle_lock);
  return status;
}

/* Framing, Host and Origin: 0 when the request may go on, else the
   status it was refused with. */
static int refuse_early(http_server *srv, struct mg_connection *conn) {
  int status = http_framing_check(conn);
  if (status) return status;
  status = http_origin_check(srv, conn);
  if (status == 400)
    return http_respond_error(conn, 400, JSONRPC_INVALID_REQUEST, "Bad Request: malformed Host", NULL);
  if (status)
    return http_respond_error(conn, 403, JSONRPC_INVALID_REQUEST, "Forbidden: Host or Origin not allowed",
                         NULL);
  return 0;
}

static int serve_mcp(http_server *srv, struct mg_connection *conn) {
  int refused = refuse_early(srv, conn);
  if (refused) return refused;
  /* a preflight carries no token: answered before the token is asked for */
  if (http_cors_current() && strcmp(mg_get_request_info(conn)->request_method, "OPTIONS") == 0)
    return http_cors_preflight(conn, srv->opt.stateless ? "POST, OPTIONS" : "GET, POST, DELETE, OPTIONS");
  principal *who = NULL;
  int refused_auth = http_auth_check(srv, conn, &who);
  if (refused_auth) return refused_auth;
  int status = serve_as(srv, conn, who);
  principal_unref(who);
  return status;
}

/* The request, from who (NULL: no authorization). */
static int serve_as(http_server *srv, struct mg_connection *conn, principal *who) {
  const struct mg_request_info *ri = mg_get_request_info(conn);
  if (atomic_load(&srv->stopping) || engine_finishing(srv->e))
    return http_respond_error(conn, 503, JSONRPC_INTERNAL_ERROR, "Server shutting down",
                              "Retry-After: 1\r\nConnection: close\r\n");
  const char *v = mg_get_header(conn, "MCP-Protocol-Version");
  int hv = v ? proto_from_name(v, strlen(v)) : PROTO_NONE;
  if (v && strcmp(ri->request_method, "POST") != 0 && (!hv || proto_per_request(hv))) {
    char msg[128];
    snprintf(msg, sizeof msg, "Bad Request: unsupported MCP-Protocol-Version %.40s", v);
    return http_respond_error(conn, 400, JSONRPC_INVALID_REQUEST, msg, NULL);
  }
  if (strcmp(ri->request_method, "POST") == 0) return handle_post(srv, conn, who);
  if (strcmp(ri->request_method, "GET") == 0) return handle_get(srv, conn, who);
  if (strcmp(ri->request_method, "DELETE") == 0) return handle_delete(srv, conn, who);
  return http_respond_error(conn, 405, JSONRPC_INVALID_REQUEST, "Method not allowed",
                       srv->opt.stateless ? "Allow: POST\r\n" : "Allow: GET, POST, DELETE\r\n");
}

/* GET /dev: the developer page (web/dev.html, compiled in). It talks to
   /mcp like any client, from the same origin. */
static int handle_dev(struct mg_connection *conn, void *cbdata) {
  http_server *srv = cbdata;
  int refused = refuse_early(srv, conn);
  if (refused) return refused;
  /* no token check: a browser cannot send one with a page load, and the
     page holds no secret — it asks for the token when /mcp answers 401 */
  if (strcmp(mg_get_request_info(conn)->request_method, "GET") != 0)
    return http_respond_error(conn, 405, JSONRPC_INVALID_REQUEST, "Method not allowed", "Allow: GET\r\n");
  size_t len;
  const char *page = embedded_source("dev", &len);
  if (page) return http_respond(conn, 200, NULL, "text/html; charset=utf-8", page, len);
  return http_respond_error(conn, 404, JSONRPC_INVALID_REQUEST, "Not found", NULL);
}

/* civetweb's own error answers (a head too slow, too large or malformed,
   an unknown path), in our format: its page builds a Date header with
   gmtime(), which is not thread-safe, and workers timing out slow peers
   at once raced on it. The connection closes, as after civetweb's page. */
static int civetweb_error(struct mg_connection *conn, int status, const char *msg) {
  mg_disable_connection_keep_alive(conn);
  http_respond_error(conn, status, JSONRPC_INVALID_REQUEST, msg && *msg ? msg : http_status_text(status),
                "Connection: close\r\n");
  return 0;
}

static int route_request(http_server *srv, struct mg_connection *conn);

/* Routing, from civetweb's begin_request callback: set before mg_start,
   unlike request handlers, which are registered once it already listens
   (a client that connected in between got 404). 0: not ours (civetweb's
   404). With --cors, the CORS headers of the request's Origin are set
   for every answer written while it is served (http_start_response). */
static int route(struct mg_connection *conn) {
  http_server *srv = mg_get_user_data(mg_get_context(conn));
  if (!srv->opt.ncors_origins && !srv->opt.cors_any) return route_request(srv, conn);
  char cors[512]; /* lives while the answer (a stream too) is written */
  http_cors_set(http_cors_headers(srv, conn, cors, sizeof cors) ? cors : NULL);
  int r = route_request(srv, conn);
  http_cors_set(NULL);
  return r;
}

static int route_request(http_server *srv, struct mg_connection *conn) {
  const char *uri = mg_get_request_info(conn)->local_uri;
  if (uri && strcmp(uri, "/mcp") == 0) return handle_mcp(conn, srv);
  int health = uri ? health_route(conn, uri) : 0; /* no token: a load balancer asks */
  if (health) return health;
  if (uri && srv->opt.dev && strcmp(uri, "/dev") == 0) return handle_dev(conn, srv);
  if (uri && srv->auth.on) {
    int refused = refuse_early(srv, conn);
    if (refused) return refused;
    return http_auth_route(srv, conn, uri);
  }
  return 0;
}

static int log_civetweb(const struct mg_connection *conn, const char *message) {
  (void)conn;
  log_msg(LOG_WARNING, "http: %s", message);
  return 1;
}

/* Debian 12's civetweb 1.15 loads OpenSSL at run time and looks up
   SSL_get_peer_certificate, which OpenSSL 3 no longer exports: it would call
   a NULL pointer on the first HTTPS connection. The shim built next to the
   binary (core/transport/tls_shim.c; installed in PREFIX/lib/luamcp) supplies it;
   check before promising TLS. */
static bool civetweb_tls_usable(char *why, size_t cap) {
  char exe[PATH_MAX], shim[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(shim, sizeof shim, "%s/libluamcp-tls.so", exe);
    /* installed (make install): PREFIX/bin/luamcp, PREFIX/lib/luamcp/ */
    if (access(shim, R_OK) != 0) snprintf(shim, sizeof shim, "%s/../lib/luamcp/libluamcp-tls.so", exe);
    /* stays loaded: civetweb's dlopen("libssl.so") finds it by soname */
    if (access(shim, R_OK) == 0 && !dlopen(shim, RTLD_NOW | RTLD_GLOBAL))
      log_msg(LOG_WARNING, "TLS shim %s: %s", shim, dlerror());
  }
  void *ssl = dlopen("libssl.so", RTLD_NOW | RTLD_LOCAL);
  if (!ssl) {
    snprintf(why, cap, "libssl.so cannot be loaded (install libssl-dev)");
    return false;
  }
  bool ok = dlsym(ssl, "SSL_get_peer_certificate") != NULL;
  dlclose(ssl);
  if (!ok)
    snprintf(why, cap,
             "this civetweb build expects OpenSSL 1.1 and libluamcp-tls.so (built next to "
             "luamcp) is missing; terminate TLS in a proxy in front of luamcp instead");
  return ok;
}

/* Wake every stream a worker may be waiting on (shutdown). */
static void wake_streams(http_server *srv) {
  pthread_mutex_lock(&srv->lock);
  for (hsession *hs = srv->sessions; hs; hs = hs->next)
    for (size_t i = 0; i < hs->nrecent; i++) {
      hstream *st = hs->recent[i];
      pthread_mutex_lock(&st->lock);
      pthread_cond_broadcast(&st->cond);
      pthread_mutex_unlock(&st->lock);
    }
  pthread_mutex_unlock(&srv->lock);
}

/* Write key then certificate into dir/server.pem (mode 0600); path gets
   its name. */
static bool concat_pem(const char *key, const char *cert, const char *dir, char *path,
                       size_t cap) {
  snprintf(path, cap, "%s/server.pem", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return false;
  bool ok = true;
  const char *files[] = {key, cert};
  for (int i = 0; i < 2 && ok; i++) {
    FILE *f = fopen(files[i], "rb");
    if (!f) {
      ok = false;
      break;
    }
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
      if (write(fd, chunk, n) != (ssize_t)n) ok = false;
    fclose(f);
  }
  close(fd);
  if (!ok) unlink(path);
  return ok;
}

/* }====================================================== */

bool transport_http_instance_ok(const char *name) {
  size_t n = strlen(name);
  return n >= 1 && n <= HTTP_INSTANCE_MAX &&
         strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

int transport_http_check_auth(const http_options *o) {
  if (!o->auth_resource) return 0;
  http_server *srv = calloc(1, sizeof *srv);
  srv->opt = *o;
  char why[512];
  int rc = 0;
  if (!http_auth_init(srv, why, sizeof why)) {
    fprintf(stderr, "luamcp: %s\n", why);
    rc = 1;
  } else if (!http_keys_probe(srv, stdout)) {
    rc = 1;
  } else {
    printf("authorization: ok — tokens for %s\n", o->auth_resource);
  }
  http_auth_free(srv);
  free(srv);
  return rc;
}

/* civetweb's options for o: the strings they point to live in co */
typedef struct civetweb_opts {
  const char *v[24];
  char ports[128], threads[16], keep_ms[16], request_ms[32], pem[4096];
  char tmpdir[sizeof "/tmp/luamcp-tls.XXXXXX"];
  bool combined; /* pem is a copy of key and certificate in tmpdir */
} civetweb_opts;

/* The teardown of every phase: what was never made is left alone. */
static int http_server_free(http_server *srv, int status) {
  if (srv->ctx) mg_exit_library();
  while (srv->sessions) {
    hsession *hs = srv->sessions;
    srv->sessions = hs->next;
    http_session_free(hs);
  }
  free(srv->buckets);
  for (size_t i = 0; i < PEER_BUCKETS; i++)
    while (srv->peers[i]) {
      peer *p = srv->peers[i];
      srv->peers[i] = p->next;
      free(p);
    }
  pthread_mutex_destroy(&srv->lock);
  pthread_mutex_destroy(&srv->reaper_lock);
  pthread_cond_destroy(&srv->reaper_cond);
  pthread_mutex_destroy(&srv->body_lock);
  pthread_mutex_destroy(&srv->idle_lock);
  pthread_cond_destroy(&srv->idle);
  http_auth_free(srv);
  free(srv);
  return status;
}

static http_server *http_server_new(server *core, const http_options *o) {
  http_server *srv = calloc(1, sizeof *srv);
  srv->e = server_engine(core);
  srv->srv = core;
  srv->opt = *o;
  pthread_mutex_init(&srv->lock, NULL);
  pthread_mutex_init(&srv->reaper_lock, NULL);
  pthread_cond_init(&srv->reaper_cond, NULL);
  pthread_mutex_init(&srv->body_lock, NULL);
  atomic_init(&srv->stopping, false);
  atomic_init(&srv->draining, false);
  pthread_mutex_init(&srv->idle_lock, NULL);
  pthread_cond_init(&srv->idle, NULL);
  atomic_init(&srv->next_stream, 0);
  if (!o->instance) { /* a short random name: ids stay routable by it */
    http_random_id(srv->instance);
    srv->instance[8] = '\0';
    srv->opt.instance = srv->instance;
  }
  /* default: a fifth of the workers, 64 of 320, so the 256 calls waiting
     on I/O that 320 is sized for still find workers (docs/http.md, "Streamable
     HTTP", has the measurements) */
  srv->max_streams = o->max_streams ? o->max_streams : (size_t)(o->threads / 5 > 1 ? o->threads / 5 : 1);
  if (srv->max_streams > (size_t)o->threads - 1) srv->max_streams = (size_t)o->threads - 1;
  /* default: half the pool, so one address cannot shut the others out */
  srv->max_streams_per_peer = o->max_streams_per_peer ? o->max_streams_per_peer
                                                      : (srv->max_streams + 1) / 2;
  return srv;
}

static bool civetweb_options(const http_options *o, civetweb_opts *co) {
  const char *host = strcmp(o->host, "localhost") == 0 ? "127.0.0.1" : o->host;
  snprintf(co->ports, sizeof co->ports, "%s:%d%s", host, o->port, o->cert ? "s" : "");
  snprintf(co->threads, sizeof co->threads, "%d", o->threads);
  snprintf(co->keep_ms, sizeof co->keep_ms, "%d", KEEP_ALIVE_S * 1000);
  /* civetweb's one timeout: the whole request head, and any read or write
     that makes no progress (a slowloris peer is dropped after it) */
  snprintf(co->request_ms, sizeof co->request_ms, "%.0f", o->header_timeout * 1000.0);
  int k = 0;
  co->v[k++] = "listening_ports", co->v[k++] = co->ports;
  co->v[k++] = "num_threads", co->v[k++] = co->threads;
  co->v[k++] = "tcp_nodelay", co->v[k++] = "1"; /* else 40 ms stalls */
  co->v[k++] = "enable_keep_alive", co->v[k++] = "yes";
  co->v[k++] = "keep_alive_timeout_ms", co->v[k++] = co->keep_ms;
  co->v[k++] = "request_timeout_ms", co->v[k++] = co->request_ms;
  co->v[k] = NULL;
  if (!o->cert) return true;
  char why[256];
  if (!civetweb_tls_usable(why, sizeof why)) {
    log_msg(LOG_ERROR, "TLS unavailable: %s", why);
    return false;
  }
  snprintf(co->pem, sizeof co->pem, "%s", o->cert);
  if (o->key && strcmp(o->key, o->cert) != 0) {
    /* civetweb reads key and certificate from one PEM file */
    snprintf(co->tmpdir, sizeof co->tmpdir, "/tmp/luamcp-tls.XXXXXX");
    if (!mkdtemp(co->tmpdir) || !concat_pem(o->key, o->cert, co->tmpdir, co->pem, sizeof co->pem)) {
      log_msg(LOG_ERROR, "TLS: cannot read %s and %s", o->key, o->cert);
      return false;
    }
    co->combined = true;
  }
  co->v[k++] = "ssl_certificate", co->v[k++] = co->pem;
  co->v[k] = NULL;
  return true;
}

static bool start_listening(http_server *srv, civetweb_opts *co) {
  const http_options *o = &srv->opt;
  struct mg_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.log_message = log_civetweb;
  cb.http_error = civetweb_error;
  cb.begin_request = route;
  mg_init_library(o->cert ? MG_FEATURES_TLS : 0);
  /* before a worker exists: a request that comes before engine_run began
     must still hand a busy call over (its progress would wait for its end) */
  engine_claim_loop(srv->e);
  srv->ctx = mg_start(&cb, srv, co->v);
  if (co->combined) { /* loaded at start: the copy of the key goes at once */
    unlink(co->pem);
    rmdir(co->tmpdir);
  }
  if (!srv->ctx) {
    log_msg(LOG_ERROR, "cannot listen on %s:%d (in use? a bad address?)", o->host, o->port);
    mg_exit_library();
    return false;
  }
  pthread_create(&srv->reaper, NULL, http_reaper_main, srv);
  log_msg(LOG_INFO, "listening on http%s://%s:%d/mcp%s (instance %s)", o->cert ? "s" : "", o->host,
          o->port, o->stateless ? " (stateless)" : "", o->instance);
  if (o->dev)
    log_msg(LOG_INFO, "developer page: http%s://%s:%d/dev", o->cert ? "s" : "", o->host, o->port);
  if (o->listening) {
    char url[600];
    snprintf(url, sizeof url, "http%s://%s:%d/mcp", o->cert ? "s" : "", o->host, o->port);
    o->listening(url);
  }
  return true;
}

/* Let workers send the last answers and close their streams (bounded),
   then stop civetweb. */
static void stop_listening(http_server *srv) {
  atomic_store(&srv->draining, true);
  wake_streams(srv);
  pthread_mutex_lock(&srv->idle_lock);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 5;
  while (srv->active > 0)
    if (pthread_cond_timedwait(&srv->idle, &srv->idle_lock, &until) == ETIMEDOUT) break;
  pthread_mutex_unlock(&srv->idle_lock);
  atomic_store(&srv->stopping, true);
  pthread_mutex_lock(&srv->reaper_lock);
  pthread_cond_signal(&srv->reaper_cond);
  pthread_mutex_unlock(&srv->reaper_lock);
  pthread_join(srv->reaper, NULL);
  wake_streams(srv); /* whatever still waits returns now */
  http_stop_listener(srv->ctx, srv->opt.host);
}

int transport_http_serve(server *core, const http_options *o) {
  http_server *srv = http_server_new(core, o);
  char why[512];
  if (!http_auth_init(srv, why, sizeof why)) {
    log_msg(LOG_ERROR, "%s", why);
    return http_server_free(srv, 1);
  }
  civetweb_opts co = {.combined = false};
  if (!civetweb_options(&srv->opt, &co) || !start_listening(srv, &co))
    return http_server_free(srv, 1);
  health_use_http(srv);
  engine_run(srv->e); /* until a signal, then the calls in flight finish */
  health_use_http(NULL);
  stop_listening(srv);
  return http_server_free(srv, 0);
}
