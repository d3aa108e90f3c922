/* server.c — messages in, answers out (see server.h): each message's
 * dispatch (parse errors and ping at once, its revision and session from
 * classify, then methods.c), sessions, and the server's hooks into the
 * engine. Calls as requests are request.c, batched output output.c,
 * shaping results results.c, a request's accounting accounting.c. */
#include "server_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "json.h"
#include "store.h"
#include "log.h"
#include "mcp_client.h"
#include "metrics.h"
#include "lua_api.h"
#include "listen.h"
#include "mrtr.h"
#include "tasks.h"
#include "validate.h"

/* }====================================================== */

/* {====================================================== sessions */

/* The transport ended the session: drop its calls (no answers), close its
   standalone stream, forget it. */
static void end_session(server *srv, session *s) {
  call_end_peer(srv->e, s);
  listen_end_session(srv, s);
  if (s->standalone) {
    outlet *o = s->standalone;
    s->standalone = NULL;
    output_done(srv, o);
  }
  notify_untrack(srv, s);
}

static void attach(server *srv, session *s, outlet *stream) {
  outlet *old = s->standalone;
  s->standalone = stream;
  if (old) output_done(srv, old);
}

/* }====================================================== */

/* {====================================================== messages */

/* Messages answered without the app: parse errors and ping (its one
   place). */
static bool answered_at_once(server *srv, const jsonrpc_msg *m, outlet *o) {
  if (m->kind == JSONRPC_INVALID) {
    output_rpc_error(srv, o, m->id, m->error_code, m->error_msg, NULL);
    return true;
  }
  if (m->kind == JSONRPC_REQUEST && jsonrpc_method_is(m, "ping") && !envelope_claimed(m)) {
    jsonrpc_write_result(output_reply(srv, o), m->id, "{}", 2); /* 2025-11-25: 2026-07-28 has no ping */
    return true;
  }
  return false;
}

/* The era of a request, and who asks: from its envelope (a per-request revision) or its
   session (2025). False when the envelope is wrong: answered with the
   error. */
static bool classify(server *srv, inmsg *im) {
  buf msg, data;
  buf_init(&msg), buf_init(&data);
  /* read once: by the transport that checked its headers against it, or here */
  int code = im->env_read ? 0 : envelope_read(&im->m, &im->env, &msg, &data);
  if (code) {
    buf_putc(&data, '\0');
    output_rpc_error(srv, im->reply, im->m.id, code, msg.p, data.len > 1 ? data.p : NULL);
    buf_free(&msg), buf_free(&data);
    im->cv.version = PROTO_NONE; /* no revision of ours: counted as "unsupported" */
    accounting_answered(srv, im, methods_name(&im->m), 0);
    return false;
  }
  buf_free(&msg), buf_free(&data);
  client_view *cv = &im->cv;
  const envelope *env = &im->env;
  if (env->present) {
    *cv = (client_view){.version = env->revision, .sampling = env->sampling,
                        .elicitation = env->elicitation, .roots = env->roots, .ui = env->ui,
                        .tasks = env->tasks, .log_level = env->log_level >= 0 ? env->log_level : NO_LOGS};
  } else {
    const session *s = im->s;
    *cv = (client_view){.version = s->version ? s->version : PROTO_LATEST_SESSION,
                        .sampling = s->client_sampling, .elicitation = s->client_elicitation,
                        .roots = s->client_roots, .ui = s->client_ui, .ui_unknown = s->caps_unknown,
                        .log_level = s->log_level};
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
  principal_unref(im->who);
  session_unref(im->s);
  free(im->data);
  free(im);
}


static void server_dispatch(void *ud, void *msg) {
  server *srv = ud;
  inmsg *im = msg;
  if (im->type == MSG_END_SESSION) {
    end_session(srv, im->s);
    return;
  }
  if (im->type == MSG_ATTACH) {
    if (atomic_load(&im->s->ended)) output_done(srv, im->reply);
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
  if (im->who && im->s->who != im->who) { /* what it is told of, it may see (notify.c) */
    principal_unref(im->s->who);
    im->s->who = principal_ref(im->who);
  }
  switch (im->m.kind) {
    case JSONRPC_REQUEST:
      if (atomic_load(&im->s->ended)) break; /* raced with DELETE: answer nothing */
      if (answered_at_once(srv, &im->m, im->reply) || !classify(srv, im)) return;
      methods_handle_request(srv, im);
      return;
    case JSONRPC_NOTIFICATION: {
      json_span id;
      if (jsonrpc_method_is(&im->m, "notifications/initialized")) im->s->ready = true;
      else if (cancel_of(&im->m, &id)) listen_cancel(srv, im->s, id); /* calls: engine_cancel */
      break;
    }
    case JSONRPC_INVALID:
      if (im->reply) answered_at_once(srv, &im->m, im->reply);
      break;
    case JSONRPC_RESPONSE:
      request_answered(srv, im);
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
  return !methods_need_lua(m); /* ping and unknown methods too: answered without Lua */
}

static void dispatch_failed(void *ud, void *msg, const char *err) {
  server *srv = ud;
  inmsg *im = msg;
  if (im->type != MSG_RPC || !im->reply || im->m.kind != JSONRPC_REQUEST) return;
  im->reply->out.len = 0; /* what was half written */
  output_rpc_error(srv, im->reply, im->m.id, JSONRPC_INTERNAL_ERROR, err, NULL);
}

/* A request answered by the dispatch itself (no call took it over) is
   over; its outlet is finished here. */
static void finish_reply(server *srv, inmsg *im, bool dispatched) {
  if (im->reply && im->reply != im->s->standalone && !im->taken) {
    if (dispatched) output_done(srv, im->reply);
    else if (im->reply->finish) im->reply->finish(im->reply);
  }
}

static void release(void *ud, void *msg, bool dispatched) {
  finish_reply(ud, msg, dispatched);
  inmsg_free(msg);
}

static void submit(server *srv, inmsg *im, const jsonrpc_msg *parsed);

void server_submit(server *srv, session *s, outlet *reply, char *data, size_t len,
                   const jsonrpc_msg *parsed) {
  submit(srv, inmsg_new(MSG_RPC, s, reply, data, len), parsed);
}

void server_submit_http(server *srv, session *s, outlet *reply, char *data, size_t len,
                        const jsonrpc_msg *parsed, const envelope *env, char *params,
                        size_t params_len, principal *who, const trace_ctx *parent) {
  inmsg *im = inmsg_new(MSG_RPC, s, reply, data, len);
  im->who = principal_ref(who);
  if (parent) im->parent = *parent;
  im->params = params;
  im->params_len = params_len;
  im->http = true;
  if (env) im->env = *env, im->env_read = true;
  submit(srv, im, parsed);
}

static void submit(server *srv, inmsg *im, const jsonrpc_msg *parsed) {
  session *s = im->s;
  char *data = im->data;
  size_t len = im->len;
  if (parsed) im->m = *parsed;
  else jsonrpc_parse(data, len, &im->m);
  json_span id;
  if (cancel_of(&im->m, &id)) { /* takes effect at once, even in a busy handler */
    engine_cancel(srv->e, s, id.p, id.n);
    /* and queued: it may name a subscription (listen.c) */
  }
  engine_submit(srv->e, im, im->reply != NULL);
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
  server_inject_as(srv, s, reply, p, n, NULL);
}

void server_inject_as(server *srv, session *s, outlet *reply, const char *p, size_t n,
                      const char *who_key) {
  inmsg im = {.type = MSG_RPC, .s = s, .reply = reply, .data = (char *)p, .len = n,
              .who_key = who_key};
  jsonrpc_parse(p, n, &im.m);
  if (answered_at_once(srv, &im.m, reply)) {
    if (reply != s->standalone) output_done(srv, reply);
    return;
  }
  json_span id;
  if (cancel_of(&im.m, &id)) {
    call_cancel_now(srv->e, s, id.p, id.n);
    listen_cancel(srv, s, id);
    return;
  }
  im.borrowed = true;
  if (!engine_busy(srv->e)) {
    engine_dispatch(srv->e, &im);
    return;
  }
  if (quick(srv, &im)) { /* in a busy handler's hook: no Lua needed, answer now */
    server_dispatch(srv, &im);
    finish_reply(srv, &im, true); /* im is on this stack: nothing of it to free */
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

/* The watchdog's report: on stderr and to the call's client (its log
   level permitting), like a handler's own warning. */
static void blocked(void *ud, call *c, const char *msg) {
  (void)ud;
  ctx_client_log(c, LOG_WARNING, msg, strlen(msg));
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
  reload_stop(ud);    /* a load under way: nothing will publish it */
}

/* {====================================================== the server */

static const engine_hooks hooks = {
    .call_extra = sizeof(request),
    .dispatch = server_dispatch,
    .dispatch_failed = dispatch_failed,
    .quick = quick,
    .release = release,
    .returned = results_returned,
    .failed = results_failed,
    .waits = tasks_waits,
    .ended = request_ended,
    .blocked = blocked,
    .finishing = finishing,
    .flush = output_flush_all,
    .release_vm = release_vm,
    .client = &request_client,
    .span = request_span,
};

server *server_new(app *a, const server_options *opt) {
  server *srv = calloc(1, sizeof *srv);
  srv->opt = *opt;
  if (srv->opt.task_ttl <= 0) srv->opt.task_ttl = 3600;
  engine_hooks h = hooks;
  h.ud = srv;
  srv->e = engine_new(&a->vm, &opt->engine, &h);
  pthread_mutex_init(&srv->facts_lock, NULL);
  reload_set_facts(srv, a);
  reload_init(srv);
  return srv;
}

void server_app_facts(server *srv, buf *scopes, buf *name) {
  pthread_mutex_lock(&srv->facts_lock);
  if (srv->facts_scopes) buf_puts(scopes, srv->facts_scopes);
  if (srv->facts_name) buf_puts(name, srv->facts_name);
  pthread_mutex_unlock(&srv->facts_lock);
}

void server_set_caller(server *srv, principal *who) {
  srv->opt.as = who;
}

engine *server_engine(server *srv) { return srv->e; }

void server_join(server *srv, const server_peers *peers) {
  srv->peers = peers ? *peers : (server_peers){0};
}

void server_free(server *srv) {
  for (size_t i = 0; i < srv->nsessions; i++) {
    session *s = srv->sessions[i];
    if (s->standalone) { /* an open GET stream: the server's reference goes */
      outlet *o = s->standalone;
      s->standalone = NULL;
      output_done(srv, o);
    }
    session_unref(s);
  }
  free(srv->sessions);
  reload_close(srv);
  if (srv->mount_close) srv->mount_close(srv);
  mcp_client_close_all(); /* the upstreams' children, whose handles are on the engine's loop */
  engine_free(srv->e);
  pthread_mutex_destroy(&srv->facts_lock);
  free(srv->facts_scopes), free(srv->facts_name);
  tasks_free_all(srv); /* after the engine: its last calls' ends reach their tasks */
  free(srv->dirty);
  free(srv);
}

/* }====================================================== */

bool server_ready(server *srv, char *why, size_t cap) {
  if (!store_ready(why, cap)) return false;
  /* peers are joined before serving and left after: stable while asked */
  return !srv->peers.ready || srv->peers.ready(srv->peers.ud, why, cap);
}
