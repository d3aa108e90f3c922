/* call.c — handler calls as coroutines (call.h, engine.h): their count
 * hook and its limits (deadline, cancellation, the memory cap), parking
 * on a wait and waking, the end of a call (its <close> variables within a
 * grace), starting and resuming one. */
#include "engine_internal.h"

#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>

#include "clock.h"
#include "json.h"
#include "log.h"
#include "metrics.h"

void call_free(call *c) {
  if (c->timer) uv_close((uv_handle_t *)c->timer, engine_free_handle);
  free(c);
}

/* {====================================================== calls */

void call_count_hook(lua_State *L, lua_Debug *ar);

call *call_of(lua_State *co) { return *(call **)lua_getextraspace(co); }
lua_State *call_thread(const call *c) { return c->co; }
uv_loop_t *call_loop(const call *c) { return &c->e->loop; }
bool call_is_cancelled(const call *c) { return c->cancelled; }
bool call_timed_out(const call *c) { return c->timed_out; }
void *call_extra(call *c) { return c->extra; }
call *call_of_extra(void *extra) {
  return (call *)((unsigned char *)extra - offsetof(call, extra));
}
app *call_app(const call *c) { return c->v->owner; }
const char *call_id(const call *c, size_t *n) {
  *n = c->id_len;
  return c->id;
}

const void *call_client(const call *c) { return c->e->h.client; }

const void *call_client_of_state(lua_State *L, void **ud) {
  engine *e = engine_of_state(L);
  if (!e) return NULL;
  *ud = e->h.ud;
  return e->h.client;
}

struct trace_span *call_span(call *c) { return c->e->h.span ? c->e->h.span(c) : NULL; }

call *call_current(lua_State *L) {
  call *c = call_of(L);
  if (c) return c;
  engine *e = engine_of_state(L);
  return e ? e->running : NULL;
}

bool call_running(lua_State *L) { return call_current(L) != NULL; }

size_t call_memory_room(const call *c) {
  if (!c->e->opt.call_memory) return SIZE_MAX;
  long long room = (long long)c->e->opt.call_memory - c->mem_grown;
  return room > 0 ? (size_t)room : 0;
}

double call_time_left(const call *c) {
  double left = c->deadline - clock_now();
  return left > 1e-3 ? left : 1e-3;
}

/* lua_pushfstring knows no %g: format the limit here. */
void call_timeout_message(const call *c, char out[TIMEOUT_MSG_MAX]) {
  snprintf(out, TIMEOUT_MSG_MAX, "call timed out after %g s", c->e->opt.call_timeout);
}

static bool same_id(const call *c, const void *peer, const char *id, size_t n) {
  return c->peer == peer && c->id_len == n && memcmp(c->id, id, n) == 0;
}

/* Is a cancellation for c waiting in the shared list? (hook side) */
static bool cancel_pending(engine *e, const call *c) {
  bool found = false;
  pthread_mutex_lock(&e->lock);
  for (cancel_req *r = e->cancels; r && !found; r = r->next)
    found = same_id(c, r->peer, r->id, r->id_len);
  pthread_mutex_unlock(&e->lock);
  return found;
}

/* What the count hook looks at: the inputs (every few ms), pending
   cancels, the deadline. Once the call must stop, the hook fires at every
   instruction, so a script's own pcall cannot swallow the kill. */
const char *call_interrupt_reason(lua_State *L) {
  static _Thread_local char msg[TIMEOUT_MSG_MAX];
  call *c = call_current(L); /* a coroutine the handler made: the running call */
  if (!c) return NULL;
  engine *e = c->e;
  double t = clock_now();
  engine_beat(e);
  if (t - e->last_input_poll > HOOK_INPUT_INTERVAL && !c->close_nested) {
    e->last_input_poll = t;
    engine_poll_inputs(e);
    if (!engine_queue_empty(e)) engine_take_quick(e);
    e->h.flush(e->h.ud); /* pings answered and notifications sent while the handler runs */
    engine_after_run_drain();   /* ...and their workers woken now: the handler keeps the lock */
  }
  if (c->close_by > 0) { /* ending already: only its grace counts */
    if (t <= c->close_by) return NULL;
    static _Thread_local char late[384];
    lua_Debug ar; /* the hook's own luaL_error would name the __close's caller: C */
    char where[256] = "";
    if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0)
      snprintf(where, sizeof where, "%s:%d: ", ar.short_src, ar.currentline);
    lua_sethook(L, call_count_hook, LUA_MASKCOUNT, 1);
    snprintf(late, sizeof late, "%s__close ran past the %g s an ended call's <close> variables get",
             where, CLOSE_GRACE);
    return late;
  }
  if (!c->cancelled && atomic_load_explicit(&e->interrupt, memory_order_relaxed) &&
      cancel_pending(e, c))
    c->cancelled = true;
  if (!c->cancelled && !c->timed_out && t > c->deadline) c->timed_out = true;
  if (!c->cancelled && !c->timed_out) return NULL;
  lua_sethook(L, call_count_hook, LUA_MASKCOUNT, 1);
  if (c->cancelled) return "call cancelled by the client";
  call_timeout_message(c, msg);
  return msg;
}

static void arm(call *c);

/* A worker that answers its own request inline (help) runs the call, so
   it relays none of the call's notifications to its client until the call
   ends: a busy handler's progress over HTTP would arrive all at once. Once
   the call sent one and ran HOOK_INPUT_INTERVAL on, its coroutine yields
   here (a count hook may) and is resumed at once by the loop's thread,
   while the worker goes back to relaying. */
void call_hand_over(call *c) {
  if (c->hand_over_since <= 0) c->hand_over_since = clock_now();
}

static void hand_over(lua_State *L) {
  call *c = call_of(L);
  if (!c || c->hand_over_since <= 0 || L != c->co || c->wake_at > 0) return;
  engine *e = c->e;
  if (!e->loop_running || pthread_equal(pthread_self(), e->loop_thread) || !lua_isyieldable(L)) {
    c->hand_over_since = 0; /* relayed as it goes, or it cannot yield here */
    return;
  }
  if (clock_now() - c->hand_over_since < HOOK_INPUT_INTERVAL) return;
  c->hand_over_since = 0;
  c->wake_at = clock_now();
  arm(c);
  lua_yield(L, 0);
}

/* The count hook: ends a call that ran out of time or was cancelled, even
   in a busy loop. */
void call_count_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  const char *why = call_interrupt_reason(L);
  if (why) luaL_error(L, "%s", why);
  hand_over(L);
}

static void on_call_timer(uv_timer_t *t);

/* Start c's timer for its wake-up or its deadline, whichever is first. */
static void arm(call *c) {
  engine *e = c->e;
  double due = c->wake_at < c->deadline ? c->wake_at : c->deadline;
  uv_update_time(&e->loop); /* a helper thread's start: the loop's clock may be old */
  double ms = ceil((due - clock_now()) * 1000.0);
  uv_timer_start(c->timer, on_call_timer, ms > 0 ? (uint64_t)ms : 0, 0);
}

/* mcp_server_calls_waiting{on}: what a parked call (or thread) waits on */
struct metric_series *call_count_wait(const char *what) {
  if (!metrics_on) return NULL;
  static const char *const kinds[][2] = {{"mcp.http", "http"},     {"mcp.exec", "exec"},
                                         {"mcp.socket", "socket"}, {"mcp.store", "store"},
                                         {"mcp.redis", "redis"}, {"mcp.db", "db"},
                                         {"tasks/update", "task"}, {"sleep", "sleep"},
                                         {"mcp.thread", "thread"}};
  const char *on = "client"; /* a question to the client (elicitation, sampling, roots) */
  for (size_t i = 0; what && i < sizeof kinds / sizeof *kinds; i++)
    if (strcmp(what, kinds[i][0]) == 0) on = kinds[i][1];
  struct metric_series *m = metric_at(M_WAITING, (const char *const[]){on});
  metric_gauge_add(m, 1);
  return m;
}

static void count_wait(call *c, const char *what) { c->waiting = call_count_wait(what); }

static void uncount_wait(call *c) {
  if (c->waiting) metric_gauge_add(c->waiting, -1);
  c->waiting = NULL;
}

static void stop_waiting(call *c) {
  uncount_wait(c);
  c->wake_at = 0;
  uv_timer_stop(c->timer);
  if (c->wait) { /* parked on an operation: stop it (socket, transfer, child) */
    call_wait *w = c->wait;
    c->wait = NULL;
    w->abort(w);
  }
}

/* A parked call's time has come, or its deadline passed: ctx:sleep, an
   operation, a question to the client then raise the timeout. */
static void on_call_timer(uv_timer_t *t) {
  call *c = t->data;
  if (c->wake_at <= 0) return;
  double now = clock_now();
  if (c->deadline <= now) c->timed_out = true;
  if (!c->timed_out && c->wake_at > now) { /* early by the loop clock's rounding */
    arm(c);
    return;
  }
  stop_waiting(c);
  if (c->timed_out) {
    /* ended here, not resumed into its hook's error: the hook would leave
       hooks off on the coroutine, and its <close> variables (call_end)
       could not be bounded; nothing of the handler would run anyway */
    char msg[TIMEOUT_MSG_MAX];
    call_timeout_message(c, msg);
    log_msg(LOG_ERROR, "call %.*s: %s", (int)c->id_len, c->id, msg);
    c->e->h.failed(c->e->h.ud, c, msg);
    call_end(c->e, c);
    return;
  }
  call_start(c->e, c, 0);
}

void call_sleep(call *c, double seconds) {
  if (c->e->h.waits) c->e->h.waits(c->e->h.ud, c);
  count_wait(c, "sleep");
  c->wake_at = clock_now() + (seconds > 0 ? seconds : 0);
  arm(c);
}

void call_park(call *c, call_wait *w) {
  if (c->e->h.waits) c->e->h.waits(c->e->h.ud, c);
  w->owner = c;
  w->strand = c->cur;
  if (c->cur) { /* a thread of the call: the call's deadline covers it (call_threads.c) */
    c->cur->wait = w;
    c->cur->waiting = call_count_wait(w->what);
    return;
  }
  count_wait(c, w->what);
  c->wait = w;
  c->wake_at = c->deadline;
  arm(c);
}

void call_wake(call *c, int nvalues) {
  uncount_wait(c);
  c->wait = NULL;
  c->wake_at = 0;
  uv_timer_stop(c->timer);
  call_start(c->e, c, nvalues);
}

lua_State *call_wait_thread(const call_wait *w) {
  return w->strand ? w->strand->co : w->owner->co;
}

void call_wake_wait(call_wait *w, int nvalues) {
  call *c = w->owner;
  if (w->strand) call_threads_wake(c->e, c, w->strand, nvalues);
  else call_wake(c, nvalues);
}

const char *call_cannot_park(lua_State *L, call *c) {
  if (!c) return "only a handler can wait (not code run while the app loads)";
  if (L != c->co && !(c->cur && L == c->cur->co))
    return "a handler waits from its own coroutine or a thread of mcp.spawn, not from a coroutine it made";
  return NULL;
}

bool call_in_thread(lua_State *L) {
  call *c = call_of(L);
  return c && c->cur && L == c->cur->co;
}

call *call_new(engine *e, const void *peer, const char *id, size_t idn) {
  vm *a = e->vm;
  call *c;
  if (e->nspare) {
    c = e->spare[--e->nspare];
    uv_timer_t *t = c->timer;
    memset(c, 0, sizeof *c + e->h.call_extra);
    c->timer = t;
  } else {
    c = calloc(1, sizeof *c + e->h.call_extra);
    c->timer = malloc(sizeof *c->timer);
    uv_timer_init(&e->loop, c->timer);
  }
  c->timer->data = c;
  c->e = e;
  c->v = a;
  c->peer = peer;
  c->id = malloc(idn + 1);
  memcpy(c->id, id, idn);
  c->id[idn] = '\0';
  c->id_len = idn;
  c->deadline = clock_now() + e->opt.call_timeout;
  if (e->npool) {
    c->co_ref = e->pool[--e->npool];
    lua_rawgeti(a->L, LUA_REGISTRYINDEX, c->co_ref);
    c->co = lua_tothread(a->L, -1);
    lua_pop(a->L, 1);
  } else {
    c->co = lua_newthread(a->L);
    c->co_ref = luaL_ref(a->L, LUA_REGISTRYINDEX);
  }
  *(call **)lua_getextraspace(c->co) = c;
  lua_sethook(c->co, call_count_hook, LUA_MASKCOUNT, HOOK_COUNT);
  a->refs++;
  c->next = e->calls;
  if (e->calls) e->calls->prev = c;
  e->calls = c;
  e->ncalls++;
  e->new_call = c;
  return c;
}

/* A call that ends before its handler returned (parked and cancelled or
   timed out, failed, its session gone, shutdown) still owes its pending
   to-be-closed variables their __close: run them now, as the call (its
   hook, its memory cap), within CLOSE_GRACE all together; past it the
   __close that runs raises and those left raise at their first
   instruction. They may be run from another call's hook (call_end_peer
   while it runs): that call stays the running one afterwards. */
static void close_variables(engine *e, call *c) {
  int status = lua_status(c->co);
  if (status == LUA_OK) return; /* returned (or never started): nothing pending */
  /* Stopped by its hook (deadline, cancel) while it ran: Lua leaves hooks
     off on a coroutine whose hook raised, so nothing could bound them */
  if (status != LUA_YIELD && (c->cancelled || c->timed_out)) return;
  vm *a = c->v;
  /* a failed call's own error comes back from the reset: only another one
     is a __close's (kept on the main thread meanwhile) */
  bool failed = status != LUA_YIELD && lua_checkstack(c->co, 1) && lua_checkstack(a->L, 1);
  if (failed) {
    lua_pushvalue(c->co, -1);
    lua_xmove(c->co, a->L, 1);
  }
  call *outer = e->running;
  size_t ceiling = a->mem_ceiling;
  if (!outer && e->opt.call_memory) {
    long long room = (long long)e->opt.call_memory - c->mem_grown;
    a->mem_ceiling = a->mem_used + (size_t)(room > 0 ? room : 0);
  }
  c->close_by = clock_now() + CLOSE_GRACE;
  c->close_nested = outer != NULL;
  lua_sethook(c->co, call_count_hook, LUA_MASKCOUNT, HOOK_COUNT); /* a stopped call's was at 1 */
  e->running = c;
  if (!outer) watchdog_begin(e, c);
  status = lua_resetthread(c->co);
  if (!outer) watchdog_end(e, c);
  e->running = outer;
  a->mem_ceiling = ceiling;
  if (failed) {
    lua_xmove(a->L, c->co, 1);
    if (status != LUA_OK && lua_rawequal(c->co, -1, -2)) status = LUA_OK;
  }
  if (status != LUA_OK) {
    const char *err = lua_tostring(c->co, -2 + !failed);
    log_msg(LOG_WARNING, "call %.*s: a __close of its <close> variables failed: %s",
            (int)c->id_len, c->id, err ? err : "(error object is not a string)");
  }
  lua_settop(c->co, 0);
}

void call_end(engine *e, call *c) {
  lua_State *L = c->v->L;
  if (e->new_call == c) e->new_call = NULL;
  stop_waiting(c);
  if (c->threads) call_threads_end(e, c); /* none outlives its call */
  if (c->prev) c->prev->next = c->next;
  else e->calls = c->next;
  if (c->next) c->next->prev = c->prev;
  e->ncalls--;
  /* returned, or parked: clean once reset (an errored one may have hooks off) */
  bool reusable = lua_status(c->co) == LUA_OK || lua_status(c->co) == LUA_YIELD;
  close_variables(e, c);
  *(call **)lua_getextraspace(c->co) = NULL;
  e->h.ended(e->h.ud, c);
  if (reusable && e->npool < THREAD_POOL && c->v == e->vm) {
    lua_settop(c->co, 0); /* returned normally: clean, reusable */
    e->pool[e->npool++] = c->co_ref;
  } else {
    luaL_unref(L, LUA_REGISTRYINDEX, c->co_ref);
  }
  /* a version replaced by a reload is closed when its last call ends */
  if (--c->v->refs == 0 && c->v != e->vm) e->h.release_vm(e->h.ud, c->v);
  free(c->id);
  if (e->nspare < CALL_SPARES) e->spare[e->nspare++] = c;
  else call_free(c);
}


int call_resume(engine *e, call *c, lua_State *co, int nargs, int *nres) {
  vm *a = c->v;
  size_t before = a->mem_used;
  size_t outer = a->mem_ceiling; /* luamcp test's, around a test that calls */
  if (e->opt.call_memory) {
    long long room = (long long)e->opt.call_memory - c->mem_grown;
    a->mem_ceiling = before + (size_t)(room > 0 ? room : 0);
    if (outer && outer < a->mem_ceiling) a->mem_ceiling = outer;
  }
  e->running = c;
  a->runs++;
  watchdog_begin(e, c);
  int status = lua_resume(co, a->L, nargs, nres);
  watchdog_end(e, c);
  e->running = NULL;
  a->mem_ceiling = outer;
  c->mem_grown += (long long)a->mem_used - (long long)before;
  return status;
}

void call_fail(engine *e, call *c, const char *msg) {
  log_msg(LOG_ERROR, "call %.*s: %s", (int)c->id_len, c->id, msg);
  e->h.failed(e->h.ud, c, msg);
  call_end(e, c);
}

/* Resume c with nargs values on its stack; handle what it does next. */
void call_start(engine *e, call *c, int nargs) {
  if (e->new_call == c) e->new_call = NULL; /* from now on it answers for itself */
  vm *a = c->v;
  int nres = 0;
  int status = call_resume(e, c, c->co, nargs, &nres);
  if (c->oom && !c->cancelled) { /* a thread ran out of the call's memory: so did the call */
    if (status == LUA_YIELD) lua_pop(c->co, nres);
    status = LUA_ERRMEM;
  }
  if (status == LUA_YIELD) {
    lua_pop(c->co, nres);
    if (c->end_at_yield) { /* answered from inside: no more of the handler */
      call_end(e, c);
      return;
    }
    if (c->wake_at > 0) return; /* parked: a timer, the client, an operation */
    status = LUA_ERRRUN;
    lua_pushliteral(c->co, "a handler may only yield by waiting (ctx:sleep, mcp.http, ...)");
  }
  if (c->cancelled) {
    /* the client asked us to stop: no answer at all (spec: SHOULD NOT) */
    log_msg(LOG_INFO, "call %.*s cancelled", (int)c->id_len, c->id);
  } else if (status == LUA_OK) {
    e->running = c; /* the hook's limits hold while the result is shaped */
    e->h.returned(e->h.ud, c, nres);
    e->running = NULL;
  } else {
    buf msg;
    buf_init(&msg);
    if (status == LUA_ERRMEM) {
      call_script_position(c->co, &msg);
      buf_printf(&msg, "the call ran out of memory (limit %zu MiB per call)",
                 e->opt.call_memory >> 20);
    } else {
      call_error_text(e, c, &msg);
    }
    buf_putc(&msg, '\0');
    luaL_traceback(a->L, c->co, msg.p, 0);
    log_msg(LOG_ERROR, "%s", lua_tostring(a->L, -1));
    lua_pop(a->L, 1);
    e->h.failed(e->h.ud, c, msg.p);
    buf_free(&msg);
  }
  call_end(e, c);
}

void call_end_at_yield(call *c) { c->end_at_yield = true; }

bool call_spend(lua_State *L, double seconds) {
  call *c = call_current(L);
  if (!c) return false;
  c->deadline -= seconds; /* < 0: time given back (a thread's, on a lane of its own) */
  return c->deadline <= clock_now();
}

void call_adopt(call *c, const void *peer, double seconds) {
  c->peer = peer;
  c->deadline = clock_now() + seconds;
  if (c->wake_at > 0) {
    if (c->wait) c->wake_at = c->deadline; /* parked on an operation: until the new deadline */
    arm(c);
  }
}

/* Mark the calls a cancellation names; parked ones are ended by call_reap(). */
void call_cancel_now(engine *e, const void *peer, const char *id, size_t n) {
  for (call *c = e->calls; c; c = c->next)
    if (same_id(c, peer, id, n)) c->cancelled = true;
}

call *call_find(engine *e, const void *peer, bool (*match)(call *c, void *ud), void *ud) {
  for (call *c = e->calls; c; c = c->next)
    if (c->peer == peer && match(c, ud)) return c;
  return NULL;
}

void call_end_peer(engine *e, const void *peer) {
  call *next;
  for (call *c = e->calls; c; c = next) {
    next = c->next;
    if (c->peer == peer && c != e->running) call_end(e, c);
  }
}

void call_apply_cancels(engine *e) {
  pthread_mutex_lock(&e->lock);
  cancel_req *list = e->cancels;
  e->cancels = NULL;
  atomic_store(&e->interrupt, false);
  pthread_mutex_unlock(&e->lock);
  while (list) {
    cancel_req *r = list;
    list = r->next;
    call_cancel_now(e, r->peer, r->id, r->id_len);
    free(r->id);
    free(r);
  }
}

/* End the parked calls whose client cancelled them: no answer is sent. */
void call_reap(engine *e) {
  call *next;
  for (call *c = e->calls; c; c = next) {
    next = c->next;
    if (c->cancelled && c != e->running) {
      log_msg(LOG_INFO, "call %.*s cancelled", (int)c->id_len, c->id);
      call_end(e, c);
    }
  }
}

/* }====================================================== */
