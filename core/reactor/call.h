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
 * a continuation runs only with its operation's outcome.
 *
 * A call may have several coroutines waiting at once: the handler's own
 * and the light threads it started (mcp.spawn, mcp.all: call_threads.c).
 * Each parks on a wait of its own; the wait knows whose it is, so an
 * operation pushes its values on call_wait_thread(w) and wakes with
 * call_wake_wait(w, n). The call's end aborts every wait it has. */
#ifndef LUAMCP_CALL_H
#define LUAMCP_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>


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
  /* set by call_park: whose wait it is (the call, and the thread of it
     parked on it: NULL for the handler's own coroutine) */
  call *owner;
  struct strand *strand;
};
/* Park c on w (until its deadline at most); the C function then returns
   lua_yieldk(L, 0, ctx, k) from the call's own coroutine, and k receives
   the values given to call_wake (nothing else resumes it). */
void call_park(call *c, call_wait *w);
/* w's operation is over: resume c with the nvalues pushed on
   call_thread(c). From a loop callback (never from inside Lua code).
   For waits only the handler's own coroutine makes (ctx's questions,
   tasks); an I/O module uses call_wake_wait. */
void call_wake(call *c, int nvalues);
/* The coroutine parked on w: where its operation pushes the values. */
lua_State *call_wait_thread(const call_wait *w);
/* w's operation is over: resume whichever coroutine of the call parked on
   it (the handler's, or a thread's) with the nvalues pushed on
   call_wait_thread(w). From a loop callback. */
void call_wake_wait(call_wait *w, int nvalues);
/* May this coroutine yield to the engine? Luaerror message otherwise.
   The handler's coroutine and its threads' may; coroutines they made not. */
const char *call_cannot_park(lua_State *L, call *c);
/* Is L the coroutine of a thread the handler started (mcp.spawn)? */
bool call_in_thread(lua_State *L);
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

/* {====== light threads (call_threads.c): mcp.spawn and mcp.all set in the
   table on top of L; the handles' metatable ("mcp.thread", made by the
   first spawn, or now) */
void call_threads_register(lua_State *L);
void call_threads_metatable(lua_State *L);
/* ctx:sleep from a thread (call_in_thread(L)): park it alone for `seconds`
   (returns lua_yieldk's value). */
int call_threads_sleep(lua_State *L, call *c, double seconds);
/* }====== */

/* {====== the call's client
   Who asked for the call is the layer above's business (its session, its
   revision, its stream): the engine holds the layer's table for ctx
   (engine_hooks.client, core/app/ctx_client.h) without reading it, and
   asks the layer for one thing only, the span an I/O wait hangs its own
   under. */
const void *call_client(const call *c);
/* The same for the engine L belongs to (NULL: none), with the layer's ud. */
const void *call_client_of_state(lua_State *L, void **ud);
/* The span of c's request, where an operation's span hangs (NULL when not
   traced). */
struct trace_span *call_span(call *c);
/* }====== */

#endif
