/* server_internal.h — what the files of the MCP floor that serve requests
 * share on purpose (as Redis' files share server.h): the server, inmsg,
 * client_view, request, and the functions of server.c, output.c,
 * notify.c, request.c, methods.c, results.c and reload.c; listen.c,
 * mrtr.c and tasks.c add theirs in their own headers. The cluster floor
 * (bus.c, tasks_remote.c) includes it too: it delivers and answers as the
 * server does. Not for transports (server.h) nor for the Lua side
 * (call.h). */
#ifndef LUAMCP_SERVER_INTERNAL_H
#define LUAMCP_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "call.h"
#include "clock.h"
#include "ctx_client.h"
#include "envelope.h"
#include "registry.h"
#include "server.h"
#include "trace.h"

/* Who asks, for one request: the session (2025 era: what initialize
   declared) or the request's own envelope (2026-07-28: never carried over
   from an earlier request). */
typedef struct client_view {
  int version; /* PROTO_*: the session's (2025-11-25 and older) or the request's own
                  (proto_per_request: 2026-07-28 and later) */
  bool sampling, elicitation, roots, ui;
  /* no capabilities were declared where we can see them (a 2025-11-25 request
     under --stateless): app-only tools are listed and callable, with their
     visibility in _meta for the host to honour, as MCP Apps' default has it */
  bool ui_unknown;
  bool tasks; /* the tasks extension (2026-07-28 requests only) */
  int log_level; /* notifications/message at or above it; NO_LOGS: none */
} client_view;
#define NO_LOGS 1000

/* What the engine's queue carries for us: a JSON-RPC message, or a
   transport's word about a session (it ended; a GET stream opened for it;
   the client closed a request's stream). */
typedef enum inmsg_type { MSG_RPC, MSG_END_SESSION, MSG_ATTACH, MSG_CLOSED } inmsg_type;

typedef struct inmsg {
  inmsg_type type;
  session *s;    /* holds a reference */
  outlet *reply; /* where the answer goes; NULL for notifications/responses */
  char *data;
  size_t len;
  jsonrpc_msg m;
  envelope env;   /* read by the transport (env_read) or at dispatch */
  bool env_read;
  client_view cv; /* set at dispatch */
  char *params;   /* HTTP: its Mcp-Param-* headers, "Name\0value\0..." (names as sent) */
  size_t params_len;
  principal *who; /* its verified token's (a reference), or NULL */
  trace_ctx parent;  /* the transport's traceparent (HTTP headers), or invalid */
  trace_span *span;  /* its server span while dispatched (the call takes it) */
  const char *who_key; /* another instance's asking: whose (principal_key), or NULL */
  bool http;     /* came over HTTP (server_submit_http) */
  bool tool_error; /* answered at once with isError (arguments that fail the tool's schema) */
  const char *item; /* the registered tool, resource or prompt it named (its accounting) */
  bool taken;    /* a call answers it (and finishes reply) */
  bool borrowed; /* on the reader's stack: data and s are not ours */
} inmsg;

typedef enum call_kind { CALL_TOOL, CALL_RESOURCE, CALL_PROMPT, CALL_COMPLETE } call_kind;

/* How a request ended, for the metrics and the access log. */
typedef enum outcome {
  OUTCOME_OK, OUTCOME_TOOL_ERROR /* isError */, OUTCOME_ERROR /* a JSON-RPC error */,
  OUTCOME_TIMEOUT, OUTCOME_CANCELLED
} outcome;
extern const char *const accounting_outcomes[];

/* {====== accounting.c: a request answered, as metrics, span and access log see it */
typedef struct account {
  const char *method; /* its method ("other": none we serve) */
  int version;        /* the revision it was served under */
  const char *item;   /* the tool, resource, prompt or template it named, or NULL */
  outcome outcome;
  bool operation;     /* tools/call, resources/read, prompts/get, completion/complete */
  int error_code;     /* the JSON-RPC error it was answered with, 0: none */
  const char *error_message; /* that error's message, or the handler's ("FILE:LINE: ...") */
  const session *s;
  const principal *who;
  json_span id;
  double started; /* clock_now() when it came (0: not timed) */
  size_t bytes;   /* of its answer */
  trace_span *span; /* its SERVER span, ended here, or NULL */
} account;
void accounting_record(struct server *srv, const account *a);
/* The SERVER span of a request (OpenTelemetry's MCP conventions), or NULL
   when not traced. */
trace_span *accounting_start(const inmsg *im, const char *method);
/* A request answered at once, without a call (a call's own is accounted
   when it ends: request.c); t0: when it came (0: not timed). */
void accounting_answered(struct server *srv, inmsg *im, const char *method, double t0);
/* Is method one of those mcp_server_operation_duration_seconds times? */
bool accounting_is_operation(const char *method);
/* }====== */

/* {====== methods */
/* Start c (method_chain.c): on its thread are the handler, its n arguments
   (named by fields in req) and ctx. With middleware (mcp.use), the call
   runs the chain instead, req = {method=, name=, fields..., ctx=}: without,
   nothing is added to the call. */
void method_chain_start(struct server *srv, call *c, const char *method, const char *name,
                        const char *const *fields, int n, const char *uri);
/* 2026-07-28 over HTTP: the tool's x-mcp-header parameters against the
   Mcp-Param-* headers (the arguments on top of L). False after answering
   -32020 (HeaderMismatch): param_headers.c. */
bool param_headers_ok(struct server *srv, inmsg *im, const reg_tool *t, lua_State *L);
/* }====== */

/* A call as the server sees it: the request it answers (the engine's call
   extra data). */
typedef struct request {
  struct server *srv;
  session *s;  /* holds a reference */
  outlet *out; /* the request's answer, and what it emits on the way */
  call_kind kind;
  int ctx_ref;   /* the ctx object handed to the handler */
  void *ctx;     /* its handle, to close it */
  int entry_ref; /* resource/prompt registration table, for shaping */
  const reg_tool *tool;
  char *ptoken; /* raw progressToken, or NULL */
  size_t ptoken_len;
  char *uri; /* resources/read: the URI asked for */
  char *failure; /* the handler's error ("FILE:LINE: message") when traced, for its span */
  double last_progress;
  bool sent_progress;
  uint64_t asked; /* id of our request to the client it waits for, or 0 */
  call_wait ask;  /* parked on that answer */
  client_view cv;
  principal *who; /* the request's (a reference), or NULL */
  outcome outcome;
  double started;        /* clock_now() at dispatch */
  trace_span *span;      /* its server span, or NULL */
  trace_span *spans[8];  /* ctx:span's open spans, innermost last */
  trace_span *ask_span;  /* a question to the client (elicitation, sampling, roots) in flight */
  /* mcp.use: the request's req table and handler (registry refs; 0: no
     middleware), the middleware running (-1: none) and those whose next()
     has run (bits) */
  int chain_req, chain_handler, chain_active;
  uint64_t chain_called;
  int nspans;
  const char *item_name; /* the tool's, prompt's, resource's or template's registered name */
  /* multi round-trip (per-request revisions): the answers of earlier rounds (from
     the sealed requestState, then those this round brought), as JSON
     values joined by commas, the digests of their questions likewise, and
     what binds the state to this request */
  buf answers, digests;
  size_t nanswers, nasked;
  char *responses; /* this retry's inputResponses object, or NULL */
  size_t responses_len;
  char *pending;   /* digest of the question the last round asked, or NULL */
  const char *what; /* the method, the name and the raw arguments the state is bound to */
  char *name, *args;
  size_t name_len, args_len;
  struct task *task; /* the call runs as this task (tasks.h): r->out is the task's */
} request;

typedef struct listener listener;
typedef struct task task;

/* The other instances of the service: what the server tells them and asks
   of them. The cluster layer (bus.c) gives these with server_join; without
   them the server is alone (every hook NULL). */
/* hex digits of an instance's origin (server_peers.origin) */
#define PEER_ORIGIN_LEN 16

typedef struct server_peers {
  void *ud;
  /* a change delivered to this instance's clients: theirs should hear it */
  void (*list_changed)(void *ud, const char *method);
  void (*updated)(void *ud, const char *uri, size_t n);
  /* this instance's origin on the bus (PEER_ORIGIN_LEN hex digits): the ids
     of its tasks begin with it; NULL when alone */
  const char *origin;
  /* im names a task of the instance `owner`: send it there; im is
     answered when the answer comes (im->taken), or now with an error */
  void (*forward_task)(void *ud, inmsg *im, const char *owner, json_span task_id);
  /* shutdown begins: requests waiting for other instances get an error */
  void (*shutdown)(void *ud);
  /* can the instances be reached now (any thread)? false with why */
  bool (*ready)(void *ud, char *why, size_t cap);
} server_peers;

struct server {
  engine *e;
  listener *listeners; /* open subscriptions/listen requests (listen.c) */
  struct listen_index *listen_index; /* their filters' URIs (listen.c) */
  server_options opt;
  session **sessions; /* initialized sessions (each holds a reference) */
  size_t nsessions, sessions_cap;
  outlet **dirty; /* outlets written this round */
  size_t ndirty, dirty_cap;
  uint64_t next_ask; /* ids of server->client requests */
  task *tasks;       /* the tasks of this process (tasks.c) */
  server_peers peers; /* the other instances (server_join) */
  struct bus *bus;   /* the cluster layer's own: its connection (bus.c), or NULL */
  struct tasks_remote *remote; /* task requests sent to other instances (tasks_remote.c), or NULL */
  size_t ntasks;
  /* reload.c */
  uv_async_t reload_async; /* SIGHUP, from any thread */
  uv_timer_t reload_timer; /* the debounce of file changes */
  /* mount.c (mount_attach, from the command that serves): list the mounted
     upstreams after each load; pointers, so nothing here calls mount.c */
  uv_timer_t mount_timer;
  bool mount_running, mount_again;
  void (*mount_published)(server *srv);           /* a version was published */
  void (*mount_request)(server *srv, inmsg *im);  /* luamcp/mount/refresh came */
  void (*mount_close)(server *srv);
  double reload_at, reload_first;
  uv_async_t reload_done;        /* the loading thread is done */
  struct reload_job *reload_job; /* the load under way on its own thread; NULL: none */
  bool reload_again;             /* asked for while it loads: once more after it */
  void (*reload_end)(bool published, void *ud); /* reload_on_end's */
  void *reload_end_ud;
  /* what transports may ask of the app version serving (server_app_facts) */
  pthread_mutex_t facts_lock;
  char *facts_scopes, *facts_name;
};
/* The app a serves now: its facts for server_app_facts (any thread;
   reload.c). */
void reload_set_facts(server *srv, const app *a);

/* The cluster layer joins the server to the other instances (bus_new);
   NULL parts itself from them (bus_free). */
void server_join(server *srv, const server_peers *peers);

/* {====== output (run-lock holder) */
/* The batch buffer of outlet o (marks it for the end-of-round flush). */
buf *output_of(server *srv, outlet *o);
void output_flush(outlet *o);
/* The same for the answer to o's request: marks o answered (outlet.h). */
buf *output_reply(server *srv, outlet *o);
/* Bytes of the answer written to o so far this round (the access log). */
size_t output_answer_bytes(const outlet *o);
/* The request o answers is over (flush, then the transport closes it). */
void output_done(server *srv, outlet *o);
/* Answer o's request with a JSON-RPC error (data: a JSON value or NULL),
   recorded in o->error_code; output_error formats its message. */
void output_rpc_error(server *srv, outlet *o, json_span id, int code, const char *msg,
                      const char *data);
void output_error(server *srv, outlet *o, json_span id, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void output_json(server *srv, outlet *o, json_span id, const char *json, size_t n);
/* A tool result that reports a failure to the model (isError: true). */
void output_tool_error(server *srv, const client_view *cv, buf *out, json_span id, const char *msg,
                      size_t n);
/* What a result for this client ends with: for 2026-07-28 requests
   `,"resultType":"complete","_meta":{serverInfo}`; nothing for 2025 ones. */
void output_result_tail(server *srv, const client_view *cv, buf *out);
/* The round is over: every batched outlet is handed its lines (engine_hooks.flush). */
void output_flush_all(void *ud);
/* A list_changed notification (params: none) to every connected client
   (its standalone outlet) and listener, here and, with a bus, on the other
   instances. */
void notify_list_changed(server *srv, const char *method);
/* notifications/resources/updated to every session subscribed to uri and
   every listener naming it, here and on the other instances. */
void notify_updated(server *srv, const char *uri, size_t n);
/* The same for this instance's clients only (what the bus delivers). */
void notify_list_changed_here(server *srv, const char *method);
/* A reload changed the lists of ch (from ch->old to ch->fresh): method to
   the clients that can see a change there (a caller whose scopes hide
   every changed item is not told), and to the other instances. */
typedef struct notify_change {
  const registry *old, *fresh;
  reg_list lists[2];
  size_t n;
} notify_change;
void notify_lists_changed(server *srv, const char *method, const notify_change *ch);
void notify_updated_here(server *srv, const char *uri, size_t n);
/* }====== */

/* {====== calls */
/* A call for im: its request data set, its ctx made; push the handler and
   its arguments (then the ctx: request_of(c)->ctx_ref) on call_thread(c),
   then call_start. mrtr: what mrtr_open read (per-request revisions). */
call *request_new(server *srv, inmsg *im, call_kind kind, json_span meta, request *mrtr);
static inline request *request_of(call *c) { return call_extra(c); }
/* The engine's hooks for a call: its end; what its ctx asks of the client. */
void request_ended(void *ud, call *c);
extern const ctx_client request_client;
/* The span of c's request (engine_hooks.span). */
struct trace_span *request_span(call *c);
/* A response from the client: the answer to the question a parked call asked. */
void request_answered(server *srv, inmsg *im);
/* results.c: the engine's hooks for a call that returned or failed */
void results_returned(void *ud, call *c, int nres);
void results_failed(void *ud, call *c, const char *msg);
/* }====== */

/* server_accept with the answer going to reply (a request another
   instance sent over the bus: tasks_remote.c); reply is finished once
   answered, unless it is s->standalone. */
void server_inject(server *srv, session *s, outlet *reply, const char *msg, size_t len);
/* The same for a request another instance forwards, from who_key's
   principal (principal_key; "" for nobody). */
void server_inject_as(server *srv, session *s, outlet *reply, const char *msg, size_t len,
                      const char *who_key);
/* Who the request comes from: its token's principal, else --as (luamcp
   call), else nobody (NULL: stdio, an open server — scopes do not apply). */
static inline const principal *server_caller(const server *srv, const inmsg *im) {
  return im->who ? im->who : srv->opt.as;
}
/* Whose the request is, as principal_key names it ("" for nobody): the
   key another instance forwarded with it, else its caller's. */
static inline void server_caller_key(const server *srv, const inmsg *im,
                                     char out[PRINCIPAL_KEY_LEN + 1]) {
  principal_key_or(im->who_key, server_caller(srv, im), out);
}

/* methods.c: answer one request */
void methods_handle_request(server *srv, inmsg *im);
/* m's method as metrics may name it: one of ours, else "other" (never the
   client's string: unbounded). */
const char *methods_name(const jsonrpc_msg *m);
/* Does request m run the app's Lua (a handler)? Not for unknown methods. */
bool methods_need_lua(const jsonrpc_msg *m);
/* Track s (initialize): notifications that answer no request reach it;
   untrack: it ended. */
void notify_track(server *srv, session *s);
void notify_untrack(server *srv, session *s);
/* reload.c */
void reload_init(server *srv);
void reload_close(server *srv);
/* Load the app again (on a thread of its own: the version serving keeps
   serving) and publish it if every script loads. */
void reload_now(server *srv);
/* Shutdown begins: a load under way stops at its next hook. */
void reload_stop(server *srv);
/* Reload after `delay` seconds of quiet; each call pushes it back, so a
   burst of writes is one reload. postpone: the same, only if one is due. */
void reload_schedule(server *srv, double delay);
void reload_postpone(server *srv, double delay);

#endif
