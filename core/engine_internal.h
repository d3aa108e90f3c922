/* engine_internal.h — what engine.c, methods.c (the MCP methods) and
 * reload.c (publishing a reloaded app) share: the engine's and a call's
 * insides. Not for transports: they use engine.h. */
#ifndef LUAMCP_ENGINE_INTERNAL_H
#define LUAMCP_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <lua.h>
#include <uv.h>

#include "call.h"
#include "engine.h"
#include "jsonrpc.h"

/* How often (VM instructions) the hook looks at the clock and cancellations. */
#define HOOK_COUNT 1000
/* How often (seconds) a busy handler's hook reads the inputs, so ping and
   notifications/cancelled are seen while it runs. */
#define HOOK_INPUT_INTERVAL 0.005
#define MAX_INPUTS 4
/* Finished coroutines kept for reuse: a new thread per call was a visible
   share of a call's cost (allocation and GC). */
#define THREAD_POOL 64

/* What the queue carries: a JSON-RPC message, or a transport's word about
   a session (it ended; a GET stream opened for it). */
typedef enum inmsg_type { MSG_RPC, MSG_END_SESSION, MSG_ATTACH } inmsg_type;

typedef struct inmsg {
  inmsg_type type;
  session *s;     /* holds a reference */
  outlet *reply;  /* where the answer goes; NULL for notifications/responses */
  char *data;
  size_t len;
  jsonrpc_msg m;
} inmsg;

typedef struct cancel_req {
  session *s;
  char *id;
  size_t id_len;
  struct cancel_req *next;
} cancel_req;

struct call {
  engine *e;
  session *s; /* holds a reference */
  outlet *out; /* the request's answer, and what it emits on the way */
  app *a;
  call_kind kind;
  lua_State *co;
  int co_ref, ctx_ref;
  void *ctx; /* the ctx object (kept alive by ctx_ref), to close it */
  int entry_ref; /* resource/prompt registration table, for shaping */
  const reg_tool *tool;
  char *id;
  size_t id_len;
  char *ptoken; /* raw progressToken, or NULL */
  size_t ptoken_len;
  char *uri;    /* resources/read: the URI asked for */
  double last_progress;
  bool sent_progress;
  double deadline, wake_at; /* wake_at > 0: parked (timer armed for it or the deadline) */
  uv_timer_t *timer;        /* one per struct, kept across reuse; closed when it is freed */
  call_wait *wait;          /* the operation it is parked on, if any */
  bool cancelled, timed_out;
  uint64_t asked; /* id of our request to the client this call waits for, or 0 */
  long long mem_grown;
  call *prev, *next;
};

/* Ended calls kept for reuse (allocation was a visible share of a call). */
#define CALL_SPARES 16

struct engine {
  app *app;
  engine_options opt;

  /* Held by whoever runs the engine's work: the engine thread, or a
     transport thread answering its own message while the engine is idle
     (help() in engine.c). Every field below "run holder only" and the
     lua_State belong to the holder. */
  pthread_mutex_t run;

  pthread_mutex_t lock; /* guards the queue, finishing and cancels */
  pthread_cond_t space;
  uv_loop_t loop;     /* the reactor: every wait of every call is on it */
  uv_async_t wake;    /* other threads wake the loop (the only thread-safe libuv call) */
  uv_timer_t reload_timer;
  uint64_t sleep_until; /* run holder: the engine thread's planned wake-up (loop ms; 0: none) */
  inmsg **q;
  size_t qcap, qhead, qlen;
  inmsg **batch; /* run holder: the messages taken off the queue */
  bool finishing;
  atomic_bool finishing_flag; /* the same, readable without the lock */
  double finish_deadline;     /* run holder: calls still running then are dropped */
  cancel_req *cancels;
  atomic_bool interrupt; /* cancels is non-empty: the hook should look */

  /* run holder only */
  struct engine_input {
    int fd;
    engine_input_fn fn;
    void *ctx;
    uv_poll_t *poll; /* NULL for a regular file (always readable: an idle handle) */
    uv_idle_t *idle;
  } inputs[MAX_INPUTS];
  size_t ninputs;
  double last_input_poll;
  call *running; /* the call inside lua_resume, if any */
  call *new_call; /* started by the message being dispatched, until it ends */
  size_t calls_started; /* to tell a request answered at once from one that runs */
  uint64_t next_ask;    /* ids of server->client requests */
  double reload_at;     /* a reload is due then (0: none) */
  double reload_first;  /* when the first change of this burst was seen */
  atomic_bool reload_asked; /* SIGHUP, from any thread */
  session **sessions; /* initialized sessions (each holds a reference) */
  size_t nsessions, sessions_cap;
  inmsg **deferred; /* read while a call ran; dispatched after it */
  size_t ndeferred, deferred_cap;
  call *calls;
  size_t ncalls;
  call *spare[CALL_SPARES];
  size_t nspare;
  int pool[THREAD_POOL]; /* refs of idle coroutines of app->L */
  size_t npool;
  outlet **dirty;
  size_t ndirty, dirty_cap;
};

/* {====== shared helpers (run-lock holder) */
/* notifications/resources/updated to every session subscribed to uri. */
void engine_notify_updated(engine *e, const char *uri, size_t n);
double engine_now(void);
/* The batch buffer of outlet o (marks it for the end-of-batch flush). */
buf *out_of(engine *e, outlet *o);
void flush_outlet(outlet *o);
/* The request o answers is over (flush, then the transport closes it). */
void request_done(engine *e, outlet *o);
void reply_error(engine *e, outlet *s, json_span id, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void reply_json(engine *e, outlet *s, json_span id, const char *json, size_t n);
/* A tool result that reports a failure to the model (isError: true). */
void write_tool_error(buf *out, json_span id, const char *msg, size_t n);
/* A call for im in its own coroutine; push the function and its arguments
   on c->co, then call_resume. */
call *call_new(engine *e, inmsg *im, call_kind kind, json_span meta);
void call_resume(engine *e, call *c, int nargs);
void call_end(engine *e, call *c);
/* methods.c: answer one request */
void methods_handle_request(engine *e, inmsg *im);
/* (Re)start the reload timer for time `at` (engine_now's clock). */
void engine_reload_at(engine *e, double at);
/* reload.c: load the app again and publish it if every script loads */
void engine_reload_now(engine *e);
/* }====== */

#endif
