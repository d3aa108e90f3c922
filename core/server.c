/* server.c — messages in, answers out (see server.h): sessions, the
 * batched output of each round, calls as requests (their ctx, progress,
 * logs, questions to the client), and the shaping of handler results into
 * MCP results. The methods themselves are in methods.c. */
#include "server_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "bus.h"
#include "json.h"
#include "log.h"
#include "lua_api.h"
#include "listen.h"
#include "mrtr.h"
#include "tasks.h"
#include "validate.h"

/* {====================================================== output */

buf *out_of(server *srv, outlet *o) {
  if (!o->dirty) {
    if (srv->ndirty == srv->dirty_cap) {
      srv->dirty_cap = srv->dirty_cap ? srv->dirty_cap * 2 : 8;
      srv->dirty = realloc(srv->dirty, srv->dirty_cap * sizeof *srv->dirty);
    }
    srv->dirty[srv->ndirty++] = o;
    o->dirty = true;
  }
  return &o->out;
}

void flush_outlet(outlet *o) {
  if (o->out.len && !o->dead && !o->write(o, o->out.p, o->out.len)) o->dead = true;
  o->out.len = 0;
  o->dirty = false;
}

static void flush_all(void *ud) {
  server *srv = ud;
  for (size_t i = 0; i < srv->ndirty; i++) flush_outlet(srv->dirty[i]);
  srv->ndirty = 0;
}

/* The request o answers is over: hand over what is left and let the
   transport close it. o must not be used afterwards. */
void request_done(server *srv, outlet *o) {
  if (!o || !o->finish) return;
  if (o->dirty) {
    for (size_t i = 0; i < srv->ndirty; i++)
      if (srv->dirty[i] == o) {
        srv->dirty[i] = srv->dirty[--srv->ndirty];
        break;
      }
    if (o->finish_with && o->out.len && !o->dead) { /* the last bytes and the end, in one hand-off */
      buf last = o->out; /* taken first: finishing may free o */
      buf_init(&o->out);
      o->finish_with(o, last.p, last.len);
      buf_free(&last);
      return;
    }
    flush_outlet(o);
  }
  buf_free(&o->out);
  o->finish(o);
}

void reply_error(server *srv, outlet *o, json_span id, int code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  jsonrpc_write_error(out_of(srv, o), id, code, msg, NULL);
}

void reply_json(server *srv, outlet *o, json_span id, const char *json, size_t n) {
  jsonrpc_write_result(out_of(srv, o), id, json, n);
}

void write_tool_error(server *srv, const client_view *cv, buf *out, json_span id, const char *msg,
                      size_t n) {
  jsonrpc_begin_result(out, id);
  buf_puts(out, "{\"content\":[{\"type\":\"text\",\"text\":");
  json_encode_string(out, msg, n);
  buf_puts(out, "}],\"isError\":true");
  result_tail(srv, cv, out);
  buf_putc(out, '}');
  jsonrpc_end_reply(out);
}

void result_tail(server *srv, const client_view *cv, buf *out) {
  if (!cv->modern) return;
  const registry *r = engine_app(srv->e)->reg;
  buf_put(out, r->modern_tail, r->modern_tail_len);
}

void deliver_list_changed(server *srv, const char *method) {
  for (size_t i = 0; i < srv->nsessions; i++) {
    outlet *o = srv->sessions[i]->standalone;
    if (o && !o->dead) jsonrpc_write_notification(out_of(srv, o), method, NULL, 0);
  }
  listen_list_changed(srv, method); /* and every subscription that asked for it */
}

void broadcast(server *srv, const char *method) {
  deliver_list_changed(srv, method);
  bus_publish_list_changed(srv, method);
}

void deliver_updated(server *srv, const char *uri, size_t n) {
  buf p;
  buf_init(&p);
  buf_puts(&p, "{\"uri\":");
  json_encode_string(&p, uri, n);
  buf_putc(&p, '}');
  for (size_t i = 0; i < srv->nsessions; i++) {
    session *s = srv->sessions[i];
    if (s->standalone && !s->standalone->dead && session_is_subscribed(s, uri, n))
      jsonrpc_write_notification(out_of(srv, s->standalone), "notifications/resources/updated",
                                 p.p, p.len);
  }
  buf_free(&p);
  listen_resource_updated(srv, uri, n);
}

void notify_updated(server *srv, const char *uri, size_t n) {
  deliver_updated(srv, uri, n);
  bus_publish_updated(srv, uri, n);
}

static void client_notify_updated(void *ud, const char *uri, size_t n) { notify_updated(ud, uri, n); }

/* }====================================================== */

/* {====================================================== sessions */

void server_track(server *srv, session *s) {
  if (srv->nsessions == srv->sessions_cap) {
    srv->sessions_cap = srv->sessions_cap ? srv->sessions_cap * 2 : 8;
    srv->sessions = realloc(srv->sessions, srv->sessions_cap * sizeof *srv->sessions);
  }
  session_ref(s);
  srv->sessions[srv->nsessions++] = s;
}

static void untrack(server *srv, session *s) {
  for (size_t i = 0; i < srv->nsessions; i++)
    if (srv->sessions[i] == s) {
      srv->sessions[i] = srv->sessions[--srv->nsessions];
      session_unref(s);
      return;
    }
}

/* The transport ended the session: drop its calls (no answers), close its
   standalone stream, forget it. */
static void end_session(server *srv, session *s) {
  engine_end_peer(srv->e, s);
  listen_end_session(srv, s);
  if (s->standalone) {
    outlet *o = s->standalone;
    s->standalone = NULL;
    request_done(srv, o);
  }
  untrack(srv, s);
}

static void attach(server *srv, session *s, outlet *stream) {
  outlet *old = s->standalone;
  s->standalone = stream;
  if (old) request_done(srv, old);
}

/* }====================================================== */

/* {====================================================== messages */

/* Messages answered without the app: parse errors and ping (its one
   place). */
static bool answered_at_once(const jsonrpc_msg *m, buf *out) {
  if (m->kind == JSONRPC_INVALID) {
    jsonrpc_write_error(out, m->id, m->error_code, m->error_msg, NULL);
    return true;
  }
  if (m->kind == JSONRPC_REQUEST && jsonrpc_method_is(m, "ping") && !envelope_claimed(m)) {
    jsonrpc_write_result(out, m->id, "{}", 2); /* 2025 era: 2026-07-28 has no ping */
    return true;
  }
  return false;
}

/* The era of a request, and who asks: from its envelope (modern) or its
   session (2025). False when the envelope is wrong: answered with the
   error. */
static bool classify(server *srv, inmsg *im) {
  buf msg, data;
  buf_init(&msg), buf_init(&data);
  int code = envelope_read(&im->m, &im->env, &msg, &data);
  if (code) {
    buf_putc(&data, '\0');
    jsonrpc_write_error(out_of(srv, im->reply), im->m.id, code, msg.p, data.len > 1 ? data.p : NULL);
    buf_free(&msg), buf_free(&data);
    return false;
  }
  buf_free(&msg), buf_free(&data);
  client_view *cv = &im->cv;
  const envelope *env = &im->env;
  if (env->present) {
    *cv = (client_view){.modern = true, .version = PROTO_LATEST, .sampling = env->sampling,
                        .elicitation = env->elicitation, .roots = env->roots, .ui = env->ui,
                        .tasks = env->tasks, .log_level = env->log_level >= 0 ? env->log_level : NO_LOGS};
  } else {
    const session *s = im->s;
    *cv = (client_view){.version = s->version ? s->version : PROTO_LATEST,
                        .sampling = s->client_sampling, .elicitation = s->client_elicitation,
                        .roots = s->client_roots, .ui = s->client_ui, .log_level = s->log_level};
  }
  return true;
}

static bool cancel_of(const jsonrpc_msg *m, json_span *id) {
  return m->kind == JSONRPC_NOTIFICATION && jsonrpc_method_is(m, "notifications/cancelled") &&
         m->params.n && jsonrpc_param(m, "requestId", id);
}

static inmsg *inmsg_new(inmsg_type type, session *s, outlet *reply, char *data, size_t len) {
  inmsg *im = calloc(1, sizeof *im);
  im->type = type;
  im->s = s;
  session_ref(s);
  im->reply = reply;
  im->data = data;
  im->len = len;
  return im;
}

static void inmsg_free(inmsg *im) {
  if (im->borrowed) return;
  free(im->params);
  session_unref(im->s);
  free(im->data);
  free(im);
}

static void answer_from_client(server *srv, inmsg *im);

static void dispatch(void *ud, void *msg) {
  server *srv = ud;
  inmsg *im = msg;
  if (im->type == MSG_END_SESSION) {
    end_session(srv, im->s);
    return;
  }
  if (im->type == MSG_ATTACH) {
    if (atomic_load(&im->s->ended)) request_done(srv, im->reply);
    else attach(srv, im->s, im->reply);
    im->reply = NULL; /* the session's now, or finished */
    return;
  }
  if (im->type == MSG_CLOSED) {
    listen_end_outlet(srv, im->reply);
    im->reply->finish(im->reply); /* the transport's reference, which the message held */
    im->reply = NULL;
    return;
  }
  switch (im->m.kind) {
    case JSONRPC_REQUEST:
      if (atomic_load(&im->s->ended)) break; /* raced with DELETE: answer nothing */
      if (answered_at_once(&im->m, out_of(srv, im->reply)) || !classify(srv, im)) return;
      methods_handle_request(srv, im);
      return;
    case JSONRPC_NOTIFICATION: {
      json_span id;
      if (jsonrpc_method_is(&im->m, "notifications/initialized")) im->s->ready = true;
      else if (cancel_of(&im->m, &id)) listen_cancel(srv, im->s, id); /* calls: engine_cancel */
      break;
    }
    case JSONRPC_INVALID:
      if (im->reply) answered_at_once(&im->m, out_of(srv, im->reply));
      break;
    case JSONRPC_RESPONSE:
      answer_from_client(srv, im);
      break;
    default:
      break;
  }
}

/* Answered from the registry snapshot and session state, without Lua. */
static bool quick(void *ud, const void *msg) {
  (void)ud;
  const inmsg *im = msg;
  if (im->type == MSG_ATTACH) return true;
  if (im->type != MSG_RPC) return false;
  const jsonrpc_msg *m = &im->m;
  if (m->kind == JSONRPC_INVALID) return true;
  if (m->kind == JSONRPC_NOTIFICATION)
    return jsonrpc_method_is(m, "notifications/initialized") ||
           jsonrpc_method_is(m, "notifications/cancelled");
  if (m->kind != JSONRPC_REQUEST) return false;
  static const char *const no_lua[] = {
      "ping", "initialize", "tools/list", "resources/list", "resources/templates/list",
      "prompts/list", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
      "server/discover", "subscriptions/listen", "tasks/get", "tasks/cancel"};
  for (size_t i = 0; i < sizeof no_lua / sizeof *no_lua; i++)
    if (jsonrpc_method_is(m, no_lua[i])) return true;
  return false;
}

static void dispatch_failed(void *ud, void *msg, const char *err) {
  server *srv = ud;
  inmsg *im = msg;
  if (im->type != MSG_RPC || !im->reply || im->m.kind != JSONRPC_REQUEST) return;
  im->reply->out.len = 0; /* what was half written */
  jsonrpc_write_error(out_of(srv, im->reply), im->m.id, JSONRPC_INTERNAL_ERROR, err, NULL);
}

/* A request answered by the dispatch itself (no call took it over) is
   over; its outlet is finished here. */
static void release(void *ud, void *msg, bool dispatched) {
  server *srv = ud;
  inmsg *im = msg;
  if (im->reply && im->reply != im->s->standalone && !im->taken) {
    if (dispatched) request_done(srv, im->reply);
    else if (im->reply->finish) im->reply->finish(im->reply);
  }
  inmsg_free(im);
}

static void submit(server *srv, session *s, outlet *reply, char *data, size_t len,
                   const jsonrpc_msg *parsed, bool http, char *params, size_t params_len);

void server_submit(server *srv, session *s, outlet *reply, char *data, size_t len,
                   const jsonrpc_msg *parsed) {
  submit(srv, s, reply, data, len, parsed, false, NULL, 0);
}

void server_submit_http(server *srv, session *s, outlet *reply, char *data, size_t len,
                        const jsonrpc_msg *parsed, char *params, size_t params_len) {
  submit(srv, s, reply, data, len, parsed, true, params, params_len);
}

static void submit(server *srv, session *s, outlet *reply, char *data, size_t len,
                   const jsonrpc_msg *parsed, bool http, char *params, size_t params_len) {
  inmsg *im = inmsg_new(MSG_RPC, s, reply, data, len);
  im->params = params;
  im->params_len = params_len;
  im->http = http;
  if (parsed) im->m = *parsed;
  else jsonrpc_parse(data, len, &im->m);
  json_span id;
  if (cancel_of(&im->m, &id)) { /* takes effect at once, even in a busy handler */
    engine_cancel(srv->e, s, id.p, id.n);
    /* and queued: it may name a subscription (listen.c) */
  }
  engine_submit(srv->e, im, reply != NULL);
}

void server_end_session(server *srv, session *s) {
  atomic_store(&s->ended, true);
  /* the engine's holder does it: callers may hold their transport's locks */
  engine_submit(srv->e, inmsg_new(MSG_END_SESSION, s, NULL, NULL, 0), false);
}

void server_attach(server *srv, session *s, outlet *stream) {
  engine_submit(srv->e, inmsg_new(MSG_ATTACH, s, stream, NULL, 0), false);
}

void server_stream_closed(server *srv, session *s, outlet *stream) {
  engine_submit(srv->e, inmsg_new(MSG_CLOSED, s, stream, NULL, 0), false);
}

void server_accept(server *srv, session *s, const char *p, size_t n) {
  server_inject(srv, s, s->standalone, p, n);
}

void server_inject(server *srv, session *s, outlet *reply, const char *p, size_t n) {
  inmsg im = {.type = MSG_RPC, .s = s, .reply = reply, .data = (char *)p, .len = n};
  jsonrpc_parse(p, n, &im.m);
  if (answered_at_once(&im.m, out_of(srv, reply))) {
    if (reply != s->standalone) request_done(srv, reply);
    return;
  }
  json_span id;
  if (cancel_of(&im.m, &id)) {
    engine_cancel_now(srv->e, s, id.p, id.n);
    listen_cancel(srv, s, id);
    return;
  }
  im.borrowed = true;
  if (!engine_busy(srv->e)) {
    engine_dispatch(srv->e, &im);
    return;
  }
  if (quick(srv, &im)) { /* in a busy handler's hook: no Lua needed, answer now */
    dispatch(srv, &im);
    release(srv, &im, true);
    return;
  }
  /* a handler is running (we are in its hook): keep the message for later */
  char *data = malloc(n + 1);
  memcpy(data, p, n);
  data[n] = '\0';
  inmsg *copy = inmsg_new(MSG_RPC, s, reply, data, n);
  jsonrpc_parse(copy->data, n, &copy->m);
  engine_defer(srv->e, copy);
}

/* }====================================================== */

/* {====================================================== calls as requests */

request *request_of(call *c) { return call_extra(c); }

static void copy_progress_token(request *r, json_span meta) {
  json_span tok;
  if (json_kind(meta) == '{' && json_object_get(meta, "progressToken", &tok) &&
      (json_kind(tok) == '"' || json_kind(tok) == '-' ||
       (json_kind(tok) >= '0' && json_kind(tok) <= '9'))) {
    r->ptoken = strndup(tok.p, tok.n);
    r->ptoken_len = tok.n;
  }
}

call *server_call_new(server *srv, inmsg *im, call_kind kind, json_span meta, request *mrtr) {
  call *c = engine_call_new(srv->e, im->s, im->m.id.p, im->m.id.n);
  request *r = request_of(c);
  r->srv = srv;
  r->s = im->s;
  session_ref(r->s);
  r->out = im->reply;
  im->taken = true; /* the call finishes the outlet */
  r->kind = kind;
  r->entry_ref = LUA_NOREF;
  r->cv = im->cv;
  if (mrtr) mrtr_take(r, mrtr);
  copy_progress_token(r, meta);
  lua_State *L = call_app(c)->vm.L;
  r->ctx = lua_api_push_ctx(L, c);
  r->ctx_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return c;
}

static void ended(void *ud, call *c) {
  server *srv = ud;
  request *r = request_of(c);
  lua_State *L = call_app(c)->vm.L;
  lua_api_close_ctx(r->ctx);
  luaL_unref(L, LUA_REGISTRYINDEX, r->ctx_ref);
  luaL_unref(L, LUA_REGISTRYINDEX, r->entry_ref);
  request_done(srv, r->out);
  session_unref(r->s);
  free(r->ptoken);
  free(r->uri);
  mrtr_free(r);
}

static const char *client_resource_uri(const call *c) {
  const request *r = request_of((call *)c);
  return r->kind == CALL_RESOURCE ? r->uri : NULL;
}

static const char *client_protocol_version(const call *c) {
  const request *r = request_of((call *)c);
  return r->cv.modern ? MODERN_VERSION : proto_name(r->cv.version);
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
  if (level < (r->cv.modern ? r->cv.log_level : r->s->log_level) || r->out->dead) return;
  buf p;
  buf_init(&p);
  buf_printf(&p, "{\"level\":\"%s\",\"logger\":", log_level_name(level));
  json_encode_string(&p, logger, strlen(logger));
  buf_puts(&p, ",\"data\":");
  json_encode_string(&p, msg, len);
  buf_putc(&p, '}');
  jsonrpc_write_notification(out_of(r->srv, r->out), "notifications/message", p.p, p.len);
  buf_free(&p);
  /* not flushed here: the loop flushes after the handler returns or parks,
     and the hook every few milliseconds while it runs */
  engine_call_hand_over(c);
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
  jsonrpc_write_notification(out_of(r->srv, r->out), "notifications/progress", p.p, p.len);
  buf_free(&p);
  engine_call_hand_over(c);
  return true;
}

/* The call stops waiting for the client's answer (timeout, cancel, end):
   spec — a request we give up on is cancelled. */
static void abort_ask(call_wait *w) {
  request *r = (request *)((char *)w - offsetof(request, ask));
  if (!r->asked) return;
  char p[96];
  int n = snprintf(p, sizeof p, "{\"requestId\":%llu,\"reason\":\"no longer needed\"}",
                   (unsigned long long)r->asked);
  if (!r->out->dead)
    jsonrpc_write_notification(out_of(r->srv, r->out), "notifications/cancelled", p, (size_t)n);
  r->asked = 0;
}

static bool client_asks_in_rounds(const call *c) { return request_of((call *)c)->cv.modern; }

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
  if (r->cv.modern) return mrtr_ask(c, method, L, params_idx, key, err, errlen);
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
  buf_put(out_of(r->srv, r->out), b.p, b.len);
  buf_free(&b);
  r->asked = id;
  r->ask = (call_wait){.abort = abort_ask, .what = method};
  call_park(c, &r->ask); /* until the answer, or the deadline */
  return ASK_WAIT;
}

static bool ask_matches(call *c, void *id) { return request_of(c)->asked == *(uint64_t *)id; }

/* Which call asked the request this response answers? */
static call *asker(server *srv, session *s, uint64_t id) {
  return engine_find_call(srv->e, s, ask_matches, &id);
}

/* A response from the client: resume the call that asked, with the result
   (or nil and the error's message). */
static void answer_from_client(server *srv, inmsg *im) {
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
  request_of(c)->asked = 0;
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
  flush_outlet(r->out); /* what was said so far goes on the current response */
  r->out->detach(r->out);
  return true;
}

/* }====================================================== */

/* The watchdog's report: on stderr and to the call's client (its log
   level permitting), like a handler's own warning. */
static void blocked(void *ud, call *c, const char *msg) {
  (void)ud;
  call_log(c, LOG_WARNING, msg, strlen(msg));
}

static void release_vm(void *ud, vm *v) {
  (void)ud;
  app_free(v->owner);
}

/* Shutdown begins: subscriptions get their graceful result now, while
   their outlets (stdout, HTTP streams) are still there. */
static void finishing(void *ud) {
  listen_close_all(ud);
  tasks_shutdown(ud); /* tasks are the process's: their work ends with it */
}

/* {====================================================== the server */

static const engine_hooks hooks = {
    .call_extra = sizeof(request),
    .dispatch = dispatch,
    .dispatch_failed = dispatch_failed,
    .quick = quick,
    .release = release,
    .returned = results_returned,
    .failed = results_failed,
    .waits = tasks_waits,
    .ended = ended,
    .blocked = blocked,
    .finishing = finishing,
    .flush = flush_all,
    .release_vm = release_vm,
    .client = {.protocol_version = client_protocol_version,
               .resource_uri = client_resource_uri,
               .log = client_log,
               .progress = client_progress,
               .ask = client_ask,
               .ask_round = client_ask_round,
               .as_task = tasks_as_task,
               .asks_in_rounds = client_asks_in_rounds,
               .caps = client_caps,
               .detach = client_detach,
               .notify_updated = client_notify_updated},
};

server *server_new(app *a, const server_options *opt) {
  server *srv = calloc(1, sizeof *srv);
  srv->opt = *opt;
  if (srv->opt.task_ttl <= 0) srv->opt.task_ttl = 3600;
  engine_hooks h = hooks;
  h.ud = srv;
  srv->e = engine_new(&a->vm, &opt->engine, &h);
  reload_init(srv);
  return srv;
}

engine *server_engine(server *srv) { return srv->e; }

void server_free(server *srv) {
  for (size_t i = 0; i < srv->nsessions; i++) {
    session *s = srv->sessions[i];
    if (s->standalone) { /* an open GET stream: the server's reference goes */
      outlet *o = s->standalone;
      s->standalone = NULL;
      request_done(srv, o);
    }
    session_unref(s);
  }
  free(srv->sessions);
  reload_close(srv);
  engine_free(srv->e);
  tasks_free_all(srv); /* after the engine: its last calls' ends reach their tasks */
  free(srv->dirty);
  free(srv);
}

/* }====================================================== */
