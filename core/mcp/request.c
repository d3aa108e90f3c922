/* request.c — a call as the MCP server sees it: the request it answers
 * (request_new makes both, with the handler's ctx), and what its ctx asks
 * of the client through the engine (request_client: logs, progress,
 * questions answered by a request of ours or by a round, detaching the
 * response, tasks). */
#include "server_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "access_log.h"
#include "clock.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "lua_api.h"
#include "mrtr.h"
#include "tasks.h"


static void copy_progress_token(request *r, json_span meta) {
  json_span tok;
  if (json_kind(meta) == '{' && json_object_get(meta, "progressToken", &tok) &&
      (json_kind(tok) == '"' || json_kind(tok) == '-' ||
       (json_kind(tok) >= '0' && json_kind(tok) <= '9'))) {
    r->ptoken = strndup(tok.p, tok.n);
    r->ptoken_len = tok.n;
  }
}

call *request_new(server *srv, inmsg *im, call_kind kind, json_span meta, request *mrtr) {
  call *c = call_new(srv->e, im->s, im->m.id.p, im->m.id.n);
  request *r = request_of(c);
  r->srv = srv;
  r->s = im->s;
  session_ref(r->s);
  r->out = im->reply;
  im->taken = true; /* the call finishes the outlet */
  r->kind = kind;
  r->entry_ref = LUA_NOREF;
  r->cv = im->cv;
  r->who = principal_ref(im->who ? im->who : srv->opt.as);
  r->started = clock_now();
  r->span = im->span; /* the call ends it */
  im->span = NULL;
  if (metrics_on) metric_gauge_add(metric_only(M_CALLS), 1);
  if (mrtr) mrtr_take(r, mrtr);
  copy_progress_token(r, meta);
  lua_State *L = call_app(c)->vm.L;
  r->ctx = lua_api_push_ctx(L, c);
  r->ctx_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return c;
}

/* the spans ctx:span left open (the call ended while they ran) */
static void end_open_spans(request *r, outcome o) {
  while (r->nspans > 0) {
    trace_span *s = r->spans[--r->nspans];
    trace_error(s, accounting_outcomes[o == OUTCOME_OK ? OUTCOME_CANCELLED : o]);
    trace_end(s);
  }
}

/* The call's count, duration, span and access-log line (accounting.c) */
static void account_call(server *srv, request *r, call *c) {
  static const char *const methods[] = {"tools/call", "resources/read", "prompts/get",
                                        "completion/complete"};
  /* the error its answer carries (recorded when written), unless it never
     got one (cancelled) */
  int code = r->out && r->out->answered ? r->out->error_code : 0;
  outcome o = call_timed_out(c) ? OUTCOME_TIMEOUT : call_is_cancelled(c) ? OUTCOME_CANCELLED
              : code ? OUTCOME_ERROR : r->outcome;
  if (metrics_on) metric_gauge_add(metric_only(M_CALLS), -1);
  end_open_spans(r, o);
  size_t idn;
  const char *id = call_id(c, &idn);
  accounting_record(srv, &(account){.method = methods[r->kind], .version = r->cv.version,
                                    .item = r->item_name, .outcome = o, .operation = true,
                                    .error_code = o == OUTCOME_ERROR ? code : 0,
                                    .error_message = o == OUTCOME_ERROR && code ? r->out->error_message
                                                                                : r->failure,
                                    .s = r->s, .who = r->who, .id = {id, idn},
                                    .started = r->started, .bytes = output_answer_bytes(r->out),
                                    .span = r->span});
  r->span = NULL;
}

void request_ended(void *ud, call *c) {
  server *srv = ud;
  request *r = request_of(c);
  if (r->span || metrics_on || access_log_on()) account_call(srv, r, c);
  lua_State *L = call_app(c)->vm.L;
  lua_api_close_ctx(r->ctx);
  luaL_unref(L, LUA_REGISTRYINDEX, r->ctx_ref);
  luaL_unref(L, LUA_REGISTRYINDEX, r->entry_ref);
  output_done(srv, r->out);
  session_unref(r->s);
  principal_unref(r->who);
  if (r->chain_req > 0) luaL_unref(L, LUA_REGISTRYINDEX, r->chain_req);
  if (r->chain_handler > 0) luaL_unref(L, LUA_REGISTRYINDEX, r->chain_handler);
  free(r->ptoken);
  free(r->uri);
  free(r->failure);
  mrtr_free(r);
}

static const char *client_resource_uri(const call *c) {
  const request *r = request_of((call *)c);
  return r->kind == CALL_RESOURCE ? r->uri : NULL;
}

static const principal *client_principal(const call *c) { return request_of((call *)c)->who; }

static trace_span *client_span_open(call *c, const char *name) {
  request *r = request_of(c);
  trace_span *parent = r->nspans ? r->spans[r->nspans - 1] : r->span;
  if (!parent || r->nspans == (int)(sizeof r->spans / sizeof *r->spans)) return NULL;
  trace_span *s = trace_start(trace_context(parent), name, TRACE_INTERNAL);
  if (s) r->spans[r->nspans++] = s;
  return s;
}

/* s and any span opened inside it and left open */
static void client_span_close(call *c, trace_span *s, const char *error) {
  request *r = request_of(c);
  while (s && r->nspans > 0) {
    trace_span *top = r->spans[--r->nspans];
    if (error) trace_error(top, error);
    trace_end(top);
    if (top == s) break;
  }
}

/* where child spans hang: the innermost ctx:span, else the server span */
trace_span *request_span(call *c) {
  request *r = request_of(c);
  return r->nspans ? r->spans[r->nspans - 1] : r->span;
}

static const char *client_protocol_version(const call *c) {
  const request *r = request_of((call *)c);
  return proto_name(r->cv.version);
}

static void client_log(call *c, int level, const char *msg, size_t len) {
  request *r = request_of(c);
  const char *logger = call_app(c)->reg->name;
  /* mirrored on stderr from warning up (everything with --log-level debug):
     a line per info message would cost more than the call */
  if (level >= LOG_WARNING || log_threshold() == LOG_DEBUG)
    log_msg(level, "%s: %.*s", logger, (int)len, msg);
  /* 2025: the session's logging/setLevel; 2026-07-28: the request's own
     logLevel, none without it */
  if (level < (proto_per_request(r->cv.version) ? r->cv.log_level : r->s->log_level) || r->out->dead) return;
  buf p;
  buf_init(&p);
  buf_printf(&p, "{\"level\":\"%s\",\"logger\":", log_level_name(level));
  json_encode_string(&p, logger, strlen(logger));
  buf_puts(&p, ",\"data\":");
  json_encode_string(&p, msg, len);
  buf_putc(&p, '}');
  jsonrpc_write_notification(output_of(r->srv, r->out), "notifications/message", p.p, p.len);
  buf_free(&p);
  /* not flushed here: the loop flushes after the handler returns or parks,
     and the hook every few milliseconds while it runs */
  call_hand_over(c);
}

static bool client_progress(call *c, double progress, double total, const char *message) {
  request *r = request_of(c);
  if (!r->ptoken) return false;
  if (r->sent_progress && !(progress > r->last_progress)) {
    log_msg(LOG_WARNING, "ctx:progress(%g) dropped: progress must increase (last %g)", progress,
            r->last_progress);
    return true;
  }
  r->sent_progress = true;
  r->last_progress = progress;
  buf p;
  buf_init(&p);
  buf_puts(&p, "{\"progressToken\":");
  buf_put(&p, r->ptoken, r->ptoken_len);
  buf_puts(&p, ",\"progress\":");
  json_encode_double(&p, progress);
  if (isfinite(total)) {
    buf_puts(&p, ",\"total\":");
    json_encode_double(&p, total);
  }
  if (message) {
    buf_puts(&p, ",\"message\":");
    json_encode_string(&p, message, strlen(message));
  }
  buf_putc(&p, '}');
  jsonrpc_write_notification(output_of(r->srv, r->out), "notifications/progress", p.p, p.len);
  buf_free(&p);
  call_hand_over(c);
  return true;
}

/* The call stops waiting for the client's answer (timeout, cancel, end):
   spec — a request we give up on is cancelled. */
static void abort_ask(call_wait *w) {
  request *r = (request *)((char *)w - offsetof(request, ask));
  if (r->ask_span) {
    trace_error(r->ask_span, "no longer needed (the call ended first)");
    trace_end(r->ask_span);
    r->ask_span = NULL;
  }
  if (!r->asked) return;
  char p[96];
  int n = snprintf(p, sizeof p, "{\"requestId\":%llu,\"reason\":\"no longer needed\"}",
                   (unsigned long long)r->asked);
  if (!r->out->dead)
    jsonrpc_write_notification(output_of(r->srv, r->out), "notifications/cancelled", p, (size_t)n);
  r->asked = 0;
}

static bool client_asks_in_rounds(const call *c) {
  return proto_per_request(request_of((call *)c)->cv.version);
}

static void client_caps(const call *c, bool *sampling, bool *elicitation, bool *roots, bool *ui) {
  const client_view *cv = &request_of((call *)c)->cv;
  *sampling = cv->sampling, *elicitation = cv->elicitation, *roots = cv->roots, *ui = cv->ui;
}

static int client_ask_round(call *c, lua_State *L, int reqs_idx, char *err, size_t errlen) {
  if (request_of(c)->task) return tasks_ask(c, L, lua_absindex(L, reqs_idx), false, err, errlen);
  return mrtr_ask_round(c, L, reqs_idx, err, errlen);
}

/* One question of a task: parked as its input_required (tasks.h). */
static int ask_as_task(call *c, const char *method, lua_State *L, int params_idx, const char *key,
                       char *err, size_t errlen) {
  char dflt[32];
  if (!key) { /* by its place among the task's questions */
    snprintf(dflt, sizeof dflt, "q%zu", ++request_of(c)->nasked);
    key = dflt;
  }
  mrtr_push_question(L, method, params_idx, key);
  int how = tasks_ask(c, L, lua_gettop(L), true, err, errlen);
  lua_pop(L, 1);
  return how;
}

static int client_ask(call *c, const char *method, lua_State *L, int params_idx, const char *key,
                    char *err, size_t errlen) {
  request *r = request_of(c);
  if (r->task) return ask_as_task(c, method, L, params_idx, key, err, errlen);
  if (proto_per_request(r->cv.version)) return mrtr_ask(c, method, L, params_idx, key, err, errlen);
  bool supported = strcmp(method, "sampling/createMessage") == 0 ? r->cv.sampling
                   : strcmp(method, "elicitation/create") == 0   ? r->cv.elicitation
                   : strcmp(method, "roots/list") == 0           ? r->cv.roots
                                                                 : true;
  if (!supported) {
    snprintf(err, errlen, "the client does not support %s (it did not declare the capability)",
             method);
    return ASK_FAILED;
  }
  buf b;
  buf_init(&b);
  uint64_t id = ++r->srv->next_ask;
  buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"%s\",\"params\":",
             (unsigned long long)id, method);
  if (params_idx) {
    if (!json_encode(L, params_idx, &b, err, errlen)) {
      buf_free(&b);
      return ASK_FAILED;
    }
  } else {
    buf_puts(&b, "{}");
  }
  buf_puts(&b, "}\n");
  buf_put(output_of(r->srv, r->out), b.p, b.len);
  buf_free(&b);
  r->asked = id;
  r->ask = (call_wait){.abort = abort_ask, .what = method};
  trace_span *parent = trace_on ? request_span(c) : NULL;
  if (parent && (r->ask_span = trace_start(trace_context(parent), method, TRACE_CLIENT))) {
    trace_attr_str(r->ask_span, "mcp.method.name", method);
    trace_attr_int(r->ask_span, "jsonrpc.request.id", (long long)id);
  }
  call_park(c, &r->ask); /* until the answer, or the deadline */
  return ASK_WAIT;
}

static bool ask_matches(call *c, void *id) { return request_of(c)->asked == *(uint64_t *)id; }

/* Which call asked the request this response answers? */
static call *asker(server *srv, session *s, uint64_t id) {
  return call_find(srv->e, s, ask_matches, &id);
}

/* A response from the client: resume the call that asked, with the result
   (or nil and the error's message). */
void request_answered(server *srv, inmsg *im) {
  char tmp[32];
  size_t n = im->m.id.n < sizeof tmp ? im->m.id.n : sizeof tmp - 1;
  memcpy(tmp, im->m.id.p, n);
  tmp[n] = '\0';
  char *end;
  uint64_t id = strtoull(tmp, &end, 10);
  call *c = *end == '\0' && id ? asker(srv, im->s, id) : NULL;
  if (!c) {
    log_msg(LOG_DEBUG, "a response to no pending request (id %s): ignored", tmp);
    return;
  }
  request *r = request_of(c);
  r->asked = 0;
  if (r->ask_span) {
    if (!im->m.result.n) trace_error(r->ask_span, "the client answered with an error");
    trace_end(r->ask_span);
    r->ask_span = NULL;
  }
  lua_State *co = call_thread(c);
  if (im->m.result.n) {
    json_decode(co, im->m.result.p, im->m.result.n, NULL);
    call_wake(c, 1);
    return;
  }
  json_span msg = {0};
  json_object_get(im->m.error, "message", &msg);
  buf b;
  buf_init(&b);
  if (msg.n) json_string_unescape(msg, &b);
  lua_pushnil(co);
  lua_pushfstring(co, "the client answered with an error: %s", b.p ? b.p : "(no message)");
  buf_free(&b);
  call_wake(c, 2);
}

static bool client_detach(call *c) {
  request *r = request_of(c);
  if (!r->out->detach) return false;
  output_flush(r->out); /* what was said so far goes on the current response */
  r->out->detach(r->out);
  return true;
}

static void client_notify_updated(void *ud, const char *uri, size_t n) { notify_updated(ud, uri, n); }

const ctx_client request_client = {.protocol_version = client_protocol_version,
                                    .resource_uri = client_resource_uri,
                                    .log = client_log,
                                    .progress = client_progress,
                                    .ask = client_ask,
                                    .ask_round = client_ask_round,
                                    .as_task = tasks_as_task,
                                    .asks_in_rounds = client_asks_in_rounds,
                                    .caps = client_caps,
                                    .detach = client_detach,
                                    .principal = client_principal,
                                    .span_open = client_span_open,
                                    .span_close = client_span_close,
                                    .notify_updated = client_notify_updated};
