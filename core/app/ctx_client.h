/* ctx_client.h — what a handler's ctx asks of the call's client: log,
 * progress, questions, tasks, detaching the response, its spans and its
 * principal. The server implements it (core/mcp/request.c, request_client)
 * and hands it to the engine (engine_hooks.client), which keeps it for the
 * call without reading it; ctx (lua_api.c) reaches it through the
 * wrappers below. */
#ifndef LUAMCP_CTX_CLIENT_H
#define LUAMCP_CTX_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "call.h"
#include "principal.h"

struct trace_span;

enum { ASK_FAILED, ASK_WAIT, ASK_ANSWERED };
typedef struct ctx_client {
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
} ctx_client;


static inline const ctx_client *ctx_client_of(const call *c) { return call_client(c); }

static inline const char *ctx_client_version(const call *c) {
  return ctx_client_of(c)->protocol_version(c);
}
static inline const char *ctx_client_resource_uri(const call *c) {
  return ctx_client_of(c)->resource_uri(c);
}
static inline void ctx_client_log(call *c, int level, const char *msg, size_t len) {
  ctx_client_of(c)->log(c, level, msg, len);
}
static inline bool ctx_client_progress(call *c, double progress, double total, const char *message) {
  return ctx_client_of(c)->progress(c, progress, total, message);
}
static inline int ctx_client_ask(call *c, const char *method, lua_State *L, int params_idx,
                                 const char *key, char *err, size_t errlen) {
  return ctx_client_of(c)->ask(c, method, L, params_idx, key, err, errlen);
}
static inline int ctx_client_ask_round(call *c, lua_State *L, int reqs_idx, char *err, size_t errlen) {
  return ctx_client_of(c)->ask_round(c, L, reqs_idx, err, errlen);
}
static inline bool ctx_client_as_task(call *c) { return ctx_client_of(c)->as_task(c); }
static inline bool ctx_client_asks_in_rounds(const call *c) {
  return ctx_client_of(c)->asks_in_rounds(c);
}
static inline void ctx_client_caps(const call *c, bool *sampling, bool *elicitation, bool *roots,
                                   bool *ui) {
  ctx_client_of(c)->caps(c, sampling, elicitation, roots, ui);
}
static inline struct trace_span *ctx_client_span_open(call *c, const char *name) {
  return ctx_client_of(c)->span_open(c, name);
}
static inline void ctx_client_span_close(call *c, struct trace_span *s, const char *error) {
  ctx_client_of(c)->span_close(c, s, error);
}
static inline const principal *ctx_client_principal(const call *c) {
  return ctx_client_of(c)->principal(c);
}
static inline bool ctx_client_detach(call *c) { return ctx_client_of(c)->detach(c); }
/* From a handler or while the app loads (no call: the engine's layer). */
static inline void ctx_client_notify_updated(lua_State *L, const char *uri, size_t n) {
  void *ud;
  const ctx_client *cl = call_client_of_state(L, &ud);
  if (cl) cl->notify_updated(ud, uri, n);
}

#endif
