/* transport_http.c — Streamable HTTP on civetweb (see transport_http.h).
 *
 * A POST's answer travels through an hstream: the engine writes whole
 * JSON-RPC lines into it (outlet.write) and finishes it when the request is
 * over; the civetweb worker that owns the connection waits on the stream
 * and relays: one JSON body when the only line is the final answer, SSE
 * events otherwise. A GET stream is an hstream the engine keeps as the
 * session's standalone outlet. Every response is built in one buffer and
 * sent with one write (two writes per response halved throughput here). */
#include "transport_http.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <dlfcn.h>
#include <limits.h>
#include <fcntl.h>
#include <unistd.h>

#include <civetweb.h>

#include "envelope.h"
#include "http_modern.h"
#include "jsonrpc.h"
#include "log.h"

#define SESSION_ID_LEN 32
#define REPLAY_EVENTS 64 /* events a stream keeps for Last-Event-ID */
#define RECENT_STREAMS 8 /* streams a session keeps for resumption */

typedef struct http_server http_server;

/* {====================================================== streams */

typedef struct event {
  uint64_t seq;
  char *line;
  size_t len;
} event;

typedef struct hstream {
  outlet out; /* first: the engine sees the outlet */
  http_server *srv;
  atomic_int refs;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  buf pending;   /* lines written by the engine, not yet sent */
  bool finished; /* the engine will write no more */
  bool detach;   /* the engine asked to end the current response early */
  bool gone;     /* the client went away */
  uint64_t id;   /* unique in the process, so per session too */
  uint64_t seq;  /* events sent so far */
  bool sse;      /* answered as an event stream: resumable (Last-Event-ID) */
  bool modern;   /* a 2026-07-28 request: no event ids, errors map to statuses */
  event replay[REPLAY_EVENTS];
} hstream;

static bool hstream_write(outlet *o, const char *p, size_t n) {
  hstream *st = (hstream *)o;
  pthread_mutex_lock(&st->lock);
  bool alive = !st->gone;
  if (alive) buf_put(&st->pending, p, n);
  pthread_cond_signal(&st->cond);
  pthread_mutex_unlock(&st->lock);
  return alive;
}

static void hstream_unref(hstream *st) {
  if (!st || atomic_fetch_sub(&st->refs, 1) != 1) return;
  buf_free(&st->pending);
  buf_free(&st->out.out);
  for (int i = 0; i < REPLAY_EVENTS; i++) free(st->replay[i].line);
  pthread_mutex_destroy(&st->lock);
  pthread_cond_destroy(&st->cond);
  free(st);
}

static void hstream_detach(outlet *o) {
  hstream *st = (hstream *)o;
  pthread_mutex_lock(&st->lock);
  st->detach = true;
  pthread_cond_signal(&st->cond);
  pthread_mutex_unlock(&st->lock);
}

/* The engine is done with the stream, n last bytes at p written with the
   end: wake the worker, drop the engine's reference. */
static void hstream_finish_with(outlet *o, const char *p, size_t n) {
  hstream *st = (hstream *)o;
  pthread_mutex_lock(&st->lock);
  if (n && !st->gone) buf_put(&st->pending, p, n);
  st->finished = true;
  pthread_cond_signal(&st->cond);
  pthread_mutex_unlock(&st->lock);
  hstream_unref(st);
}

static void hstream_finish(outlet *o) { hstream_finish_with(o, NULL, 0); }

/* }====================================================== */

/* {====================================================== sessions */

typedef struct hsession {
  char id[SESSION_ID_LEN + 1];
  session *s;
  double last_seen;
  hstream *recent[RECENT_STREAMS]; /* each holds a reference */
  size_t nrecent;
  struct hsession *next, *prev; /* every session, for the reaper */
  struct hsession *hnext;       /* the next in its hash bucket */
} hsession;

struct http_server {
  server *srv; /* where messages go */
  engine *e;
  http_options opt;
  struct mg_context *ctx;
  pthread_mutex_t lock; /* sessions, and every hsession's fields */
  hsession *sessions;
  size_t nsessions;
  /* sessions by id: every request looks its session up, and a list walk
     was O(sessions) strcmp per request */
  hsession **buckets;
  size_t nbuckets; /* a power of two, at least nsessions */
  atomic_bool stopping;
  /* shutting down: the engine is done, workers send what they have and end */
  atomic_bool draining;
  int active; /* handlers running (guarded by idle_lock) */
  pthread_mutex_t idle_lock;
  pthread_cond_t idle;
  atomic_uint_fast64_t next_stream;
  pthread_t reaper;
  pthread_mutex_t reaper_lock;
  pthread_cond_t reaper_cond;
};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static hstream *hstream_new(http_server *srv) {
  hstream *st = calloc(1, sizeof *st);
  st->out.write = hstream_write;
  st->out.finish = hstream_finish;
  st->out.detach = hstream_detach;
  st->out.finish_with = hstream_finish_with;
  st->srv = srv;
  atomic_init(&st->refs, 2); /* the worker's and the engine's */
  pthread_mutex_init(&st->lock, NULL);
  pthread_cond_init(&st->cond, NULL);
  st->id = atomic_fetch_add(&srv->next_stream, 1) + 1;
  return st;
}

static void random_id(char out[SESSION_ID_LEN + 1]) {
  unsigned char raw[SESSION_ID_LEN / 2];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
    log_msg(LOG_CRITICAL, "getrandom failed: %s", strerror(errno));
    abort(); /* a guessable session id is worse than no server */
  }
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < sizeof raw; i++) {
    out[2 * i] = hex[raw[i] >> 4];
    out[2 * i + 1] = hex[raw[i] & 15];
  }
  out[SESSION_ID_LEN] = '\0';
}

/* Caller holds srv->lock. Keeps st (a reference is taken) for resumption. */
static void remember_stream(hsession *hs, hstream *st) {
  atomic_fetch_add(&st->refs, 1);
  if (hs->nrecent == RECENT_STREAMS) {
    hstream_unref(hs->recent[0]);
    memmove(hs->recent, hs->recent + 1, (RECENT_STREAMS - 1) * sizeof *hs->recent);
    hs->nrecent--;
  }
  hs->recent[hs->nrecent++] = st;
}

/* FNV-1a: ids are random, but lookups take any header a client sends */
static size_t id_hash(const char *id) {
  uint64_t h = 1469598103934665603u;
  for (; *id; id++) h = (h ^ (unsigned char)*id) * 1099511628211u;
  return (size_t)h;
}

/* Caller holds srv->lock. */
static void index_put(http_server *srv, hsession *hs) {
  size_t i = id_hash(hs->id) & (srv->nbuckets - 1);
  hs->hnext = srv->buckets[i];
  srv->buckets[i] = hs;
}

/* Caller holds srv->lock: room for one more session in the index. */
static void index_grow(http_server *srv) {
  if (srv->nsessions < srv->nbuckets) return;
  size_t n = srv->nbuckets ? srv->nbuckets * 2 : 64;
  free(srv->buckets);
  srv->buckets = calloc(n, sizeof *srv->buckets);
  srv->nbuckets = n;
  for (hsession *hs = srv->sessions; hs; hs = hs->next) index_put(srv, hs);
}

static hsession *session_create(http_server *srv) {
  hsession *hs = calloc(1, sizeof *hs);
  random_id(hs->id);
  hs->s = session_new();
  hs->last_seen = now();
  pthread_mutex_lock(&srv->lock);
  index_grow(srv);
  hs->next = srv->sessions;
  if (hs->next) hs->next->prev = hs;
  srv->sessions = hs;
  srv->nsessions++;
  index_put(srv, hs);
  pthread_mutex_unlock(&srv->lock);
  return hs;
}

/* The session with this id, or NULL (caller holds srv->lock). */
static hsession *session_find(http_server *srv, const char *id) {
  if (!srv->nbuckets) return NULL;
  for (hsession *hs = srv->buckets[id_hash(id) & (srv->nbuckets - 1)]; hs; hs = hs->hnext)
    if (strcmp(hs->id, id) == 0) return hs;
  return NULL;
}

/* The POST stream st was answered with one JSON body: there is nothing to
   resume, so the session need not keep it (kept, a session's memory grew
   by a stream per call up to RECENT_STREAMS). */
static void forget_stream(http_server *srv, const char *session_id, hstream *st) {
  pthread_mutex_lock(&srv->lock);
  hsession *hs = session_id ? session_find(srv, session_id) : NULL;
  for (size_t i = 0; hs && i < hs->nrecent; i++)
    if (hs->recent[i] == st) {
      memmove(hs->recent + i, hs->recent + i + 1, (hs->nrecent - i - 1) * sizeof *hs->recent);
      hs->nrecent--;
      hstream_unref(st);
      break;
    }
  pthread_mutex_unlock(&srv->lock);
}

static void hsession_free(hsession *hs) {
  for (size_t i = 0; i < hs->nrecent; i++) hstream_unref(hs->recent[i]);
  session_unref(hs->s);
  free(hs);
}

/* Unlink hs (caller holds srv->lock), tell the engine, free it. */
static void session_remove(http_server *srv, hsession *hs) {
  if (hs->prev) hs->prev->next = hs->next;
  else srv->sessions = hs->next;
  if (hs->next) hs->next->prev = hs->prev;
  for (hsession **p = &srv->buckets[id_hash(hs->id) & (srv->nbuckets - 1)]; *p; p = &(*p)->hnext)
    if (*p == hs) {
      *p = hs->hnext;
      break;
    }
  srv->nsessions--;
  server_end_session(srv->srv, hs->s);
  hsession_free(hs);
}

/* Ends sessions idle for longer than the limit: a client that never sends
   DELETE must not leak. */
static void *reaper_main(void *arg) {
  http_server *srv = arg;
  pthread_mutex_lock(&srv->reaper_lock);
  while (!atomic_load(&srv->stopping)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&srv->reaper_cond, &srv->reaper_lock, &ts);
    double limit = now() - srv->opt.session_idle;
    pthread_mutex_lock(&srv->lock);
    hsession *next;
    for (hsession *hs = srv->sessions; hs; hs = next) {
      next = hs->next;
      if (hs->last_seen < limit) {
        log_msg(LOG_INFO, "session %.8s… idle: ended", hs->id);
        session_remove(srv, hs);
      }
    }
    pthread_mutex_unlock(&srv->lock);
  }
  pthread_mutex_unlock(&srv->reaper_lock);
  return NULL;
}

/* }====================================================== */

/* {====================================================== responses */

static const char *status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

/* Status line and headers every answer carries; extra is more header lines. */
static void start_response(buf *b, int status, const char *extra) {
  buf_printf(b, "HTTP/1.1 %d %s\r\nCache-Control: no-cache\r\n", status, status_text(status));
  if (extra) buf_puts(b, extra);
}

static bool send_all(struct mg_connection *conn, const buf *b) {
  return mg_write(conn, b->p, b->len) == (int)b->len;
}

/* A complete response with a body (or none), in one write. */
static int respond(struct mg_connection *conn, int status, const char *extra,
                   const char *type, const char *body, size_t n) {
  buf b;
  buf_init(&b);
  start_response(&b, status, extra);
  if (type) buf_printf(&b, "Content-Type: %s\r\n", type);
  buf_printf(&b, "Content-Length: %zu\r\n\r\n", n);
  buf_put(&b, body, n);
  send_all(conn, &b);
  buf_free(&b);
  return status;
}

/* An HTTP error answering request id with a JSON-RPC error (data: a JSON
   value or NULL). */
static int respond_rpc_error(struct mg_connection *conn, int status, json_span id, int code,
                             const char *msg, const char *data) {
  buf b;
  buf_init(&b);
  jsonrpc_write_error(&b, id, code, msg, data);
  int r = respond(conn, status, NULL, "application/json", b.p, b.len - 1);
  buf_free(&b);
  return r;
}

/* An HTTP error with a JSON-RPC error body (id null: it answers no request
   the server accepted). */
static int respond_error(struct mg_connection *conn, int status, int code, const char *msg,
                         const char *extra) {
  buf b;
  buf_init(&b);
  jsonrpc_write_error(&b, (json_span){0}, code, msg, NULL);
  int r = respond(conn, status, extra, "application/json", b.p, b.len - 1);
  buf_free(&b);
  return r;
}

/* }====================================================== */

/* {====================================================== checks */

/* Is host (a Host header value or an Origin's host part) a loopback name? */
static bool loopback_host(const char *h, size_t n) {
  static const char *const names[] = {"localhost", "127.0.0.1", "[::1]"};
  for (size_t i = 0; i < 3; i++) {
    size_t k = strlen(names[i]);
    if (n >= k && strncasecmp(h, names[i], k) == 0 && (n == k || h[k] == ':')) return true;
  }
  return false;
}

static bool bound_to_loopback(const http_server *srv) {
  const char *h = srv->opt.host;
  return strcmp(h, "127.0.0.1") == 0 || strcmp(h, "localhost") == 0 ||
         strncmp(h, "127.", 4) == 0;
}

/* DNS-rebinding and cross-site protection, before anything else: a foreign
   Host (when bound to loopback) or Origin gets 403 and never reaches Lua. */
static bool origin_allowed(const http_server *srv, struct mg_connection *conn) {
  const char *host = mg_get_header(conn, "Host");
  if (bound_to_loopback(srv) && (!host || !loopback_host(host, strlen(host)))) return false;
  const char *origin = mg_get_header(conn, "Origin");
  if (!origin) return true; /* not a browser */
  for (size_t i = 0; i < srv->opt.nallow_origins; i++)
    if (strcasecmp(origin, srv->opt.allow_origins[i]) == 0) return true;
  const char *p = strstr(origin, "://");
  if (!p) return false;
  p += 3;
  return loopback_host(p, strlen(p));
}

/* Constant-time comparison: the time taken does not tell how much matched. */
static bool token_ok(const http_server *srv, struct mg_connection *conn) {
  if (!srv->opt.token) return true;
  const char *h = mg_get_header(conn, "Authorization");
  if (!h || strncasecmp(h, "Bearer ", 7) != 0) return false;
  const char *got = h + 7, *want = srv->opt.token;
  size_t gn = strlen(got), wn = strlen(want);
  unsigned char diff = (unsigned char)(gn != wn);
  for (size_t i = 0; i < wn; i++) diff |= (unsigned char)(want[i] ^ (i < gn ? got[i] : 0));
  return diff == 0;
}

/* Does an Accept header admit this media type (or a wildcard)? */
static bool accepts(const char *accept, const char *type) {
  if (!accept) return false;
  if (strstr(accept, type) || strstr(accept, "*/*")) return true;
  char major[32];
  const char *slash = strchr(type, '/');
  snprintf(major, sizeof major, "%.*s/*", (int)(slash - type), type);
  return strstr(accept, major) != NULL;
}

/* }====================================================== */

/* {====================================================== relaying a stream */

/* Append one SSE event (and keep it for Last-Event-ID) — st->lock held. */
static void add_event(hstream *st, buf *chunk, const char *line, size_t n) {
  uint64_t seq = ++st->seq;
  buf_printf(chunk, "id: %llu-%llu\nevent: message\ndata: ", (unsigned long long)st->id,
             (unsigned long long)seq);
  buf_put(chunk, line, n);
  buf_puts(chunk, "\n\n");
  event *ev = &st->replay[seq % REPLAY_EVENTS];
  free(ev->line);
  ev->seq = seq;
  ev->line = strndup(line, n);
  ev->len = n;
}

/* Frame data as one HTTP chunk into out. */
static void put_chunk(buf *out, const buf *data) {
  buf_printf(out, "%zx\r\n", data->len);
  buf_put(out, data->p, data->len);
  buf_puts(out, "\r\n");
}

static bool is_final(const char *line, size_t n) {
  jsonrpc_msg m;
  jsonrpc_parse(line, n, &m);
  return m.kind == JSONRPC_RESPONSE;
}

/* Relay st on conn until the engine finishes it or the client goes away.
   sse: already an event stream (GET). replay_after: resend events after
   this sequence number first (Last-Event-ID). extra: headers for the first
   response (Mcp-Session-Id). */
static int relay(http_server *srv, struct mg_connection *conn, hstream *st, bool sse,
                 uint64_t replay_after, const char *extra) {
  buf lines, out, chunk;
  buf_init(&lines), buf_init(&out), buf_init(&chunk);
  bool started = false, done = false;
  int status = 200;
  pthread_mutex_lock(&st->lock);
  if (sse) {
    start_response(&out, 200,
                   "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                   "X-Accel-Buffering: no\r\n");
    if (extra) buf_puts(&out, extra);
    buf_puts(&out, "\r\n");
    /* priming event: an id to resume from, and how soon to retry */
    buf_printf(&chunk, "id: %llu-%llu\nretry: 1000\ndata: \n\n", (unsigned long long)st->id,
               (unsigned long long)st->seq);
    for (uint64_t q = replay_after + 1; q <= st->seq; q++) {
      event *ev = &st->replay[q % REPLAY_EVENTS];
      if (ev->seq != q) continue; /* fell out of the buffer */
      buf_printf(&chunk, "id: %llu-%llu\nevent: message\ndata: ", (unsigned long long)st->id,
                 (unsigned long long)q);
      buf_put(&chunk, ev->line, ev->len);
      buf_puts(&chunk, "\n\n");
    }
    put_chunk(&out, &chunk);
    chunk.len = 0;
    started = st->sse = true;
  }
  while (!done) {
    while (!st->pending.len && !st->finished && !st->detach && !atomic_load(&srv->stopping) &&
           !atomic_load(&srv->draining)) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + srv->opt.keepalive;
      ts.tv_sec = (time_t)t;
      ts.tv_nsec = (long)((t - floor(t)) * 1e9);
      if (out.len) break; /* something to send first */
      if (pthread_cond_timedwait(&st->cond, &st->lock, &ts) == ETIMEDOUT && started) {
        /* keep-alive comment: a dead client shows up as a failed write */
        buf c;
        buf_init(&c);
        buf_puts(&c, ": keep-alive\n\n");
        put_chunk(&out, &c);
        buf_free(&c);
        break;
      }
    }
    /* take what the engine wrote */
    buf taken = st->pending;
    buf_init(&st->pending);
    buf_free(&lines);
    lines = taken;
    bool finished = st->finished || atomic_load(&srv->stopping) ||
                    (atomic_load(&srv->draining) && !lines.len);
    bool detach = st->detach && !finished;
    st->detach = false;
    if (!started && lines.len && !finished && !detach) {
      /* only the final answer so far? wait for finish (it comes at once) */
      const char *nl = memchr(lines.p, '\n', lines.len);
      if (nl && (size_t)(nl - lines.p) + 1 == lines.len && is_final(lines.p, lines.len - 1)) {
        st->pending = lines;
        buf_init(&lines);
        pthread_cond_wait(&st->cond, &st->lock);
        continue;
      }
    }
    const char *first_nl = lines.len ? memchr(lines.p, '\n', lines.len) : NULL;
    bool one_line = first_nl && (size_t)(first_nl - lines.p) + 1 == lines.len;
    if (!started && finished && (one_line || !lines.len)) {
      /* one JSON body (or 202 when there is nothing to say) */
      pthread_mutex_unlock(&st->lock);
      if (lines.len) {
        size_t n = lines.len - 1; /* without the newline */
        status = st->modern ? http_modern_status(lines.p, n) : 200;
        start_response(&out, status, extra);
        buf_printf(&out, "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", n);
        buf_put(&out, lines.p, n);
      } else {
        start_response(&out, 202, extra);
        buf_puts(&out, "Content-Length: 0\r\n\r\n");
        status = 202;
      }
      send_all(conn, &out);
      pthread_mutex_lock(&st->lock);
      break;
    }
    if (!started && (lines.len || detach)) {
      start_response(&out, 200,
                     "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                     "X-Accel-Buffering: no\r\n");
      if (extra) buf_puts(&out, extra);
      buf_puts(&out, "\r\n");
      /* 2025: a priming event to resume from; 2026-07-28 streams do not resume */
      if (!st->modern) buf_printf(&chunk, "id: %llu-0\nretry: 1000\ndata: \n\n", (unsigned long long)st->id);
      started = st->sse = true;
    }
    for (size_t i = 0; i < lines.len;) {
      const char *nl = memchr(lines.p + i, '\n', lines.len - i);
      size_t n = nl ? (size_t)(nl - (lines.p + i)) : lines.len - i;
      if (n && st->modern) { /* no ids: nothing to resume */
        buf_puts(&chunk, "event: message\ndata: ");
        buf_put(&chunk, lines.p + i, n);
        buf_puts(&chunk, "\n\n");
      } else if (n) {
        add_event(st, &chunk, lines.p + i, n);
      }
      i += n + 1;
    }
    if (chunk.len) {
      put_chunk(&out, &chunk);
      chunk.len = 0;
    }
    if (finished || detach) { /* detached: the rest waits for a GET with Last-Event-ID */
      buf_puts(&out, "0\r\n\r\n");
      done = true;
    }
    if (out.len) {
      pthread_mutex_unlock(&st->lock);
      bool ok = send_all(conn, &out);
      pthread_mutex_lock(&st->lock);
      out.len = 0;
      if (!ok) {
        st->gone = true;
        break;
      }
    }
  }
  pthread_mutex_unlock(&st->lock);
  buf_free(&lines), buf_free(&out), buf_free(&chunk);
  return status;
}

/* }====================================================== */

/* {====================================================== handlers */

static bool read_body(struct mg_connection *conn, buf *body, size_t max) {
  char tmp[16384];
  int n;
  while ((n = mg_read(conn, tmp, sizeof tmp)) > 0) {
    if (body->len + (size_t)n > max) return false;
    buf_put(body, tmp, (size_t)n);
  }
  return true;
}

/* The session a request names, with a reference taken; sets *status to
   the error to answer when there is none. */
static session *lookup_session(http_server *srv, struct mg_connection *conn, int *status) {
  const char *id = mg_get_header(conn, "Mcp-Session-Id");
  if (!id) {
    *status = 400;
    return NULL;
  }
  pthread_mutex_lock(&srv->lock);
  hsession *hs = session_find(srv, id);
  session *s = NULL;
  if (hs) {
    hs->last_seen = now();
    s = hs->s;
    session_ref(s);
  }
  pthread_mutex_unlock(&srv->lock);
  if (!s) *status = 404;
  return s;
}

/* A session for one stateless request: initialized as if the client had
   negotiated the version its header names. */
static session *stateless_session(struct mg_connection *conn) {
  session *s = session_new();
  s->ephemeral = true;
  const char *v = mg_get_header(conn, "MCP-Protocol-Version");
  int version = v ? proto_from_name(v, strlen(v)) : PROTO_NONE;
  s->version = version ? version : PROTO_LATEST;
  s->initialized = s->ready = true;
  return s;
}

static int handle_post(http_server *srv, struct mg_connection *conn) {
  const char *type = mg_get_header(conn, "Content-Type");
  if (!type || strncasecmp(type, "application/json", 16) != 0)
    return respond_error(conn, 415, JSONRPC_INVALID_REQUEST,
                         "Content-Type must be application/json", NULL);
  const char *accept = mg_get_header(conn, "Accept");
  if (!accepts(accept, "application/json") || !accepts(accept, "text/event-stream"))
    return respond_error(conn, 406, JSONRPC_INVALID_REQUEST,
                         "Accept must list application/json and text/event-stream", NULL);
  const struct mg_request_info *ri = mg_get_request_info(conn);
  if (ri->content_length > (long long)srv->opt.max_body)
    return respond_error(conn, 413, JSONRPC_INVALID_REQUEST, "Request body too large", NULL);
  buf body;
  buf_init(&body);
  if (!read_body(conn, &body, srv->opt.max_body)) {
    buf_free(&body);
    return respond_error(conn, 413, JSONRPC_INVALID_REQUEST, "Request body too large", NULL);
  }
  size_t len;
  char *data = buf_take(&body, &len);
  jsonrpc_msg m; /* parsed once: the engine takes it as it is */
  jsonrpc_parse(data, len, &m);
  if (m.kind == JSONRPC_INVALID) {
    free(data);
    return respond_error(conn, 400, m.error_code, m.error_msg, NULL);
  }
  bool init = m.kind == JSONRPC_REQUEST && jsonrpc_method_is(&m, "initialize");
  session *s = NULL;
  char extra[128] = "";
  int status = 0;
  const char *hv = mg_get_header(conn, "MCP-Protocol-Version");
  bool modern = envelope_claimed(&m);
  if (!modern && hv && strcmp(hv, MODERN_VERSION) == 0 && m.kind == JSONRPC_REQUEST) {
    int r = respond_rpc_error(conn, 400, m.id, JSONRPC_INVALID_PARAMS,
                              "Invalid params: a 2026-07-28 request carries its _meta envelope "
                              "(io.modelcontextprotocol/protocolVersion, .../clientCapabilities)",
                              NULL);
    free(data);
    return r;
  }
  if (!modern && hv && !proto_from_name(hv, strlen(hv))) {
    char msg[128];
    snprintf(msg, sizeof msg, "Bad Request: unsupported MCP-Protocol-Version %.40s", hv);
    free(data);
    return respond_error(conn, 400, JSONRPC_INVALID_REQUEST, msg, NULL);
  }
  if (modern && m.kind == JSONRPC_REQUEST) {
    /* the header's version against the body's, then the envelope, then the
       other standard headers (400, with the id; the TypeScript SDK's order) */
    envelope env;
    buf msg, edata;
    buf_init(&msg), buf_init(&edata);
    int code = envelope_read(&m, &env, &msg, &edata);
    if (hv && env.version.n >= 2 && json_kind(env.version) == '"' &&
        (strlen(hv) != env.version.n - 2 || memcmp(hv, env.version.p + 1, env.version.n - 2) != 0)) {
      msg.len = edata.len = 0;
      buf_printf(&msg, "Header mismatch: MCP-Protocol-Version header '%.40s' does not match the "
                       "body's %.*s", hv, (int)env.version.n, env.version.p);
      code = MCP_HEADER_MISMATCH;
    }
    if (!code)
      code = http_modern_check(&m, hv, mg_get_header(conn, "Mcp-Method"),
                               mg_get_header(conn, "Mcp-Name"), &msg);
    if (code) {
      buf_putc(&msg, '\0');
      buf_putc(&edata, '\0');
      int r = respond_rpc_error(conn, 400, m.id, code, msg.p, edata.len > 1 ? edata.p : NULL);
      buf_free(&msg), buf_free(&edata);
      free(data);
      return r;
    }
    buf_free(&msg), buf_free(&edata);
  }
  if (modern) {
    /* stateless by the revision: no session, a stray Mcp-Session-Id ignored */
    s = stateless_session(conn);
  } else if (srv->opt.stateless) {
    if (init) {
      s = session_new();
      s->ephemeral = true;
    } else {
      s = stateless_session(conn);
    }
  } else if (init) {
    pthread_mutex_lock(&srv->lock);
    bool full = srv->opt.max_sessions && srv->nsessions >= srv->opt.max_sessions;
    pthread_mutex_unlock(&srv->lock);
    if (full) { /* a flood of initialize must not grow memory without end */
      free(data);
      return respond_error(conn, 503, JSONRPC_INTERNAL_ERROR,
                           "Too many sessions: try again later", "Retry-After: 5\r\n");
    }
    hsession *hs = session_create(srv);
    s = hs->s;
    session_ref(s);
    snprintf(extra, sizeof extra, "Mcp-Session-Id: %s\r\n", hs->id);
  } else {
    s = lookup_session(srv, conn, &status);
    if (!s) {
      free(data);
      return respond_error(conn, status, JSONRPC_INVALID_REQUEST,
                           status == 400 ? "Bad Request: Mcp-Session-Id header is required"
                                         : "Session not found",
                           NULL);
    }
  }
  if (m.kind != JSONRPC_REQUEST) { /* notifications and responses: 202 */
    server_submit(srv->srv, s, NULL, data, len, &m);
    session_unref(s);
    return respond(conn, 202, NULL, NULL, "", 0);
  }
  hstream *st = hstream_new(srv);
  st->modern = modern;
  if (!srv->opt.stateless && !init && !modern) {
    const char *id = mg_get_header(conn, "Mcp-Session-Id");
    pthread_mutex_lock(&srv->lock);
    hsession *hs = session_find(srv, id);
    if (hs) remember_stream(hs, st);
    pthread_mutex_unlock(&srv->lock);
  }
  /* the Mcp-Param-* headers, for the tool's x-mcp-header parameters */
  buf params;
  buf_init(&params);
  for (int i = 0; modern && i < ri->num_headers; i++)
    if (strncasecmp(ri->http_headers[i].name, "Mcp-Param-", 10) == 0) {
      buf_puts(&params, ri->http_headers[i].name + 10);
      buf_putc(&params, '\0');
      buf_puts(&params, ri->http_headers[i].value);
      buf_putc(&params, '\0');
    }
  size_t plen;
  char *p = buf_take(&params, &plen);
  server_submit_http(srv->srv, s, &st->out, data, len, &m, p, plen);
  status = relay(srv, conn, st, false, 0, extra[0] ? extra : NULL);
  if (!srv->opt.stateless && !init && !modern) {
    pthread_mutex_lock(&st->lock);
    bool resumable = st->sse;
    pthread_mutex_unlock(&st->lock);
    if (!resumable) forget_stream(srv, mg_get_header(conn, "Mcp-Session-Id"), st);
  }
  session_unref(s); /* a stateless request's session goes with its last reference */
  hstream_unref(st);
  return status;
}

/* GET: the session's standalone stream, or the resumption of one. */
static int handle_get(http_server *srv, struct mg_connection *conn) {
  if (srv->opt.stateless)
    return respond_error(conn, 405, JSONRPC_INVALID_REQUEST,
                         "This server is stateless: no standalone stream", "Allow: POST\r\n");
  if (!accepts(mg_get_header(conn, "Accept"), "text/event-stream"))
    return respond_error(conn, 406, JSONRPC_INVALID_REQUEST, "Accept must list text/event-stream",
                         NULL);
  int status = 0;
  session *s = lookup_session(srv, conn, &status);
  if (!s)
    return respond_error(conn, status, JSONRPC_INVALID_REQUEST,
                         status == 400 ? "Bad Request: Mcp-Session-Id header is required"
                                       : "Session not found",
                         NULL);
  const char *last = mg_get_header(conn, "Last-Event-ID");
  unsigned long long sid = 0, seq = 0;
  hstream *resume = NULL;
  if (last && sscanf(last, "%llu-%llu", &sid, &seq) == 2) {
    pthread_mutex_lock(&srv->lock);
    hsession *hs = session_find(srv, mg_get_header(conn, "Mcp-Session-Id"));
    for (size_t i = 0; hs && i < hs->nrecent; i++)
      if (hs->recent[i]->id == sid) {
        resume = hs->recent[i];
        atomic_fetch_add(&resume->refs, 1);
      }
    pthread_mutex_unlock(&srv->lock);
  }
  int r;
  if (resume) { /* the rest of that stream, on this connection */
    r = relay(srv, conn, resume, true, seq, NULL);
    hstream_unref(resume);
  } else {
    hstream *st = hstream_new(srv);
    pthread_mutex_lock(&srv->lock);
    hsession *hs = session_find(srv, mg_get_header(conn, "Mcp-Session-Id"));
    if (hs) remember_stream(hs, st);
    pthread_mutex_unlock(&srv->lock);
    server_attach(srv->srv, s, &st->out);
    r = relay(srv, conn, st, true, 0, NULL);
    hstream_unref(st);
  }
  session_unref(s);
  return r;
}

static int handle_delete(http_server *srv, struct mg_connection *conn) {
  if (srv->opt.stateless)
    return respond_error(conn, 405, JSONRPC_INVALID_REQUEST, "This server is stateless",
                         "Allow: POST\r\n");
  const char *id = mg_get_header(conn, "Mcp-Session-Id");
  if (!id)
    return respond_error(conn, 400, JSONRPC_INVALID_REQUEST,
                         "Bad Request: Mcp-Session-Id header is required", NULL);
  pthread_mutex_lock(&srv->lock);
  hsession *hs = session_find(srv, id);
  if (hs) session_remove(srv, hs);
  pthread_mutex_unlock(&srv->lock);
  if (!hs) return respond_error(conn, 404, JSONRPC_INVALID_REQUEST, "Session not found", NULL);
  return respond(conn, 200, NULL, NULL, "", 0);
}

static int serve_mcp(http_server *srv, struct mg_connection *conn);

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

static int serve_mcp(http_server *srv, struct mg_connection *conn) {
  const struct mg_request_info *ri = mg_get_request_info(conn);
  if (!origin_allowed(srv, conn))
    return respond_error(conn, 403, JSONRPC_INVALID_REQUEST, "Forbidden: Host or Origin not allowed",
                         NULL);
  if (!token_ok(srv, conn))
    return respond_error(conn, 401, JSONRPC_INVALID_REQUEST, "Unauthorized",
                         "WWW-Authenticate: Bearer realm=\"luamcp\"\r\n");
  if (atomic_load(&srv->stopping) || engine_finishing(srv->e))
    return respond_error(conn, 503, JSONRPC_INTERNAL_ERROR, "Server shutting down", NULL);
  const char *v = mg_get_header(conn, "MCP-Protocol-Version");
  if (v && strcmp(ri->request_method, "POST") != 0 && !proto_from_name(v, strlen(v))) {
    char msg[128];
    snprintf(msg, sizeof msg, "Bad Request: unsupported MCP-Protocol-Version %.40s", v);
    return respond_error(conn, 400, JSONRPC_INVALID_REQUEST, msg, NULL);
  }
  if (strcmp(ri->request_method, "POST") == 0) return handle_post(srv, conn);
  if (strcmp(ri->request_method, "GET") == 0) return handle_get(srv, conn);
  if (strcmp(ri->request_method, "DELETE") == 0) return handle_delete(srv, conn);
  return respond_error(conn, 405, JSONRPC_INVALID_REQUEST, "Method not allowed",
                       srv->opt.stateless ? "Allow: POST\r\n" : "Allow: GET, POST, DELETE\r\n");
}

extern const struct {
  const char *name;
  const char *src;
  size_t len;
} luamcp_embedded[];

/* GET /dev: the developer page (web/dev.html, compiled in). It talks to
   /mcp like any client, from the same origin. */
static int handle_dev(struct mg_connection *conn, void *cbdata) {
  http_server *srv = cbdata;
  if (!origin_allowed(srv, conn))
    return respond_error(conn, 403, JSONRPC_INVALID_REQUEST, "Forbidden: Host or Origin not allowed",
                         NULL);
  /* no token check: a browser cannot send one with a page load, and the
     page holds no secret — it asks for the token when /mcp answers 401 */
  if (strcmp(mg_get_request_info(conn)->request_method, "GET") != 0)
    return respond_error(conn, 405, JSONRPC_INVALID_REQUEST, "Method not allowed", "Allow: GET\r\n");
  for (size_t i = 0; luamcp_embedded[i].name; i++)
    if (strcmp(luamcp_embedded[i].name, "dev") == 0)
      return respond(conn, 200, NULL, "text/html; charset=utf-8", luamcp_embedded[i].src,
                     luamcp_embedded[i].len);
  return respond_error(conn, 404, JSONRPC_INVALID_REQUEST, "Not found", NULL);
}

static int log_civetweb(const struct mg_connection *conn, const char *message) {
  (void)conn;
  log_msg(LOG_WARNING, "http: %s", message);
  return 1;
}

/* Debian 12's civetweb 1.15 loads OpenSSL at run time and looks up
   SSL_get_peer_certificate, which OpenSSL 3 no longer exports: it would call
   a NULL pointer on the first HTTPS connection. The shim built next to the
   binary (core/tls_shim.c) supplies it; check before promising TLS. */
static bool civetweb_tls_usable(char *why, size_t cap) {
  char exe[PATH_MAX], shim[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(shim, sizeof shim, "%s/libluamcp-tls.so", exe);
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

int transport_http_serve(server *core, const http_options *o) {
  engine *e = server_engine(core);
  http_server *srv = calloc(1, sizeof *srv);
  srv->e = e;
  srv->srv = core;
  srv->opt = *o;
  pthread_mutex_init(&srv->lock, NULL);
  pthread_mutex_init(&srv->reaper_lock, NULL);
  pthread_cond_init(&srv->reaper_cond, NULL);
  atomic_init(&srv->stopping, false);
  atomic_init(&srv->draining, false);
  pthread_mutex_init(&srv->idle_lock, NULL);
  pthread_cond_init(&srv->idle, NULL);
  atomic_init(&srv->next_stream, 0);

  char ports[128], threads[16], pem[4096] = "";
  const char *host = strcmp(o->host, "localhost") == 0 ? "127.0.0.1" : o->host;
  snprintf(ports, sizeof ports, "%s:%d%s", host, o->port, o->cert ? "s" : "");
  snprintf(threads, sizeof threads, "%d", o->threads);
  const char *opts[24];
  int k = 0;
  opts[k++] = "listening_ports", opts[k++] = ports;
  opts[k++] = "num_threads", opts[k++] = threads;
  opts[k++] = "tcp_nodelay", opts[k++] = "1"; /* else 40 ms stalls */
  opts[k++] = "enable_keep_alive", opts[k++] = "yes";
  opts[k++] = "request_timeout_ms", opts[k++] = "30000";
  char tmpdir[] = "/tmp/luamcp-tls.XXXXXX";
  bool combined = false;
  if (o->cert) {
    char why[256];
    if (!civetweb_tls_usable(why, sizeof why)) {
      log_msg(LOG_ERROR, "TLS unavailable: %s", why);
      free(srv);
      return 1;
    }
    snprintf(pem, sizeof pem, "%s", o->cert);
    if (o->key && strcmp(o->key, o->cert) != 0) {
      /* civetweb reads key and certificate from one PEM file */
      if (!mkdtemp(tmpdir) || !concat_pem(o->key, o->cert, tmpdir, pem, sizeof pem)) {
        log_msg(LOG_ERROR, "TLS: cannot read %s and %s", o->key, o->cert);
        free(srv);
        return 1;
      }
      combined = true;
    }
    opts[k++] = "ssl_certificate", opts[k++] = pem;
  }
  opts[k] = NULL;
  struct mg_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.log_message = log_civetweb;
  mg_init_library(o->cert ? MG_FEATURES_TLS : 0);
  srv->ctx = mg_start(&cb, srv, opts);
  if (combined) { /* loaded at start: the copy of the key goes at once */
    unlink(pem);
    rmdir(tmpdir);
  }
  if (!srv->ctx) {
    log_msg(LOG_ERROR, "cannot listen on %s:%d (in use? a bad address?)", o->host, o->port);
    mg_exit_library();
    free(srv);
    return 1;
  }
  mg_set_request_handler(srv->ctx, "/mcp$", handle_mcp, srv);
  if (o->dev) mg_set_request_handler(srv->ctx, "/dev$", handle_dev, srv);
  pthread_create(&srv->reaper, NULL, reaper_main, srv);
  log_msg(LOG_INFO, "listening on http%s://%s:%d/mcp%s", o->cert ? "s" : "", o->host, o->port,
          o->stateless ? " (stateless)" : "");
  if (o->dev)
    log_msg(LOG_INFO, "developer page: http%s://%s:%d/dev", o->cert ? "s" : "", o->host, o->port);

  engine_run(e); /* until a signal, then the calls in flight finish */

  /* let workers send the last answers and close their streams (bounded),
     then stop civetweb */
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
  mg_stop(srv->ctx);
  mg_exit_library();
  while (srv->sessions) {
    hsession *hs = srv->sessions;
    srv->sessions = hs->next;
    hsession_free(hs);
  }
  free(srv->buckets);
  pthread_mutex_destroy(&srv->lock);
  pthread_mutex_destroy(&srv->reaper_lock);
  pthread_cond_destroy(&srv->reaper_cond);
  pthread_mutex_destroy(&srv->idle_lock);
  pthread_cond_destroy(&srv->idle);
  free(srv);
  return 0;
}
