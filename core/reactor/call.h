/* call.h — one handler call as the Lua side sees it: the narrow door from
 * `ctx` (lua_api.c) and the I/O modules (io_*.c) into the engine. A call
 * is a coroutine; whatever it waits on (a timer, the client's answer, a
 * socket, a transfer, a child) parks it on the engine's event loop, and
 * the loop resumes it. Everything here is for the engine's run-lock holder
 * (the code that runs Lua, and the loop's callbacks).
 *
 * The one semantics of every wait: a call is parked on a call_wait; the
 * operation ends with call_wake (values for the yielded C function), or
 * the call ends first — its deadline passed, the client cancelled it, the
 * session ended, the server shuts down — and the engine calls the wait's
 * abort, which stops the operation (closes the socket, removes the
 * transfer, kills the child) and never wakes the call afterwards. The
 * call is not resumed either: one that timed out while parked is answered
 * with the timeout error, a cancelled one ends without an answer, and
 * their pending <close> variables run within a short grace (engine.h). So
 * a continuation runs only with its operation's outcome. */
#ifndef LUAMCP_CALL_H
#define LUAMCP_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

typedef struct principal principal; /* principal.h (core/auth) */

typedef struct lua_State lua_State;
typedef struct call call;

/* The call running on this coroutine (or on a coroutine the handler made,
   while the handler runs), or NULL: at load time, or after the call ended. */
call *call_current(lua_State *L);
/* call_current(L) != NULL (vm_limits.in_call) */
bool call_running(lua_State *L);
/* The call whose handler runs on exactly this coroutine, or NULL. */
call *call_of(lua_State *co);
lua_State *call_thread(const call *c);
/* The engine's loop: I/O modules put their handles on it. */
uv_loop_t *call_loop(const call *c);

/* {====== waiting */
typedef struct call_wait call_wait;
struct call_wait {
  /* The call ends before the operation did: stop it, free what it holds
     (handles are closed on the loop), and never call call_wake for it. */
  void (*abort)(call_wait *w);
  /* for messages: what the call waits on ("mcp.http", "mcp.exec", …) */
  const char *what;
};
/* Park c on w (until its deadline at most); the C function then returns
   lua_yieldk(L, 0, ctx, k) from the call's own coroutine, and k receives
   the values given to call_wake (nothing else resumes it). */
void call_park(call *c, call_wait *w);
/* w's operation is over: resume c with the nvalues pushed on
   call_thread(c). From a loop callback (never from inside Lua code). */
void call_wake(call *c, int nvalues);
/* May this coroutine yield to the engine? Luaerror message otherwise. */
const char *call_cannot_park(lua_State *L, call *c);
/* Arrange to be resumed after `seconds` (the caller then yields). */
void call_sleep(call *c, double seconds);
/* }====== */

/* Why the call running on L must stop now ("call timed out after 1 s",
   "call cancelled by the client"), or NULL (also outside any call). Never
   raises: for C functions that run long inside one Lua call (the count
   hook cannot fire there: lua_pattern.h's check). Once it says stop, the
   hook fires at every instruction, so a pcall cannot swallow it. */
const char *call_interrupt_reason(lua_State *L);
bool call_is_cancelled(const call *c);
bool call_timed_out(const call *c);
/* Seconds left before the call's deadline (> 0), for an operation's own
   timeout. */
double call_time_left(const call *c);
/* Bytes the call may still grow by under --memory-limit (SIZE_MAX without
   one): what an operation may hold in C for it (a response body) before
   the Lua copy, which counts, is made. */
size_t call_memory_room(const call *c);
#define TIMEOUT_MSG_MAX 64
void call_timeout_message(const call *c, char out[TIMEOUT_MSG_MAX]);

/* {====== the client of the call
   The call's client is the layer above's business (its session, its
   revision, its stream): that layer gives these to the engine
   (engine_hooks.client), and ctx (lua_api.c) reaches them through the
   wrappers below. */
enum { ASK_FAILED, ASK_WAIT, ASK_ANSWERED };
typedef struct call_client {
  const char *(*protocol_version)(const call *c);
  /* The URI a resources/read call reads (NULL for other calls): ctx.uri. */
  const char *(*resource_uri)(const call *c);
  /* notifications/message to the call's client (if its level allows). */
  void (*log)(call *c, int level, const char *msg, size_t len);
  /* notifications/progress when the request asked for it; false if it did
     not (nothing sent). */
  bool (*progress)(call *c, double progress, double total, const char *message);
  /* Ask the call's client (params: the Lua table at params_idx of L, or {}
     when 0). Over a 2025-11-25 session a request is sent and the call
     parks until its answer (ASK_WAIT: the caller yields and is resumed
     with the result table, or nil and a message). On a 2026-07-28 request
     the answer may be known already from an earlier round (ASK_ANSWERED:
     it was pushed on L), or the call ends with the question for the
     client to answer on its retry (ASK_WAIT: the caller yields and is
     never resumed; see mrtr.h). ASK_FAILED (with err) when it cannot be
     asked. */
  int (*ask)(call *c, const char *method, lua_State *L, int params_idx, const char *key,
             char *err, size_t errlen);
  /* Several questions in one round (ctx:ask, 2026-07-28 requests only): the
     table at reqs_idx maps keys to {method=, params=}; ASK_ANSWERED pushes
     the answers by key. */
  int (*ask_round)(call *c, lua_State *L, int reqs_idx, char *err, size_t errlen);
  /* Make the call a task now (ctx:as_task, tasks.h) if its tool and its
     client allow: its request is answered with a CreateTaskResult and the
     handler goes on. True when it is a task (now or already). */
  bool (*as_task)(call *c);
  /* Does the call's client answer questions in rounds (2026-07-28 and
     later) rather than as requests of its own (2025-11-25)? */
  bool (*asks_in_rounds)(const call *c);
  /* What the call's client declared it can answer: this request's own
     capabilities (2026-07-28) or its session's (2025-11-25). */
  void (*caps)(const call *c, bool *sampling, bool *elicitation, bool *roots, bool *ui);
  /* End the call's HTTP response early; the client resumes the stream
     with GET + Last-Event-ID and receives the rest. False over stdio. */
  bool (*detach)(call *c);
  /* The span of the call's request (trace.h), where child spans hang;
     NULL when not traced. */
  struct trace_span *(*span)(call *c);
  /* ctx:span: a span under the current one, current until span_close (NULL
     when not traced, or nested too deep) */
  struct trace_span *(*span_open)(call *c, const char *name);
  void (*span_close)(call *c, struct trace_span *s, const char *error);
  /* Who the call's request comes from (a verified token's principal, or
     --as), or NULL. */
  const principal *(*principal)(const call *c);
  /* notifications/resources/updated to every client subscribed to uri
     (ud: the engine's layer; from a handler or while the app loads). */
  void (*notify_updated)(void *ud, const char *uri, size_t n);
} call_client;

/* The hooks of c's client; of the engine L belongs to (NULL: none). */
const call_client *call_client_of(const call *c);
const call_client *call_client_of_state(lua_State *L, void **ud);

static inline const char *call_protocol_version(const call *c) {
  return call_client_of(c)->protocol_version(c);
}
static inline const char *call_resource_uri(const call *c) { return call_client_of(c)->resource_uri(c); }
static inline void call_log(call *c, int level, const char *msg, size_t len) {
  call_client_of(c)->log(c, level, msg, len);
}
static inline bool call_progress(call *c, double progress, double total, const char *message) {
  return call_client_of(c)->progress(c, progress, total, message);
}
static inline int call_ask_client(call *c, const char *method, lua_State *L, int params_idx,
                                  const char *key, char *err, size_t errlen) {
  return call_client_of(c)->ask(c, method, L, params_idx, key, err, errlen);
}
static inline int call_ask_round(call *c, lua_State *L, int reqs_idx, char *err, size_t errlen) {
  return call_client_of(c)->ask_round(c, L, reqs_idx, err, errlen);
}
static inline bool call_as_task(call *c) { return call_client_of(c)->as_task(c); }
static inline bool call_asks_in_rounds(const call *c) { return call_client_of(c)->asks_in_rounds(c); }
static inline void call_client_caps(const call *c, bool *sampling, bool *elicitation, bool *roots,
                                    bool *ui) {
  call_client_of(c)->caps(c, sampling, elicitation, roots, ui);
}
static inline struct trace_span *call_span(call *c) { return call_client_of(c)->span(c); }
static inline struct trace_span *call_span_open(call *c, const char *name) {
  return call_client_of(c)->span_open(c, name);
}
static inline void call_span_close(call *c, struct trace_span *s, const char *error) {
  call_client_of(c)->span_close(c, s, error);
}
static inline const principal *call_principal(const call *c) {
  return call_client_of(c)->principal(c);
}
static inline bool call_detach(call *c) { return call_client_of(c)->detach(c); }
static inline void call_notify_updated(lua_State *L, const char *uri, size_t n) {
  void *ud;
  const call_client *cl = call_client_of_state(L, &ud);
  if (cl) cl->notify_updated(ud, uri, n);
}
/* }====== */

#endif
