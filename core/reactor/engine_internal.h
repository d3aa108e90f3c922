/* engine_internal.h — what the reactor's files share on purpose: the
 * engine's and a call's state, and the functions each file gives the
 * others (as Redis' files share server.h):
 *   engine.c       the queue, the run lock, dispatch, inputs, the loop
 *   call.c         calls as coroutines: their limits (the count hook, the
 *                  deadline, cancellation, the memory cap), waits, ends
 *   call_error.c   the text of a handler's error: "FILE:LINE: message"
 *   call_threads.c light threads of a call (mcp.spawn, mcp.all): more
 *                  coroutines of one call, each parked on its own wait
 *   watchdog.c     a handler stuck where the hook cannot reach it
 * Nothing outside core/reactor/ includes it. */
#ifndef LUAMCP_ENGINE_INTERNAL_H
#define LUAMCP_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include <lua.h>

#include "buf.h"
#include "engine.h"

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
   the wake-up, most of a request's latency at one in flight
   (docs/PERFORMANCE.md). */
#define SPIN_SECONDS 50e-6
/* the longest the loop's thread sleeps without a reason to wake, with Redis */
#define LOOP_SLEEP_MAX_MS 1000
/* How long the to-be-closed variables of a call that ends early get, all
   together (engine.h: "__close"). */
#define CLOSE_GRACE 0.1
/* The engine serving a state is in its registry under this key. */
#define ENGINE_KEY "luamcp.engine"

/* A light thread of a call (call_threads.c): one more coroutine of the
   call, under its limits, parked on a wait of its own. Lives in its
   handle's userdata; the call holds the handle until it ends. */
typedef struct strand strand;
struct strand {
  call *c;               /* NULL once the call ended (the handle is dead) */
  lua_State *co;         /* NULL once the call ended */
  int co_ref, handle_ref;
  int state;             /* STRAND_* (call_threads.c) */
  int nres;              /* done: its results, on top of co's stack */
  call_wait *wait;       /* the operation it is parked on, if any */
  struct metric_series *waiting;
  struct join *waiter;   /* a thread (or the handler) waiting for this one */
  bool seen;             /* its outcome was taken by a wait */
  bool bad_yield;        /* failed: it yielded, not by waiting */
  strand *next;          /* the call's threads */
};

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
  struct metric_series *waiting; /* its mcp_server_calls_waiting series while parked */
  bool cancelled, timed_out;
  bool end_at_yield;
  double close_by;   /* > 0: its __close handlers run (call_end), until then */
  bool close_nested; /* ... inside another call's hook: that one reads the inputs */
  long long mem_grown;
  /* > 0: it sent the client something its worker cannot relay while it
     runs the call inline (call_hand_over): since then */
  double hand_over_since;
  strand *threads; /* mcp.spawn's threads, newest first */
  strand *cur;     /* the thread being resumed (NULL: the handler's coroutine) */
  bool oom;        /* a thread ran out of the call's memory: the call fails */
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
  /* engine_stalled_for: the heartbeat last seen held, and since when (µs) */
  pthread_mutex_t health_mu;
  uint_fast64_t health_beat;
  double health_since;
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

/* The watchdog's heartbeat: only the run-lock holder writes it, so a plain
   load and store (no locked add) will do. */
static inline void engine_beat(engine *e) {
  atomic_store_explicit(&e->heartbeat, atomic_load_explicit(&e->heartbeat, memory_order_relaxed) + 1,
                        memory_order_relaxed);
}

static inline void engine_free_handle(uv_handle_t *h) { free(h); }

/* {====== engine.c */
/* Wake the loop's thread (any thread). */
void engine_wake(engine *e);
bool engine_queue_empty(engine *e);
/* From a handler's hook: answer the queued messages that need no Lua. */
void engine_take_quick(engine *e);
/* Read whatever input is ready (a handler's hook, every few ms). */
void engine_poll_inputs(engine *e);
/* The wake-ups queued by engine_after_run, now. */
void engine_after_run_drain(void);
/* }====== */

/* {====== call.c */
/* The count hook: ends a call that ran out of time or was cancelled. */
void call_count_hook(lua_State *L, lua_Debug *ar);
void call_end(engine *e, call *c);
void call_free(call *c);
/* The cancellations other threads queued: mark their calls. */
void call_apply_cancels(engine *e);
/* End the parked calls whose client cancelled them. */
void call_reap(engine *e);
/* }====== */

/* {====== call.c, for call_threads.c */
/* Resume co, a coroutine of c, with nargs values, under c's limits (its
   memory room, the watchdog); the status, with *nres results on co. */
int call_resume(engine *e, call *c, lua_State *co, int nargs, int *nres);
/* The mcp_server_calls_waiting series for a wait on `what`, counted up. */
struct metric_series *call_count_wait(const char *what);
/* Fail c now with msg (its client gets it) and end it: from the loop. */
void call_fail(engine *e, call *c, const char *msg);
/* }====== */

/* {====== call_threads.c */
/* Resume thread s (parked on a wait that ended) with nvalues on its stack. */
void call_threads_wake(engine *e, call *c, strand *s, int nvalues);
/* The call ends: stop every thread (abort its wait, close its <close>
   variables) and let go of the handles. */
void call_threads_end(engine *e, call *c);
/* }====== */

/* {====== call_error.c */
/* The text of c's error (on its coroutine) into out: "FILE:LINE: message". */
void call_error_text(engine *e, call *c, buf *out);
/* Does s begin with a position ("file:line: "), as error("...") makes? */
bool call_has_position(const char *s, size_t n);
/* "FILE:LINE: " of the innermost line of the app's own code on co's stack. */
void call_script_position(lua_State *co, buf *out);
/* }====== */

/* {====== watchdog.c */
void watchdog_start(engine *e);
void watchdog_stop(engine *e);
/* A handler runs (is resumed) on c's coroutine, or stops running on it. */
void watchdog_begin(engine *e, call *c);
void watchdog_end(engine *e, call *c);
/* }====== */

#endif
