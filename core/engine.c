/* engine.c — the engine: queue, dispatch, coroutine calls, timers (see
 * engine.h). Whoever holds e->run touches the lua_State: the engine thread,
 * or a transport's thread that found the engine idle and answers its own
 * message itself (help()). */
#include "engine_internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "cursor.h"
#include "json.h"
#include "jsonrpc.h"
#include "log.h"
#include "lua_api.h"
#include "thread_stack.h"
#include "validate.h"

double engine_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Nothing to do: a wake-up only ends the loop's wait; the round after it
   takes the queue. */
static void on_wake(uv_async_t *h) { (void)h; }

static void free_handle(uv_handle_t *h) { free(h); }

static void free_call(call *c) {
  if (c->timer) uv_close((uv_handle_t *)c->timer, free_handle);
  free(c);
}

engine *engine_new(app *a, const engine_options *opt) {
  engine *e = calloc(1, sizeof *e);
  e->app = a;
  e->opt = *opt;
  if (!e->opt.queue_cap) e->opt.queue_cap = 1024;
  e->qcap = e->opt.queue_cap;
  e->q = calloc(e->qcap, sizeof *e->q);
  e->batch = malloc(e->qcap * sizeof *e->batch);
  pthread_mutex_init(&e->lock, NULL);
  pthread_mutex_init(&e->run, NULL);
  pthread_cond_init(&e->space, NULL);
  uv_loop_init(&e->loop);
  uv_async_init(&e->loop, &e->wake, on_wake);
  uv_timer_init(&e->loop, &e->reload_timer);
  e->reload_timer.data = e;
  atomic_init(&e->interrupt, false);
  atomic_init(&e->finishing_flag, false);
  atomic_init(&e->reload_asked, false);
  if (e->opt.shutdown_grace <= 0) e->opt.shutdown_grace = 10;
  lua_pushlightuserdata(a->L, e);
  lua_setfield(a->L, LUA_REGISTRYINDEX, ENGINE_KEY);
  return e;
}


static void inmsg_free(inmsg *im) {
  session_unref(im->s);
  free(im->data);
  free(im);
}

void engine_free(engine *e) {
  for (size_t i = 0; i < e->qlen; i++) inmsg_free(e->q[(e->qhead + i) % e->qcap]);
  free(e->q);
  while (e->cancels) {
    cancel_req *c = e->cancels;
    e->cancels = c->next;
    session_unref(c->s);
    free(c->id);
    free(c);
  }
  for (size_t i = 0; i < e->ndeferred; i++) inmsg_free(e->deferred[i]);
  free(e->deferred);
  free(e->dirty);
  for (size_t i = 0; i < e->nsessions; i++) {
    session *s = e->sessions[i];
    if (s->standalone) { /* an open GET stream: the engine's reference goes */
      outlet *o = s->standalone;
      s->standalone = NULL;
      request_done(e, o);
    }
    session_unref(s);
  }
  free(e->sessions);
  free(e->batch);
  /* the app's state first: its objects may own loop handles (an idle
     mcp.socket) that their __gc closes, and the run below frees */
  app_free(e->app);
  e->app = NULL;
  while (e->nspare) free_call(e->spare[--e->nspare]);
  while (e->ninputs) engine_remove_input(e, e->inputs[0].fd);
  uv_close((uv_handle_t *)&e->wake, NULL);
  uv_close((uv_handle_t *)&e->reload_timer, NULL);
  uv_run(&e->loop, UV_RUN_DEFAULT); /* the close callbacks */
  if (uv_loop_close(&e->loop) != 0) log_msg(LOG_DEBUG, "engine: handles still open at exit");
  pthread_mutex_destroy(&e->lock);
  pthread_mutex_destroy(&e->run);
  pthread_cond_destroy(&e->space);
  free(e);
}

/* {====================================================== output helpers */

buf *out_of(engine *e, outlet *o) {
  if (!o->dirty) {
    if (e->ndirty == e->dirty_cap) {
      e->dirty_cap = e->dirty_cap ? e->dirty_cap * 2 : 8;
      e->dirty = realloc(e->dirty, e->dirty_cap * sizeof *e->dirty);
    }
    e->dirty[e->ndirty++] = o;
    o->dirty = true;
  }
  return &o->out;
}

void flush_outlet(outlet *o) {
  if (o->out.len && !o->dead && !o->write(o, o->out.p, o->out.len)) o->dead = true;
  o->out.len = 0;
  o->dirty = false;
}

static void flush_all(engine *e) {
  for (size_t i = 0; i < e->ndirty; i++) flush_outlet(e->dirty[i]);
  e->ndirty = 0;
}

/* The request o answers is over: hand over what is left and let the
   transport close it. o must not be used afterwards. */
void request_done(engine *e, outlet *o) {
  if (!o || !o->finish) return;
  if (o->dirty) {
    for (size_t i = 0; i < e->ndirty; i++)
      if (e->dirty[i] == o) {
        e->dirty[i] = e->dirty[--e->ndirty];
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

void reply_error(engine *e, outlet *s, json_span id, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void reply_error(engine *e, outlet *s, json_span id, int code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  jsonrpc_write_error(out_of(e, s), id, code, msg, NULL);
}

void reply_json(engine *e, outlet *s, json_span id, const char *json, size_t n) {
  jsonrpc_write_result(out_of(e, s), id, json, n);
}

call *call_current(lua_State *L) {
  call *c = call_of(L);
  if (c) return c;
  lua_getfield(L, LUA_REGISTRYINDEX, ENGINE_KEY);
  engine *e = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return e ? e->running : NULL;
}

void call_notify_updated(lua_State *L, const char *uri, size_t n) {
  lua_getfield(L, LUA_REGISTRYINDEX, ENGINE_KEY);
  engine *e = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (e) engine_notify_updated(e, uri, n);
}

void engine_notify_updated(engine *e, const char *uri, size_t n) {
  buf p;
  buf_init(&p);
  buf_puts(&p, "{\"uri\":");
  json_encode_string(&p, uri, n);
  buf_putc(&p, '}');
  for (size_t i = 0; i < e->nsessions; i++) {
    session *s = e->sessions[i];
    if (s->standalone && !s->standalone->dead && session_is_subscribed(s, uri, n))
      jsonrpc_write_notification(out_of(e, s->standalone), "notifications/resources/updated", p.p,
                                 p.len);
  }
  buf_free(&p);
}

/* A tool result that reports a failure to the model (isError: true). */
void write_tool_error(buf *out, json_span id, const char *msg, size_t n) {
  jsonrpc_begin_result(out, id);
  buf_puts(out, "{\"content\":[{\"type\":\"text\",\"text\":");
  json_encode_string(out, msg, n);
  buf_puts(out, "}],\"isError\":true}");
  jsonrpc_end_reply(out);
}

/* }====================================================== */

/* {====================================================== submit (any thread) */

static void wake(engine *e) { uv_async_send(&e->wake); }

/* Messages answered without the engine's state: parse errors and ping. */
static bool answered_at_once(const jsonrpc_msg *m, buf *out) {
  if (m->kind == JSONRPC_INVALID) {
    jsonrpc_write_error(out, m->id, m->error_code, m->error_msg, NULL);
    return true;
  }
  if (m->kind == JSONRPC_REQUEST && jsonrpc_method_is(m, "ping")) {
    jsonrpc_write_result(out, m->id, "{}", 2);
    return true;
  }
  return false;
}

static bool is_cancel(const jsonrpc_msg *m) {
  return m->kind == JSONRPC_NOTIFICATION && jsonrpc_method_is(m, "notifications/cancelled");
}

static void add_cancel(engine *e, session *s, const jsonrpc_msg *m) {
  json_span id;
  if (!m->params.n || !json_object_get(m->params, "requestId", &id)) return;
  cancel_req *c = malloc(sizeof *c);
  c->s = s;
  session_ref(s);
  c->id = strndup(id.p, id.n);
  c->id_len = id.n;
  pthread_mutex_lock(&e->lock);
  c->next = e->cancels;
  e->cancels = c;
  atomic_store(&e->interrupt, true);
  pthread_mutex_unlock(&e->lock);
  wake(e);
}

static bool queue_empty(engine *e) {
  pthread_mutex_lock(&e->lock);
  bool empty = e->qlen == 0;
  pthread_mutex_unlock(&e->lock);
  return empty;
}


/* Has the calling thread HELP_THREAD_STACK of stack (thread_stack.h)?
   Asked once per thread: the answer is the thread's own. */
static bool stack_roomy(void) {
  static _Thread_local int known; /* 0: not asked yet, 1: roomy, 2: small */
  if (!known) {
    pthread_attr_t attr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstacksize(&attr, &size);
      pthread_attr_destroy(&attr);
    }
    known = size >= HELP_THREAD_STACK ? 1 : 2;
  }
  return known == 1;
}

static void dispatch(engine *e, inmsg *im);

/* Take the queued messages into e->batch: all of them (through NULL), or
   those up to and including through (none when another holder took it
   already). *finishing (if given) gets the engine's finishing flag, read
   with the queue. e->run held. */
static size_t take(engine *e, const inmsg *through, bool *finishing) {
  pthread_mutex_lock(&e->lock);
  size_t n = through ? 0 : e->qlen;
  for (size_t i = 0; i < e->qlen && !n; i++)
    if (e->q[(e->qhead + i) % e->qcap] == through) n = i + 1;
  for (size_t i = 0; i < n; i++) e->batch[i] = e->q[(e->qhead + i) % e->qcap];
  e->qhead = (e->qhead + n) % e->qcap;
  e->qlen -= n;
  if (finishing) *finishing = e->finishing;
  if (n) pthread_cond_broadcast(&e->space);
  pthread_mutex_unlock(&e->lock);
  return n;
}

/* Dispatch and free the first n messages of e->batch. */
static void dispatch_batch(engine *e, size_t n) {
  for (size_t i = 0; i < n; i++) {
    dispatch(e, e->batch[i]);
    inmsg_free(e->batch[i]);
  }
}

/* Has the loop work its sleeping thread does not know of? Handles started
   outside its own pass are registered with epoll only by the next pass
   (libuv defers epoll_ctl to a queue: its watcher_queue, peeked at here),
   and a timer may now be due before the wake-up the thread planned.
   Run-lock holder. */
static bool loop_changed(engine *e) {
  if (e->loop.watcher_queue[0] != (void *)&e->loop.watcher_queue) return true;
  int t = uv_backend_timeout(&e->loop);
  if (t < 0) return false;
  uint64_t due = uv_now(&e->loop) + (uint64_t)t;
  return e->sleep_until == 0 || due < e->sleep_until;
}

/* The caller's message (mine) is queued: answer it on this thread when the
   engine is idle, which saves the two thread hand-offs (to the engine
   thread and back) that were half of an HTTP request's cost. Only the
   messages up to mine: the caller's own answer must not wait for others'
   work (resumed calls, timers, reloads stay with the engine thread, woken
   when they come due sooner than it planned). When another thread holds
   e->run, it sees the message: every holder looks at the queue again after
   letting go (the queue's lock orders our enqueue before its look). */
static void help(engine *e, const inmsg *mine) {
  if (!stack_roomy()) { /* a small stack: handlers run elsewhere */
    wake(e);
    return;
  }
  if (pthread_mutex_trylock(&e->run) != 0) return;
  dispatch_batch(e, take(e, mine, NULL));
  flush_all(e);
  /* a timer or handle started here: the engine thread's wait must learn of it */
  bool sooner = e->ndeferred || loop_changed(e);
  pthread_mutex_unlock(&e->run);
  if (sooner || !queue_empty(e)) wake(e);
}

/* Queue im (blocking while the queue is full); false when the engine is
   finishing: the message is then dropped and its request outlet finished. */
static bool enqueue(engine *e, inmsg *im) {
  pthread_mutex_lock(&e->lock);
  while (e->qlen == e->qcap && !e->finishing) pthread_cond_wait(&e->space, &e->lock);
  if (e->finishing) {
    pthread_mutex_unlock(&e->lock);
    if (im->reply && im->reply->finish) im->reply->finish(im->reply);
    inmsg_free(im);
    return false;
  }
  e->q[(e->qhead + e->qlen++) % e->qcap] = im;
  pthread_mutex_unlock(&e->lock);
  return true;
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

void engine_submit(engine *e, session *s, outlet *reply, char *data, size_t len,
                   const jsonrpc_msg *parsed) {
  inmsg *im = inmsg_new(MSG_RPC, s, reply, data, len);
  if (parsed) im->m = *parsed;
  else jsonrpc_parse(data, len, &im->m);
  if (is_cancel(&im->m)) { /* takes effect at once, even in a busy handler */
    add_cancel(e, s, &im->m);
    inmsg_free(im);
    return;
  }
  /* once queued, im belongs to whoever holds e->run: it may be freed before
     enqueue returns, so only its address is used after */
  if (!enqueue(e, im)) return;
  if (reply) help(e, im);
  else wake(e); /* notifications and responses: their 202 must not wait for what they resume */
}

void engine_end_session(engine *e, session *s) {
  atomic_store(&s->ended, true);
  /* the engine thread does it: callers may hold their transport's locks */
  if (enqueue(e, inmsg_new(MSG_END_SESSION, s, NULL, NULL, 0))) wake(e);
}

void engine_attach(engine *e, session *s, outlet *stream) {
  if (enqueue(e, inmsg_new(MSG_ATTACH, s, stream, NULL, 0))) wake(e);
}

bool engine_finishing(engine *e) { return atomic_load(&e->finishing_flag); }

void engine_finish(engine *e) {
  pthread_mutex_lock(&e->lock);
  e->finishing = true;
  atomic_store(&e->finishing_flag, true);
  pthread_cond_broadcast(&e->space);
  pthread_mutex_unlock(&e->lock);
  wake(e);
}

/* }====================================================== */

static void poll_inputs(engine *e);

/* {====================================================== calls */

call *call_of(lua_State *co) { return *(call **)lua_getextraspace(co); }
lua_State *call_thread(const call *c) { return c->co; }
bool call_is_cancelled(const call *c) { return c->cancelled; }
bool call_timed_out(const call *c) { return c->timed_out; }
const char *call_protocol_version(const call *c) { return proto_name(c->s->version); }

/* lua_pushfstring knows no %g: format the limit here. */
void timeout_message(const call *c, char out[TIMEOUT_MSG_MAX]) {
  snprintf(out, TIMEOUT_MSG_MAX, "call timed out after %g s", c->e->opt.call_timeout);
}

static bool same_id(const call *c, const cancel_req *r) {
  return c->s == r->s && c->id_len == r->id_len && memcmp(c->id, r->id, r->id_len) == 0;
}

/* Is a cancellation for c waiting in the shared list? (hook side) */
static bool cancel_pending(engine *e, const call *c) {
  bool found = false;
  pthread_mutex_lock(&e->lock);
  for (cancel_req *r = e->cancels; r && !found; r = r->next) found = same_id(c, r);
  pthread_mutex_unlock(&e->lock);
  return found;
}

/* The count hook: ends a call that ran out of time or was cancelled, even
   in a busy loop. It re-arms itself at every instruction once it fired, so
   a script's own pcall cannot swallow the kill. */
static void call_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  call *c = call_of(L);
  if (!c) {
    /* a coroutine the handler made: it inherited the hook, not the extra
       space; the call is the one running */
    lua_getfield(L, LUA_REGISTRYINDEX, ENGINE_KEY);
    engine *e = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (!e || !(c = e->running)) return;
  }
  engine *e = c->e;
  double t = engine_now();
  if (t - e->last_input_poll > HOOK_INPUT_INTERVAL) {
    e->last_input_poll = t;
    poll_inputs(e);
    flush_all(e); /* pings answered and notifications sent while the handler runs */
  }
  if (!c->cancelled && atomic_load_explicit(&c->e->interrupt, memory_order_relaxed) &&
      cancel_pending(c->e, c))
    c->cancelled = true;
  if (!c->cancelled && !c->timed_out && t > c->deadline) c->timed_out = true;
  if (c->cancelled || c->timed_out) {
    lua_sethook(L, call_hook, LUA_MASKCOUNT, 1);
    if (c->cancelled) luaL_error(L, "call cancelled by the client");
    char msg[TIMEOUT_MSG_MAX];
    timeout_message(c, msg);
    luaL_error(L, "%s", msg);
  }
}

static void copy_progress_token(call *c, json_span meta) {
  json_span tok;
  if (json_kind(meta) == '{' && json_object_get(meta, "progressToken", &tok) &&
      (json_kind(tok) == '"' || json_kind(tok) == '-' || (json_kind(tok) >= '0' && json_kind(tok) <= '9'))) {
    c->ptoken = strndup(tok.p, tok.n);
    c->ptoken_len = tok.n;
  }
}

static void on_call_timer(uv_timer_t *t);

/* Start c's timer for its wake-up or its deadline, whichever is first. */
static void arm(call *c) {
  engine *e = c->e;
  double due = c->wake_at < c->deadline ? c->wake_at : c->deadline;
  uv_update_time(&e->loop); /* a helper thread's start: the loop's clock may be old */
  double ms = ceil((due - engine_now()) * 1000.0);
  uv_timer_start(c->timer, on_call_timer, ms > 0 ? (uint64_t)ms : 0, 0);
}

/* A parked call's time has come, or its deadline passed (ctx:sleep, an
   operation, a question to the client then raise the timeout). */
static void on_call_timer(uv_timer_t *t) {
  call *c = t->data;
  engine *e = c->e;
  if (c->wake_at <= 0) return;
  double now = engine_now();
  if (c->deadline <= now) c->timed_out = true;
  if (!c->timed_out && c->wake_at > now) { /* early by the loop clock's rounding */
    arm(c);
    return;
  }
  c->wake_at = 0;
  if (c->wait) {
    call_wait *w = c->wait;
    c->wait = NULL;
    w->abort(w);
  }
  if (c->asked) { /* spec: a request we give up on is cancelled */
    char p[96];
    int n = snprintf(p, sizeof p, "{\"requestId\":%llu,\"reason\":\"timed out\"}",
                     (unsigned long long)c->asked);
    jsonrpc_write_notification(out_of(e, c->out), "notifications/cancelled", p, (size_t)n);
    c->asked = 0;
  }
  /* whatever the yielded function does with the timeout, the next
     instruction ends the call: a script's pcall cannot keep it going */
  if (c->timed_out) lua_sethook(c->co, call_hook, LUA_MASKCOUNT, 1);
  call_resume(e, c, 0);
}

/* A new call with its coroutine; the caller pushes the function and the
   arguments onto c->co and calls call_resume. */
call *call_new(engine *e, inmsg *im, call_kind kind, json_span meta) {
  app *a = e->app;
  call *c;
  if (e->nspare) {
    c = e->spare[--e->nspare];
    uv_timer_t *t = c->timer;
    memset(c, 0, sizeof *c);
    c->timer = t;
  } else {
    c = calloc(1, sizeof *c);
    c->timer = malloc(sizeof *c->timer);
    uv_timer_init(&e->loop, c->timer);
  }
  c->timer->data = c;
  c->e = e;
  c->s = im->s;
  session_ref(c->s);
  c->out = im->reply;
  c->a = a;
  c->kind = kind;
  c->entry_ref = LUA_NOREF;
  c->id = strndup(im->m.id.p, im->m.id.n);
  c->id_len = im->m.id.n;
  copy_progress_token(c, meta);
  c->deadline = engine_now() + e->opt.call_timeout;
  if (e->npool) {
    c->co_ref = e->pool[--e->npool];
    lua_rawgeti(a->L, LUA_REGISTRYINDEX, c->co_ref);
    c->co = lua_tothread(a->L, -1);
    lua_pop(a->L, 1);
  } else {
    c->co = lua_newthread(a->L);
    c->co_ref = luaL_ref(a->L, LUA_REGISTRYINDEX);
  }
  *(call **)lua_getextraspace(c->co) = c;
  lua_sethook(c->co, call_hook, LUA_MASKCOUNT, HOOK_COUNT);
  c->ctx = lua_api_push_ctx(a->L, c);
  c->ctx_ref = luaL_ref(a->L, LUA_REGISTRYINDEX);
  a->refs++;
  e->calls_started++;
  c->next = e->calls;
  if (e->calls) e->calls->prev = c;
  e->calls = c;
  e->ncalls++;
  e->new_call = c;
  return c;
}

void call_end(engine *e, call *c) {
  lua_State *L = c->a->L;
  if (e->new_call == c) e->new_call = NULL;
  uv_timer_stop(c->timer);
  if (c->wait) { /* parked on an operation: stop it (socket, transfer, child) */
    call_wait *w = c->wait;
    c->wait = NULL;
    w->abort(w);
  }
  if (c->prev) c->prev->next = c->next;
  else e->calls = c->next;
  if (c->next) c->next->prev = c->prev;
  e->ncalls--;
  *(call **)lua_getextraspace(c->co) = NULL;
  if (lua_status(c->co) == LUA_YIELD) lua_resetthread(c->co); /* runs its to-be-closed variables */
  lua_api_close_ctx(c->ctx);
  luaL_unref(L, LUA_REGISTRYINDEX, c->ctx_ref);
  if (lua_status(c->co) == LUA_OK && e->npool < THREAD_POOL && c->a == e->app) {
    lua_settop(c->co, 0); /* returned normally: clean, reusable */
    e->pool[e->npool++] = c->co_ref;
  } else {
    luaL_unref(L, LUA_REGISTRYINDEX, c->co_ref);
  }
  luaL_unref(L, LUA_REGISTRYINDEX, c->entry_ref);
  /* a version replaced by a reload is closed when its last call ends */
  if (--c->a->refs == 0 && c->a != e->app) app_free(c->a);
  request_done(e, c->out);
  session_unref(c->s);
  free(c->id);
  free(c->ptoken);
  free(c->uri);
  if (e->nspare < CALL_SPARES) e->spare[e->nspare++] = c;
  else free_call(c);
}

static json_span id_of(const call *c) { return (json_span){c->id, c->id_len}; }

/* The handler failed: tools answer isError (so the model can react), the
   other kinds a JSON-RPC internal error. */
static void call_failed(engine *e, call *c, const char *msg) {
  buf *out = out_of(e, c->out);
  if (c->kind == CALL_TOOL) write_tool_error(out, id_of(c), msg, strlen(msg));
  else jsonrpc_write_error(out, id_of(c), JSONRPC_INTERNAL_ERROR, msg, NULL);
}

/* Run the shaper (a function ref in lua/mcp.lua) on the results left on
   the finished coroutine; leaves one table on co or returns false with the
   error reported. */
static bool shape(engine *e, call *c, int shaper, int nres, int extra) {
  lua_State *co = c->co;
  lua_rawgeti(co, LUA_REGISTRYINDEX, shaper);
  lua_insert(co, -(nres + extra) - 1);
  if (app_pcall(co, nres + extra, 1, NULL) != LUA_OK) {
    call_failed(e, c, lua_tostring(co, -1));
    return false;
  }
  return true;
}

static void encode_result(engine *e, call *c, int idx) {
  buf *out = out_of(e, c->out);
  size_t mark = out->len;
  char err[256];
  jsonrpc_begin_result(out, id_of(c));
  if (!json_encode(c->co, idx, out, err, sizeof err)) {
    out->len = mark;
    char msg[400];
    snprintf(msg, sizeof msg, "the handler's result cannot be sent: %s", err);
    call_failed(e, c, msg);
    return;
  }
  jsonrpc_end_reply(out);
}

static void finish_tool(engine *e, call *c, int nres) {
  lua_State *co = c->co;
  const reg_tool *t = c->tool;
  if (nres >= 1 && lua_type(co, -nres) == LUA_TSTRING && t->output == LUA_NOREF) {
    /* the common case, without a trip through Lua */
    size_t n;
    const char *s = lua_tolstring(co, -nres, &n);
    buf *out = out_of(e, c->out);
    jsonrpc_begin_result(out, id_of(c));
    buf_puts(out, "{\"content\":[{\"type\":\"text\",\"text\":");
    json_encode_string(out, s, n);
    buf_puts(out, "}]}");
    jsonrpc_end_reply(out);
    return;
  }
  if (nres > 1) lua_pop(co, nres - 1);
  if (nres == 0) lua_pushnil(co);
  if (!shape(e, c, c->a->tool_result, 1, 0)) return;
  if (t->output != LUA_NOREF) {
    lua_getfield(co, -1, "isError");
    bool is_error = lua_toboolean(co, -1);
    lua_pop(co, 1);
    if (!is_error) {
      lua_rawgeti(co, LUA_REGISTRYINDEX, t->output);
      lua_getfield(co, -2, "structuredContent");
      buf err;
      buf_init(&err);
      bool ok = !lua_isnil(co, -1);
      if (!ok) buf_puts(&err, "the tool declares an outputSchema but returned no structured content");
      else if (!schema_validate_frozen(co, -2, -1, &err)) ok = false;
      lua_pop(co, 2);
      if (!ok) {
        buf msg;
        buf_init(&msg);
        buf_printf(&msg, "tool '%s' returned invalid output: %.*s", t->name, (int)err.len, err.p);
        log_msg(LOG_ERROR, "%.*s", (int)msg.len, msg.p);
        write_tool_error(out_of(e, c->out), id_of(c), msg.p, msg.len);
        buf_free(&msg);
        buf_free(&err);
        return;
      }
      buf_free(&err);
    }
  }
  encode_result(e, c, -1);
}

static void finish_resource(engine *e, call *c, int nres) {
  lua_State *co = c->co;
  if (nres > 1) lua_pop(co, nres - 1);
  if (nres == 0 || lua_isnil(co, -1)) {
    buf d;
    buf_init(&d);
    buf_puts(&d, "{\"uri\":");
    json_encode_string(&d, c->uri, strlen(c->uri));
    buf_putc(&d, '}');
    buf_putc(&d, '\0');
    jsonrpc_write_error(out_of(e, c->out), id_of(c), MCP_RESOURCE_NOT_FOUND,
                        "Resource not found", d.p);
    buf_free(&d);
    return;
  }
  lua_pushstring(co, c->uri);
  lua_rawgeti(co, LUA_REGISTRYINDEX, c->entry_ref);
  lua_getfield(co, -1, "mime");
  lua_remove(co, -2);
  if (!shape(e, c, c->a->resource_result, 1, 2)) return;
  lua_createtable(co, 0, 1);
  lua_insert(co, -2);
  lua_setfield(co, -2, "contents");
  encode_result(e, c, -1);
}

static void finish_prompt(engine *e, call *c, int nres) {
  lua_State *co = c->co;
  if (nres > 1) lua_pop(co, nres - 1);
  if (nres == 0) lua_pushnil(co);
  lua_rawgeti(co, LUA_REGISTRYINDEX, c->entry_ref);
  lua_getfield(co, -1, "def");
  lua_remove(co, -2);
  if (!shape(e, c, c->a->prompt_result, 1, 1)) return;
  encode_result(e, c, -1);
}

/* Completion values: a list of strings (at most 100 are sent). */
static void finish_complete(engine *e, call *c, int nres) {
  lua_State *co = c->co;
  buf *out = out_of(e, c->out);
  size_t total = 0;
  jsonrpc_begin_result(out, id_of(c));
  buf_puts(out, "{\"completion\":{\"values\":[");
  if (nres >= 1 && lua_istable(co, -nres)) {
    int t = lua_absindex(co, -nres);
    total = lua_rawlen(co, t);
    for (size_t i = 1; i <= total && i <= 100; i++) {
      if (i > 1) buf_putc(out, ',');
      int type = lua_rawgeti(co, t, (lua_Integer)i);
      if (type != LUA_TSTRING && type != LUA_TNUMBER) /* no __tostring: values are text */
        luaL_error(co, "completion value %d is a %s; completion values must be strings", (int)i,
                   lua_typename(co, type));
      size_t n;
      const char *s = lua_tolstring(co, -1, &n);
      json_encode_string(out, s, n);
      lua_pop(co, 1);
    }
  }
  buf_printf(out, "],\"total\":%zu,\"hasMore\":%s}}", total, total > 100 ? "true" : "false");
  jsonrpc_end_reply(out);
}

/* The handler's nres results are this function's arguments (run under
   app_pcall on the finished coroutine). */
static int finish_entry(lua_State *co) {
  call *c = call_of(co);
  int nres = lua_gettop(co);
  switch (c->kind) {
    case CALL_TOOL: finish_tool(c->e, c, nres); break;
    case CALL_RESOURCE: finish_resource(c->e, c, nres); break;
    case CALL_PROMPT: finish_prompt(c->e, c, nres); break;
    case CALL_COMPLETE: finish_complete(c->e, c, nres); break;
  }
  return 0;
}

/* Resume c with nargs values on its stack; handle what it does next. */
void call_resume(engine *e, call *c, int nargs) {
  app *a = c->a;
  size_t before = a->mem_used;
  if (e->opt.call_memory) {
    long long room = (long long)e->opt.call_memory - c->mem_grown;
    a->mem_ceiling = before + (size_t)(room > 0 ? room : 0);
  }
  int nres = 0;
  e->running = c;
  int status = lua_resume(c->co, a->L, nargs, &nres);
  e->running = NULL;
  a->mem_ceiling = 0;
  c->mem_grown += (long long)a->mem_used - (long long)before;
  if (status == LUA_YIELD) {
    lua_pop(c->co, nres);
    if (c->wake_at > 0) return; /* parked: a timer, the client, an operation */
    status = LUA_ERRRUN;
    lua_pushliteral(c->co, "a handler may only yield through ctx methods (ctx:sleep)");
  }
  if (c->cancelled) {
    /* the client asked us to stop: no answer at all (spec: SHOULD NOT) */
    log_msg(LOG_INFO, "call %.*s cancelled", (int)c->id_len, c->id);
  } else if (status == LUA_OK) {
    /* shaping touches the script's values (metamethods may raise): under a
       protected call on the finished coroutine; a failure takes back what
       was half written and answers an error instead */
    size_t mark = c->out->out.len;
    lua_pushcfunction(c->co, finish_entry);
    lua_insert(c->co, -nres - 1);
    e->running = c; /* the hook's limits hold while shaping */
    int shaped = app_pcall(c->co, nres, 0, NULL);
    e->running = NULL;
    if (shaped != LUA_OK) {
      c->out->out.len = mark;
      const char *msg = lua_tostring(c->co, -1);
      log_msg(LOG_ERROR, "shaping the result of call %.*s failed: %s", (int)c->id_len, c->id,
              msg ? msg : "(error)");
      call_failed(e, c, msg ? msg : "the handler's result cannot be sent");
    }
  } else {
    const char *msg;
    char tmp[200];
    if (status == LUA_ERRMEM) {
      snprintf(tmp, sizeof tmp, "the call ran out of memory (limit %zu MiB per call)",
               e->opt.call_memory >> 20);
      msg = tmp;
    } else {
      msg = lua_tostring(c->co, -1);
      if (!msg) msg = "(error object is not a string)";
    }
    luaL_traceback(a->L, c->co, msg, 0);
    log_msg(LOG_ERROR, "%s", lua_tostring(a->L, -1));
    lua_pop(a->L, 1);
    call_failed(e, c, msg);
  }
  call_end(e, c);
}

bool call_ask_client(call *c, const char *method, lua_State *L, int params_idx, char *err,
                     size_t errlen) {
  session *s = c->s;
  bool supported = strcmp(method, "sampling/createMessage") == 0   ? s->client_sampling
                   : strcmp(method, "elicitation/create") == 0     ? s->client_elicitation
                   : strcmp(method, "roots/list") == 0             ? s->client_roots
                                                                   : true;
  if (!supported) {
    snprintf(err, errlen, "the client does not support %s (it did not declare the capability)",
             method);
    return false;
  }
  buf b;
  buf_init(&b);
  uint64_t id = ++c->e->next_ask;
  buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"%s\",\"params\":",
             (unsigned long long)id, method);
  if (params_idx) {
    if (!json_encode(L, params_idx, &b, err, errlen)) {
      buf_free(&b);
      return false;
    }
  } else {
    buf_puts(&b, "{}");
  }
  buf_puts(&b, "}\n");
  buf_put(out_of(c->e, c->out), b.p, b.len);
  buf_free(&b);
  c->asked = id;
  c->wake_at = c->deadline; /* parked until the answer, or the deadline */
  arm(c);
  return true;
}

/* A response from the client: resume the call that asked, with the result
   (or nil and the error's message). */
static void answer_from_client(engine *e, inmsg *im) {
  char tmp[32];
  size_t n = im->m.id.n < sizeof tmp ? im->m.id.n : sizeof tmp - 1;
  memcpy(tmp, im->m.id.p, n);
  tmp[n] = '\0';
  char *end;
  unsigned long long id = strtoull(tmp, &end, 10);
  call *c = e->calls;
  while (c && !(c->asked == id && c->s == im->s && *end == '\0')) c = c->next;
  if (!c) {
    log_msg(LOG_DEBUG, "a response to no pending request (id %s): ignored", tmp);
    return;
  }
  c->asked = 0;
  c->wake_at = 0;
  uv_timer_stop(c->timer);
  lua_State *co = c->co;
  if (im->m.result.n) {
    json_decode(co, im->m.result.p, im->m.result.n, NULL);
    call_resume(e, c, 1);
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
  call_resume(e, c, 2);
}

bool call_detach(call *c) {
  if (!c->out->detach) return false;
  flush_outlet(c->out); /* what was said so far goes on the current response */
  c->out->detach(c->out);
  return true;
}

void call_sleep(call *c, double seconds) {
  c->wake_at = engine_now() + (seconds > 0 ? seconds : 0);
  arm(c);
}

void call_park(call *c, call_wait *w) {
  c->wait = w;
  c->wake_at = c->deadline;
  arm(c);
}

void call_wake(call *c, int nvalues) {
  c->wait = NULL;
  c->wake_at = 0;
  uv_timer_stop(c->timer);
  call_resume(c->e, c, nvalues);
}

const char *call_cannot_park(lua_State *L, call *c) {
  if (!c) return "only a handler can wait (not code run while the app loads)";
  if (L != c->co) return "a handler waits from its own coroutine, not from a coroutine it made";
  return NULL;
}

double call_time_left(const call *c) {
  double left = c->deadline - engine_now();
  return left > 1e-3 ? left : 1e-3;
}

uv_loop_t *call_loop(const call *c) { return &c->e->loop; }

void call_log(call *c, int level, const char *msg, size_t len) {
  engine *e = c->e;
  /* mirrored on stderr from warning up (everything with --log-level debug):
     a line per info message would cost more than the call */
  if (level >= LOG_WARNING || log_threshold() == LOG_DEBUG)
    log_msg(level, "%s: %.*s", c->a->reg->name, (int)len, msg);
  if (level < c->s->log_level || c->out->dead) return;
  buf p;
  buf_init(&p);
  buf_printf(&p, "{\"level\":\"%s\",\"logger\":", log_level_name(level));
  json_encode_string(&p, c->a->reg->name, strlen(c->a->reg->name));
  buf_puts(&p, ",\"data\":");
  json_encode_string(&p, msg, len);
  buf_putc(&p, '}');
  jsonrpc_write_notification(out_of(e, c->out), "notifications/message", p.p, p.len);
  buf_free(&p);
  /* not flushed here: the loop flushes after the handler returns or parks,
     and the hook every HOOK_INPUT_INTERVAL while it runs */
}

bool call_progress(call *c, double progress, double total, const char *message) {
  if (!c->ptoken) return false;
  if (c->sent_progress && !(progress > c->last_progress)) {
    log_msg(LOG_WARNING, "ctx:progress(%g) dropped: progress must increase (last %g)", progress,
            c->last_progress);
    return true;
  }
  c->sent_progress = true;
  c->last_progress = progress;
  buf p;
  buf_init(&p);
  buf_puts(&p, "{\"progressToken\":");
  buf_put(&p, c->ptoken, c->ptoken_len);
  buf_puts(&p, ",\"progress\":");
  json_encode_double(&p, progress);
  if (!isnan(total)) {
    buf_puts(&p, ",\"total\":");
    json_encode_double(&p, total);
  }
  if (message) {
    buf_puts(&p, ",\"message\":");
    json_encode_string(&p, message, strlen(message));
  }
  buf_putc(&p, '}');
  jsonrpc_write_notification(out_of(c->e, c->out), "notifications/progress", p.p, p.len);
  buf_free(&p);
  return true;
}

/* }====================================================== */

static void untrack(engine *e, session *s) {
  for (size_t i = 0; i < e->nsessions; i++)
    if (e->sessions[i] == s) {
      e->sessions[i] = e->sessions[--e->nsessions];
      session_unref(s);
      return;
    }
}

/* The transport ended the session: drop its calls (no answers), close its
   standalone stream, forget it. */
static void end_session(engine *e, session *s) {
  call *next;
  for (call *c = e->calls; c; c = next) {
    next = c->next;
    if (c->s == s && c != e->running) call_end(e, c);
  }
  if (s->standalone) {
    outlet *o = s->standalone;
    s->standalone = NULL;
    request_done(e, o);
  }
  untrack(e, s);
}

static void attach(engine *e, session *s, outlet *stream) {
  outlet *old = s->standalone;
  s->standalone = stream;
  if (old) request_done(e, old);
}

static void dispatch_unprotected(engine *e, inmsg *im);

static int dispatch_entry(lua_State *L) {
  dispatch_unprotected(lua_touserdata(L, 1), lua_touserdata(L, 2));
  return 0;
}

/* One protected entry per message: a Lua error raised while C handles it
   (on the main thread or a call's coroutine: Lua hands errors of a thread
   without a handler to the main thread's) answers -32603 instead of
   aborting. The known places use raw access; this is the net under them. */
static void dispatch(engine *e, inmsg *im) {
  lua_State *L = e->app->L;
  size_t mark = im->reply ? im->reply->out.len : 0;
  e->new_call = NULL;
  lua_pushcfunction(L, dispatch_entry);
  lua_pushlightuserdata(L, e);
  lua_pushlightuserdata(L, im);
  if (lua_pcall(L, 2, 0, 0) == LUA_OK) return;
  const char *msg = lua_tostring(L, -1);
  log_msg(LOG_ERROR, "internal error handling a message: %s", msg ? msg : "(error)");
  call *c = e->new_call;
  if (c) { /* started but not yet running: answer through it */
    c->out->out.len = mark;
    call_failed(e, c, msg ? msg : "internal error");
    call_end(e, c);
  } else if (im->reply && im->m.kind == JSONRPC_REQUEST) {
    im->reply->out.len = mark;
    jsonrpc_write_error(out_of(e, im->reply), im->m.id, JSONRPC_INTERNAL_ERROR,
                        msg ? msg : "internal error", NULL);
    if (im->reply != im->s->standalone) request_done(e, im->reply);
  }
  lua_pop(L, 1);
}

static void dispatch_unprotected(engine *e, inmsg *im) {
  if (im->type == MSG_END_SESSION) {
    end_session(e, im->s);
    return;
  }
  if (im->type == MSG_ATTACH) {
    if (atomic_load(&im->s->ended)) request_done(e, im->reply);
    else attach(e, im->s, im->reply);
    return;
  }
  switch (im->m.kind) {
    case JSONRPC_REQUEST: {
      size_t before = e->calls_started;
      if (atomic_load(&im->s->ended)) { /* raced with DELETE: answer nothing */
        request_done(e, im->reply);
        break;
      }
      if (jsonrpc_method_is(&im->m, "ping")) answered_at_once(&im->m, out_of(e, im->reply));
      else methods_handle_request(e, im);
      /* answered already, unless a call now runs (it finishes the outlet) */
      if (e->calls_started == before && im->reply != im->s->standalone) request_done(e, im->reply);
      break;
    }
    case JSONRPC_NOTIFICATION:
      if (jsonrpc_method_is(&im->m, "notifications/initialized")) im->s->ready = true;
      break;
    case JSONRPC_INVALID:
      if (im->reply) {
        answered_at_once(&im->m, out_of(e, im->reply));
        if (im->reply != im->s->standalone) request_done(e, im->reply);
      }
      break;
    case JSONRPC_RESPONSE:
      answer_from_client(e, im);
      break;
    default:
      break;
  }
}

/* }====================================================== */

void engine_request_reload(engine *e) {
  atomic_store(&e->reload_asked, true);
  wake(e);
}

/* {====================================================== the loop */

/* Mark the calls a cancellation names; parked ones are ended by reap(). */
static void mark_cancelled(engine *e, session *s, json_span id) {
  cancel_req r = {.s = s, .id = (char *)id.p, .id_len = id.n};
  for (call *c = e->calls; c; c = c->next)
    if (same_id(c, &r)) c->cancelled = true;
}

static void apply_cancels(engine *e) {
  pthread_mutex_lock(&e->lock);
  cancel_req *list = e->cancels;
  e->cancels = NULL;
  atomic_store(&e->interrupt, false);
  pthread_mutex_unlock(&e->lock);
  while (list) {
    cancel_req *r = list;
    list = r->next;
    mark_cancelled(e, r->s, (json_span){r->id, r->id_len});
    session_unref(r->s);
    free(r->id);
    free(r);
  }
}

/* End the parked calls whose client cancelled them: no answer is sent. */
static void reap(engine *e) {
  call *next;
  for (call *c = e->calls; c; c = next) {
    next = c->next;
    if (c->cancelled && c != e->running) {
      log_msg(LOG_INFO, "call %.*s cancelled", (int)c->id_len, c->id);
      call_end(e, c);
    }
  }
}

void engine_accept(engine *e, session *s, const char *p, size_t n) {
  inmsg im = {.type = MSG_RPC, .s = s, .reply = s->standalone, .data = (char *)p, .len = n};
  jsonrpc_parse(p, n, &im.m);
  if (answered_at_once(&im.m, out_of(e, s->standalone))) return;
  if (is_cancel(&im.m)) {
    json_span id;
    if (im.m.params.n && json_object_get(im.m.params, "requestId", &id)) mark_cancelled(e, s, id);
    return;
  }
  if (!e->running) {
    dispatch(e, &im);
    return;
  }
  /* a handler is running (we are in its hook): keep the message for later */
  char *data = malloc(n + 1);
  memcpy(data, p, n);
  data[n] = '\0';
  inmsg *copy = inmsg_new(MSG_RPC, s, s->standalone, data, n);
  jsonrpc_parse(copy->data, n, &copy->m);
  if (e->ndeferred == e->deferred_cap) {
    e->deferred_cap = e->deferred_cap ? e->deferred_cap * 2 : 16;
    e->deferred = realloc(e->deferred, e->deferred_cap * sizeof *e->deferred);
  }
  e->deferred[e->ndeferred++] = copy;
}


/* {====== inputs: fds the engine reads itself (stdio) */

static void on_input_ready(uv_poll_t *h, int status, int events) {
  (void)status, (void)events;
  struct engine_input *in = h->data;
  in->fn(in->ctx);
}

static void on_input_idle(uv_idle_t *h) {
  struct engine_input *in = h->data;
  in->fn(in->ctx);
}

void engine_add_input(engine *e, int fd, engine_input_fn fn, void *ctx) {
  if (e->ninputs == MAX_INPUTS) abort(); /* a programming error, not input */
  struct engine_input *in = &e->inputs[e->ninputs];
  *in = (struct engine_input){.fd = fd, .fn = fn, .ctx = ctx};
  in->poll = malloc(sizeof *in->poll);
  if (uv_poll_init(&e->loop, in->poll, fd) == 0) {
    uv_poll_start(in->poll, UV_READABLE, on_input_ready);
  } else { /* a regular file (epoll refuses it): always readable */
    free(in->poll);
    in->poll = NULL;
    in->idle = malloc(sizeof *in->idle);
    uv_idle_init(&e->loop, in->idle);
    uv_idle_start(in->idle, on_input_idle);
  }
  e->ninputs++;
  /* the handle's data points into inputs[]: set it after any move */
  for (size_t i = 0; i < e->ninputs; i++) {
    if (e->inputs[i].poll) e->inputs[i].poll->data = &e->inputs[i];
    if (e->inputs[i].idle) e->inputs[i].idle->data = &e->inputs[i];
  }
}

void engine_remove_input(engine *e, int fd) {
  for (size_t i = 0; i < e->ninputs; i++) {
    if (e->inputs[i].fd != fd) continue;
    if (e->inputs[i].poll) uv_close((uv_handle_t *)e->inputs[i].poll, free_handle);
    if (e->inputs[i].idle) uv_close((uv_handle_t *)e->inputs[i].idle, free_handle);
    e->inputs[i] = e->inputs[--e->ninputs];
    if (i < e->ninputs) {
      if (e->inputs[i].poll) e->inputs[i].poll->data = &e->inputs[i];
      if (e->inputs[i].idle) e->inputs[i].idle->data = &e->inputs[i];
    }
    return;
  }
}

/* From the count hook, while a handler runs: read whatever input is ready
   now (ping and notifications/cancelled are seen), without the loop —
   the loop's callbacks may not run inside a handler. */
static void poll_inputs(engine *e) {
  struct pollfd fds[MAX_INPUTS];
  size_t n = e->ninputs;
  for (size_t i = 0; i < n; i++) fds[i] = (struct pollfd){.fd = e->inputs[i].fd, .events = POLLIN};
  if (n == 0 || poll(fds, n, 0) <= 0) return;
  /* handlers may remove their input: look each fd up again */
  for (size_t k = 0; k < n; k++) {
    if (!fds[k].revents) continue;
    for (size_t i = 0; i < e->ninputs; i++)
      if (e->inputs[i].fd == fds[k].fd) {
        e->inputs[i].fn(e->inputs[i].ctx);
        break;
      }
  }
}

/* }====== */

/* A client that pipelines usually sends its next message within a few
   microseconds of our reply; checking for it briefly before sleeping saves
   the wake-up (measured: most of a request's latency at one in flight). */
#define SPIN_SECONDS 50e-6

/* Sleep until the loop has work (its backend fd is readable) or
   timeout_ms passes (-1: no limit), without e->run: other threads answer
   their own messages meanwhile. */
static void wait_for_loop(engine *e, int timeout_ms) {
  struct pollfd p = {.fd = uv_backend_fd(&e->loop), .events = POLLIN};
  pthread_mutex_unlock(&e->run);
  /* a message queued while we held e->run: its sender left it to us */
  if (!queue_empty(e)) timeout_ms = 0;
  if (timeout_ms != 0) {
    double until = engine_now() + SPIN_SECONDS;
    do {
      if (poll(&p, 1, 0) > 0) {
        timeout_ms = 0;
        break;
      }
    } while (engine_now() < until);
  }
  if (timeout_ms != 0) poll(&p, 1, timeout_ms);
  pthread_mutex_lock(&e->run);
}

/* One round of the engine's work: the queued messages, then cancels, a
   reload asked by signal, and the batched output. e->run held. Returns
   whether the engine is finishing. */
static bool work_round(engine *e) {
  bool finishing;
  dispatch_batch(e, take(e, NULL, &finishing));
  for (size_t i = 0; i < e->ndeferred; i++) { /* may grow (and move) while we go */
    dispatch(e, e->deferred[i]);
    inmsg_free(e->deferred[i]);
  }
  e->ndeferred = 0;
  apply_cancels(e); /* after the dispatch: a cancel may name a call it just started */
  reap(e);
  if (atomic_exchange(&e->reload_asked, false)) {
    uv_timer_stop(&e->reload_timer);
    e->reload_at = 0;
    engine_reload_now(e);
  }
  flush_all(e);
  return finishing;
}

static void on_reload_timer(uv_timer_t *t) {
  engine *e = t->data;
  e->reload_at = 0;
  engine_reload_now(e);
}

void engine_reload_at(engine *e, double at) {
  e->reload_at = at;
  uv_update_time(&e->loop);
  double ms = ceil((at - engine_now()) * 1000.0);
  uv_timer_start(&e->reload_timer, on_reload_timer, ms > 0 ? (uint64_t)ms : 0, 0);
}

void engine_run(engine *e) {
  pthread_mutex_lock(&e->run);
  for (;;) {
    uv_run(&e->loop, UV_RUN_NOWAIT); /* due timers and ready I/O: parked calls resume */
    bool finishing = work_round(e);
    if (finishing && e->ncalls == 0) break;
    if (finishing && e->finish_deadline == 0)
      e->finish_deadline = engine_now() + e->opt.shutdown_grace;
    if (finishing && engine_now() >= e->finish_deadline) { /* grace is over */
      log_msg(LOG_WARNING, "shutting down: dropping %zu call(s) still running", e->ncalls);
      while (e->calls) call_end(e, e->calls);
      continue;
    }
    if (finishing) /* stop taking input; finish what runs */
      while (e->ninputs) engine_remove_input(e, e->inputs[0].fd);
    int timeout = uv_backend_timeout(&e->loop);
    if (finishing) {
      int ms = (int)ceil((e->finish_deadline - engine_now()) * 1000.0);
      if (ms < 0) ms = 0;
      if (timeout < 0 || ms < timeout) timeout = ms;
    }
    /* read by a call resumed above, not yet dispatched; or handles started
       since the loop polled (registered by its next pass) */
    if (e->ndeferred || e->loop.watcher_queue[0] != (void *)&e->loop.watcher_queue) timeout = 0;
    e->sleep_until = timeout < 0 ? 0 : uv_now(&e->loop) + (uint64_t)timeout;
    wait_for_loop(e, timeout);
  }
  pthread_mutex_unlock(&e->run);
}

/* }====================================================== */
