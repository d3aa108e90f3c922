/* engine.h — the thread that owns the Lua state. Transports hand it whole
 * messages through a bounded queue (engine_submit, any thread); it answers
 * through each session's output channel, batching a wake-up's replies into
 * one write. Every handler runs in its own coroutine ("call"): ctx:sleep
 * parks it on a timer, other calls keep being served, and a count hook
 * enforces the wall-clock limit and cancellation even in a busy loop.
 *
 * Why poll() and not a reader thread for stdio (DESIGN.md had transports on
 * their own threads): measured here, the two thread hand-offs per request
 * (reader -> engine -> back) cost more than the whole Lua call; reading on
 * the engine thread, and from the count hook while a handler runs, keeps
 * ping/cancel responsive without them. Other transports (HTTP) hand
 * messages over with engine_submit.
 *
 * Why engine_submit may run the message on the caller's thread (DESIGN.md
 * has one engine thread): the engine's state belongs to whoever holds its
 * run lock, not to a thread. A transport thread that finds the engine idle
 * takes the lock and answers its own message at once; only when the engine
 * is busy does the message wait in the queue for the holder. Measured with
 * perf under HTTP load: the hand-offs to the engine thread and back were
 * half of the CPU time (futex waits and wake-ups). A thread with less than
 * HELP_THREAD_STACK of stack never does (thread_stack.c gives civetweb's
 * workers enough). */
#ifndef LUAMCP_ENGINE_H
#define LUAMCP_ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include "app.h"
#include "jsonrpc.h"
#include "outlet.h"
#include "session.h"

typedef struct engine_options {
  app_config app;       /* how apps are loaded (again, on reload) */
  double debounce;      /* seconds of quiet after a file change before reloading */
  double call_timeout;  /* seconds of wall clock per call */
  size_t call_memory;   /* bytes a call may grow the Lua heap by; 0 = no cap */
  size_t queue_cap;     /* messages waiting before submitters block */
  double shutdown_grace; /* seconds calls in flight get to finish at shutdown */
} engine_options;

typedef struct engine engine;
typedef struct call call;

engine *engine_new(app *a, const engine_options *opt);
/* Frees the engine and the app it serves. */
void engine_free(engine *e);

/* {====== any thread */
/* Hand one message (malloc'd; ownership passes) to the engine; its answer
   goes to reply (NULL for notifications and responses). The engine takes
   its own reference to s. notifications/cancelled takes effect at once,
   even while a handler runs. If the engine is finishing, the message is
   dropped and reply->finish called. reply->finish may be called from any
   thread, the caller's own included, before engine_submit returns. parsed: msg already classified by the caller (its spans point
   into msg), or NULL. */
void engine_submit(engine *e, session *s, outlet *reply, char *msg, size_t len,
                   const jsonrpc_msg *parsed);
/* The session ended (DELETE, expiry): its calls are dropped, its standalone
   outlet finished and released. */
void engine_end_session(engine *e, session *s);
/* Make stream the session's standalone outlet (an HTTP GET stream); a
   previous one is finished. stream->finish is called when it is released. */
void engine_attach(engine *e, session *s, outlet *stream);
/* No more input will come: finish what is in flight (at most
   shutdown_grace seconds), then engine_run returns. */
void engine_finish(engine *e);
bool engine_finishing(engine *e);
/* }====== */

/* Serve until engine_finish and the last call has ended. */
void engine_run(engine *e);

/* {====== reload: a fresh state and snapshot, published only if every
   script loads; calls in flight finish on the old state */
/* Any thread (SIGHUP): reload as soon as the engine is between calls. */
void engine_request_reload(engine *e);
/* Engine thread (the file watcher): reload after `delay` seconds of quiet;
   each call pushes it back, so a burst of writes is one reload. */
void engine_schedule_reload(engine *e, double delay);
/* The same, but only if a reload is already due (a file is being written). */
void engine_postpone_reload(engine *e, double delay);
/* }====== */

/* {====== inputs read by the engine (stdio): no thread hand-off per
   message. The engine polls fd and calls fn(ctx) when it is readable --
   also from inside a long-running handler's hook, so ping and
   notifications/cancelled are seen while it runs. fn reads and passes each
   message to engine_accept. fn runs with the run lock held, on whichever
   thread holds it, and may find nothing to read (then EAGAIN: make fd
   non-blocking when other threads submit messages). */
typedef void (*engine_input_fn)(void *ctx);
void engine_add_input(engine *e, int fd, engine_input_fn fn, void *ctx);
void engine_remove_input(engine *e, int fd);
/* Engine thread: take one message (borrowed; copied only if it must wait);
   answers go to s->standalone. */
void engine_accept(engine *e, session *s, const char *msg, size_t len);
/* }====== */

/* {====== for the Lua API (lua_api.c); the run-lock holder only */
/* The engine serving a state is in its registry under this key. */
#define ENGINE_KEY "luamcp.engine"
/* notifications/resources/updated to every session subscribed to uri. */
void engine_notify_updated(engine *e, const char *uri, size_t n);
typedef enum call_kind { CALL_TOOL, CALL_RESOURCE, CALL_PROMPT, CALL_COMPLETE } call_kind;
/* Send notifications/message to the call's client (if its level allows). */
void call_log(call *c, int level, const char *msg, size_t len);
/* Send notifications/progress when the request asked for it; false if it did
   not (nothing sent). */
bool call_progress(call *c, double progress, double total, const char *message);
/* Send a request to the call's client (params: the Lua table at params_idx
   of L, or {} when 0) and park the call until its answer; the caller then
   yields and is resumed with the result table, or nil and a message. False
   (with err) when it cannot be sent, e.g. the client lacks the capability. */
bool call_ask_client(call *c, const char *method, lua_State *L, int params_idx, char *err,
                     size_t errlen);
/* End the call's HTTP response early; the client resumes the stream with
   GET + Last-Event-ID and receives the rest. False over stdio. */
bool call_detach(call *c);
/* Arrange to be resumed after `seconds` (the caller then yields). */
void call_sleep(call *c, double seconds);
bool call_is_cancelled(const call *c);
bool call_timed_out(const call *c);
#define TIMEOUT_MSG_MAX 64
void timeout_message(const call *c, char out[TIMEOUT_MSG_MAX]);
const char *call_protocol_version(const call *c);
/* The call running on this coroutine, or NULL. */
call *call_of(lua_State *co);
lua_State *call_thread(const call *c);
/* Why the call running on L must stop now ("call timed out after 1 s",
   "call cancelled by the client"), or NULL (also outside any call). Never
   raises: for C functions that run long (lua_pattern.h's check). */
const char *engine_interrupt_reason(lua_State *L);
/* }====== */

#endif
