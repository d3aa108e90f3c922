/* engine.c — the reactor: the queue other threads hand messages through,
 * the run lock, dispatch, the inputs it reads itself, and the loop (see
 * engine.h). Whoever holds e->run touches the lua_State and the loop: the
 * engine thread, or a transport's thread that found the engine idle and
 * runs its own message (help()). Calls are call.c's. */
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
#include "thread_stack.h"

engine *engine_of_state(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, ENGINE_KEY);
  engine *e = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return e;
}

void *engine_layer(engine *e) { return e->h.ud; }

double engine_stalled_for(engine *e) {
  double now = clock_now(), stalled = 0;
  uint_fast64_t beat = atomic_load(&e->heartbeat);
  pthread_mutex_lock(&e->health_mu);
  if (!atomic_load(&e->held) || beat != e->health_beat || e->health_since == 0) {
    e->health_beat = beat; /* moving, idle, or first seen: from now */
    e->health_since = atomic_load(&e->held) ? now : 0;
  } else {
    stalled = now - e->health_since;
  }
  pthread_mutex_unlock(&e->health_mu);
  return stalled;
}

/* Nothing to do: a wake-up only ends the loop's wait; the round after it
   takes the queue. */
static void on_wake(uv_async_t *h) { (void)h; }



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
  pthread_mutex_init(&e->health_mu, NULL);
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
  while (e->nspare) call_free(e->spare[--e->nspare]);
  while (e->ninputs) engine_remove_input(e, e->inputs[0]->fd);
  uv_close((uv_handle_t *)&e->wake, NULL);
  uv_run(&e->loop, UV_RUN_DEFAULT); /* the close callbacks */
  if (uv_loop_close(&e->loop) != 0) log_msg(LOG_DEBUG, "engine: handles still open at exit");
  pthread_mutex_destroy(&e->lock);
  pthread_mutex_destroy(&e->run);
  pthread_mutex_destroy(&e->watch_mu);
  pthread_mutex_destroy(&e->health_mu);
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
  if (metrics_on && pthread_mutex_trylock(&e->run) != 0) { /* contended: how long */
    double t0 = clock_now();
    pthread_mutex_lock(&e->run);
    metric_add_seconds(metric_only(M_RUN_LOCK_WAIT), clock_now() - t0);
  } else if (!metrics_on) {
    pthread_mutex_lock(&e->run);
  }
  atomic_store(&e->held, true);
  after_run.holding = true;
  engine_beat(e);
}

static bool run_trylock(engine *e) {
  if (pthread_mutex_trylock(&e->run) != 0) return false;
  atomic_store(&e->held, true);
  after_run.holding = true;
  engine_beat(e);
  return true;
}

void engine_after_run_drain(void) {
  for (int i = 0; i < after_run.n; i++) after_run.job[i].fn(after_run.job[i].arg);
  after_run.n = 0;
}

static void run_unlock(engine *e) {
  if (metrics_on) metric_gauge_set(metric_only(M_LUA_HEAP), (int64_t)e->vm->mem_used);
  engine_beat(e);
  atomic_store(&e->held, false);
  after_run.holding = false;
  pthread_mutex_unlock(&e->run);
  engine_after_run_drain();
}


void engine_wake(engine *e) { uv_async_send(&e->wake); }

bool engine_queue_empty(engine *e) {
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

static void engine_run_dispatch(engine *e, void *msg);

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
void engine_take_quick(engine *e) {
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
    engine_run_dispatch(e, e->batch[i]);
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
    engine_wake(e);
    return;
  }
  if (!run_trylock(e)) return;
  dispatch_batch(e, take(e, mine, NULL));
  settle(e); /* a Redis command a call queued goes out from here */
  e->h.flush(e->h.ud);
  /* a timer or handle started here: the engine thread's wait must learn of it */
  bool sooner = e->ndeferred || loop_changed(e);
  run_unlock(e);
  if (sooner || !engine_queue_empty(e)) engine_wake(e);
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
  else engine_wake(e); /* notifications and responses: their 202 must not wait for what they resume */
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
  engine_wake(e);
}

bool engine_finishing(engine *e) { return atomic_load(&e->finishing_flag); }

void engine_finish(engine *e) {
  uint_fast64_t zero = 0;
  atomic_compare_exchange_strong(&e->finish_asked, &zero, (uint_fast64_t)(clock_now() * 1e6));
  pthread_mutex_lock(&e->lock);
  e->finishing = true;
  atomic_store(&e->finishing_flag, true);
  pthread_cond_broadcast(&e->space);
  pthread_mutex_unlock(&e->lock);
  engine_wake(e);
}

/* }====================================================== */

/* {====================================================== dispatch */

static int dispatch_entry(lua_State *L) {
  engine *e = lua_touserdata(L, 1);
  e->h.dispatch(e->h.ud, lua_touserdata(L, 2));
  return 0;
}


/* One protected entry per message: a Lua error raised while C handles it
   (on the main thread or a call's coroutine: Lua hands errors of a thread
   without a handler to the main thread's) answers an error instead of
   aborting. The known places use raw access; this is the net under them. */
static void engine_run_dispatch(engine *e, void *msg) {
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
  engine_run_dispatch(e, msg);
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
    if (in->poll) uv_close((uv_handle_t *)in->poll, engine_free_handle);
    if (in->idle) uv_close((uv_handle_t *)in->idle, engine_free_handle);
    free(in);
    e->inputs[i] = e->inputs[--e->ninputs];
    return;
  }
}

/* From the count hook, while a handler runs: read whatever input is ready
   now (ping and notifications/cancelled are seen), without the loop —
   the loop's callbacks may not run inside a handler. */
void engine_poll_inputs(engine *e) {
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
  if (!engine_queue_empty(e)) timeout_ms = 0;
  if (timeout_ms != 0) {
    double until = clock_now() + SPIN_SECONDS;
    do {
      if (poll(&p, 1, 0) > 0) {
        timeout_ms = 0;
        break;
      }
    } while (clock_now() < until);
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
    engine_run_dispatch(e, e->deferred[i]);
    e->h.release(e->h.ud, e->deferred[i], true);
  }
  e->ndeferred = 0;
  dispatch_batch(e, take(e, NULL, &finishing));
  call_apply_cancels(e); /* after the dispatch: a cancel may name a call it just started */
  call_reap(e);
  settle(e);
  e->h.flush(e->h.ud);
  return finishing;
}

/* Wait on the loop until what is due next (and at most until `until`,
   clock_now() seconds; 0: no bound of the caller's). */
static void wait_next(engine *e, double until) {
  int timeout = uv_backend_timeout(&e->loop);
  if (until > 0) {
    int ms = (int)ceil((until - clock_now()) * 1000.0);
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

void engine_claim_loop(engine *e) {
  e->loop_thread = pthread_self();
  e->loop_running = true;
}

void engine_run(engine *e) {
  run_lock(e);
  engine_claim_loop(e);
  watchdog_start(e); /* e->watching is read by run-lock holders: set under the lock */
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
      e->finish_deadline = clock_now() + e->opt.shutdown_grace;
      e->h.finishing(e->h.ud);
      e->h.flush(e->h.ud);
    }
    if (finishing && clock_now() >= e->finish_deadline) { /* grace is over */
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
    wait_next(e, finishing ? e->finish_deadline : 0);
  }
  watchdog_stop(e); /* it takes only watch_mu: joined with e->run held */
  run_unlock(e);
}

void engine_run_until(engine *e, bool (*done)(void *ud), void *ud) {
  run_lock(e);
  engine_claim_loop(e);
  watchdog_start(e);
  for (;;) {
    uv_run(&e->loop, UV_RUN_NOWAIT);
    work_round(e);
    settle(e);
    e->h.flush(e->h.ud);
    if (done(ud)) break;
    pthread_mutex_lock(&e->lock);
    bool idle = e->qlen == 0 && e->ndeferred == 0 && e->ncalls == 0;
    pthread_mutex_unlock(&e->lock);
    if (idle) break; /* nothing more will come */
    wait_next(e, 0);
  }
  watchdog_stop(e);
  e->loop_running = false; /* the caller runs Lua of its own until the next round */
  run_unlock(e);
}

/* }====================================================== */
