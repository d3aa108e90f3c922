/* transport_http.c — Streamable HTTP on civetweb (see transport_http.h).
 *
 * A POST's answer travels through an hstream: the engine writes whole
 * JSON-RPC lines into it (outlet.write) and finishes it when the request is
 * over; the civetweb worker that owns the connection waits on the stream
 * and relays: one JSON body when the only line is the final answer, SSE
 * events otherwise. A GET stream is an hstream the engine keeps as the
 * session's standalone outlet. Every response is built in one buffer and
 * sent with one write (two writes per response halved throughput here).
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
#include <ctype.h>
#include <sys/random.h>
#include <time.h>
#include <dlfcn.h>
#include <limits.h>
#include <fcntl.h>
#include <unistd.h>
#include <dirent.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <civetweb.h>

#include "envelope.h"
#include "http_modern.h"
#include "jsonrpc.h"
#include "log.h"

#define SESSION_ID_LEN 32 /* hex digits of the random part */
/* NAME.<hex>: the instance's name first, so a proxy can route on it */
#define SESSION_ID_MAX (HTTP_INSTANCE_MAX + 1 + SESSION_ID_LEN)
#define REPLAY_EVENTS 64 /* events a stream keeps for Last-Event-ID */
#define RECENT_STREAMS 8 /* streams a session keeps for resumption */
#define INIT_BURST_SECONDS 10 /* a peer's initialize bucket holds this many seconds of --init-rate */

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
  pthread_cond_t cond; /* broadcast: a resumption and the relay it replaces may both wait */
  buf pending;   /* lines written by the engine, not yet sent */
  bool finished; /* the engine will write no more */
  bool detach;   /* the engine asked to end the current response early */
  bool gone;     /* the client went away: nothing more is kept */
  bool resumable; /* a session keeps it: a GET with Last-Event-ID can find it */
  /* the reader fell behind (or went away): no relay sends it, lines go to
     the replay ring only, until a resumption takes it up */
  bool parked;
  uint64_t owner; /* the relay that sends it; a newer one (a resumption) takes over */
  uint64_t id;   /* unique in the process, so per session too */
  uint64_t seq;  /* events made so far */
  bool sse;      /* answered as an event stream: resumable (Last-Event-ID) */
  bool modern;   /* a 2026-07-28 request: no event ids, errors map to statuses */
  /* a modern request: closing the connection is its cancellation (its
     session, id, and the connection's socket once looked up) */
  session *req_s;
  char *req_id;
  size_t req_id_len;
  int fd;        /* -1: not looked up yet; -2: not found */
  size_t cap;    /* bytes: pending at most, and the ring (but its newest event) */
  size_t ring_bytes;
  event replay[REPLAY_EVENTS];
} hstream;

/* Keep one event for Last-Event-ID (st->lock held): the ring holds the
   last REPLAY_EVENTS, and no more than st->cap bytes but for the newest,
   so a call's final answer is always there. */
static uint64_t store_event(hstream *st, const char *line, size_t n) {
  uint64_t seq = ++st->seq;
  event *ev = &st->replay[seq % REPLAY_EVENTS];
  st->ring_bytes -= ev->line ? ev->len : 0;
  free(ev->line);
  ev->seq = seq;
  ev->line = strndup(line, n);
  ev->len = n;
  st->ring_bytes += n;
  for (uint64_t q = seq > REPLAY_EVENTS ? seq - REPLAY_EVENTS + 1 : 1;
       q < seq && st->ring_bytes > st->cap; q++) {
    event *old = &st->replay[q % REPLAY_EVENTS];
    if (old->seq != q || !old->line) continue;
    st->ring_bytes -= old->len;
    free(old->line);
    old->line = NULL;
  }
  return seq;
}

/* Every line of p as an event of the ring (st->lock held). */
static void store_lines(hstream *st, const char *p, size_t n) {
  for (size_t i = 0; i < n;) {
    const char *nl = memchr(p + i, '\n', n - i);
    size_t len = nl ? (size_t)(nl - (p + i)) : n - i;
    if (len) store_event(st, p + i, len);
    i += len + 1;
  }
}

/* The client fell behind or went away (st->lock held): a resumable stream
   is parked, everything unsent moved to the ring in order; any other is
   given up (its client reads nothing, or too slowly to matter). */
static void fell_behind(hstream *st, int level, const char *why) {
  if (st->resumable) {
    store_lines(st, st->pending.p, st->pending.len);
    st->parked = true;
  } else {
    st->gone = true;
  }
  log_msg(level, "http: stream %llu: %s (%zu bytes unsent): %s", (unsigned long long)st->id,
          why, st->pending.len, st->parked ? "parked for Last-Event-ID" : "dropped");
  buf_free(&st->pending);
}

static bool hstream_write(outlet *o, const char *p, size_t n) {
  hstream *st = (hstream *)o;
  pthread_mutex_lock(&st->lock);
  if (!st->gone && st->parked) {
    store_lines(st, p, n);
  } else if (!st->gone) {
    buf_put(&st->pending, p, n);
    /* behind by more than this write: one large message alone is no sign */
    if (st->pending.len > st->cap && st->pending.len > n)
      fell_behind(st, LOG_NOTICE, "the client fell behind");
  }
  bool alive = !st->gone;
  pthread_cond_broadcast(&st->cond);
  pthread_mutex_unlock(&st->lock);
  return alive;
}

static void hstream_unref(hstream *st) {
  if (!st || atomic_fetch_sub(&st->refs, 1) != 1) return;
  buf_free(&st->pending);
  buf_free(&st->out.out);
  for (int i = 0; i < REPLAY_EVENTS; i++) free(st->replay[i].line);
  if (st->req_s) session_unref(st->req_s);
  free(st->req_id);
  pthread_mutex_destroy(&st->lock);
  pthread_cond_destroy(&st->cond);
  free(st);
}

static void hstream_detach(outlet *o) {
  hstream *st = (hstream *)o;
  pthread_mutex_lock(&st->lock);
  st->detach = true;
  pthread_cond_broadcast(&st->cond);
  pthread_mutex_unlock(&st->lock);
}

/* The engine is done with the stream, n last bytes at p written with the
   end: wake the worker, drop the engine's reference. */
static void wake_and_unref(void *arg) {
  hstream *st = arg;
  pthread_mutex_lock(&st->lock);
  pthread_cond_broadcast(&st->cond);
  pthread_mutex_unlock(&st->lock);
  hstream_unref(st);
}

static void hstream_finish_with(outlet *o, const char *p, size_t n) {
  hstream *st = (hstream *)o;
  pthread_mutex_lock(&st->lock);
  if (n && !st->gone && st->parked) store_lines(st, p, n);
  else if (n && !st->gone) buf_put(&st->pending, p, n); /* the last bytes: past the cap is fine */
  st->finished = true;
  pthread_mutex_unlock(&st->lock);
  /* the worker's wake-up (a futex call when it sleeps) once the run lock is
     let go: the next request need not wait behind it (c=16, callgrind/perf) */
  engine_after_run(wake_and_unref, st);
}

static void hstream_finish(outlet *o) { hstream_finish_with(o, NULL, 0); }

/* }====================================================== */

/* {====================================================== sessions */

/* One remote address: what the per-peer limits count (srv->lock). */
typedef struct peer {
  char addr[48];
  size_t nsessions;
  size_t nstreams; /* its GET and subscriptions/listen streams open */
  double tokens, refilled; /* the initialize bucket */
  struct peer *next;       /* in its hash bucket */
} peer;

#define PEER_BUCKETS 1024

typedef struct hsession {
  char id[SESSION_ID_MAX + 1];
  session *s;
  peer *peer;
  bool acked; /* notifications/initialized came: the longer idle limit applies */
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
  peer *peers[PEER_BUCKETS];
  size_t nstreams; /* streams being relayed: GET, and POSTs that stay open (listen) */
  size_t max_streams, max_streams_per_peer;
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
  pthread_mutex_t body_lock; /* body_reads */
  struct body_read *body_reads;
};

/* A request body being read, which the reaper cuts short past its
   deadline: civetweb's mg_read waits until its buffer is full as long as a
   byte comes every --header-timeout, so a trickling peer would hold the
   worker for hours. */
typedef struct body_read {
  double deadline;
  struct sockaddr_in peer;
  int local_port;
  bool cut;
  struct body_read *next, *prev;
} body_read;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static hstream *hstream_new(http_server *srv) {
  hstream *st = calloc(1, sizeof *st);
  st->cap = srv->opt.stream_buffer;
  st->out.write = hstream_write;
  st->out.finish = hstream_finish;
  st->out.detach = hstream_detach;
  st->out.finish_with = hstream_finish_with;
  st->srv = srv;
  atomic_init(&st->refs, 2); /* the worker's and the engine's */
  pthread_mutex_init(&st->lock, NULL);
  pthread_cond_init(&st->cond, NULL);
  st->id = atomic_fetch_add(&srv->next_stream, 1) + 1;
  st->fd = -1;
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

/* The session lets go of st (caller holds srv->lock): no GET can find it
   now, so a parked st keeps nothing more. */
static void release_stream(hstream *st) {
  pthread_mutex_lock(&st->lock);
  st->resumable = false;
  if (st->parked) st->gone = true;
  pthread_mutex_unlock(&st->lock);
  hstream_unref(st);
}

/* Caller holds srv->lock. Keeps st (a reference is taken) for resumption. */
static void remember_stream(hsession *hs, hstream *st) {
  atomic_fetch_add(&st->refs, 1);
  pthread_mutex_lock(&st->lock);
  st->resumable = true;
  pthread_mutex_unlock(&st->lock);
  if (hs->nrecent == RECENT_STREAMS) {
    release_stream(hs->recent[0]);
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

/* The entry of a remote address, made when missing (caller holds srv->lock). */
static peer *peer_get(http_server *srv, const char *addr) {
  size_t i = id_hash(addr) & (PEER_BUCKETS - 1);
  for (peer *p = srv->peers[i]; p; p = p->next)
    if (strcmp(p->addr, addr) == 0) return p;
  peer *p = calloc(1, sizeof *p);
  snprintf(p->addr, sizeof p->addr, "%s", addr);
  p->tokens = srv->opt.init_rate * INIT_BURST_SECONDS;
  p->refilled = now();
  p->next = srv->peers[i];
  srv->peers[i] = p;
  return p;
}

static void peer_refill(const http_server *srv, peer *p, double t) {
  double full = srv->opt.init_rate * INIT_BURST_SECONDS;
  p->tokens = fmin(full, p->tokens + (t - p->refilled) * srv->opt.init_rate);
  p->refilled = t;
}

/* Forget addresses with no session and a full bucket (caller holds
   srv->lock): the table holds only peers that something is counted for. */
static void peers_sweep(http_server *srv, double t) {
  for (size_t i = 0; i < PEER_BUCKETS; i++)
    for (peer **pp = &srv->peers[i]; *pp;) {
      peer *p = *pp;
      peer_refill(srv, p, t);
      if (!p->nsessions && !p->nstreams && p->tokens >= srv->opt.init_rate * INIT_BURST_SECONDS) {
        *pp = p->next;
        free(p);
      } else {
        pp = &p->next;
      }
    }
}

/* A new session of peer p (caller holds srv->lock). */
static hsession *session_create(http_server *srv, peer *p) {
  hsession *hs = calloc(1, sizeof *hs);
  char hex[SESSION_ID_LEN + 1];
  random_id(hex);
  snprintf(hs->id, sizeof hs->id, "%s.%s", srv->opt.instance, hex);
  hs->s = session_new();
  hs->last_seen = now();
  hs->peer = p;
  if (p) p->nsessions++;
  index_grow(srv);
  hs->next = srv->sessions;
  if (hs->next) hs->next->prev = hs;
  srv->sessions = hs;
  srv->nsessions++;
  index_put(srv, hs);
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
      release_stream(st);
      break;
    }
  pthread_mutex_unlock(&srv->lock);
}

static void hsession_free(hsession *hs) {
  for (size_t i = 0; i < hs->nrecent; i++) release_stream(hs->recent[i]);
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
  if (hs->peer) hs->peer->nsessions--;
  server_end_session(srv->srv, hs->s);
  hsession_free(hs);
}

/* Bodies past their deadline: no more reading (the worker, inside
   mg_read, sees the end of input and answers 408). civetweb does not give
   out its sockets, so they are found among the process's by their
   addresses — one pass for all that are due. A registration is held while
   its worker reads, so the socket found is still that connection's. */
static void cut_slow_bodies(http_server *srv, double t) {
  pthread_mutex_lock(&srv->body_lock);
  size_t due = 0;
  for (body_read *b = srv->body_reads; b; b = b->next) due += !b->cut && t >= b->deadline;
  DIR *d = due ? opendir("/proc/self/fd") : NULL;
  for (struct dirent *de; d && due && (de = readdir(d));) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    int fd = atoi(de->d_name);
    struct sockaddr_in local, peer;
    socklen_t n = sizeof local;
    if (fd == dirfd(d) || getsockname(fd, (struct sockaddr *)&local, &n) != 0 ||
        n != sizeof local || local.sin_family != AF_INET)
      continue;
    n = sizeof peer;
    if (getpeername(fd, (struct sockaddr *)&peer, &n) != 0 || n != sizeof peer) continue;
    for (body_read *b = srv->body_reads; b; b = b->next)
      if (!b->cut && t >= b->deadline && ntohs(local.sin_port) == b->local_port &&
          peer.sin_port == b->peer.sin_port && peer.sin_addr.s_addr == b->peer.sin_addr.s_addr) {
        shutdown(fd, SHUT_RD);
        b->cut = true;
        due--;
      }
  }
  if (d) closedir(d);
  for (body_read *b = srv->body_reads; b; b = b->next) /* not found: not looked for again */
    if (t >= b->deadline) b->cut = true;
  pthread_mutex_unlock(&srv->body_lock);
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
    double t = now();
    /* never acknowledged (a flood of initialize, or a client that died
       half-way): the short limit */
    double unacked = fmin(srv->opt.init_timeout, srv->opt.session_idle);
    pthread_mutex_lock(&srv->lock);
    hsession *next;
    for (hsession *hs = srv->sessions; hs; hs = next) {
      next = hs->next;
      if (t - hs->last_seen > (hs->acked ? srv->opt.session_idle : unacked)) {
        log_msg(LOG_INFO, "session %.8s… idle%s: ended", hs->id,
                hs->acked ? "" : " and never initialized");
        session_remove(srv, hs);
      }
    }
    peers_sweep(srv, t);
    pthread_mutex_unlock(&srv->lock);
    cut_slow_bodies(srv, t);
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
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

/* Status line and headers every answer carries; extra is more header lines. */
/* How long an idle keep-alive connection stays open, told to the client:
   Node's fetch (undici) reuses an idle socket for the hinted time less a
   second, so it never sends on one the server is closing (without the hint
   it keeps sockets 4 s against civetweb's 0.5 s: "fetch failed" now and then). */
#define KEEP_ALIVE_S 2

static void start_response(buf *b, int status, const char *extra) {
  buf_printf(b, "HTTP/1.1 %d %s\r\nCache-Control: no-cache\r\nKeep-Alive: timeout=%d\r\n", status,
             status_text(status), KEEP_ALIVE_S);
  if (extra) buf_puts(b, extra);
}

static bool send_all(struct mg_connection *conn, const buf *b) {
  if (mg_write(conn, b->p, b->len) == (int)b->len) return true;
  /* a response cut short: what civetweb would read or write next on this
     connection would not line up with it */
  mg_disable_connection_keep_alive(conn);
  return false;
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
   value or NULL; extra: headers or NULL). */
static int respond_rpc_error(struct mg_connection *conn, int status, json_span id, int code,
                             const char *msg, const char *data, const char *extra) {
  buf b;
  buf_init(&b);
  jsonrpc_write_error(&b, id, code, msg, data);
  int r = respond(conn, status, extra, "application/json", b.p, b.len - 1);
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

/* host[:port] exactly (n bytes): a bracketed IPv6 literal or a name of
   letters, digits, '-', '.', '_' and '~' (no userinfo, no path), and a port
   of 1-65535 if any. The host part goes to *h, *hn. */
static bool parse_authority(const char *p, size_t n, const char **h, size_t *hn) {
  size_t i = 0;
  if (n && p[0] == '[') {
    const char *close = memchr(p, ']', n);
    if (!close || close == p + 1) return false;
    for (i = 1; p + i < close; i++)
      if (!isxdigit((unsigned char)p[i]) && p[i] != ':' && p[i] != '.') return false;
    i++;
  } else {
    while (i < n && (isalnum((unsigned char)p[i]) || strchr("-._~", p[i]) != NULL)) i++;
  }
  if (i == 0) return false;
  *h = p, *hn = i;
  if (i == n) return true;
  if (p[i] != ':' || n - i - 1 < 1 || n - i - 1 > 5) return false;
  unsigned port = 0;
  for (i++; i < n; i++) {
    if (!isdigit((unsigned char)p[i])) return false;
    port = port * 10 + (unsigned)(p[i] - '0');
  }
  return port >= 1 && port <= 65535;
}

static bool same_name(const char *h, size_t n, const char *name) {
  return strlen(name) == n && strncasecmp(h, name, n) == 0;
}

static bool bound_to_loopback(const http_server *srv) {
  const char *h = srv->opt.host;
  return strcmp(h, "127.0.0.1") == 0 || strcmp(h, "localhost") == 0 ||
         strncmp(h, "127.", 4) == 0;
}

/* A loopback name, or the address the server is bound to. */
static bool loopback_host(const http_server *srv, const char *h, size_t n) {
  return same_name(h, n, "localhost") || same_name(h, n, "127.0.0.1") ||
         same_name(h, n, "[::1]") || same_name(h, n, srv->opt.host);
}

/* {====== behind a reverse proxy (--trust-proxy) */

/* Did the request come from a proxy we were told to trust? Only then are
   its X-Forwarded-* headers believed: anyone else could send them. */
static bool from_proxy(const http_server *srv, const struct mg_connection *conn) {
  const char *addr = mg_get_request_info(conn)->remote_addr;
  for (size_t i = 0; i < srv->opt.ntrust_proxies; i++)
    if (strcmp(addr, srv->opt.trust_proxies[i]) == 0) return true;
  return false;
}

/* The client's address as the proxy saw it: the last X-Forwarded-For
   entry (the one the proxy appended; earlier ones are the client's say). */
static bool forwarded_for(const struct mg_connection *conn, char *out, size_t cap) {
  const char *v = mg_get_header(conn, "X-Forwarded-For");
  if (!v) return false;
  const char *last = strrchr(v, ',');
  last = last ? last + 1 : v;
  while (*last == ' ' || *last == '\t') last++;
  size_t n = strcspn(last, " \t");
  unsigned char bin[16];
  if (n == 0 || n >= cap) return false;
  memcpy(out, last, n);
  out[n] = '\0';
  return inet_pton(AF_INET, out, bin) == 1 || inet_pton(AF_INET6, out, bin) == 1;
}

static bool loopback_addr(const char *a) {
  return strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0;
}

/* The remote address the per-peer limits count: the client's behind a
   trusted proxy, else the connection's. */
static void peer_address(const http_server *srv, const struct mg_connection *conn, char *out,
                         size_t cap) {
  if (from_proxy(srv, conn) && forwarded_for(conn, out, cap)) return;
  snprintf(out, cap, "%s", mg_get_request_info(conn)->remote_addr);
}

/* }====== */

/* DNS-rebinding and cross-site protection, before anything else: 0 when
   the request may go on, else the status to refuse it with. Bound to
   loopback, Host must name loopback (its port is not compared: ssh -L and
   container port maps change it, and the name is what rebinding cannot
   fake). Origin, when present, must be an --allow-origin exactly, or
   (bound to loopback) http(s) on a loopback host; bound elsewhere, a page
   on the visitor's own machine is as foreign as any other. */
static int origin_check(const http_server *srv, struct mg_connection *conn) {
  const char *host = mg_get_header(conn, "Host"), *h;
  size_t hn;
  bool loopback = bound_to_loopback(srv);
  if (from_proxy(srv, conn)) {
    /* the Host the client sent to the proxy, and the policy of the
       client's side: a loopback client may be a rebound browser page */
    const char *fh = mg_get_header(conn, "X-Forwarded-Host");
    char client[48];
    if (fh) host = fh;
    if (forwarded_for(conn, client, sizeof client)) loopback = loopback_addr(client);
  }
  if (host && !parse_authority(host, strlen(host), &h, &hn)) return 400;
  if (loopback && (!host || !loopback_host(srv, h, hn))) return 403;
  const char *origin = mg_get_header(conn, "Origin");
  if (!origin) return 0; /* not a browser */
  for (size_t i = 0; i < srv->opt.nallow_origins; i++)
    if (strcasecmp(origin, srv->opt.allow_origins[i]) == 0) return 0;
  if (!loopback) return 403;
  const char *rest = NULL;
  if (strncasecmp(origin, "http://", 7) == 0) rest = origin + 7;
  else if (strncasecmp(origin, "https://", 8) == 0) rest = origin + 8;
  if (!rest || !parse_authority(rest, strlen(rest), &h, &hn)) return 403;
  return loopback_host(srv, h, hn) ? 0 : 403;
}

/* 0, or the status of an answer already sent (the connection then closes):
   a body framed two ways (Content-Length and Transfer-Encoding, or two
   Content-Lengths that differ) is how requests are smuggled past a proxy
   that reads it the other way; a Content-Length that is not all digits
   is read by civetweb as its leading number. */
static int framing_check(struct mg_connection *conn) {
  const struct mg_request_info *ri = mg_get_request_info(conn);
  const char *cl = NULL, *why = NULL;
  int nte = 0, nhost = 0;
  for (int i = 0; i < ri->num_headers && !why; i++) {
    const char *name = ri->http_headers[i].name, *v = ri->http_headers[i].value;
    if (strcasecmp(name, "Transfer-Encoding") == 0 && nte++) why = "two Transfer-Encoding headers";
    if (strcasecmp(name, "Host") == 0 && nhost++) why = "two Host headers"; /* which one is checked? */
    if (strcasecmp(name, "Content-Length") != 0) continue;
    if (!*v || strspn(v, "0123456789") != strlen(v)) why = "a Content-Length that is not a number";
    else if (cl && strcmp(cl, v) != 0) why = "two different Content-Length headers";
    cl = v;
  }
  if (!why && cl && nte) why = "both Content-Length and Transfer-Encoding";
  if (!why) return 0;
  char msg[96];
  snprintf(msg, sizeof msg, "Bad Request: %s", why);
  /* what follows the head cannot be trusted to be a request of its own */
  mg_disable_connection_keep_alive(conn);
  return respond_error(conn, 400, JSONRPC_INVALID_REQUEST, msg, "Connection: close\r\n");
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
  uint64_t seq = store_event(st, line, n);
  buf_printf(chunk, "id: %llu-%llu\nevent: message\ndata: ", (unsigned long long)st->id,
             (unsigned long long)seq);
  buf_put(chunk, line, n);
  buf_puts(chunk, "\n\n");
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

/* Has the client of st's connection closed it? civetweb does not give out
   its sockets: the first time a long call asks (after a keep-alive
   interval), the socket is found among the process's by its addresses
   (as cut_slow_bodies does); then a poll for the peer's hang-up. */
static bool client_gone(http_server *srv, struct mg_connection *conn, hstream *st) {
  (void)srv;
  if (st->fd == -1) {
    const struct mg_request_info *ri = mg_get_request_info(conn);
    struct sockaddr_in want;
    st->fd = -2;
    if (inet_pton(AF_INET, ri->remote_addr, &want.sin_addr) != 1) return false;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *de; d && (de = readdir(d));) {
      if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
      int fd = atoi(de->d_name);
      struct sockaddr_in local, peer;
      socklen_t n = sizeof local;
      if (fd == dirfd(d) || getsockname(fd, (struct sockaddr *)&local, &n) != 0 ||
          n != sizeof local || local.sin_family != AF_INET || ntohs(local.sin_port) != ri->server_port)
        continue;
      n = sizeof peer;
      if (getpeername(fd, (struct sockaddr *)&peer, &n) == 0 && n == sizeof peer &&
          ntohs(peer.sin_port) == ri->remote_port && peer.sin_addr.s_addr == want.sin_addr.s_addr) {
        st->fd = fd; /* this connection's while its worker is in the handler */
        break;
      }
    }
    if (d) closedir(d);
  }
  if (st->fd < 0) return false;
  struct pollfd p = {.fd = st->fd, .events = POLLRDHUP};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Relay st on conn until the engine finishes it or the client goes away.
   sse: already an event stream (GET). replay_after: resend events after
   this sequence number first (Last-Event-ID). extra: headers for the first
   response (Mcp-Session-Id). The response also ends, the stream kept, when
   it is parked (its reader fell behind) or a resumption takes it over. */
static int relay(http_server *srv, struct mg_connection *conn, hstream *st, bool sse,
                 uint64_t replay_after, const char *extra) {
  buf lines, out, chunk;
  buf_init(&lines), buf_init(&out), buf_init(&chunk);
  bool started = false, done = false;
  int status = 200;
  pthread_mutex_lock(&st->lock);
  uint64_t me = ++st->owner;
  pthread_cond_broadcast(&st->cond); /* a relay this one replaces ends its response */
  if (sse) {
    start_response(&out, 200,
                   "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                   "X-Accel-Buffering: no\r\n");
    if (extra) buf_puts(&out, extra);
    buf_puts(&out, "\r\n");
    /* priming event: an id to resume from, and how soon to retry */
    buf_printf(&chunk, "id: %llu-%llu\nretry: 1000\ndata: \n\n", (unsigned long long)st->id,
               (unsigned long long)st->seq);
    uint64_t from = replay_after + 1;
    if (st->seq > REPLAY_EVENTS && from < st->seq - REPLAY_EVENTS + 1)
      from = st->seq - REPLAY_EVENTS + 1;
    for (uint64_t q = from; q <= st->seq; q++) {
      event *ev = &st->replay[q % REPLAY_EVENTS];
      if (ev->seq != q || !ev->line) continue; /* fell out of the ring */
      buf_printf(&chunk, "id: %llu-%llu\nevent: message\ndata: ", (unsigned long long)st->id,
                 (unsigned long long)q);
      buf_put(&chunk, ev->line, ev->len);
      buf_puts(&chunk, "\n\n");
    }
    put_chunk(&out, &chunk);
    chunk.len = 0;
    started = st->sse = true;
    st->parked = false; /* what it kept is on its way: live lines come to this relay again */
  }
  while (!done) {
    while (!st->pending.len && !st->finished && !st->detach && !st->parked && !st->gone &&
           st->owner == me && !atomic_load(&srv->stopping) && !atomic_load(&srv->draining)) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + srv->opt.keepalive;
      ts.tv_sec = (time_t)t;
      ts.tv_nsec = (long)((t - floor(t)) * 1e9);
      if (out.len) break; /* something to send first */
      int waited = pthread_cond_timedwait(&st->cond, &st->lock, &ts);
      if (waited == ETIMEDOUT && !started && st->modern && client_gone(srv, conn, st)) {
        /* 2026-07-28: a client that closes the request's connection
           cancels it (streamable-http.mdx "Cancellation") */
        st->gone = true;
        engine_cancel(srv->e, st->req_s, st->req_id, st->req_id_len);
        break;
      }
      if (waited == ETIMEDOUT && started) {
        /* keep-alive comment: a dead client shows up as a failed write */
        buf c;
        buf_init(&c);
        buf_puts(&c, ": keep-alive\n\n");
        put_chunk(&out, &c);
        buf_free(&c);
        break;
      }
    }
    if (st->gone) { /* given up (its unsent lines past the cap): end what was sent */
      if (started) {
        buf_puts(&out, "0\r\n\r\n");
        pthread_mutex_unlock(&st->lock);
        send_all(conn, &out);
        pthread_mutex_lock(&st->lock);
      }
      break;
    }
    /* parked, or taken over: end this response; what is unsent is the
       resumption's (its lines are in the ring, or pending for the new relay) */
    bool parked = st->parked || st->owner != me;
    /* take what the engine wrote */
    buf_free(&lines);
    if (parked) {
      buf_init(&lines);
    } else {
      lines = st->pending;
      buf_init(&st->pending);
    }
    bool finished = !parked && (st->finished || atomic_load(&srv->stopping) ||
                                (atomic_load(&srv->draining) && !lines.len));
    bool detach = !finished && (parked || st->detach);
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
      /* parked before anything was sent: the priming event still tells
         the client which stream to resume */
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
      if (out.cap > 65536) buf_free(&out); /* a large batch's memory goes now */
      else out.len = 0;
      if (!ok) {
        /* the client went away or stopped reading (no progress for
           --header-timeout): a stream it can resume keeps its lines */
        if (st->owner == me && !st->parked && !st->gone)
          fell_behind(st, LOG_DEBUG, "the client went away or stopped reading");
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

/* The body into body: 0, or the status to refuse it with (413 past max,
   408 when it has not all come within --body-timeout). */
static int read_body(http_server *srv, struct mg_connection *conn, buf *body, size_t max) {
  const struct mg_request_info *ri = mg_get_request_info(conn);
  long long want = ri->content_length; /* -1: chunked */
  body_read reg = {.deadline = now() + srv->opt.body_timeout, .local_port = ri->server_port};
  reg.peer.sin_family = AF_INET;
  reg.peer.sin_port = htons((uint16_t)ri->remote_port);
  bool watched = want != 0 && inet_pton(AF_INET, ri->remote_addr, &reg.peer.sin_addr) == 1;
  if (watched) {
    pthread_mutex_lock(&srv->body_lock);
    reg.next = srv->body_reads;
    if (reg.next) reg.next->prev = &reg;
    srv->body_reads = &reg;
    pthread_mutex_unlock(&srv->body_lock);
  }
  char tmp[16384];
  int n, status = 0;
  while ((n = mg_read(conn, tmp, sizeof tmp)) > 0) {
    if (body->len + (size_t)n > max) {
      status = 413;
      break;
    }
    buf_put(body, tmp, (size_t)n);
  }
  if (watched) {
    pthread_mutex_lock(&srv->body_lock);
    if (reg.prev) reg.prev->next = reg.next;
    else srv->body_reads = reg.next;
    if (reg.next) reg.next->prev = reg.prev;
    pthread_mutex_unlock(&srv->body_lock);
  }
  /* cut short by the reaper, or a read that made no progress for
     --header-timeout (mg_read then ends early) */
  if (!status && (reg.cut || (want > 0 && (long long)body->len < want))) status = 408;
  return status;
}

/* The session a request names, with a reference taken; sets *status to
   the error to answer when there is none. */
static session *lookup_session(http_server *srv, struct mg_connection *conn, int *status,
                               bool ack) {
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
    if (ack) hs->acked = true;
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

/* A stream holds its worker for as long as it is open (civetweb: a worker
   per connection), so streams share one pool below --threads, and one
   address may hold only --max-streams-per-peer of it: the workers left
   are the requests'. 0 and *held set (release with stream_release), or
   the status to refuse with and *why. */
static int stream_admit(http_server *srv, struct mg_connection *conn, peer **held,
                        const char **why) {
  char addr[48];
  peer_address(srv, conn, addr, sizeof addr);
  int code = 0;
  pthread_mutex_lock(&srv->lock);
  peer *p = peer_get(srv, addr);
  if (srv->nstreams >= srv->max_streams) {
    code = 503;
    *why = "Too many open streams: try again later";
  } else if (p->nstreams >= srv->max_streams_per_peer) {
    code = 429; /* this address's doing: others are still served */
    *why = "Too many open streams from this address: close some or try again later";
  } else {
    srv->nstreams++;
    p->nstreams++;
    *held = p;
  }
  pthread_mutex_unlock(&srv->lock);
  if (code) mg_disable_connection_keep_alive(conn); /* its idle keep-alive would hold a worker too */
  return code;
}

static void stream_release(http_server *srv, peer *p) {
  pthread_mutex_lock(&srv->lock);
  srv->nstreams--;
  p->nstreams--;
  pthread_mutex_unlock(&srv->lock);
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
  const char *expect = mg_get_header(conn, "Expect");
  if (expect && strcmp(ri->http_version, "1.1") == 0) { /* HTTP/1.0 ignores it */
    if (strcasecmp(expect, "100-continue") != 0)
      return respond_error(conn, 417, JSONRPC_INVALID_REQUEST,
                           "Expectation Failed: only 100-continue is known", NULL);
    /* the client waits for this before it sends the body (civetweb sends
       it only for its own file and CGI handlers) */
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    mg_write(conn, cont, sizeof cont - 1);
  }
  buf body;
  buf_init(&body);
  int refused = read_body(srv, conn, &body, srv->opt.max_body);
  if (refused) {
    buf_free(&body);
    if (refused == 408) { /* the rest of it may still come: the connection closes */
      mg_disable_connection_keep_alive(conn);
      return respond_error(conn, 408, JSONRPC_INVALID_REQUEST,
                           "Request Timeout: the body did not come in time", "Connection: close\r\n");
    }
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
                              NULL, NULL);
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
      int r = respond_rpc_error(conn, 400, m.id, code, msg.p, edata.len > 1 ? edata.p : NULL, NULL);
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
    const char *refusal = NULL;
    char retry[64] = "Retry-After: 5\r\n";
    int code = 503;
    pthread_mutex_lock(&srv->lock);
    if (srv->opt.max_sessions && srv->nsessions >= srv->opt.max_sessions) {
      /* a flood of initialize must not grow memory without end */
      refusal = "Too many sessions: try again later";
    } else {
      char addr[48];
      peer_address(srv, conn, addr, sizeof addr);
      peer *p = peer_get(srv, addr);
      double t = now();
      peer_refill(srv, p, t);
      code = 429; /* this peer's doing: others are still served */
      if (srv->opt.max_sessions_per_peer && p->nsessions >= srv->opt.max_sessions_per_peer) {
        refusal = "Too many sessions from this address: end some (DELETE) or try again later";
      } else if (srv->opt.init_rate > 0 && p->tokens < 1) {
        refusal = "Too many initialize requests from this address: try again later";
        snprintf(retry, sizeof retry, "Retry-After: %d\r\n",
                 (int)ceil((1 - p->tokens) / srv->opt.init_rate));
      } else {
        if (srv->opt.init_rate > 0) p->tokens -= 1;
        hsession *hs = session_create(srv, p);
        s = hs->s;
        session_ref(s);
        snprintf(extra, sizeof extra, "Mcp-Session-Id: %s\r\n", hs->id);
      }
    }
    pthread_mutex_unlock(&srv->lock);
    if (refusal) {
      free(data);
      /* a flooding peer's idle keep-alive would hold a worker 0.5 s more */
      mg_disable_connection_keep_alive(conn);
      strcat(retry, "Connection: close\r\n");
      return respond_error(conn, code, JSONRPC_INTERNAL_ERROR, refusal, retry);
    }
  } else {
    bool ack = m.kind == JSONRPC_NOTIFICATION &&
               jsonrpc_method_is(&m, "notifications/initialized");
    s = lookup_session(srv, conn, &status, ack);
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
  /* a subscription stays open: a stream like a GET's, from the same pool */
  peer *held = NULL;
  if (jsonrpc_method_is(&m, "subscriptions/listen")) {
    const char *why = NULL;
    int refused = stream_admit(srv, conn, &held, &why);
    if (refused) {
      int r = respond_rpc_error(conn, refused, m.id, JSONRPC_INTERNAL_ERROR, why, NULL,
                                "Retry-After: 5\r\nConnection: close\r\n");
      session_unref(s);
      free(data);
      return r;
    }
  }
  hstream *st = hstream_new(srv);
  st->modern = modern;
  if (modern) {
    st->req_s = s;
    session_ref(s);
    st->req_id = strndup(m.id.p, m.id.n);
    st->req_id_len = m.id.n;
  }
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
  if (held) {
    /* the client closed it: its listener goes now, filter and all, not at
       the next notification */
    pthread_mutex_lock(&st->lock);
    bool open = !st->finished;
    pthread_mutex_unlock(&st->lock);
    if (open) {
      atomic_fetch_add(&st->refs, 1); /* the message's, until the engine is done with it */
      server_stream_closed(srv->srv, s, &st->out);
    }
    stream_release(srv, held);
  }
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
  session *s = lookup_session(srv, conn, &status, false);
  if (!s)
    return respond_error(conn, status, JSONRPC_INVALID_REQUEST,
                         status == 400 ? "Bad Request: Mcp-Session-Id header is required"
                                       : "Session not found",
                         NULL);
  peer *held = NULL;
  const char *why = NULL;
  int refused = stream_admit(srv, conn, &held, &why);
  if (refused) {
    session_unref(s);
    return respond_error(conn, refused, JSONRPC_INTERNAL_ERROR, why,
                         "Retry-After: 5\r\nConnection: close\r\n");
  }
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
  stream_release(srv, held);
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

/* Framing, Host and Origin: 0 when the request may go on, else the
   status it was refused with. */
static int refuse_early(http_server *srv, struct mg_connection *conn) {
  int status = framing_check(conn);
  if (status) return status;
  status = origin_check(srv, conn);
  if (status == 400)
    return respond_error(conn, 400, JSONRPC_INVALID_REQUEST, "Bad Request: malformed Host", NULL);
  if (status)
    return respond_error(conn, 403, JSONRPC_INVALID_REQUEST, "Forbidden: Host or Origin not allowed",
                         NULL);
  return 0;
}

static int serve_mcp(http_server *srv, struct mg_connection *conn) {
  const struct mg_request_info *ri = mg_get_request_info(conn);
  int refused = refuse_early(srv, conn);
  if (refused) return refused;
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
  int refused = refuse_early(srv, conn);
  if (refused) return refused;
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

/* civetweb's own error answers (a head too slow, too large or malformed,
   an unknown path), in our format: its page builds a Date header with
   gmtime(), which is not thread-safe, and workers timing out slow peers
   at once raced on it. The connection closes, as after civetweb's page. */
static int civetweb_error(struct mg_connection *conn, int status, const char *msg) {
  mg_disable_connection_keep_alive(conn);
  respond_error(conn, status, JSONRPC_INVALID_REQUEST, msg && *msg ? msg : status_text(status),
                "Connection: close\r\n");
  return 0;
}

/* Routing, from civetweb's begin_request callback: set before mg_start,
   unlike request handlers, which are registered once it already listens
   (a client that connected in between got 404). 0: not ours (civetweb's
   404). */
static int route(struct mg_connection *conn) {
  http_server *srv = mg_get_user_data(mg_get_context(conn));
  const char *uri = mg_get_request_info(conn)->local_uri;
  if (uri && strcmp(uri, "/mcp") == 0) return handle_mcp(conn, srv);
  if (uri && srv->opt.dev && strcmp(uri, "/dev") == 0) return handle_dev(conn, srv);
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

bool http_instance_ok(const char *name) {
  size_t n = strlen(name);
  return n >= 1 && n <= HTTP_INSTANCE_MAX &&
         strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

int transport_http_serve(server *core, const http_options *o) {
  engine *e = server_engine(core);
  http_server *srv = calloc(1, sizeof *srv);
  srv->e = e;
  srv->srv = core;
  srv->opt = *o;
  char instance[SESSION_ID_LEN + 1];
  if (!o->instance) { /* a short random name: ids stay routable by it */
    random_id(instance);
    instance[8] = '\0';
    srv->opt.instance = instance; /* lives as long as this function serves */
  }
  pthread_mutex_init(&srv->lock, NULL);
  pthread_mutex_init(&srv->reaper_lock, NULL);
  pthread_cond_init(&srv->reaper_cond, NULL);
  pthread_mutex_init(&srv->body_lock, NULL);
  atomic_init(&srv->stopping, false);
  atomic_init(&srv->draining, false);
  pthread_mutex_init(&srv->idle_lock, NULL);
  pthread_cond_init(&srv->idle, NULL);
  atomic_init(&srv->next_stream, 0);
  /* default: a fifth of the workers, 64 of 320, so the 256 calls waiting
     on I/O that 320 is sized for still find workers (README, "Streamable
     HTTP", has the measurements) */
  srv->max_streams = o->max_streams ? o->max_streams : (size_t)(o->threads / 5 > 1 ? o->threads / 5 : 1);
  if (srv->max_streams > (size_t)o->threads - 1) srv->max_streams = (size_t)o->threads - 1;
  /* default: half the pool, so one address cannot shut the others out */
  srv->max_streams_per_peer = o->max_streams_per_peer ? o->max_streams_per_peer
                                                      : (srv->max_streams + 1) / 2;

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
  char keep_ms[16];
  snprintf(keep_ms, sizeof keep_ms, "%d", KEEP_ALIVE_S * 1000);
  opts[k++] = "keep_alive_timeout_ms", opts[k++] = keep_ms;
  /* civetweb's one timeout: the whole request head, and any read or write
     that makes no progress (a slowloris peer is dropped after it) */
  char request_ms[32];
  snprintf(request_ms, sizeof request_ms, "%.0f", o->header_timeout * 1000.0);
  opts[k++] = "request_timeout_ms", opts[k++] = request_ms;
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
  cb.http_error = civetweb_error;
  cb.begin_request = route;
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
  pthread_create(&srv->reaper, NULL, reaper_main, srv);
  log_msg(LOG_INFO, "listening on http%s://%s:%d/mcp%s (instance %s)", o->cert ? "s" : "", o->host,
          o->port, o->stateless ? " (stateless)" : "", srv->opt.instance);
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
  free(srv);
  return 0;
}
