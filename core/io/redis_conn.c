/* redis_conn.c — a reconnecting hiredis connection on the loop (see
 * redis_conn.h). */
#include "redis_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "engine.h"
#include "log.h"

#define BACKOFF_FIRST 0.1
#define BACKOFF_MAX 5.0

/* {====== hiredis on libuv
   Not hiredis' adapters/libuv.h: on an error libuv calls a poll callback
   with a status (a refused connect is POLLERR: UV_EBADF, and the handle is
   stopped), which 0.14's adapter ignores, so a reconnection attempt to a
   Redis that is not up yet hung for good. Here an error is handed to
   hiredis as the event it waits for, which then sees the socket's error
   and reports the failure (connect callback or disconnect).

   Commands are written by the run-lock holder that queued them, at its
   next settle point (engine_on_settle: a worker that ran the call inline,
   or the loop's thread before it waits), not on the loop's next pass: a
   command given by a call a worker runs then needs no wake-up of the
   loop's thread, and the interest in writability (each change of which
   is two epoll_ctl calls) is registered only when a write stays partial
   or the connection is still being made. */

typedef struct uv_events {
  redisAsyncContext *ac; /* NULL once hiredis let go of it */
  uv_poll_t poll;
  int events;      /* what the poll watches */
  bool want_write; /* hiredis has output */
  bool settling;   /* settle() writes: a partial write registers writability */
} uv_events;

/* hiredis 0.14 holds a reply whole until its last byte, with no bound of
   its own: past this many bytes not yet parsed the connection is dropped
   (the calls waiting on it get an error, and it reconnects) rather than the
   process growing with whatever one key holds. mcp.store's own values are
   at most 16 MiB. */
#define REDIS_PENDING_MAX ((size_t)64 << 20)
static void drop_oversize(redisAsyncContext *ac);

static void redis_on_poll(uv_poll_t *h, int status, int events) {
  uv_events *p = h->data;
  if (status < 0) /* the handle is stopped: whichever hiredis waits for, it learns why */
    events = p->events & UV_WRITABLE ? UV_WRITABLE : UV_READABLE;
  if (p->ac && (events & UV_READABLE)) {
    redisAsyncHandleRead(p->ac);
    const redisReader *r = p->ac ? p->ac->c.reader : NULL;
    if (r && r->len - r->pos > REDIS_PENDING_MAX) drop_oversize(p->ac); /* p->ac is NULL after */
  }
  if (p->ac && (events & UV_WRITABLE)) redisAsyncHandleWrite(p->ac);
}

static void set_events(uv_events *p, int events) {
  if (events == p->events) return;
  p->events = events;
  if (events) uv_poll_start(&p->poll, events, redis_on_poll);
  else uv_poll_stop(&p->poll);
}

static void add_read(void *d) { set_events(d, ((uv_events *)d)->events | UV_READABLE); }
static void del_read(void *d) { set_events(d, ((uv_events *)d)->events & ~UV_READABLE); }
static void add_write(void *d) {
  uv_events *p = d;
  p->want_write = true;
  /* connecting (hiredis learns of the connection by writability), or a
     write left partial: the loop watches; else settle() writes */
  if (p->settling || !p->ac || !(p->ac->c.flags & REDIS_CONNECTED))
    set_events(p, p->events | UV_WRITABLE);
}
static void del_write(void *d) {
  uv_events *p = d;
  p->want_write = false;
  set_events(p, p->events & ~UV_WRITABLE);
}

static void on_poll_closed(uv_handle_t *h) { free(h->data); }

static void cleanup(void *d) {
  uv_events *p = d;
  p->ac = NULL;
  uv_close((uv_handle_t *)&p->poll, on_poll_closed);
}

static bool attach(redisAsyncContext *ac, uv_loop_t *loop) {
  uv_events *p = calloc(1, sizeof *p);
  if (!p || uv_poll_init(loop, &p->poll, ac->c.fd) != 0) {
    free(p);
    return false;
  }
  p->ac = ac;
  p->poll.data = p;
  ac->ev.data = p;
  ac->ev.addRead = add_read;
  ac->ev.delRead = del_read;
  ac->ev.addWrite = add_write;
  ac->ev.delWrite = del_write;
  ac->ev.cleanup = cleanup;
  return true;
}

/* }====== */

struct redis_conn {
  engine *e;
  uv_loop_t *loop;
  redis_url url;
  char name[300];
  redis_health *h;
  void (*up)(redis_conn *rc, void *ud);
  void *ud;
  redisAsyncContext *ac; /* connecting or connected; NULL between attempts */
  bool live;             /* connected: commands may be sent */
  bool closing;
  bool counted;          /* counted in h->down */
  bool oversize;         /* dropped for a reply past REDIS_PENDING_MAX */
  double backoff;
  uv_timer_t retry;
};

bool redis_url_parse(const char *url, redis_url *out, char *why, size_t cap) {
  redis_url u = {.port = 6379};
  if (strncmp(url, "redis://", 8) != 0) {
    snprintf(why, cap, "'%s' is not redis://HOST:PORT[/N]", url);
    return false;
  }
  const char *p = url + 8, *slash = strchr(p, '/'), *end = slash ? slash : p + strlen(p);
  const char *colon = memchr(p, ':', (size_t)(end - p));
  const char *hend = colon ? colon : end;
  if (hend == p || (size_t)(hend - p) >= sizeof u.host || memchr(p, '@', (size_t)(end - p))) {
    snprintf(why, cap, "'%s': a host is needed (no user or password part)", url);
    return false;
  }
  memcpy(u.host, p, (size_t)(hend - p));
  if (colon) {
    char *e;
    long port = strtol(colon + 1, &e, 10);
    if (e != end || colon + 1 == end || port < 1 || port > 65535) {
      snprintf(why, cap, "'%s': bad port", url);
      return false;
    }
    u.port = (int)port;
  }
  if (slash && slash[1]) {
    char *e;
    long db = strtol(slash + 1, &e, 10);
    if (*e || db < 0 || db > 1000000) {
      snprintf(why, cap, "'%s': the database number must be 0 or more", url);
      return false;
    }
    u.db = (int)db;
  }
  if (out) *out = u;
  return true;
}

static void start(redis_conn *rc);

static void on_retry(uv_timer_t *t) { start(t->data); }

/* Down (again): the first connection of its user to go says so, once per
   outage; try again after the backoff. */
static void went_down(redis_conn *rc, const char *reason) {
  rc->ac = NULL;
  if (rc->live) rc->h->live--;
  rc->live = false;
  if (rc->closing) return;
  redis_health *h = rc->h;
  if (!rc->counted) {
    rc->counted = true;
    if (h->down++ == 0) {
      h->since = clock_now();
      log_msg(LOG_WARNING, "%s: redis %s unreachable (%s): retrying in the background%s", h->what,
              rc->name, reason, h->note ? h->note : "");
    }
  }
  uv_timer_start(&rc->retry, on_retry, (uint64_t)(rc->backoff * 1000.0), 0);
  rc->backoff = rc->backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : rc->backoff * 2;
}

static void on_connect(const redisAsyncContext *ac, int status) {
  redis_conn *rc = ac->data;
  if (status != REDIS_OK) { /* hiredis frees ac after this returns */
    went_down(rc, ac->errstr[0] ? ac->errstr : "connect failed");
    return;
  }
  rc->live = true;
  rc->h->live++;
  rc->backoff = BACKOFF_FIRST;
  if (rc->counted) {
    rc->counted = false;
    if (--rc->h->down == 0)
      log_msg(LOG_NOTICE, "%s: redis %s is back after %.1f s", rc->h->what, rc->name,
              clock_now() - rc->h->since);
  }
  if (rc->url.db) { /* first in the pipeline: every later command runs in db N */
    char db[16];
    snprintf(db, sizeof db, "%d", rc->url.db);
    redisAsyncCommand(rc->ac, NULL, NULL, "SELECT %s", db);
  }
  if (rc->up) rc->up(rc, rc->ud);
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  redis_conn *rc = ac->data;
  if (rc->oversize) {
    rc->oversize = false;
    log_msg(LOG_WARNING, "%s: redis %s sent a reply larger than %d MiB: the connection was dropped",
            rc->h->what, rc->name, (int)(REDIS_PENDING_MAX >> 20));
    went_down(rc, "a reply too large");
    return;
  }
  went_down(rc, status == REDIS_OK ? "closed by the server" : ac->errstr[0] ? ac->errstr : "lost");
}

static void drop_oversize(redisAsyncContext *ac) {
  ((redis_conn *)ac->data)->oversize = true;
  redisAsyncFree(ac); /* NULL replies to the calls waiting, then on_disconnect */
}

static void start(redis_conn *rc) {
  if (rc->closing) return;
  log_msg(LOG_DEBUG, "%s: connecting to redis %s", rc->h->what, rc->name);
  redisAsyncContext *ac = redisAsyncConnect(rc->url.host, rc->url.port);
  if (!ac) {
    went_down(rc, "out of memory");
    return;
  }
  if (ac->err) {
    char reason[128];
    snprintf(reason, sizeof reason, "%s", ac->errstr);
    redisAsyncFree(ac);
    went_down(rc, reason);
    return;
  }
  ac->data = rc;
  if (!attach(ac, rc->loop)) {
    redisAsyncFree(ac);
    went_down(rc, "cannot watch its socket");
    return;
  }
  rc->ac = ac;
  redisAsyncSetConnectCallback(ac, on_connect);
  redisAsyncSetDisconnectCallback(ac, on_disconnect);
}

/* The engine's settle point: what hiredis queued goes out now. */
static void settle(void *arg) {
  redis_conn *rc = arg;
  uv_events *p = rc->ac ? rc->ac->ev.data : NULL;
  if (!p || !p->want_write || (p->events & UV_WRITABLE)) return; /* nothing, or the loop has it */
  p->settling = true;
  redisAsyncHandleWrite(rc->ac); /* a failure calls back now: NULL replies, the disconnect */
  p->settling = false;           /* (p lives until its handle is closed by the loop) */
}

redis_conn *redis_conn_new(engine *e, const redis_url *u, redis_health *h,
                           void (*up)(redis_conn *rc, void *ud), void *ud) {
  redis_conn *rc = calloc(1, sizeof *rc);
  rc->e = e;
  uv_loop_t *loop = engine_loop(e);
  rc->loop = loop;
  rc->url = *u;
  rc->h = h;
  rc->up = up;
  rc->ud = ud;
  rc->backoff = BACKOFF_FIRST;
  snprintf(rc->name, sizeof rc->name, "%s:%d/%d", u->host, u->port, u->db);
  uv_timer_init(loop, &rc->retry);
  rc->retry.data = rc;
  engine_on_settle(e, settle, rc);
  start(rc);
  return rc;
}

redisAsyncContext *redis_conn_ctx(redis_conn *rc) { return rc && rc->live ? rc->ac : NULL; }

const char *redis_conn_name(const redis_conn *rc) { return rc->name; }

static void redis_on_closed(uv_handle_t *h) { free(h->data); }

void redis_conn_free(redis_conn *rc) {
  if (!rc) return;
  engine_off_settle(rc->e, settle, rc);
  rc->closing = true;
  if (rc->live) rc->h->live--;
  rc->live = false;
  if (rc->ac) redisAsyncFree(rc->ac); /* pending callbacks run now, with NULL replies */
  rc->ac = NULL;
  uv_close((uv_handle_t *)&rc->retry, redis_on_closed);
}
