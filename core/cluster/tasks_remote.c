/* tasks_remote.c — the task methods sent to the instance that runs the
 * task, and those answered for another instance (see tasks_remote.h). */
#include "tasks_remote.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "clock.h"
#include "json.h"
#include "log.h"

/* requests waiting for another instance at most (each holds an HTTP worker) */
#define MAX_PENDING 4096

/* A request sent to the task's instance, waiting for its answer. */
typedef struct pending {
  uint64_t seq;
  outlet *reply;
  char *id; /* the request's JSON-RPC id (raw), for an error of ours */
  size_t id_len;
  char owner[BUS_ORIGIN_LEN + 1]; /* its instance's origin */
  char task_id[96];           /* the taskId (raw JSON), for messages */
  double deadline;
  struct pending *next;
} pending;

struct tasks_remote {
  server *srv;
  pending *waiting;
  size_t nwaiting;
  uint64_t next_seq;
  uv_timer_t timer; /* the deadlines, while something waits */
  bool ticking, closing;
};

/* The answer to a request another instance sent us: it collects the
   response line, and sends it back when the request is over. */
typedef struct relay {
  outlet out;
  server *srv;
  char to[BUS_ORIGIN_LEN + 1];
  char seq[24];
  buf resp; /* the response line, without its newline */
} relay;

/* {====================================================== the waiting side */

static void remote_on_closed(uv_handle_t *h) { free(h->data); }

static struct tasks_remote *remote_of(server *srv) {
  if (!srv->remote) {
    struct tasks_remote *r = calloc(1, sizeof *r);
    r->srv = srv;
    uv_timer_init(engine_loop(server_engine(srv)), &r->timer);
    r->timer.data = r;
    srv->remote = r;
  }
  return srv->remote;
}

static void pending_free(pending *p) {
  free(p->id);
  free(p);
}

/* Answer p's request with an error of ours, and forget it. */
static void give_up(server *srv, pending *p, const char *why) {
  output_error(srv, p->reply, (json_span){p->id, p->id_len}, JSONRPC_INTERNAL_ERROR,
              "The instance running this task (%s) %s", p->owner, why);
  output_done(srv, p->reply);
  pending_free(p);
}

static void unlink_pending(struct tasks_remote *r, pending *p) {
  for (pending **q = &r->waiting; *q; q = &(*q)->next)
    if (*q == p) {
      *q = p->next;
      r->nwaiting--;
      break;
    }
  if (!r->waiting && r->ticking) {
    uv_timer_stop(&r->timer);
    r->ticking = false;
  }
}

static void on_tick(uv_timer_t *t) {
  struct tasks_remote *r = t->data;
  double now = clock_now();
  pending *next;
  for (pending *p = r->waiting; p; p = next) {
    next = p->next;
    if (p->deadline > now) continue;
    unlink_pending(r, p);
    char why[64];
    snprintf(why, sizeof why, "did not answer within %g s", TASKS_REMOTE_TIMEOUT);
    give_up(r->srv, p, why);
  }
}

static pending *find(struct tasks_remote *r, uint64_t seq) {
  pending *p = r ? r->waiting : NULL;
  while (p && p->seq != seq) p = p->next;
  return p;
}

/* Redis' count of those who received request seq: none means that no
   live instance has the task's origin, so the task is unknown (at once,
   as an unknown id of ours is). */
static void heard(server *srv, unsigned long long seq, long long receivers) {
  struct tasks_remote *r = srv->remote;
  pending *p = find(r, seq);
  if (!p || receivers != 0) return; /* answered already, or on its way (or the bus fell: the deadline) */
  unlink_pending(r, p);
  output_error(srv, p->reply, (json_span){p->id, p->id_len}, JSONRPC_INVALID_PARAMS,
              "Unknown task: %s (no instance runs it)", p->task_id);
  output_done(srv, p->reply);
  pending_free(p);
}

void tasks_remote_forward(server *srv, inmsg *im, const char *owner, json_span task_id) {
  struct tasks_remote *r = remote_of(srv);
  if (engine_finishing(srv->e) || r->closing) {
    output_error(srv, im->reply, im->m.id, JSONRPC_INTERNAL_ERROR, "The server is shutting down");
    return;
  }
  if (r->nwaiting >= MAX_PENDING) {
    output_error(srv, im->reply, im->m.id, JSONRPC_INTERNAL_ERROR,
                "Too many requests waiting for other instances (at most %d)", MAX_PENDING);
    return;
  }
  uint64_t seq = ++r->next_seq;
  buf msg;
  buf_init(&msg);
  /* whose request it is goes along: the owner shows a task to its owner only */
  char who[PRINCIPAL_KEY_LEN + 1];
  server_caller_key(srv, im, who);
  buf_printf(&msg, "%" PRIu64 " %s ", seq, who[0] ? who : "-");
  buf_put(&msg, im->data, im->len);
  bool sent = bus_send(srv, owner, 'Q', msg.p, msg.len, heard, seq);
  buf_free(&msg);
  if (!sent) {
    output_error(srv, im->reply, im->m.id, JSONRPC_INTERNAL_ERROR,
                "The instance running this task (%.*s) cannot be reached: the bus is down",
                BUS_ORIGIN_LEN, owner);
    return;
  }
  pending *p = calloc(1, sizeof *p);
  p->seq = seq;
  p->reply = im->reply;
  p->id = malloc(im->m.id.n ? im->m.id.n : 1);
  memcpy(p->id, im->m.id.p, im->m.id.n);
  p->id_len = im->m.id.n;
  memcpy(p->owner, owner, BUS_ORIGIN_LEN);
  snprintf(p->task_id, sizeof p->task_id, "%.*s", (int)task_id.n, task_id.p);
  p->deadline = clock_now() + TASKS_REMOTE_TIMEOUT;
  p->next = r->waiting;
  r->waiting = p;
  r->nwaiting++;
  im->taken = true; /* answered when the owner's answer comes */
  if (!r->ticking) {
    uv_timer_start(&r->timer, on_tick, 250, 250);
    r->ticking = true;
  }
}

/* The owner answered request seq: pass the answer on. */
static void answered(server *srv, const char *from, uint64_t seq, const char *json, size_t n) {
  struct tasks_remote *r = srv->remote;
  pending *p = find(r, seq);
  if (!p || memcmp(p->owner, from, BUS_ORIGIN_LEN) != 0) {
    log_msg(LOG_DEBUG, "bus: an answer from %s to no waiting request (late, or not ours)", from);
    return;
  }
  jsonrpc_msg m;
  jsonrpc_parse(json, n, &m);
  unlink_pending(r, p);
  if (m.kind != JSONRPC_RESPONSE) {
    give_up(srv, p, "sent an answer that is not a JSON-RPC response");
    return;
  }
  buf *out = output_of(srv, p->reply);
  buf_put(out, json, n);
  buf_putc(out, '\n');
  output_done(srv, p->reply);
  pending_free(p);
}

/* }====================================================== */

/* {====================================================== the owner's side */

static bool relay_write(outlet *o, const char *p, size_t n) {
  relay *rl = (relay *)o;
  const char *end = p + n;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    jsonrpc_msg m;
    jsonrpc_parse(p, len, &m);
    if (m.kind == JSONRPC_RESPONSE && !rl->resp.len) buf_put(&rl->resp, p, len);
    p += len + 1;
  }
  return true;
}

static void relay_finish_with(outlet *o, const char *p, size_t n) {
  relay *rl = (relay *)o;
  if (n) relay_write(o, p, n);
  if (rl->resp.len) {
    buf msg;
    buf_init(&msg);
    buf_puts(&msg, rl->seq);
    buf_putc(&msg, ' ');
    buf_put(&msg, rl->resp.p, rl->resp.len);
    if (!bus_send(rl->srv, rl->to, 'R', msg.p, msg.len, NULL, 0))
      log_msg(LOG_DEBUG, "bus: down: the answer for %s is not sent", rl->to);
    buf_free(&msg);
  }
  buf_free(&rl->resp);
  buf_free(&rl->out.out);
  free(rl);
}

static void relay_finish(outlet *o) { relay_finish_with(o, NULL, 0); }

/* Is m a request for one of our tasks? */
static bool ours(server *srv, const jsonrpc_msg *m) {
  static const char *const methods[] = {"tasks/get", "tasks/update", "tasks/cancel"};
  bool known = false;
  for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
    known = known || jsonrpc_method_is(m, methods[i]);
  json_span id;
  const char *origin = bus_origin(srv);
  return known && origin && m->params.n && jsonrpc_param(m, "taskId", &id) && json_kind(id) == '"' &&
         id.n > BUS_ORIGIN_LEN + 2 && memcmp(id.p + 1, origin, BUS_ORIGIN_LEN) == 0;
}

/* Another instance asks about one of our tasks. */
static void asked(server *srv, const char *from, const char *seq, size_t seq_len, const char *json,
                  size_t n) {
  /* "<who> <json>": the asker's principal_key, "-" for nobody */
  char who[PRINCIPAL_KEY_LEN + 1];
  size_t k = 0;
  while (k < n && k < PRINCIPAL_KEY_LEN && json[k] != ' ') k++;
  if (k == n || json[k] != ' ' || (k != PRINCIPAL_KEY_LEN && !(k == 1 && json[0] == '-'))) {
    log_msg(LOG_DEBUG, "bus: a request from %s without whose it is: ignored", from);
    return;
  }
  memcpy(who, json, k);
  who[k == 1 ? 0 : k] = '\0';
  json += k + 1, n -= k + 1;
  jsonrpc_msg m;
  jsonrpc_parse(json, n, &m);
  if (m.kind != JSONRPC_REQUEST || !ours(srv, &m)) {
    log_msg(LOG_DEBUG, "bus: a request from %s that is not for one of our tasks: ignored", from);
    return;
  }
  relay *rl = calloc(1, sizeof *rl);
  rl->srv = srv;
  memcpy(rl->to, from, BUS_ORIGIN_LEN);
  memcpy(rl->seq, seq, seq_len);
  buf_init(&rl->resp), buf_init(&rl->out.out);
  rl->out.write = relay_write;
  rl->out.finish = relay_finish;
  rl->out.finish_with = relay_finish_with;
  /* one request of the 2026-07-28 era: everything is in its envelope */
  session *s = session_new();
  s->ephemeral = true;
  s->version = PROTO_LATEST_SESSION;
  s->initialized = s->ready = true;
  server_inject_as(srv, s, &rl->out, json, n, who);
  session_unref(s);
}

/* }====================================================== */

void tasks_remote_message(server *srv, const char *from, char kind, const char *body, size_t n) {
  /* "<seq> <json>" (a request: "<seq> <who> <json>"), seq in decimal */
  size_t i = 0;
  uint64_t seq = 0;
  while (i < n && i < 20 && body[i] >= '0' && body[i] <= '9') seq = seq * 10 + (uint64_t)(body[i++] - '0');
  if (i == 0 || i >= n || body[i] != ' ') {
    log_msg(LOG_DEBUG, "bus: a message from %s that is not ours: ignored", from);
    return;
  }
  if (kind == 'Q') asked(srv, from, body, i, body + i + 1, n - i - 1);
  else if (kind == 'R') answered(srv, from, seq, body + i + 1, n - i - 1);
  else log_msg(LOG_DEBUG, "bus: a message of kind '%c' from %s: ignored", kind, from);
}

void tasks_remote_shutdown(server *srv) {
  struct tasks_remote *r = srv->remote;
  if (!r) return;
  r->closing = true;
  while (r->waiting) {
    pending *p = r->waiting;
    unlink_pending(r, p);
    give_up(srv, p, "was not heard from before this server shut down");
  }
}

void tasks_remote_free(server *srv) {
  struct tasks_remote *r = srv->remote;
  if (!r) return;
  tasks_remote_shutdown(srv);
  srv->remote = NULL;
  uv_close((uv_handle_t *)&r->timer, remote_on_closed); /* r goes with the handle */
}
