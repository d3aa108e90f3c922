/* engine.h — the reactor under the server: an event loop (libuv), the
 * queue other threads hand messages through, the run lock, and handler
 * calls as coroutines with their limits (deadline, cancellation, memory)
 * and their waits. It knows no MCP method: what a message means, how a
 * result is shaped and where it goes belong to the layer above
 * (server.h), which gives its behaviour as engine_hooks.
 *
 * Why libuv: every wait of a handler — a timer, the client's answer, a
 * socket, an HTTP transfer (libcurl's multi interface plugs into it), a
 * child process, name resolution (its thread pool) — needs one loop that
 * owns readiness of fds, timers, children and signals. libuv is that loop
 * for Node and Neovim, is in Debian, and can be driven from outside: the
 * engine thread sleeps on uv_backend_fd() without the run lock and runs
 * one non-blocking pass with it. The home-made poll() loop it replaces had
 * a timer scan per round over every call and no child or socket support.
 *
 * Why the run lock and not one engine thread (DESIGN.md had one): the
 * engine's state — the lua_State, the loop — belongs to whoever holds the
 * run lock, not to a thread. A transport thread that finds the engine idle
 * takes the lock and answers its own message at once; only when the engine
 * is busy does the message wait in the queue: the hand-offs to an engine
 * thread and back cost more than the call (docs/PERFORMANCE.md). A thread
 * with less than HELP_THREAD_STACK of stack never does
 * (thread_stack.c gives civetweb's workers enough).
 *
 * The watchdog: a handler that blocks in a C call (os.execute, io.popen,
 * a luasocket read) stops everything, and the count hook cannot fire
 * inside it. A thread sees the hook's heartbeat stop and arms a return
 * hook on the handler's coroutine; when the C function returns, the hook
 * reports it with the script line that called it (as Node reports sync
 * I/O), so users learn which call to replace.
 *
 * Lua runs __gc finalizers with hooks off, so neither the deadline nor
 * that return hook reaches one that loops. When the hook the watchdog set
 * has not run a check later and the stalled coroutine's innermost frame is
 * Lua code, the watchdog's own thread reports it on stderr ("file:line: a
 * __gc finalizer has blocked the server for N ms so far"); the client
 * cannot be told, the engine is stuck. Nothing in-process can stop it, so
 * a stall (the run lock held, no heartbeat: hooks, resumes, lock
 * hand-overs) calls `stalled` from the watchdog's thread, which ends the
 * process (for a supervisor to start again: main.c) once it is
 *   - past the stalled call's deadline (or, outside a call, --timeout from
 *     its start) by a further shutdown_grace: nothing will end it;
 *   - shutdown_grace + 1 s after engine_finish (SIGTERM) began: the
 *     calls' grace is over and the engine could not end them;
 *   - stall_limit long, when one is set (--restart-on-stall).
 *
 * __close: a call that ends before its handler returned (cancelled or
 * timed out while parked, failed, its session ended, shutdown) runs its
 * pending to-be-closed variables then, as the call (its hook, its memory
 * cap) but with its own budget: CLOSE_GRACE (0.1 s) for all of them
 * together, whatever is left of the deadline (a timed-out call has none,
 * and its cleanup should still run). Past it the running __close raises
 * and those left raise at their first instruction (a C __close, such as a
 * file's, still runs); the failure is logged. Pings and cancellations are
 * answered meanwhile, as during a handler.
 *
 * Why stdio is read by the engine itself (engine_add_input): two thread
 * hand-offs per request cost more than the whole Lua call; the count hook
 * also reads inputs while a handler runs, so ping and cancellations are
 * seen during a busy loop. */
#ifndef LUAMCP_ENGINE_H
#define LUAMCP_ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "call.h"
#include "vm.h"

/* The version of the app the layer above loaded into a vm (vm.owner):
   opaque here. */
typedef struct app app;

typedef struct engine_options {
  double call_timeout;   /* seconds of wall clock per call */
  size_t call_memory;    /* bytes a call may grow the Lua heap by; 0 = no cap */
  size_t queue_cap;      /* messages waiting before submitters block */
  double shutdown_grace; /* seconds calls in flight get to finish at shutdown */
  double warn_blocking;  /* report a handler that blocks this long in one C call; 0: off */
  /* The engine stood still past what ends it (see above; stall_limit > 0:
     that long at most). Called on the watchdog's thread with the engine
     stuck: where is "file:line: " of the stuck Lua code or "", why says
     which limit passed. Returns only to keep serving (the next stall is
     counted from then). NULL: stalls are only reported. */
  double stall_limit;
  void (*stalled)(double seconds, const char *where, const char *why);
} engine_options;

typedef struct engine engine;

/* What the layer above does with messages and calls. `msg` is its own
   opaque message; every hook runs with the run lock held. */
typedef struct engine_hooks {
  void *ud;
  size_t call_extra; /* bytes of per-call data of its own (call_extra()) */
  /* Handle one message (under a protected call: a Lua error raised here
     ends in dispatch_failed). */
  void (*dispatch)(void *ud, void *msg);
  /* A Lua error escaped dispatch (and no call it started is left to
     answer): answer msg with an internal error if it wants one. */
  void (*dispatch_failed)(void *ud, void *msg, const char *err);
  /* Can msg be answered without running Lua (from the registry snapshot
     and session state)? Such messages are dispatched even while a handler
     runs, from its hook: a busy handler does not silence the server. */
  bool (*quick)(void *ud, const void *msg);
  /* msg is done (dispatched, or dropped because the engine is finishing:
     then answered=false). Free it. */
  void (*release)(void *ud, void *msg, bool dispatched);
  /* The handler returned nres values (on call_thread(c)): answer. The
     values are the script's: the layer protects its own use of them. */
  void (*returned)(void *ud, call *c, int nres);
  /* The handler failed (error, timeout, out of memory, shutdown): answer
     with msg. */
  void (*failed)(void *ud, call *c, const char *msg);
  /* c is about to wait (call_park, call_sleep; NULL: never): the layer may
     answer its request now and let it go on (call_adopt). */
  void (*waits)(void *ud, call *c);
  /* c ends (answered, cancelled, dropped): release the per-call data. */
  void (*ended)(void *ud, call *c);
  /* A handler held the engine in one C call (the watchdog): tell whoever
     should learn which call to replace. */
  void (*blocked)(void *ud, call *c, const char *msg);
  /* engine_finish was called: the engine stops taking input (once). */
  void (*finishing)(void *ud);
  /* The end of a round of work: hand batched output over. */
  void (*flush)(void *ud);
  /* No call runs in v any more and it is not the current version (a
     reload replaced it, or the engine is freed): free it and its owner. */
  void (*release_vm)(void *ud, vm *v);
  /* What a call's ctx asks of its client: the layer's table
     (core/app/ctx_client.h), kept for call_client and never read here. */
  const void *client;
  /* The span of c's request (call_span), or NULL. */
  struct trace_span *(*span)(call *c);
} engine_hooks;

engine *engine_new(vm *v, const engine_options *opt, const engine_hooks *hooks);
/* Frees the engine and (release_vm) the version it serves. */
void engine_free(engine *e);

/* {====== any thread */
/* Queue msg for the run-lock holder; with `answer`, the caller waits for
   its answer: when the engine is idle the caller's own thread runs it at
   once (see above). False when the engine is finishing: msg was released
   undispatched. msg may be dispatched and released before this returns. */
bool engine_submit(engine *e, void *msg, bool answer);
/* The call of `peer` with this JSON-RPC id (raw bytes) is cancelled: takes
   effect at once, even in a busy handler (the hook ends it). */
void engine_cancel(engine *e, const void *peer, const char *id, size_t n);
/* No more input will come: finish what is in flight (at most
   shutdown_grace seconds), then engine_run returns. */
void engine_finish(engine *e);
bool engine_finishing(engine *e);
/* }====== */

/* Serve until engine_finish and the last call has ended. */
void engine_run(engine *e);
/* How long the engine has been held by one thing without a heartbeat
   (no hook, resume or hand-over: a blocking C call, a looping __gc), as
   seen by this and earlier calls, in seconds; 0 when it is idle or moving.
   Any thread (a health check, polled): a stall shows from its second poll. */
double engine_stalled_for(engine *e);
/* The calling thread will call engine_run: said before other threads start
   submitting (the HTTP workers), so a call a worker runs inline can be handed
   over to the loop even when its request came before engine_run began. */
void engine_claim_loop(engine *e);
/* Serve until done(ud), asked after each round's output went out, or until
   nothing is left to do (no call, nothing queued): for a caller that drives
   the engine a request at a time from its own thread (luamcp test), with
   nothing of the engine running in between. */
void engine_run_until(engine *e, bool (*done)(void *ud), void *ud);

/* {====== the run-lock holder */
uv_loop_t *engine_loop(engine *e);
/* The version new calls run in (its vm's owner); a reload replaces it
   (calls in flight finish on the old one, released with its last call). */
app *engine_app(engine *e);
void engine_set_vm(engine *e, vm *fresh);
/* Is a handler running now (we are inside its hook)? Messages read then
   wait (engine_defer) until it yields. */
bool engine_busy(engine *e);

/* Run fn(arg) when this thread lets go of the run lock, or now when it does
   not hold it: for waking a thread that waits on an answer, a system call
   every other request would otherwise wait behind (the lock serialises
   all Lua work). At most ENGINE_AFTER_RUN are kept; past that, now. */
#define ENGINE_AFTER_RUN 64
void engine_after_run(void (*fn)(void *arg), void *arg);

/* Run fn(arg) wherever the run-lock holder has no call running and is
   about to let go or to sleep: after a worker's batch, at the end of each
   round of the loop's thread and before it waits. For output a call queued
   on a socket of the loop (a Redis command): written there and then, it
   needs no wake-up of the loop's thread first. At most ENGINE_SETTLE. */
#define ENGINE_SETTLE 8
void engine_on_settle(engine *e, void (*fn)(void *arg), void *arg);
void engine_off_settle(engine *e, void (*fn)(void *arg), void *arg);

/* c sent its client a notification: if a worker runs it inline, let the
   loop's thread take it over soon, so the worker relays (see engine.c). */
void call_hand_over(call *c);
void engine_defer(engine *e, void *msg);
/* Dispatch (protected) and release msg now; not while busy. */
void engine_dispatch(engine *e, void *msg);
/* The first call of peer for which match(c, ud) holds, or NULL. */
call *call_find(engine *e, const void *peer, bool (*match)(call *c, void *ud), void *ud);
/* engine_cancel, when the holder itself reads the cancellation. */
void call_cancel_now(engine *e, const void *peer, const char *id, size_t n);
/* End every call of peer (no answers), but the one running. */
void call_end_peer(engine *e, const void *peer);

/* A new call in the current app's state, with its own coroutine; push the
   function and its arguments on call_thread(c), then call_start. */
call *call_new(engine *e, const void *peer, const char *id, size_t idn);
void call_start(engine *e, call *c, int nargs);
/* c has been answered from inside its handler: when the handler yields
   (the caller does so now), the call ends without running further. */
void call_end_at_yield(call *c);
/* c's request was answered early and c goes on for another owner: it is
   now peer's call (cancellations and call_end_peer name that peer), with
   `seconds` from now before its deadline. */
void call_adopt(call *c, const void *peer, double seconds);
/* The call running on L (if any) spent `seconds` of a virtual clock
   (luamcp test's ctx:sleep and fakes): its deadline comes that much sooner.
   True when it has passed: the caller raises the timeout (call_timeout_message)
   where the wait was, and the hook ends the call if a pcall swallows it.
   Negative: time given back (luamcp test's threads ran beside each other). */
bool call_spend(lua_State *L, double seconds);
/* The layer's own data of a call, and back. */
void *call_extra(call *c);
call *call_of_extra(void *extra);
app *call_app(const call *c);
/* The JSON-RPC id the call answers (raw bytes, NUL-terminated). */
const char *call_id(const call *c, size_t *n);
/* The engine serving this state (NULL while `luamcp check` loads one),
   and the ud its hooks were given. */
engine *engine_of_state(lua_State *L);
void *engine_layer(engine *e);

/* {====== inputs read by the engine (stdio): the loop watches fd and calls
   fn(ctx) when it is readable -- also from inside a long-running handler's
   hook, so ping and notifications/cancelled are seen while it runs. fn
   may find nothing to read (make fd non-blocking). */
typedef void (*engine_input_fn)(void *ctx);
void engine_add_input(engine *e, int fd, engine_input_fn fn, void *ctx);
void engine_remove_input(engine *e, int fd);
/* }====== */
/* }====== */

#endif
