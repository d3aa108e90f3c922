/* bus.c — change notifications between instances over Redis pub/sub (see
 * bus.h). */
#include "bus.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "log.h"
#include "metrics.h"
#include "redis_conn.h"
#include "server_internal.h"
#include "tasks_remote.h"

/* longer URIs are not published (templates refuse past 8 KiB too) */
#define URI_MAX 8192

struct bus {
  server *srv;
  redis_conn *sub, *pub;
  redis_health health; /* one outage line for both */
  char channel[64];
  char direct[64]; /* our own channel: luamcp:to:N:<origin> */
  int db;
  char origin[BUS_ORIGIN_LEN + 1];
  size_t dropped; /* events not published while the publisher was down */
};

static const char *const list_methods[] = {"notifications/tools/list_changed",
                                           "notifications/resources/list_changed",
                                           "notifications/prompts/list_changed"};

/* One message from the channel: someone else's event, delivered here. */
static void on_message(redisAsyncContext *ac, void *r, void *privdata) {
  (void)ac;
  bus *b = privdata;
  const redisReply *reply = r;
  /* ["message", channel, payload], or the ["subscribe", channel, n] confirmation */
  if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 ||
      reply->element[0]->type != REDIS_REPLY_STRING)
    return;
  if (strcmp(reply->element[0]->str, "subscribe") == 0) {
    if (reply->element[1]->type == REDIS_REPLY_STRING)
      log_msg(LOG_INFO, "bus: subscribed to %s", reply->element[1]->str);
    return;
  }
  if (strcmp(reply->element[0]->str, "message") != 0 || reply->element[1]->type != REDIS_REPLY_STRING ||
      reply->element[2]->type != REDIS_REPLY_STRING)
    return;
  const char *p = reply->element[2]->str;
  size_t n = reply->element[2]->len;
  if (n < BUS_ORIGIN_LEN + 3 || p[BUS_ORIGIN_LEN] != ' ' || p[BUS_ORIGIN_LEN + 2] != ' ') goto ignored;
  const char *body = p + BUS_ORIGIN_LEN + 3;
  size_t len = n - BUS_ORIGIN_LEN - 3;
  if (metrics_on) metric_add(metric_at(M_BUS, (const char *const[]){"in"}), 1);
  if (strcmp(reply->element[1]->str, b->direct) == 0) { /* for us alone */
    char from[BUS_ORIGIN_LEN + 1];
    memcpy(from, p, BUS_ORIGIN_LEN);
    from[BUS_ORIGIN_LEN] = '\0';
    tasks_remote_message(b->srv, from, p[BUS_ORIGIN_LEN + 1], body, len);
    return;
  }
  if (memcmp(p, b->origin, BUS_ORIGIN_LEN) == 0) return; /* ours: delivered here already */
  if (p[BUS_ORIGIN_LEN + 1] == 'L') {
    for (size_t i = 0; i < sizeof list_methods / sizeof *list_methods; i++)
      if (strlen(list_methods[i]) == len && memcmp(list_methods[i], body, len) == 0) {
        notify_list_changed_here(b->srv, list_methods[i]);
        return;
      }
  } else if (p[BUS_ORIGIN_LEN + 1] == 'U' && len <= URI_MAX) {
    notify_updated_here(b->srv, body, len);
    return;
  }
ignored:
  log_msg(LOG_DEBUG, "bus: a message that is not an event of ours: ignored (%zu bytes)", n);
}

/* The subscriber is (again) connected: subscribe. */
static void sub_up(redis_conn *rc, void *ud) {
  bus *b = ud;
  redisAsyncCommand(redis_conn_ctx(rc), on_message, b, "SUBSCRIBE %s %s", b->channel, b->direct);
}

static void pub_up(redis_conn *rc, void *ud) {
  (void)rc;
  bus *b = ud;
  if (b->dropped)
    log_msg(LOG_NOTICE, "bus: %zu event(s) of the outage reached only this instance's clients",
            b->dropped);
  b->dropped = 0;
}

static void bus_publish_list_changed(server *srv, const char *method);
static void bus_publish_updated(server *srv, const char *uri, size_t n);

_Static_assert(BUS_ORIGIN_LEN == PEER_ORIGIN_LEN, "one origin length");

/* {====== what the server asks of its peers (server_peers) */
static void peers_list_changed(void *ud, const char *method) {
  bus *b = ud;
  bus_publish_list_changed(b->srv, method);
}

static void peers_updated(void *ud, const char *uri, size_t n) {
  bus *b = ud;
  bus_publish_updated(b->srv, uri, n);
}

static void peers_forward_task(void *ud, inmsg *im, const char *owner, json_span task_id) {
  bus *b = ud;
  tasks_remote_forward(b->srv, im, owner, task_id);
}

static void peers_shutdown(void *ud) {
  bus *b = ud;
  tasks_remote_shutdown(b->srv);
}
/* }====== */

/* Both connections up (any thread: /readyz) */
static bool peers_ready(void *ud, char *why, size_t cap) {
  bus *b = ud;
  if (b->health.live == 2 && b->health.down == 0) return true;
  snprintf(why, cap, "bus: redis %s is not connected", redis_conn_name(b->pub));
  return false;
}

bus *bus_new(server *srv, const char *url) {
  redis_url u;
  char why[128];
  if (!redis_url_parse(url, &u, why, sizeof why)) return NULL; /* checked by main.c */
  bus *b = calloc(1, sizeof *b);
  b->srv = srv;
  snprintf(b->channel, sizeof b->channel, "luamcp:events:%d", u.db);
  unsigned char raw[BUS_ORIGIN_LEN / 2];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
    log_msg(LOG_CRITICAL, "getrandom failed: %s", strerror(errno));
    abort();
  }
  for (size_t i = 0; i < sizeof raw; i++) snprintf(b->origin + 2 * i, 3, "%02x", raw[i]);
  b->db = u.db;
  snprintf(b->direct, sizeof b->direct, "luamcp:to:%d:%s", u.db, b->origin);
  engine *e = server_engine(srv);
  b->health = (redis_health){.what = "bus", .note = "; this instance's own clients are still told"};
  b->sub = redis_conn_new(e, &u, &b->health, sub_up, b);
  b->pub = redis_conn_new(e, &u, &b->health, pub_up, b);
  srv->bus = b;
  server_join(srv, &(server_peers){.ud = b,
                                   .list_changed = peers_list_changed,
                                   .updated = peers_updated,
                                   .origin = b->origin,
                                   .forward_task = peers_forward_task,
                                   .shutdown = peers_shutdown,
                                   .ready = peers_ready});
  log_msg(LOG_INFO, "bus: events shared over redis %s, channel %s", redis_conn_name(b->pub),
          b->channel);
  return b;
}

void bus_free(bus *b) {
  if (!b) return;
  tasks_remote_free(b->srv);
  server_join(b->srv, NULL);
  b->srv->bus = NULL;
  redis_conn_free(b->sub);
  redis_conn_free(b->pub);
  free(b);
}

/* What bus_send's caller waits to hear: how many received a message. */
typedef struct hearing {
  server *srv;
  void (*heard)(server *srv, unsigned long long tag, long long receivers);
  unsigned long long tag;
} hearing;

static void on_published(redisAsyncContext *ac, void *r, void *privdata) {
  (void)ac;
  hearing *h = privdata;
  const redisReply *reply = r;
  h->heard(h->srv, h->tag, reply && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1);
  free(h);
}

/* "<origin> <kind> <body>" on channel. False when the publisher is down. */
static bool publish_to(bus *b, const char *channel, char kind, const char *body, size_t n,
                       hearing *h) {
  redisAsyncContext *ac = redis_conn_ctx(b->pub);
  if (!ac) return false;
  buf msg;
  buf_init(&msg);
  buf_printf(&msg, "%s %c ", b->origin, kind);
  buf_put(&msg, body, n);
  const char *argv[3] = {"PUBLISH", channel, msg.p};
  size_t lens[3] = {7, strlen(channel), msg.len};
  if (h) redisAsyncCommandArgv(ac, on_published, h, 3, argv, lens);
  else redisAsyncCommandArgv(ac, NULL, NULL, 3, argv, lens);
  if (metrics_on) metric_add(metric_at(M_BUS, (const char *const[]){"out"}), 1);
  buf_free(&msg);
  return true;
}

static void publish(server *srv, char kind, const char *body, size_t n) {
  bus *b = srv->bus;
  if (b && !publish_to(b, b->channel, kind, body, n, NULL)) b->dropped++;
}

const char *bus_origin(const server *srv) { return srv->bus ? srv->bus->origin : NULL; }

bool bus_send(server *srv, const char *to, char kind, const char *body, size_t n,
              void (*heard)(server *srv, unsigned long long tag, long long receivers),
              unsigned long long tag) {
  bus *b = srv->bus;
  if (!b || !redis_conn_ctx(b->pub)) return false;
  char channel[64];
  snprintf(channel, sizeof channel, "luamcp:to:%d:%.*s", b->db, BUS_ORIGIN_LEN, to);
  hearing *h = NULL;
  if (heard) {
    h = malloc(sizeof *h);
    *h = (hearing){srv, heard, tag};
  }
  return publish_to(b, channel, kind, body, n, h);
}

static void bus_publish_list_changed(server *srv, const char *method) {
  publish(srv, 'L', method, strlen(method));
}

static void bus_publish_updated(server *srv, const char *uri, size_t n) {
  if (n <= URI_MAX) publish(srv, 'U', uri, n);
}
