/* engine.c — the reactor: queue, run lock, loop, coroutine calls, their
 * timers, limits and waits (see engine.h). Whoever holds e->run touches
 * the lua_State and the loop: the engine thread, or a transport's thread
 * that found the engine idle and runs its own message (help()). */
#include "engine.h"

#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "json.h"
#include "log.h"
#include "thread_stack.h"

/* How often (VM instructions) the hook looks at the clock and cancellations. */
#define HOOK_COUNT 1000
/* How often (seconds) a busy handler's hook reads the inputs, so ping and
   notifications/cancelled are seen while it runs. */
#define HOOK_INPUT_INTERVAL 0.005
#define MAX_INPUTS 4
/* Finished coroutines kept for reuse: a new thread per call was a visible
   share of a call's cost (allocation and GC). */
#define THREAD_POOL 64
/* Ended call structs kept for reuse (allocation was a visible share of a call). */
#define CALL_SPARES 16
/* A client that pipelines usually sends its next message within a few
   microseconds of our reply; checking for it briefly before sleeping saves
   the wake-up (measured: most of a request's latency at one in flight). */
#define SPIN_SECONDS 50e-6
/* the longest the loop's thread sleeps without a reason to wake, with Redis */
#define LOOP_SLEEP_MAX_MS 1000
/* How long the to-be-closed variables of a call that ends early get, all
   together (engine.h: "__close"). */
#define CLOSE_GRACE 0.1
/* The engine serving a state is in its registry under this key. */
#define ENGINE_KEY "luamcp.engine"

typedef struct cancel_req {
  const void *peer;
  char *id;
  size_t id_len;
  struct cancel_req *next;
} cancel_req;

struct call {
  engine *e;
  vm *v; /* the state its coroutine belongs to (a reload may have replaced it since) */
  const void *peer;
  char *id;
  size_t id_len;
  lua_State *co;
  int co_ref;
  double deadline, wake_at; /* wake_at > 0: parked (its timer armed for it or the deadline) */
  uv_timer_t *timer;        /* one per struct, kept across reuse; closed when it is freed */
  call_wait *wait;          /* the operation it is parked on, if any */
  bool cancelled, timed_out;
  bool end_at_yield;
  double close_by;   /* > 0: its __close handlers run (call_end), until then */
  bool close_nested; /* ... inside another call's hook: that one reads the inputs */
  long long mem_grown;
  /* > 0: it sent the client something its worker cannot relay while it
     runs the call inline (engine_call_hand_over): since then */
  double hand_over_since;
  call *prev, *next;
  alignas(max_align_t) unsigned char extra[]; /* the layer's (hooks.call_extra bytes) */
};

struct engine {
  vm *vm; /* the current version's state */
  engine_options opt;
  engine_hooks h;

  pthread_mutex_t run; /* held by whoever runs the engine's work (see engine.h) */
  struct {
    void (*fn)(void *arg);
    void *arg;
  } settle[ENGINE_SETTLE]; /* engine_on_settle */
  int nsettle;

  pthread_mutex_t lock; /* guards the queue, finishing and cancels */
  pthread_cond_t space;
  void **q;
  size_t qcap, qhead, qlen;
  void **batch; /* run holder: the messages taken off the queue */
  bool finishing;
  atomic_bool finishing_flag; /* the same, readable without the lock */
  cancel_req *cancels;
  atomic_bool interrupt; /* cancels is non-empty: the hook should look */

  /* run holder only */
  uv_loop_t loop;
  uv_async_t wake;      /* other threads wake the loop (the only thread-safe libuv call) */
  uint64_t sleep_until; /* the engine thread's planned wake-up (loop ms; 0: none) */
  double finish_deadline; /* calls still running then are dropped */
  struct engine_input {
    int fd;
    engine_input_fn fn;
    void *ctx;
    uv_poll_t *poll; /* NULL for a regular file (always readable): an idle handle */
    uv_idle_t *idle;
  } *inputs[MAX_INPUTS];
  size_t ninputs;
  double last_input_poll;
  call *running;  /* the call inside lua_resume, if any */
  /* the watchdog (see engine.h): the running coroutine and the hook's
     heartbeat, lock-free on the engine's side (two atomic stores a
     resume); `arming` is up while the watchdog sets its hook, and the
     engine waits it out before it lets the coroutine go */
  pthread_t watchdog;
  bool watching;
  pthread_t loop_thread; /* the one in engine_run: calls it runs hand nothing over */
  bool loop_running;     /* engine_run is under way (else nothing takes a call over) */
  pthread_mutex_t watch_mu; /* the watchdog's sleep and stop only */
  pthread_cond_t watch_cv;
  bool watch_stop;
  _Atomic(lua_State *) watched;
  atomic_bool arming;
  atomic_uint_fast64_t heartbeat;     /* counts resumes and hook runs: no clock read a resume */
  atomic_uint_fast64_t blocked_since; /* armed: when the stall began (µs); 0: not */
  atomic_uint_fast64_t watched_until; /* the watched call's deadline (µs); 0: none */
  atomic_uint_fast64_t finish_asked;  /* when engine_finish was called (µs); 0: not */
  atomic_bool held;                   /* someone holds e->run (run_lock) */
  call *new_call; /* made by the message being dispatched, until it starts */
  void **deferred; /* read while a call ran; dispatched after it */
  size_t ndeferred, deferred_cap;
  call *calls;
  size_t ncalls;
  call *spare[CALL_SPARES];
  size_t nspare;
  int pool[THREAD_POOL]; /* refs of idle coroutines of vm->L */
  size_t npool;
};

double engine_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Nothing to do: a wake-up only ends the loop's wait; the round after it
   takes the queue. */
static void on_wake(uv_async_t *h) { (void)h; }

static void free_handle(uv_handle_t *h) { free(h); }

static void free_call(call *c) {
  if (c->timer) uv_close((uv_handle_t *)c->timer, free_handle);
  free(c);
}

static void bind_state(engine *e, vm *v) {
  lua_pushlightuserdata(v->L, e);
  lua_setfield(v->L, LUA_REGISTRYINDEX, ENGINE_KEY);
}

engine *engine_new(vm *v, const engine_options *opt, const engine_hooks *hooks) {
  engine *e = calloc(1, sizeof *e);
  e->vm = v;
  e->opt = *opt;
  e->h = *hooks;
  if (!e->opt.queue_cap) e->opt.queue_cap = 1024;
  if (e->opt.shutdown_grace <= 0) e->opt.shutdown_grace = 10;
  e->qcap = e->opt.queue_cap;
  e->q = calloc(e->qcap, sizeof *e->q);
  e->batch = malloc(e->qcap * sizeof *e->batch);
  pthread_mutex_init(&e->lock, NULL);
  pthread_mutex_init(&e->run, NULL);
  pthread_mutex_init(&e->watch_mu, NULL);
  pthread_cond_init(&e->watch_cv, NULL);
  atomic_init(&e->heartbeat, 0);
  atomic_init(&e->blocked_since, 0);
  atomic_init(&e->held, false);
  atomic_init(&e->watched, NULL);
  atomic_init(&e->arming, false);
  pthread_cond_init(&e->space, NULL);
  atomic_init(&e->interrupt, false);
  atomic_init(&e->finishing_flag, false);
  uv_loop_init(&e->loop);
  e->loop.data = e;
  uv_async_init(&e->loop, &e->wake, on_wake);
  bind_state(e, v);
  return e;
}

void engine_free(engine *e) {
  for (size_t i = 0; i < e->qlen; i++) e->h.release(e->h.ud, e->q[(e->qhead + i) % e->qcap], false);
  free(e->q);
  while (e->cancels) {
    cancel_req *c = e->cancels;
    e->cancels = c->next;
    free(c->id);
    free(c);
  }
  for (size_t i = 0; i < e->ndeferred; i++) e->h.release(e->h.ud, e->deferred[i], false);
  free(e->deferred);
  free(e->batch);
  /* the app's state first: its objects may own loop handles (an idle
     mcp.socket) that their __gc closes, and the run below frees */
  e->h.release_vm(e->h.ud, e->vm);
  e->vm = NULL;
  while (e->nspare) free_call(e->spare[--e->nspare]);
  while (e->ninputs) engine_remove_input(e, e->inputs[0]->fd);
  uv_close((uv_handle_t *)&e->wake, NULL);
  uv_run(&e->loop, UV_RUN_DEFAULT); /* the close callbacks */
  if (uv_loop_close(&e->loop) != 0) log_msg(LOG_DEBUG, "engine: handles still open at exit");
  pthread_mutex_destroy(&e->lock);
  pthread_mutex_destroy(&e->run);
  pthread_mutex_destroy(&e->watch_mu);
  pthread_cond_destroy(&e->watch_cv);
  pthread_cond_destroy(&e->space);
  free(e);
}

uv_loop_t *engine_loop(engine *e) { return &e->loop; }
app *engine_app(engine *e) { return e->vm->owner; }
bool engine_busy(engine *e) { return e->running != NULL; }

void engine_set_vm(engine *e, vm *fresh) {
  vm *old = e->vm;
  e->vm = fresh;
  e->npool = 0; /* pooled coroutines belong to the old state */
  bind_state(e, fresh);
  if (old->refs == 0) e->h.release_vm(e->h.ud, old); /* else its last call closes it */
}

/* {====================================================== submit (any thread) */

/* The watchdog's heartbeat: only the run-lock holder writes it, so a plain
   load and store (no locked add) will do. */
static inline void beat(engine *e) {
  atomic_store_explicit(&e->heartbeat, atomic_load_explicit(&e->heartbeat, memory_order_relaxed) + 1,
                        memory_order_relaxed);
}

/* What this thread does once it lets go of the run lock (engine_after_run). */
static _Thread_local struct {
  bool holding;
  int n;
  struct {
    void (*fn)(void *);
    void *arg;
  } job[ENGINE_AFTER_RUN];
} after_run;

void engine_after_run(void (*fn)(void *arg), void *arg) {
  if (!after_run.holding || after_run.n == ENGINE_AFTER_RUN) {
    fn(arg);
    return;
  }
  after_run.job[after_run.n].fn = fn;
  after_run.job[after_run.n++].arg = arg;
}

/* The run lock, taken and given back with a heartbeat: the watchdog sees
   a stall as the lock held and the heartbeat standing still. */
static void run_lock(engine *e) {
  pthread_mutex_lock(&e->run);
  atomic_store(&e->held, true);
  after_run.holding = true;
  beat(e);
}

static bool run_trylock(engine *e) {
  if (pthread_mutex_trylock(&e->run) != 0) return false;
  atomic_store(&e->held, true);
  after_run.holding = true;
  beat(e);
  return true;
}

static void after_run_drain(void) {
  for (int i = 0; i < after_run.n; i++) after_run.job[i].fn(after_run.job[i].arg);
  after_run.n = 0;
}

static void run_unlock(engine *e) {
  beat(e);
  atomic_store(&e->held, false);
  after_run.holding = false;
  pthread_mutex_unlock(&e->run);
  after_run_drain();
}


static void wake(engine *e) { uv_async_send(&e->wake); }

static bool queue_empty(engine *e) {
  pthread_mutex_lock(&e->lock);
  bool empty = e->qlen == 0;
  pthread_mutex_unlock(&e->lock);
  return empty;
}

/* Has the calling thread HELP_THREAD_STACK of stack (thread_stack.h)?
   Asked once per thread: the answer is the thread's own. */
static bool stack_roomy(void) {
  static _Thread_local int known; /* 0: not asked yet, 1: roomy, 2: small */
  if (!known) {
    pthread_attr_t attr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstacksize(&attr, &size);
      pthread_attr_destroy(&attr);
    }
    known = size >= HELP_THREAD_STACK ? 1 : 2;
  }
  return known == 1;
}

static void dispatch(engine *e, void *msg);

/* Take the queued messages into e->batch: all of them (through NULL), or
   those up to and including through (none when another holder took it
   already). *finishing (if given) gets the engine's finishing flag, read
   with the queue. e->run held. */
static size_t take(engine *e, const void *through, bool *finishing) {
  pthread_mutex_lock(&e->lock);
  size_t n = through ? 0 : e->qlen;
  for (size_t i = 0; i < e->qlen && !n; i++)
    if (e->q[(e->qhead + i) % e->qcap] == through) n = i + 1;
  for (size_t i = 0; i < n; i++) e->batch[i] = e->q[(e->qhead + i) % e->qcap];
  e->qhead = (e->qhead + n) % e->qcap;
  e->qlen -= n;
  if (finishing) *finishing = e->finishing;
  if (n) pthread_cond_broadcast(&e->space);
  pthread_mutex_unlock(&e->lock);
  return n;
}

/* From a handler's hook: answer the queued messages that need no Lua now;
   keep the others, in order, for when it yields. Not through e->batch: the
   hook may fire inside a dispatch_batch. */
static void take_quick(engine *e) {
  void *chunk[64];
  for (;;) {
    pthread_mutex_lock(&e->lock);
    size_t n = e->qlen < 64 ? e->qlen : 64;
    for (size_t i = 0; i < n; i++) chunk[i] = e->q[(e->qhead + i) % e->qcap];
    e->qhead = (e->qhead + n) % e->qcap;
    e->qlen -= n;
    if (n) pthread_cond_broadcast(&e->space);
    pthread_mutex_unlock(&e->lock);
    if (!n) return;
    for (size_t i = 0; i < n; i++) {
      if (!e->h.quick(e->h.ud, chunk[i])) {
        engine_defer(e, chunk[i]);
        continue;
      }
      e->h.dispatch(e->h.ud, chunk[i]); /* no Lua: no protection needed */
      e->h.release(e->h.ud, chunk[i], true);
    }
  }
}

/* Dispatch and release the first n messages of e->batch. */
static void dispatch_batch(engine *e, size_t n) {
  for (size_t i = 0; i < n; i++) {
    dispatch(e, e->batch[i]);
    e->h.release(e->h.ud, e->batch[i], true);
  }
}

/* Has the loop work its sleeping thread does not know of? Handles started
   outside its own pass are registered with epoll only by the next pass
   (libuv defers epoll_ctl to a queue: its watcher_queue, peeked at here),
   and a timer may now be due before the wake-up the thread planned.
   Run-lock holder. */
static bool unregistered_handles(engine *e) {
  return e->loop.watcher_queue[0] != (void *)&e->loop.watcher_queue;
}

static bool loop_changed(engine *e) {
  if (unregistered_handles(e)) return true;
  int t = uv_backend_timeout(&e->loop);
  if (t < 0) return false;
  uint64_t due = uv_now(&e->loop) + (uint64_t)t;
  return e->sleep_until == 0 || due < e->sleep_until;
}

void engine_on_settle(engine *e, void (*fn)(void *arg), void *arg) {
  if (e->nsettle == ENGINE_SETTLE) abort(); /* a fixed few users: bus and store */
  e->settle[e->nsettle].fn = fn;
  e->settle[e->nsettle++].arg = arg;
}

void engine_off_settle(engine *e, void (*fn)(void *arg), void *arg) {
  for (int i = 0; i < e->nsettle; i++)
    if (e->settle[i].fn == fn && e->settle[i].arg == arg) {
      e->settle[i] = e->settle[--e->nsettle];
      return;
    }
}

/* e->run held, no call running. */
static void settle(engine *e) {
  for (int i = 0; i < e->nsettle; i++) e->settle[i].fn(e->settle[i].arg);
}

/* The caller's message (mine) is queued: answer it on this thread when the
   engine is idle, which saves the two thread hand-offs (to the engine
   thread and back) that were half of an HTTP request's cost. Only the
   messages up to mine: the caller's own answer must not wait for others'
   work (resumed calls, timers, reloads stay with the engine thread, woken
   when they come due sooner than it planned). When another thread holds
   e->run, it sees the message: every holder looks at the queue again after
   letting go (the queue's lock orders our enqueue before its look). */
static void help(engine *e, const void *mine) {
  if (!stack_roomy()) { /* a small stack: handlers run elsewhere */
    wake(e);
    return;
  }
  if (!run_trylock(e)) return;
  dispatch_batch(e, take(e, mine, NULL));
  settle(e); /* a Redis command a call queued goes out from here */
  e->h.flush(e->h.ud);
  /* a timer or handle started here: the engine thread's wait must learn of it */
  bool sooner = e->ndeferred || loop_changed(e);
  run_unlock(e);
  if (sooner || !queue_empty(e)) wake(e);
}

bool engine_submit(engine *e, void *msg, bool answer) {
  pthread_mutex_lock(&e->lock);
  while (e->qlen == e->qcap && !e->finishing) pthread_cond_wait(&e->space, &e->lock);
  if (e->finishing) {
    pthread_mutex_unlock(&e->lock);
    e->h.release(e->h.ud, msg, false);
    return false;
  }
  e->q[(e->qhead + e->qlen++) % e->qcap] = msg;
  pthread_mutex_unlock(&e->lock);
  /* once queued, msg belongs to whoever holds e->run: it may be freed
     already, so only its address is used */
  if (answer) help(e, msg);
  else wake(e); /* notifications and responses: their 202 must not wait for what they resume */
  return true;
}

void engine_cancel(engine *e, const void *peer, const char *id, size_t n) {
  cancel_req *c = malloc(sizeof *c);
  c->peer = peer;
  c->id = malloc(n + 1);
  memcpy(c->id, id, n);
  c->id[n] = '\0';
  c->id_len = n;
  pthread_mutex_lock(&e->lock);
  c->next = e->cancels;
  e->cancels = c;
  atomic_store(&e->interrupt, true);
  pthread_mutex_unlock(&e->lock);
  wake(e);
}

bool engine_finishing(engine *e) { return atomic_load(&e->finishing_flag); }

void engine_finish(engine *e) {
  uint_fast64_t zero = 0;
  atomic_compare_exchange_strong(&e->finish_asked, &zero, (uint_fast64_t)(engine_now() * 1e6));
  pthread_mutex_lock(&e->lock);
  e->finishing = true;
  atomic_store(&e->finishing_flag, true);
  pthread_cond_broadcast(&e->space);
  pthread_mutex_unlock(&e->lock);
  wake(e);
}

/* }====================================================== */

/* {====================================================== dispatch */

static int dispatch_entry(lua_State *L) {
  engine *e = lua_touserdata(L, 1);
  e->h.dispatch(e->h.ud, lua_touserdata(L, 2));
  return 0;
}

static void call_end(engine *e, call *c);

/* One protected entry per message: a Lua error raised while C handles it
   (on the main thread or a call's coroutine: Lua hands errors of a thread
   without a handler to the main thread's) answers an error instead of
   aborting. The known places use raw access; this is the net under them. */
static void dispatch(engine *e, void *msg) {
  lua_State *L = e->vm->L;
  e->new_call = NULL;
  lua_pushcfunction(L, dispatch_entry);
  lua_pushlightuserdata(L, e);
  lua_pushlightuserdata(L, msg);
  int status = lua_pcall(L, 2, 0, 0);
  call *c = e->new_call;
  e->new_call = NULL;
  if (status == LUA_OK) return;
  const char *err = lua_tostring(L, -1);
  if (!err) err = "internal error";
  log_msg(LOG_ERROR, "internal error handling a message: %s", err);
  if (c) { /* made but not started: answer through it */
    e->h.failed(e->h.ud, c, err);
    call_end(e, c);
  } else {
    e->h.dispatch_failed(e->h.ud, msg, err);
  }
  lua_pop(L, 1);
}

void engine_dispatch(engine *e, void *msg) {
  dispatch(e, msg);
  e->h.release(e->h.ud, msg, true);
}

void engine_defer(engine *e, void *msg) {
  if (e->ndeferred == e->deferred_cap) {
    e->deferred_cap = e->deferred_cap ? e->deferred_cap * 2 : 16;
    e->deferred = realloc(e->deferred, e->deferred_cap * sizeof *e->deferred);
  }
  e->deferred[e->ndeferred++] = msg;
}

/* }====================================================== */

/* {====================================================== calls */

static void poll_inputs(engine *e);
static void call_hook(lua_State *L, lua_Debug *ar);

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

engine *engine_of_state(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, ENGINE_KEY);
  engine *e = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return e;
}

void *engine_layer(engine *e) { return e->h.ud; }

const call_client *call_client_of(const call *c) { return &c->e->h.client; }

const call_client *call_client_of_state(lua_State *L, void **ud) {
  engine *e = engine_of_state(L);
  if (!e) return NULL;
  *ud = e->h.ud;
  return &e->h.client;
}

call *call_current(lua_State *L) {
  call *c = call_of(L);
  if (c) return c;
  engine *e = engine_of_state(L);
  return e ? e->running : NULL;
}

bool call_running(lua_State *L) { return call_current(L) != NULL; }

double call_time_left(const call *c) {
  double left = c->deadline - engine_now();
  return left > 1e-3 ? left : 1e-3;
}

/* lua_pushfstring knows no %g: format the limit here. */
void timeout_message(const call *c, char out[TIMEOUT_MSG_MAX]) {
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
  double t = engine_now();
  beat(e);
  if (t - e->last_input_poll > HOOK_INPUT_INTERVAL && !c->close_nested) {
    e->last_input_poll = t;
    poll_inputs(e);
    if (!queue_empty(e)) take_quick(e);
    e->h.flush(e->h.ud); /* pings answered and notifications sent while the handler runs */
    after_run_drain();   /* ...and their workers woken now: the handler keeps the lock */
  }
  if (c->close_by > 0) { /* ending already: only its grace counts */
    if (t <= c->close_by) return NULL;
    static _Thread_local char late[384];
    lua_Debug ar; /* the hook's own luaL_error would name the __close's caller: C */
    char where[256] = "";
    if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0)
      snprintf(where, sizeof where, "%s:%d: ", ar.short_src, ar.currentline);
    lua_sethook(L, call_hook, LUA_MASKCOUNT, 1);
    snprintf(late, sizeof late, "%s__close ran past the %g s an ended call's <close> variables get",
             where, CLOSE_GRACE);
    return late;
  }
  if (!c->cancelled && atomic_load_explicit(&e->interrupt, memory_order_relaxed) &&
      cancel_pending(e, c))
    c->cancelled = true;
  if (!c->cancelled && !c->timed_out && t > c->deadline) c->timed_out = true;
  if (!c->cancelled && !c->timed_out) return NULL;
  lua_sethook(L, call_hook, LUA_MASKCOUNT, 1);
  if (c->cancelled) return "call cancelled by the client";
  timeout_message(c, msg);
  return msg;
}

static void arm(call *c);

/* A worker that answers its own request inline (help) runs the call, so
   it relays none of the call's notifications to its client until the call
   ends: a busy handler's progress over HTTP would arrive all at once. Once
   the call sent one and ran HOOK_INPUT_INTERVAL on, its coroutine yields
   here (a count hook may) and is resumed at once by the loop's thread,
   while the worker goes back to relaying. */
void engine_call_hand_over(call *c) {
  if (c->hand_over_since <= 0) c->hand_over_since = engine_now();
}

static void hand_over(lua_State *L) {
  call *c = call_of(L);
  if (!c || c->hand_over_since <= 0 || L != c->co || c->wake_at > 0) return;
  engine *e = c->e;
  if (!e->loop_running || pthread_equal(pthread_self(), e->loop_thread) || !lua_isyieldable(L)) {
    c->hand_over_since = 0; /* relayed as it goes, or it cannot yield here */
    return;
  }
  if (engine_now() - c->hand_over_since < HOOK_INPUT_INTERVAL) return;
  c->hand_over_since = 0;
  c->wake_at = engine_now();
  arm(c);
  lua_yield(L, 0);
}

/* The count hook: ends a call that ran out of time or was cancelled, even
   in a busy loop. */
static void call_hook(lua_State *L, lua_Debug *ar) {
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
  double ms = ceil((due - engine_now()) * 1000.0);
  uv_timer_start(c->timer, on_call_timer, ms > 0 ? (uint64_t)ms : 0, 0);
}

static void stop_waiting(call *c) {
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
  double now = engine_now();
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
    timeout_message(c, msg);
    log_msg(LOG_ERROR, "call %.*s: %s", (int)c->id_len, c->id, msg);
    c->e->h.failed(c->e->h.ud, c, msg);
    call_end(c->e, c);
    return;
  }
  engine_call_start(c->e, c, 0);
}

void call_sleep(call *c, double seconds) {
  if (c->e->h.waits) c->e->h.waits(c->e->h.ud, c);
  c->wake_at = engine_now() + (seconds > 0 ? seconds : 0);
  arm(c);
}

void call_park(call *c, call_wait *w) {
  if (c->e->h.waits) c->e->h.waits(c->e->h.ud, c);
  c->wait = w;
  c->wake_at = c->deadline;
  arm(c);
}

void call_wake(call *c, int nvalues) {
  c->wait = NULL;
  c->wake_at = 0;
  uv_timer_stop(c->timer);
  engine_call_start(c->e, c, nvalues);
}

const char *call_cannot_park(lua_State *L, call *c) {
  if (!c) return "only a handler can wait (not code run while the app loads)";
  if (L != c->co) return "a handler waits from its own coroutine, not from a coroutine it made";
  return NULL;
}

/* {====== the watchdog */

/* Where the stalled handler is: the first Lua function from `level` up
   (file:line), and the name of the C function at level 0 when it is one. */
static void blocked_report(engine *e, call *c, lua_State *L, double seconds, bool in_c) {
  lua_Debug ar;
  char where[256] = "", what[96] = "a C function";
  if (in_c && lua_getstack(L, 0, &ar) && lua_getinfo(L, "nS", &ar) && ar.what[0] == 'C' && ar.name)
    snprintf(what, sizeof what, "%s%s'%s'", ar.namewhat, ar.namewhat[0] ? " " : "", ar.name);
  for (int level = in_c ? 1 : 0; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    snprintf(where, sizeof where, "%s:%d: ", ar.short_src, ar.currentline);
    break;
  }
  char msg[512];
  snprintf(msg, sizeof msg,
           "%s%s blocked the server for %.0f ms (no other request was served meanwhile); "
           "mcp.exec, mcp.http and mcp.socket wait without blocking",
           where, what, seconds * 1000);
  e->h.blocked(e->h.ud, c, msg);
}

/* Armed by the watchdog on a stalled coroutine: the first event after the
   blocking C function returns (its return, or an instruction). */
static void blocked_hook(lua_State *L, lua_Debug *ar) {
  call *c = call_current(L);
  lua_sethook(L, call_hook, LUA_MASKCOUNT, HOOK_COUNT);
  if (!c) return;
  engine *e = c->e;
  double since = (double)atomic_exchange(&e->blocked_since, 0) * 1e-6;
  if (since > 0) blocked_report(e, c, L, engine_now() - since, ar->event == LUA_HOOKRET);
  call_hook(L, ar);
}

/* Where the watchdog's thread finds L: "file:line: " of its innermost Lua
   frame, and whether that frame runs as a __gc finalizer. It reads a state
   another thread owns, so only once the heartbeat has stood still for a
   whole check: the engine thread is stuck (in a C call, or in Lua code
   that runs without hooks), its stack is not being changed under us. */
static bool stuck_where(lua_State *L, char *where, size_t cap, bool *lua_at_top, bool *in_gc) {
  lua_Debug ar;
  *where = '\0';
  *lua_at_top = *in_gc = false;
  if (!L || !lua_getstack(L, 0, &ar) || !lua_getinfo(L, "S", &ar)) return false;
  *lua_at_top = ar.what[0] != 'C';
  for (int level = 0; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sln", &ar)) break;
    if (ar.name && strcmp(ar.name, "__gc") == 0) *in_gc = true;
    if (!*where && ar.currentline > 0) snprintf(where, cap, "%s:%d: ", ar.short_src, ar.currentline);
    if (*where && (*in_gc || level > 8)) break;
  }
  return true;
}

/* A stall that began at `still`: which limit it has outlived, if any. */
static const char *past_every_limit(engine *e, double still, double limit, double now) {
  if (now - still < 1) return NULL; /* a stall, not a slow check */
  if (limit > 0 && now - still >= limit) return "past --restart-on-stall";
  double asked = (double)atomic_load(&e->finish_asked) * 1e-6;
  if (asked > 0 && now >= asked + e->opt.shutdown_grace + 1)
    return "past --shutdown-grace after the signal to stop";
  double until = (double)atomic_load(&e->watched_until) * 1e-6;
  if (until <= 0 || atomic_load(&e->watched) == NULL) until = still + e->opt.call_timeout;
  if (now >= until + e->opt.shutdown_grace)
    return "in code no time limit can stop (a C function or a __gc finalizer), past its "
           "--timeout and a further --shutdown-grace";
  return NULL;
}

static void *watchdog_main(void *arg) {
  engine *e = arg;
  double warn = e->opt.warn_blocking, limit = e->opt.stalled ? e->opt.stall_limit : 0;
  double every = 1;
  if (warn > 0 && warn / 4 < every) every = warn / 4;
  if (limit > 0 && limit / 4 < every) every = limit / 4;
  if (every < 0.01) every = 0.01;
  /* a stall: the run lock held and the heartbeat (hooks, resumes, lock
     hand-overs) unchanged since `still` (first seen then, so at most
     `every` late); `armed`: when blocked_hook was set on the coroutine */
  uint_fast64_t last = 0;
  double still = 0, armed = 0;
  bool told = false; /* the hookless-Lua report of this stall is out */
  pthread_mutex_lock(&e->watch_mu);
  while (!e->watch_stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + every;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&e->watch_cv, &e->watch_mu, &ts);
    lua_State *L = atomic_load(&e->watched);
    uint_fast64_t beat = atomic_load_explicit(&e->heartbeat, memory_order_relaxed);
    double now = engine_now();
    if (!atomic_load(&e->held) || beat != last) {
      last = beat;
      still = now, armed = 0, told = false;
      continue;
    }
    char where[256];
    bool lua_top, in_gc;
    const char *why = e->opt.stalled ? past_every_limit(e, still, limit, now) : NULL;
    if (why) { /* ends the process (engine.h) */
      stuck_where(L, where, sizeof where, &lua_top, &in_gc);
      e->opt.stalled(now - still, where, why);
      still = now; /* it came back: a new stall from here */
      continue;
    }
    if (!L || warn <= 0) continue;
    if (armed > 0) {
      /* set a check ago and not run: the coroutine is in a C call, or in
         Lua code that runs without hooks -- a __gc finalizer (Lua turns
         hooks off for them), which nothing reports when it returns */
      if (!told && now - armed >= every * 0.9 &&
          stuck_where(L, where, sizeof where, &lua_top, &in_gc) && (lua_top || in_gc)) {
        log_msg(LOG_WARNING,
                "%s%s has blocked the server for %.0f ms so far (Lua runs finalizers without "
                "hooks: no time limit stops it; nothing else is served until it returns)",
                where, in_gc ? "a __gc finalizer" : "Lua code running without hooks",
                (now - still) * 1000);
        told = true;
      }
      continue;
    }
    if (atomic_load(&e->blocked_since) || now - still < warn) continue;
    atomic_store(&e->arming, true);
    if (atomic_load(&e->watched) == L) { /* still running: watch_end waits for us */
      atomic_store(&e->blocked_since, (uint_fast64_t)(still * 1e6));
      armed = now;
      /* Lua allows setting a hook from another thread or a signal handler
         (ldebug.c): the next event on that coroutine runs it */
      lua_sethook(L, blocked_hook, LUA_MASKRET | LUA_MASKCALL | LUA_MASKCOUNT, 1);
    }
    atomic_store(&e->arming, false);
  }
  pthread_mutex_unlock(&e->watch_mu);
  return NULL;
}

static void watch_begin(engine *e, call *c) {
  if (!e->watching) return;
  beat(e);
  double until = c->close_by > 0 ? c->close_by : c->deadline;
  atomic_store(&e->watched_until, (uint_fast64_t)(until * 1e6));
  atomic_store(&e->watched, c->co);
}

/* The handler yielded or returned: the watchdog lets go of its coroutine;
   a stall it armed but that no Lua event reported (C code to the end) is
   reported here. */
static void watch_end(engine *e, call *c) {
  if (!e->watching) return;
  atomic_store(&e->watched, NULL);
  while (atomic_load(&e->arming)) {} /* a lua_sethook under way: nanoseconds */
  double since = (double)atomic_exchange(&e->blocked_since, 0) * 1e-6;
  if (since > 0) {
    lua_sethook(c->co, call_hook, LUA_MASKCOUNT, HOOK_COUNT);
    blocked_report(e, c, c->co, engine_now() - since, false);
  }
}

/* }====== */

call *engine_call_new(engine *e, const void *peer, const char *id, size_t idn) {
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
  c->deadline = engine_now() + e->opt.call_timeout;
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
  lua_sethook(c->co, call_hook, LUA_MASKCOUNT, HOOK_COUNT);
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
   instruction. They may be run from another call's hook (engine_end_peer
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
  c->close_by = engine_now() + CLOSE_GRACE;
  c->close_nested = outer != NULL;
  lua_sethook(c->co, call_hook, LUA_MASKCOUNT, HOOK_COUNT); /* a stopped call's was at 1 */
  e->running = c;
  if (!outer) watch_begin(e, c);
  status = lua_resetthread(c->co);
  if (!outer) watch_end(e, c);
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

static void call_end(engine *e, call *c) {
  lua_State *L = c->v->L;
  if (e->new_call == c) e->new_call = NULL;
  stop_waiting(c);
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
  else free_call(c);
}

/* {====== the text of a handler's error: "FILE:LINE: message" for any value */

/* Does s begin with a position ("file:line: "), as error("...") makes? */
static bool has_position(const char *s, size_t n) {
  const char *end = s + (n < 400 ? n : 400);
  const char *colon = memchr(s, ':', (size_t)(end - s));
  if (!colon || colon == s || memchr(s, '\n', (size_t)(colon - s))) return false;
  const char *p = colon + 1;
  if (p >= end || *p < '0' || *p > '9') return false;
  while (p < end && *p >= '0' && *p <= '9') p++;
  return p + 1 < end && p[0] == ':' && p[1] == ' ';
}

/* The innermost line of the app's own code on co's stack (not C, not the
   embedded mcp.lua): where error() was called. The stack of a coroutine
   that died of an error is still there to read. */
static void script_position(lua_State *co, buf *out) {
  lua_Debug ar;
  for (int level = 0; lua_getstack(co, level, &ar); level++) {
    if (!lua_getinfo(co, "Sl", &ar) || ar.currentline <= 0 || strcmp(ar.source, "=mcp.lua") == 0)
      continue;
    buf_printf(out, "%s:%d: ", ar.short_src, ar.currentline);
    return;
  }
}

/* An error object's __tostring, run on a thread of its own under the
   call's count hook and deadline, cut to 0.1 s (script code: it may loop
   or raise).
   Appends its string and returns true, or false. */
static bool error_tostring(engine *e, call *c, lua_State *co, buf *out) {
  if (!lua_getmetatable(co, -1)) return false;
  lua_pushliteral(co, "__tostring");
  lua_rawget(co, -2);
  lua_remove(co, -2);
  if (!lua_isfunction(co, -1)) {
    lua_pop(co, 1);
    return false;
  }
  lua_State *L = c->v->L;
  lua_State *t = lua_newthread(L);
  *(call **)lua_getextraspace(t) = c;
  lua_sethook(t, call_hook, LUA_MASKCOUNT, HOOK_COUNT);
  lua_pushvalue(co, -2);
  lua_xmove(co, t, 2); /* the function and the error object */
  int nres = 0;
  /* the call has failed already: a tenth of a second to say why, at most */
  double cap = engine_now() + 0.1;
  if (c->deadline > cap) c->deadline = cap;
  e->running = c;
  int status = lua_resume(t, L, 1, &nres);
  e->running = NULL;
  bool ok = status == LUA_OK && nres >= 1 && lua_type(t, -nres) == LUA_TSTRING;
  if (ok) {
    size_t n;
    const char *s = lua_tolstring(t, -nres, &n);
    buf_put(out, s, n);
  }
  *(call **)lua_getextraspace(t) = NULL;
  lua_pop(L, 1); /* the thread: collected */
  return ok;
}

/* The message of the error object on top of co: a string as it is, a
   table's `message` field or __tostring, else what the value is — with
   the script's position in front when it has none. */
static void error_text(engine *e, call *c, buf *out) {
  lua_State *co = c->co;
  buf m;
  buf_init(&m);
  int t = lua_type(co, -1);
  if (t == LUA_TSTRING || t == LUA_TNUMBER) {
    lua_pushvalue(co, -1); /* tolstring converts a number in place: on a copy */
    size_t n;
    const char *s = lua_tolstring(co, -1, &n);
    buf_put(&m, s, n);
    lua_pop(co, 1);
  } else if (t == LUA_TTABLE) {
    lua_pushliteral(co, "message");
    if (lua_rawget(co, -2) == LUA_TSTRING) {
      size_t n;
      const char *s = lua_tolstring(co, -1, &n);
      buf_put(&m, s, n);
    }
    lua_pop(co, 1);
    if (!m.len && !error_tostring(e, c, co, &m)) {
      buf_puts(&m, "error raised with a table: ");
      char err[64];
      size_t mark = m.len;
      if (!json_encode_sorted(co, -1, &m, err, sizeof err)) {
        m.len = mark;
        buf_puts(&m, "(it has no message field)");
      }
      if (m.len > 300) m.len = 300, buf_puts(&m, "...");
    }
  } else {
    buf_printf(&m, "error raised with a %s value", lua_typename(co, t));
  }
  if (!has_position(m.p ? m.p : "", m.len)) script_position(co, out);
  buf_put(out, m.p ? m.p : "", m.len);
  buf_free(&m);
}

/* }====== */

/* Resume c with nargs values on its stack; handle what it does next. */
void engine_call_start(engine *e, call *c, int nargs) {
  if (e->new_call == c) e->new_call = NULL; /* from now on it answers for itself */
  vm *a = c->v;
  size_t before = a->mem_used;
  if (e->opt.call_memory) {
    long long room = (long long)e->opt.call_memory - c->mem_grown;
    a->mem_ceiling = before + (size_t)(room > 0 ? room : 0);
  }
  int nres = 0;
  e->running = c;
  watch_begin(e, c);
  int status = lua_resume(c->co, a->L, nargs, &nres);
  watch_end(e, c);
  e->running = NULL;
  a->mem_ceiling = 0;
  c->mem_grown += (long long)a->mem_used - (long long)before;
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
      script_position(c->co, &msg);
      buf_printf(&msg, "the call ran out of memory (limit %zu MiB per call)",
                 e->opt.call_memory >> 20);
    } else {
      error_text(e, c, &msg);
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

void engine_call_end_at_yield(call *c) { c->end_at_yield = true; }

void engine_call_adopt(call *c, const void *peer, double seconds) {
  c->peer = peer;
  c->deadline = engine_now() + seconds;
  if (c->wake_at > 0) {
    if (c->wait) c->wake_at = c->deadline; /* parked on an operation: until the new deadline */
    arm(c);
  }
}

/* Mark the calls a cancellation names; parked ones are ended by reap(). */
void engine_cancel_now(engine *e, const void *peer, const char *id, size_t n) {
  for (call *c = e->calls; c; c = c->next)
    if (same_id(c, peer, id, n)) c->cancelled = true;
}

call *engine_find_call(engine *e, const void *peer, bool (*match)(call *c, void *ud), void *ud) {
  for (call *c = e->calls; c; c = c->next)
    if (c->peer == peer && match(c, ud)) return c;
  return NULL;
}

void engine_end_peer(engine *e, const void *peer) {
  call *next;
  for (call *c = e->calls; c; c = next) {
    next = c->next;
    if (c->peer == peer && c != e->running) call_end(e, c);
  }
}

static void apply_cancels(engine *e) {
  pthread_mutex_lock(&e->lock);
  cancel_req *list = e->cancels;
  e->cancels = NULL;
  atomic_store(&e->interrupt, false);
  pthread_mutex_unlock(&e->lock);
  while (list) {
    cancel_req *r = list;
    list = r->next;
    engine_cancel_now(e, r->peer, r->id, r->id_len);
    free(r->id);
    free(r);
  }
}

/* End the parked calls whose client cancelled them: no answer is sent. */
static void reap(engine *e) {
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

/* {====================================================== inputs */

static void on_input_ready(uv_poll_t *h, int status, int events) {
  (void)status, (void)events;
  struct engine_input *in = h->data;
  in->fn(in->ctx);
}

static void on_input_idle(uv_idle_t *h) {
  struct engine_input *in = h->data;
  in->fn(in->ctx);
}

void engine_add_input(engine *e, int fd, engine_input_fn fn, void *ctx) {
  if (e->ninputs == MAX_INPUTS) abort(); /* a programming error, not input */
  struct engine_input *in = calloc(1, sizeof *in);
  *in = (struct engine_input){.fd = fd, .fn = fn, .ctx = ctx};
  in->poll = malloc(sizeof *in->poll);
  if (uv_poll_init(&e->loop, in->poll, fd) == 0) {
    in->poll->data = in;
    uv_poll_start(in->poll, UV_READABLE, on_input_ready);
  } else { /* a regular file (epoll refuses it): always readable */
    free(in->poll);
    in->poll = NULL;
    in->idle = malloc(sizeof *in->idle);
    uv_idle_init(&e->loop, in->idle);
    in->idle->data = in;
    uv_idle_start(in->idle, on_input_idle);
  }
  e->inputs[e->ninputs++] = in;
}

void engine_remove_input(engine *e, int fd) {
  for (size_t i = 0; i < e->ninputs; i++) {
    struct engine_input *in = e->inputs[i];
    if (in->fd != fd) continue;
    if (in->poll) uv_close((uv_handle_t *)in->poll, free_handle);
    if (in->idle) uv_close((uv_handle_t *)in->idle, free_handle);
    free(in);
    e->inputs[i] = e->inputs[--e->ninputs];
    return;
  }
}

/* From the count hook, while a handler runs: read whatever input is ready
   now (ping and notifications/cancelled are seen), without the loop —
   the loop's callbacks may not run inside a handler. */
static void poll_inputs(engine *e) {
  struct pollfd fds[MAX_INPUTS];
  size_t n = e->ninputs;
  for (size_t i = 0; i < n; i++) fds[i] = (struct pollfd){.fd = e->inputs[i]->fd, .events = POLLIN};
  if (n == 0 || poll(fds, n, 0) <= 0) return;
  /* handlers may remove their input: look each fd up again */
  for (size_t k = 0; k < n; k++) {
    if (!fds[k].revents) continue;
    for (size_t i = 0; i < e->ninputs; i++)
      if (e->inputs[i]->fd == fds[k].fd) {
        e->inputs[i]->fn(e->inputs[i]->ctx);
        break;
      }
  }
}

/* }====================================================== */

/* {====================================================== the loop */

/* Sleep until the loop has work (its backend fd is readable) or
   timeout_ms passes (-1: no limit), without e->run: other threads answer
   their own messages meanwhile. */
static void wait_for_loop(engine *e, int timeout_ms) {
  struct pollfd p = {.fd = uv_backend_fd(&e->loop), .events = POLLIN};
  run_unlock(e);
  /* a message queued while we held e->run: its sender left it to us */
  if (!queue_empty(e)) timeout_ms = 0;
  if (timeout_ms != 0) {
    double until = engine_now() + SPIN_SECONDS;
    do {
      if (poll(&p, 1, 0) > 0) {
        timeout_ms = 0;
        break;
      }
    } while (engine_now() < until);
  }
  if (timeout_ms != 0) poll(&p, 1, timeout_ms);
  run_lock(e);
}

/* One round of the engine's work: the queued messages, those read while a
   call ran, cancellations, and the batched output. e->run held. Returns
   whether the engine is finishing. */
static bool work_round(engine *e) {
  bool finishing;
  /* what waited while a handler ran came first */
  for (size_t i = 0; i < e->ndeferred; i++) { /* may grow (and move) while we go */
    dispatch(e, e->deferred[i]);
    e->h.release(e->h.ud, e->deferred[i], true);
  }
  e->ndeferred = 0;
  dispatch_batch(e, take(e, NULL, &finishing));
  apply_cancels(e); /* after the dispatch: a cancel may name a call it just started */
  reap(e);
  settle(e);
  e->h.flush(e->h.ud);
  return finishing;
}

void engine_run(engine *e) {
  run_lock(e);
  e->loop_thread = pthread_self();
  e->loop_running = true;
  /* e->watching is read by run-lock holders (watch_begin): set under it */
  if (e->opt.warn_blocking > 0 || e->opt.stalled)
    e->watching = pthread_create(&e->watchdog, NULL, watchdog_main, e) == 0;
  for (;;) {
    uv_run(&e->loop, UV_RUN_NOWAIT); /* due timers and ready I/O: parked calls resume */
    bool finishing = work_round(e);
    if (finishing && e->ncalls == 0 && e->finish_deadline) break;
    if (finishing && e->ncalls == 0 && !e->finish_deadline) { /* the listeners' farewell first */
      e->h.finishing(e->h.ud);
      e->h.flush(e->h.ud);
      break;
    }
    if (finishing && e->finish_deadline == 0) {
      e->finish_deadline = engine_now() + e->opt.shutdown_grace;
      e->h.finishing(e->h.ud);
      e->h.flush(e->h.ud);
    }
    if (finishing && engine_now() >= e->finish_deadline) { /* grace is over */
      log_msg(LOG_WARNING, "shutting down: ending %zu call(s) still running", e->ncalls);
      while (e->calls) {
        call *c = e->calls;
        char msg[96];
        snprintf(msg, sizeof msg, "the server shut down before the call finished (--shutdown-grace %g s)",
                 e->opt.shutdown_grace);
        e->h.failed(e->h.ud, c, msg);
        call_end(e, c);
      }
      e->h.flush(e->h.ud);
      continue;
    }
    if (finishing) /* stop taking input; finish what runs */
      while (e->ninputs) engine_remove_input(e, e->inputs[0]->fd);
    settle(e); /* what the hooks above queued, before the wait */
    e->h.flush(e->h.ud);
    int timeout = uv_backend_timeout(&e->loop);
    if (finishing) {
      int ms = (int)ceil((e->finish_deadline - engine_now()) * 1000.0);
      if (ms < 0) ms = 0;
      if (timeout < 0 || ms < timeout) timeout = ms;
    }
    /* read by a call resumed above, not yet dispatched; or handles started
       since the loop polled (registered by its next pass) */
    if (e->ndeferred || unregistered_handles(e)) timeout = 0;
    /* with a settle user (Redis), never asleep for good: a timer a worker
       starts further out than the planned wake-up (a parked call's
       deadline, its command already written at the settle point) then
       needs no wake-up (loop_changed); without one, an idle server sleeps */
    if (e->nsettle && (timeout < 0 || timeout > LOOP_SLEEP_MAX_MS)) timeout = LOOP_SLEEP_MAX_MS;
    e->sleep_until = timeout < 0 ? 0 : uv_now(&e->loop) + (uint64_t)timeout;
    wait_for_loop(e, timeout);
  }
  if (e->watching) { /* it takes only watch_mu: joined with e->run held */
    pthread_mutex_lock(&e->watch_mu);
    e->watch_stop = true;
    pthread_cond_signal(&e->watch_cv);
    pthread_mutex_unlock(&e->watch_mu);
    pthread_join(e->watchdog, NULL);
  }
  run_unlock(e);
}

/* }====================================================== */
