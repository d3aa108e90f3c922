/* http_stream.c — a response's stream (http_internal.h): the lines the
 * engine writes for it, the replay ring a resumption (Last-Event-ID) reads,
 * and relaying it on the connection: one JSON body when the only line is
 * the final answer, SSE events otherwise (the responses are written as
 * http_respond.c writes them). */
#include "http_internal.h"

#include <dirent.h>
#include <poll.h>
#include <unistd.h>
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
#include "http_headers.h"

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
    st->answered = o->answered; /* the server says whether the answer is among them */
    st->error_code = o->error_code; /* and, when it is, with which error */
    /* behind by more than this write: one large message alone is no sign */
    if (st->pending.len > st->cap && st->pending.len > n)
      fell_behind(st, LOG_NOTICE, "the client fell behind");
  }
  bool alive = !st->gone;
  pthread_cond_broadcast(&st->cond);
  pthread_mutex_unlock(&st->lock);
  return alive;
}

void http_stream_unref(hstream *st) {
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
  http_stream_unref(st);
}

static void hstream_finish_with(outlet *o, const char *p, size_t n) {
  hstream *st = (hstream *)o;
  pthread_mutex_lock(&st->lock);
  if (n && !st->gone && st->parked) store_lines(st, p, n);
  else if (n && !st->gone) buf_put(&st->pending, p, n); /* the last bytes: past the cap is fine */
  st->error_code = o->error_code;
  st->finished = true;
  pthread_mutex_unlock(&st->lock);
  /* the worker's wake-up (a futex call when it sleeps) once the run lock is
     let go: the next request need not wait behind it */
  engine_after_run(wake_and_unref, st);
}

static void hstream_finish(outlet *o) { hstream_finish_with(o, NULL, 0); }

/* }====================================================== */

hstream *http_stream_new(http_server *srv) {
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

/* The head of an event stream, its priming event (an id to resume from,
   how soon to retry) and the events after replay_after still in the ring
   (Last-Event-ID). st->lock held. */
static void start_event_stream(hstream *st, buf *out, buf *chunk, const char *extra,
                               uint64_t replay_after) {
  http_start_response(out, 200,
                 "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                 "X-Accel-Buffering: no\r\n");
  if (extra) buf_puts(out, extra);
  buf_puts(out, "\r\n");
  buf_printf(chunk, "id: %llu-%llu\nretry: 1000\ndata: \n\n", (unsigned long long)st->id,
             (unsigned long long)st->seq);
  uint64_t from = replay_after + 1;
  if (st->seq > REPLAY_EVENTS && from < st->seq - REPLAY_EVENTS + 1)
    from = st->seq - REPLAY_EVENTS + 1;
  for (uint64_t q = from; q <= st->seq; q++) {
    event *ev = &st->replay[q % REPLAY_EVENTS];
    if (ev->seq != q || !ev->line) continue; /* fell out of the ring */
    buf_printf(chunk, "id: %llu-%llu\nevent: message\ndata: ", (unsigned long long)st->id,
               (unsigned long long)q);
    buf_put(chunk, ev->line, ev->len);
    buf_puts(chunk, "\n\n");
  }
  put_chunk(out, chunk);
  chunk->len = 0;
  st->sse = true;
  st->parked = false; /* what it kept is on its way: live lines come to this relay again */
}

/* Wait (st->lock held) until there is something to do for the relay `me`:
   lines, the end, a detach, a park, a takeover, shutdown; or, a keep-alive
   interval on, a keep-alive comment into *out (started) or a look at
   whether a 2026-07-28 client closed its request (not started: that is
   its cancellation, streamable-http.mdx "Cancellation"). */
static void wait_for_work(http_server *srv, struct mg_connection *conn, hstream *st, uint64_t me,
                          bool started, buf *out) {
  while (!st->pending.len && !st->finished && !st->detach && !st->parked && !st->gone &&
         st->owner == me && !atomic_load(&srv->stopping) && !atomic_load(&srv->draining)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + srv->opt.keepalive;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - floor(t)) * 1e9);
    if (out->len) return; /* something to send first */
    int waited = pthread_cond_timedwait(&st->cond, &st->lock, &ts);
    if (waited == ETIMEDOUT && !started && st->per_request && client_gone(srv, conn, st)) {
      st->gone = true;
      engine_cancel(srv->e, st->req_s, st->req_id, st->req_id_len);
      return;
    }
    if (waited == ETIMEDOUT && started) {
      /* keep-alive comment: a dead client shows up as a failed write */
      buf c;
      buf_init(&c);
      buf_puts(&c, ": keep-alive\n\n");
      put_chunk(out, &c);
      buf_free(&c);
      return;
    }
  }
}

/* The whole answer as one response: a JSON body (its one line), or 202
   when there is nothing to say. Returns the status. */
static int answer_whole(hstream *st, struct mg_connection *conn, const buf *lines, buf *out,
                        const char *extra) {
  int status = 202;
  if (lines->len) {
    size_t n = lines->len - 1; /* without the newline */
    status = st->per_request ? http_headers_status(st->error_code) : 200;
    char challenge[4096];
    if (st->error_code == SERVER_INSUFFICIENT_SCOPE &&
        http_auth_scope_challenge(st->srv, lines->p, n, challenge, sizeof challenge)) {
      status = 403;
      if (metrics_on)
        metric_add(metric_at(M_AUTH_REFUSALS, (const char *const[]){"insufficient_scope"}), 1);
    }
    http_start_response(out, status, extra);
    if (status == 403) buf_puts(out, challenge);
    buf_printf(out, "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", n);
    buf_put(out, lines->p, n);
  } else {
    http_start_response(out, 202, extra);
    buf_puts(out, "Content-Length: 0\r\n\r\n");
  }
  http_send_all(conn, out);
  return status;
}

/* lines as SSE events into chunk: with ids (resumable) for a 2025-11-25
   stream, without for 2026-07-28 (nothing to resume). */
static void add_events(hstream *st, buf *chunk, const buf *lines) {
  for (size_t i = 0; i < lines->len;) {
    const char *nl = memchr(lines->p + i, '\n', lines->len - i);
    size_t n = nl ? (size_t)(nl - (lines->p + i)) : lines->len - i;
    if (n && st->per_request) {
      buf_puts(chunk, "event: message\ndata: ");
      buf_put(chunk, lines->p + i, n);
      buf_puts(chunk, "\n\n");
    } else if (n) {
      add_event(st, chunk, lines->p + i, n);
    }
    i += n + 1;
  }
}

/* Relay st on conn until the engine finishes it or the client goes away.
   sse: already an event stream (GET). replay_after: resend events after
   this sequence number first (Last-Event-ID). extra: headers for the first
   response (Mcp-Session-Id). The response also ends, the stream kept, when
   it is parked (its reader fell behind) or a resumption takes it over. */
int http_relay(http_server *srv, struct mg_connection *conn, hstream *st, bool sse,
               uint64_t replay_after, const char *extra) {
  buf lines, out, chunk;
  buf_init(&lines), buf_init(&out), buf_init(&chunk);
  bool started = false, done = false;
  int status = 200;
  pthread_mutex_lock(&st->lock);
  uint64_t me = ++st->owner;
  pthread_cond_broadcast(&st->cond); /* a relay this one replaces ends its response */
  if (sse) {
    start_event_stream(st, &out, &chunk, extra, replay_after);
    started = true;
  }
  while (!done) {
    wait_for_work(srv, conn, st, me, started, &out);
    if (st->gone) { /* given up (its unsent lines past the cap): end what was sent */
      if (started) {
        buf_puts(&out, "0\r\n\r\n");
        pthread_mutex_unlock(&st->lock);
        http_send_all(conn, &out);
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
      if (nl && (size_t)(nl - lines.p) + 1 == lines.len && st->answered) {
        st->pending = lines;
        buf_init(&lines);
        pthread_cond_wait(&st->cond, &st->lock);
        continue;
      }
    }
    const char *first_nl = lines.len ? memchr(lines.p, '\n', lines.len) : NULL;
    bool one_line = first_nl && (size_t)(first_nl - lines.p) + 1 == lines.len;
    if (!started && finished && (one_line || !lines.len)) {
      pthread_mutex_unlock(&st->lock);
      status = answer_whole(st, conn, &lines, &out, extra);
      pthread_mutex_lock(&st->lock);
      break;
    }
    if (!started && (lines.len || detach)) {
      /* parked before anything was sent: the priming event still tells
         the client which stream to resume */
      http_start_response(&out, 200,
                     "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                     "X-Accel-Buffering: no\r\n");
      if (extra) buf_puts(&out, extra);
      buf_puts(&out, "\r\n");
      /* 2025: a priming event to resume from; 2026-07-28 streams do not resume */
      if (!st->per_request) buf_printf(&chunk, "id: %llu-0\nretry: 1000\ndata: \n\n", (unsigned long long)st->id);
      started = st->sse = true;
    }
    add_events(st, &chunk, &lines);
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
      bool ok = http_send_all(conn, &out);
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
