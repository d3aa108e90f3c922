/* tasks.c — the tasks extension (see tasks.h): the task table, a call
 * turned into a task, the task's outlet that keeps its outcome, questions
 * parked as input_required, and tasks/get, tasks/update, tasks/cancel. */
#include "tasks.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <lua.h>

#include "clock.h"
#include "json.h"
#include "log.h"
#include "mrtr.h"
#include "trace.h"

/* live tasks at most: past it a task tool runs as a plain call */
#define TASKS_MAX 10000
/* one client address (session.peer: every stdio client is ""): at most
   --max-tasks-per-peer tasks and TASK_PEER_BYTES of their questions,
   answers and results; all together TASKS_BYTES */
#define TASKS_PER_PEER 1000
#define TASK_PEER_BYTES ((size_t)64 << 20)
#define TASKS_BYTES ((size_t)256 << 20)
/* an id: 32 hex digits, after the bus origin (16) when there is a bus */
#define ID_RANDOM 32
#define ID_MAX (PEER_ORIGIN_LEN + ID_RANDOM)
/* what CreateTaskResult and tasks/get suggest between two polls */
#define POLL_INTERVAL_MS 500

typedef enum { T_WORKING, T_INPUT, T_COMPLETED, T_FAILED, T_CANCELLED } task_status;
static const char *const status_name[] = {"working", "input_required", "completed", "failed",
                                          "cancelled"};

struct task {
  server *srv;
  task *next;
  char id[ID_MAX + 1];
  size_t id_len;
  call *c; /* while its handler runs */
  task_status status;
  double created, updated; /* wall clock (seconds) */
  double expires;          /* clock_now() */
  outlet out;              /* the call's outlet once it is a task */
  char *outcome;           /* `"result":{...}` or `"error":{...}`, once it ended */
  size_t outcome_len;
  buf questions;  /* the round it waits on: an inputRequests object, or empty */
  buf answers;    /* members "key":{...} tasks/update gave so far */
  bool single;    /* one question (ctx:elicit...): resumed with its answer alone */
  size_t nasked;  /* the default keys of single questions: "q<n>" */
  call_wait wait; /* parked on tasks/update */
  bool dropped;   /* left the table while its call ran: freed when it ends */
  char peer[48];  /* the address of the client that made it (session.peer) */
  char owner[PRINCIPAL_KEY_LEN + 1]; /* whose it is (principal_key): only they see it */
};

/* What a task holds beyond its struct. */
static size_t task_bytes(const task *t) {
  return t->outcome_len + t->questions.cap + t->answers.cap + t->out.out.cap;
}

/* May the client at `peer` have one more task? (why: what it is over) */
static bool room_for(server *srv, const char *peer, const char **why) {
  size_t limit = srv->opt.max_tasks_per_peer ? srv->opt.max_tasks_per_peer : TASKS_PER_PEER;
  size_t n = 0, bytes = 0, all = 0;
  for (const task *t = srv->tasks; t; t = t->next) {
    size_t b = task_bytes(t);
    all += b;
    if (strcmp(t->peer, peer) == 0) n++, bytes += b;
  }
  *why = srv->ntasks >= TASKS_MAX  ? "tasks live in all"
         : n >= limit             ? "tasks of this client (--max-tasks-per-peer)"
         : bytes >= TASK_PEER_BYTES ? "bytes of this client's tasks"
         : all >= TASKS_BYTES     ? "bytes of tasks in all"
                                  : NULL;
  return !*why;
}

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void put_time(buf *b, double t) {
  time_t s = (time_t)t;
  struct tm tm;
  gmtime_r(&s, &tm);
  char day[24];
  strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
  int ms = (int)((t - (double)s) * 1000.0);
  buf_printf(b, "\"%s.%03dZ\"", day, ms < 0 ? 0 : ms > 999 ? 999 : ms);
}

static bool terminal(const task *t) { return t->status >= T_COMPLETED; }

static void task_free(task *t) {
  free(t->outcome);
  buf_free(&t->questions), buf_free(&t->answers), buf_free(&t->out.out);
  free(t);
}

static void unlink_task(server *srv, task *t) {
  for (task **p = &srv->tasks; *p; p = &(*p)->next)
    if (*p == t) {
      *p = t->next;
      srv->ntasks--;
      return;
    }
}

static void cancel_call(server *srv, task *t) {
  if (!t->c) return;
  size_t n;
  const char *id = call_id(t->c, &n);
  call_cancel_now(srv->e, t, id, n); /* a parked call ends at the end of the round */
}

/* Tasks past their time leave the table (a running one is cancelled). */
static void tasks_sweep(server *srv) {
  double now = clock_now();
  task *next;
  for (task *t = srv->tasks; t; t = next) {
    next = t->next;
    if (t->expires > now) continue;
    unlink_task(srv, t);
    if (t->c) {
      t->dropped = true;
      t->status = T_CANCELLED;
      cancel_call(srv, t);
    } else {
      task_free(t);
    }
  }
}

/* {====================================================== the task's outlet */

static task *task_of_outlet(outlet *o) { return (task *)((char *)o - offsetof(task, out)); }

/* What the call writes once it is a task: its response is the outcome;
   notifications (progress, logs) have no one to go to. */
static bool task_write(outlet *o, const char *p, size_t n) {
  task *t = task_of_outlet(o);
  const char *end = p + n;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    jsonrpc_msg m;
    jsonrpc_parse(p, len, &m);
    if (m.kind == JSONRPC_RESPONSE && !t->outcome) {
      json_span v = m.result.n ? m.result : m.error;
      buf b;
      buf_init(&b);
      buf_puts(&b, m.result.n ? "\"result\":" : "\"error\":");
      buf_put(&b, v.p, v.n);
      t->outcome = buf_take(&b, &t->outcome_len);
    }
    p += len + 1;
  }
  return true;
}

/* The task's call ended (output_done of its outlet). */
static void task_finish(outlet *o) {
  task *t = task_of_outlet(o);
  t->c = NULL;
  t->questions.len = t->answers.len = 0;
  if (!terminal(t)) {
    if (!t->outcome) {
      static const char lost[] =
          "\"error\":{\"code\":-32603,\"message\":\"the task ended without a result\"}";
      t->outcome = strdup(lost);
      t->outcome_len = sizeof lost - 1;
    }
    t->status = strncmp(t->outcome, "\"error\"", 7) == 0 ? T_FAILED : T_COMPLETED;
    t->updated = wall_now();
  }
  if (t->dropped) task_free(t);
}

/* }====================================================== */

/* The fields every view of a task has. */
static void put_task(server *srv, const task *t, buf *out) {
  buf_puts(out, "\"taskId\":\"");
  buf_puts(out, t->id);
  buf_printf(out, "\",\"status\":\"%s\",\"createdAt\":", status_name[t->status]);
  put_time(out, t->created);
  buf_puts(out, ",\"lastUpdatedAt\":");
  put_time(out, t->updated);
  buf_printf(out, ",\"ttlMs\":%.0f,\"pollIntervalMs\":%d", srv->opt.task_ttl * 1000.0,
             POLL_INTERVAL_MS);
}

static bool may_become(const request *r) {
  return !r->task && r->kind == CALL_TOOL && r->tool && r->tool->task != TASK_NEVER &&
         proto_per_request(r->cv.version) && r->cv.tasks;
}

/* c's request is answered now with a CreateTaskResult; the call goes on as
   the task's. */
static task *become(server *srv, call *c) {
  request *r = request_of(c);
  tasks_sweep(srv);
  const char *why;
  if (!room_for(srv, r->s->peer, &why)) {
    log_msg(LOG_WARNING, "too many %s: '%s' runs as a plain call", why, r->tool->name);
    return NULL;
  }
  task *t = calloc(1, sizeof *t);
  t->srv = srv;
  unsigned char rnd[16];
  if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
    /* no entropy: unguessable it is not, unique it stays */
    static unsigned long long seq;
    unsigned long long x = (unsigned long long)wall_now() ^ (unsigned long long)(uintptr_t)t;
    memcpy(rnd, &x, 8);
    x = ++seq;
    memcpy(rnd + 8, &x, 8);
  }
  /* with a bus, the id says which instance runs it (tasks_remote.h) */
  const char *origin = srv->peers.origin;
  size_t at = origin ? strlen(origin) : 0;
  memcpy(t->id, origin ? origin : "", at);
  for (int i = 0; i < 16; i++) snprintf(t->id + at + 2 * i, 3, "%02x", rnd[i]);
  t->id_len = at + ID_RANDOM;
  snprintf(t->peer, sizeof t->peer, "%s", r->s->peer);
  principal_key(r->who, t->owner);
  t->c = c;
  t->status = T_WORKING;
  t->created = t->updated = wall_now();
  t->expires = clock_now() + srv->opt.task_ttl;
  buf_init(&t->questions), buf_init(&t->answers), buf_init(&t->out.out);
  t->out.write = task_write;
  t->out.finish = task_finish;
  t->next = srv->tasks;
  srv->tasks = t;
  srv->ntasks++;
  /* the answer to the request: the task is in the table before it goes out */
  size_t idn;
  const char *id = call_id(c, &idn);
  buf *out = output_reply(srv, r->out);
  jsonrpc_begin_result(out, (json_span){id, idn});
  buf_putc(out, '{');
  put_task(srv, t, out);
  buf_puts(out, ",\"resultType\":\"task\",");
  const registry *reg = call_app(c)->reg;
  buf_put(out, reg->server_meta, reg->server_meta_len);
  buf_putc(out, '}');
  jsonrpc_end_reply(out);
  output_done(srv, r->out);
  r->out = &t->out;
  r->task = t;
  if (r->span) { /* the request was answered: its span ends, the work goes on as a task span */
    char name[160];
    snprintf(name, sizeof name, "task %s", r->tool->name);
    trace_span *work = trace_start(trace_context(r->span), name, TRACE_INTERNAL);
    if (work) {
      trace_attr_str(work, "mcp.task.id", t->id);
      trace_attr_str(work, "gen_ai.tool.name", r->tool->name);
    }
    trace_end(r->span);
    r->span = work;
  }
  call_adopt(c, t, srv->opt.task_ttl);
  log_msg(LOG_DEBUG, "tools/call '%s' became task %s", r->tool->name, t->id);
  return t;
}

void tasks_waits(void *ud, call *c) {
  if (may_become(request_of(c))) become(ud, c);
}

bool tasks_as_task(call *c) {
  request *r = request_of(c);
  if (may_become(r)) become(r->srv, c);
  return r->task != NULL;
}

/* {====================================================== input_required */

/* Is key (raw JSON string token) a member of the object body `members`? */
static bool has_member(const buf *members, json_span key) {
  buf o, k;
  buf_init(&o), buf_init(&k);
  buf_putc(&o, '{');
  buf_put(&o, members->p ? members->p : "", members->len);
  buf_putc(&o, '}');
  json_string_unescape(key, &k);
  buf_putc(&k, '\0');
  json_span v;
  bool found = json_object_get((json_span){o.p, o.len}, k.p, &v);
  buf_free(&o), buf_free(&k);
  return found;
}

static void abort_input(call_wait *w) {
  task *t = (task *)((char *)w - offsetof(task, wait));
  t->questions.len = t->answers.len = 0;
}

int tasks_ask(call *c, lua_State *L, int reqs, bool single, char *err, size_t errlen) {
  request *r = request_of(c);
  task *t = r->task;
  buf q;
  buf_init(&q);
  unsigned need = 0;
  if (!mrtr_encode_round(L, reqs, &q, &need, err, errlen)) {
    buf_free(&q);
    return ASK_FAILED;
  }
  const client_view *cv = &r->cv;
  unsigned have = (cv->elicitation ? 1u : 0) | (cv->sampling ? 2u : 0) | (cv->roots ? 4u : 0);
  if (need & ~have) {
    unsigned miss = need & ~have;
    snprintf(err, errlen, "the client does not support%s%s%s (it did not declare the capability)",
             miss & 1 ? " elicitation" : "", miss & 2 ? " sampling" : "", miss & 4 ? " roots" : "");
    buf_free(&q);
    return ASK_FAILED;
  }
  buf_free(&t->questions);
  t->questions = q;
  t->answers.len = 0;
  t->single = single;
  t->nasked++;
  t->status = T_INPUT;
  t->updated = wall_now();
  t->wait = (call_wait){.abort = abort_input, .what = "tasks/update"};
  call_park(c, &t->wait);
  return ASK_WAIT;
}

/* Every question answered: the handler goes on with the answers. */
static void resume(task *t) {
  call *c = t->c;
  lua_State *co = call_thread(c);
  buf o;
  buf_init(&o);
  buf_putc(&o, '{');
  buf_put(&o, t->answers.p ? t->answers.p : "", t->answers.len);
  buf_putc(&o, '}');
  json_span all = {o.p, o.len}, k, v;
  size_t pos = 0;
  if (t->single && json_object_next(all, &pos, &k, &v)) json_decode(co, v.p, v.n, NULL);
  else json_decode(co, all.p, all.n, NULL);
  buf_free(&o);
  t->questions.len = t->answers.len = 0;
  t->status = T_WORKING;
  t->updated = wall_now();
  call_wake(c, 1);
}

/* }====================================================== */

/* {====================================================== the methods */

void tasks_missing_capability(server *srv, inmsg *im) {
  output_rpc_error(srv, im->reply, im->m.id, MCP_MISSING_CAPABILITY,
                   "Missing required client capability: the " TASKS_EXTENSION " extension",
                   "{\"requiredCapabilities\":{\"extensions\":{\"" TASKS_EXTENSION "\":{}}}}");
}

/* The task params.taskId names, or NULL after answering the error. */
static task *lookup(server *srv, inmsg *im) {
  if (!im->cv.tasks) {
    tasks_missing_capability(srv, im);
    return NULL;
  }
  json_span id;
  if (!im->m.params.n || !jsonrpc_param(&im->m, "taskId", &id) || json_kind(id) != '"') {
    output_error(srv, im->reply, im->m.id, JSONRPC_INVALID_PARAMS,
                "Invalid params: \"taskId\" (string) is required");
    return NULL;
  }
  tasks_sweep(srv);
  char caller[PRINCIPAL_KEY_LEN + 1];
  server_caller_key(srv, im, caller);
  for (task *t = srv->tasks; t; t = t->next)
    if (id.n == t->id_len + 2 && memcmp(id.p + 1, t->id, t->id_len) == 0) {
      if (strcmp(t->owner, caller) != 0) break; /* another user's: as unknown to this one */
      return t;
    }
  /* another instance's (its origin first): ask it */
  const char *origin = srv->peers.origin;
  if (origin && id.n == ID_MAX + 2 && memcmp(id.p + 1, origin, PEER_ORIGIN_LEN) != 0) {
    bool hex = true;
    for (size_t i = 1; i <= ID_MAX; i++) hex = hex && strchr("0123456789abcdef", id.p[i]) && id.p[i];
    if (hex) {
      char owner[PEER_ORIGIN_LEN + 1];
      memcpy(owner, id.p + 1, PEER_ORIGIN_LEN);
      owner[PEER_ORIGIN_LEN] = '\0';
      srv->peers.forward_task(srv->peers.ud, im, owner, id);
      return NULL;
    }
  }
  output_error(srv, im->reply, im->m.id, JSONRPC_INVALID_PARAMS, "Unknown task: %.*s",
              (int)(id.n < 80 ? id.n : 80), id.p);
  return NULL;
}

/* The end of a complete result of a per-request revision: the registry's `,"resultType":..,"_meta":..}`. */
static void complete_tail(server *srv, buf *out) {
  const registry *reg = engine_app(srv->e)->reg;
  buf_put(out, reg->complete_tail, reg->complete_tail_len);
  buf_putc(out, '}');
}

static void ack(server *srv, inmsg *im) {
  buf *out = output_reply(srv, im->reply);
  jsonrpc_begin_result(out, im->m.id);
  const registry *reg = engine_app(srv->e)->reg;
  buf_putc(out, '{');
  buf_put(out, reg->complete_tail + 1, reg->complete_tail_len - 1); /* (without its comma) */
  buf_putc(out, '}');
  jsonrpc_end_reply(out);
}

void tasks_get(server *srv, inmsg *im) {
  task *t = lookup(srv, im);
  if (!t) return;
  buf *out = output_reply(srv, im->reply);
  jsonrpc_begin_result(out, im->m.id);
  buf_putc(out, '{');
  put_task(srv, t, out);
  if (t->status == T_INPUT) { /* the questions still without an answer */
    buf_puts(out, ",\"inputRequests\":{");
    json_span q = {t->questions.p, t->questions.len}, k, v;
    size_t pos = 0;
    bool first = true;
    while (q.n && json_object_next(q, &pos, &k, &v)) {
      if (has_member(&t->answers, k)) continue;
      if (!first) buf_putc(out, ',');
      first = false;
      buf_put(out, k.p, k.n);
      buf_putc(out, ':');
      buf_put(out, v.p, v.n);
    }
    buf_putc(out, '}');
  }
  if (t->outcome && t->status != T_CANCELLED) {
    buf_putc(out, ',');
    buf_put(out, t->outcome, t->outcome_len);
  }
  complete_tail(srv, out);
  jsonrpc_end_reply(out);
}

void tasks_update(server *srv, inmsg *im) {
  task *t = lookup(srv, im);
  if (!t) return;
  json_span resp;
  if (!jsonrpc_param(&im->m, "inputResponses", &resp) || json_kind(resp) != '{') {
    output_error(srv, im->reply, im->m.id, JSONRPC_INVALID_PARAMS,
                "Invalid params: \"inputResponses\" (object) is required");
    return;
  }
  ack(srv, im);
  if (t->status != T_INPUT || !t->c) return; /* nothing asked: the answers are not for now */
  json_span q = {t->questions.p, t->questions.len}, k, v, a;
  size_t pos = 0;
  bool all = true;
  buf key;
  buf_init(&key);
  while (json_object_next(q, &pos, &k, &v)) {
    if (has_member(&t->answers, k)) continue;
    key.len = 0;
    json_string_unescape(k, &key);
    buf_putc(&key, '\0');
    if (json_object_get(resp, key.p, &a) && json_kind(a) == '{') { /* every answer is an object */
      if (t->answers.len) buf_putc(&t->answers, ',');
      buf_put(&t->answers, k.p, k.n);
      buf_putc(&t->answers, ':');
      buf_put(&t->answers, a.p, a.n);
    } else {
      all = false;
    }
  }
  buf_free(&key);
  t->updated = wall_now();
  if (all) resume(t);
}

void tasks_cancel(server *srv, inmsg *im) {
  task *t = lookup(srv, im);
  if (!t) return;
  if (!terminal(t)) { /* a terminal one stays as it is: the same ack */
    t->status = T_CANCELLED;
    t->updated = wall_now();
    cancel_call(srv, t);
  }
  ack(srv, im);
}

/* }====================================================== */

void tasks_shutdown(server *srv) {
  if (srv->peers.shutdown) srv->peers.shutdown(srv->peers.ud); /* requests waiting for other instances */
  for (task *t = srv->tasks; t; t = t->next)
    if (t->c) {
      t->status = T_CANCELLED;
      cancel_call(srv, t);
    }
}

void tasks_free_all(server *srv) {
  task *next;
  for (task *t = srv->tasks; t; t = next) {
    next = t->next;
    task_free(t);
  }
  srv->tasks = NULL;
  srv->ntasks = 0;
}
