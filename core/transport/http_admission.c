/* http_admission.c — who may hold what (http_internal.h). civetweb gives
 * every connection a worker from the moment it is accepted, so what can
 * hold one is bounded: sessions (their ids, an index by id, the idle
 * limits the reaper enforces), the limits per remote address (sessions,
 * the initialize bucket, open streams), streams in one pool below
 * --threads, and request bodies that trickle (cut at --body-timeout). */
#include "http_internal.h"
#include "clock.h"

#include <dirent.h>
#include <unistd.h>
#include <sys/random.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsonrpc.h"
#include "log.h"
#include "metrics.h"

void http_random_id(char out[SESSION_ID_LEN + 1]) {
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
  http_stream_unref(st);
}

/* Caller holds srv->lock. Keeps st (a reference is taken) for resumption. */
void http_remember_stream(hsession *hs, hstream *st) {
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
peer *http_peer_get(http_server *srv, const char *addr) {
  size_t i = id_hash(addr) & (PEER_BUCKETS - 1);
  for (peer *p = srv->peers[i]; p; p = p->next)
    if (strcmp(p->addr, addr) == 0) return p;
  peer *p = calloc(1, sizeof *p);
  snprintf(p->addr, sizeof p->addr, "%s", addr);
  p->tokens = srv->opt.init_rate * INIT_BURST_SECONDS;
  p->refilled = clock_now();
  p->next = srv->peers[i];
  srv->peers[i] = p;
  return p;
}

void http_peer_refill(const http_server *srv, peer *p, double t) {
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
      http_peer_refill(srv, p, t);
      if (!p->nsessions && !p->nstreams && p->tokens >= srv->opt.init_rate * INIT_BURST_SECONDS) {
        *pp = p->next;
        free(p);
      } else {
        pp = &p->next;
      }
    }
}

/* Peer p is at its session limit: end its least recently used session if
   that one has been idle PEER_EVICT_IDLE seconds, so one process's
   forgotten sessions do not shut its address out for --session-idle
   (caller holds srv->lock). False, with *wait the seconds until one will
   be, when none is. */
bool http_evict_idle(http_server *srv, peer *p, double now, double *wait) {
  hsession *oldest = NULL;
  for (hsession *hs = srv->sessions; hs; hs = hs->next)
    if (hs->peer == p && (!oldest || hs->last_seen < oldest->last_seen)) oldest = hs;
  if (!oldest) return *wait = 1, false;
  double idle = now - oldest->last_seen;
  if (idle < PEER_EVICT_IDLE) {
    *wait = PEER_EVICT_IDLE - idle;
    if (*wait < 1) *wait = 1;
    return false;
  }
  log_msg(LOG_INFO, "session %s ended: its address is at --max-sessions-per-peer and it was the "
          "least recently used (idle %.0f s)", oldest->id, idle);
  http_session_remove(srv, oldest);
  return true;
}

/* A new session of peer p (caller holds srv->lock). */
hsession *http_session_create(http_server *srv, peer *p, principal *who) {
  hsession *hs = calloc(1, sizeof *hs);
  char hex[SESSION_ID_LEN + 1];
  http_random_id(hex);
  snprintf(hs->id, sizeof hs->id, "%s.%s", srv->opt.instance, hex);
  hs->s = session_new();
  snprintf(hs->s->id, sizeof hs->s->id, "%s", hs->id);
  if (p) snprintf(hs->s->peer, sizeof hs->s->peer, "%s", p->addr);
  hs->last_seen = hs->created = clock_now();
  hs->owner = principal_ref(who);
  if (metrics_on) metric_gauge_add(metric_only(M_SESSIONS), 1);
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
hsession *http_session_find(http_server *srv, const char *id) {
  if (!srv->nbuckets) return NULL;
  for (hsession *hs = srv->buckets[id_hash(id) & (srv->nbuckets - 1)]; hs; hs = hs->hnext)
    if (strcmp(hs->id, id) == 0) return hs;
  return NULL;
}

/* The POST stream st was answered with one JSON body: there is nothing to
   resume, so the session need not keep it (kept, a session's memory grew
   by a stream per call up to RECENT_STREAMS). */
void http_forget_stream(http_server *srv, const char *session_id, hstream *st) {
  pthread_mutex_lock(&srv->lock);
  hsession *hs = session_id ? http_session_find(srv, session_id) : NULL;
  for (size_t i = 0; hs && i < hs->nrecent; i++)
    if (hs->recent[i] == st) {
      memmove(hs->recent + i, hs->recent + i + 1, (hs->nrecent - i - 1) * sizeof *hs->recent);
      hs->nrecent--;
      release_stream(st);
      break;
    }
  pthread_mutex_unlock(&srv->lock);
}

bool http_session_owned(const hsession *hs, const principal *who) {
  return hs->owner == who || principal_same(hs->owner, who);
}

void http_session_free(hsession *hs) {
  for (size_t i = 0; i < hs->nrecent; i++) release_stream(hs->recent[i]);
  principal_unref(hs->owner);
  session_unref(hs->s);
  free(hs);
}

/* Unlink hs (caller holds srv->lock), tell the engine, free it. */
void http_session_remove(http_server *srv, hsession *hs) {
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
  if (metrics_on) {
    metric_gauge_add(metric_only(M_SESSIONS), -1);
    metric_observe(metric_only(M_SESSION_DURATION), clock_now() - hs->created);
  }
  server_end_session(srv->srv, hs->s);
  http_session_free(hs);
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
void *http_reaper_main(void *arg) {
  http_server *srv = arg;
  pthread_mutex_lock(&srv->reaper_lock);
  while (!atomic_load(&srv->stopping)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&srv->reaper_cond, &srv->reaper_lock, &ts);
    double t = clock_now();
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
        http_session_remove(srv, hs);
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

/* The body into body: 0, or the status to refuse it with (413 past max,
   408 when it has not all come within --body-timeout). */
int http_read_body(http_server *srv, struct mg_connection *conn, buf *body, size_t max) {
  const struct mg_request_info *ri = mg_get_request_info(conn);
  long long want = ri->content_length; /* -1: chunked */
  body_read reg = {.deadline = clock_now() + srv->opt.body_timeout, .local_port = ri->server_port};
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

session *http_lookup_session(http_server *srv, struct mg_connection *conn, int *status,
                               bool ack, const principal *who) {
  const char *id = mg_get_header(conn, "Mcp-Session-Id");
  if (!id) {
    *status = 400;
    return NULL;
  }
  pthread_mutex_lock(&srv->lock);
  hsession *hs = http_session_find(srv, id);
  session *s = NULL;
  if (hs && http_session_owned(hs, who)) {
    hs->last_seen = clock_now();
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
session *http_stateless_session(http_server *srv, struct mg_connection *conn) {
  session *s = session_new();
  s->ephemeral = true;
  http_peer_address(srv, conn, s->peer, sizeof s->peer);
  const char *v = mg_get_header(conn, "MCP-Protocol-Version");
  int version = v ? proto_from_name(v, strlen(v)) : PROTO_NONE;
  s->version = version && !proto_per_request(version) ? version : PROTO_LATEST_SESSION;
  s->initialized = s->ready = true;
  s->caps_unknown = true; /* no initialize: whether it is an MCP Apps host is unknown */
  return s;
}

/* A stream holds its worker for as long as it is open (civetweb: a worker
   per connection), so streams share one pool below --threads, and one
   address may hold only --max-streams-per-peer of it: the workers left
   are the requests'. 0 and *held set (release with http_stream_release), or
   the status to refuse with and *why. */
/* mcp_server_http_streams{kind}: a GET stream, or a subscriptions/listen */
static void count_stream(bool listen, int by) {
  if (metrics_on) metric_gauge_add(metric_at(M_STREAMS, (const char *const[]){listen ? "listen" : "get"}), by);
}

int http_stream_admit(http_server *srv, struct mg_connection *conn, peer **held,
                        const char **why, bool listen) {
  char addr[48];
  http_peer_address(srv, conn, addr, sizeof addr);
  int code = 0;
  pthread_mutex_lock(&srv->lock);
  peer *p = http_peer_get(srv, addr);
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
  else count_stream(listen, 1);
  return code;
}

void http_stream_release(http_server *srv, peer *p, bool listen) {
  count_stream(listen, -1);
  pthread_mutex_lock(&srv->lock);
  srv->nstreams--;
  p->nstreams--;
  pthread_mutex_unlock(&srv->lock);
}
