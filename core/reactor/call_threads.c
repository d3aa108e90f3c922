/* call_threads.c — light threads of a call (mcp.spawn, mcp.all): more
 * coroutines of one handler call, so it waits on several things at once.
 *
 * A thread is a coroutine of the call (its extra space names the call, its
 * count hook is the call's): the call's deadline, cancellation and memory
 * cap hold for it as for the handler. mcp.spawn runs it at once, inside
 * the spawner, until it first waits or ends (as OpenResty's
 * ngx.thread.spawn does); its wait parks it alone (call_park records whose
 * wait it is), and the wait's end resumes it from the loop, as the
 * handler's own coroutine is resumed. A waiter (h:wait(), mcp.all) parks
 * on a join, which the end of the thread it waits for wakes.
 *
 * No thread outlives its call: the call's end (the handler returned or
 * failed, a timeout, a cancel, the session gone) aborts every thread's
 * wait and closes its <close> variables (call_threads_end). A thread that
 * fails of the call's limits (its deadline, a cancel, the memory cap) ends
 * the whole call. */
#include "engine_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"

#define THREAD_TYPE "mcp.thread"

enum { STRAND_RUN, STRAND_DONE, STRAND_FAILED, STRAND_STOPPED };

/* A waiter's park: until one of its targets ends (h:wait()), or all did or
   one failed (mcp.all). Lives in a userdata on the waiter's stack. */
typedef struct join {
  call_wait w;
  bool all;
  strand *woke; /* the target whose end woke it */
  int n;
  strand *targets[];
} join;

/* {====== ends */

static void uncount(strand *s) {
  if (s->waiting) metric_gauge_add(s->waiting, -1);
  s->waiting = NULL;
}

static void unlink_join(join *j) {
  for (int i = 0; i < j->n; i++)
    if (j->targets[i]->waiter == j) j->targets[i]->waiter = NULL;
}

static void join_abort(call_wait *w) { unlink_join((join *)w); }

/* s ended (done, failed): the join of whoever waits for it, if that was
   all it waited for (unlinked from its targets), or NULL. */
static join *ready_waiter(strand *s) {
  join *j = s->waiter;
  if (!j) return NULL;
  if (j->all && s->state == STRAND_DONE)
    for (int i = 0; i < j->n; i++)
      if (j->targets[i]->state == STRAND_RUN) return NULL;
  unlink_join(j);
  j->woke = s;
  return j;
}

/* A thread's error object as text for a log line (no allocation on co). */
static const char *error_text(lua_State *co) {
  return lua_type(co, -1) == LUA_TSTRING ? lua_tostring(co, -1) : "(error object is not a string)";
}

/* What a resume of s left: parked, done (its results stay on its stack
   for the waits), or failed (its error on top). */
static void settle(call *c, strand *s, int status, int nres) {
  if (status == LUA_YIELD) {
    if (s->wait) return; /* parked */
    lua_pop(s->co, nres);
    s->bad_yield = true; /* nothing is pushed on co here: it is not running (unprotected) */
    s->state = STRAND_FAILED;
    return;
  }
  if (status == LUA_OK) {
    s->state = STRAND_DONE;
    s->nres = nres;
    return;
  }
  if (status == LUA_ERRMEM) c->oom = true;
  s->state = STRAND_FAILED;
}

/* A thread failed of the call's limits: the call ends as a whole. */
static bool call_over(engine *e, call *c, strand *s) {
  if (s->state != STRAND_FAILED) return false;
  if (c->cancelled) {
    log_msg(LOG_INFO, "call %.*s cancelled", (int)c->id_len, c->id);
    call_end(e, c);
    return true;
  }
  if (c->timed_out) {
    char msg[TIMEOUT_MSG_MAX];
    call_timeout_message(c, msg);
    call_fail(e, c, msg);
    return true;
  }
  if (c->oom) {
    buf msg;
    buf_init(&msg);
    call_script_position(s->co, &msg);
    buf_printf(&msg, "the call ran out of memory (limit %zu MiB per call)", e->opt.call_memory >> 20);
    buf_putc(&msg, '\0');
    call_fail(e, c, msg.p);
    buf_free(&msg);
    return true;
  }
  return false;
}

/* A loop, not a recursion: a thread whose end wakes a thread whose end
   wakes another (a chain of h:wait()) runs here one after the other, on
   one C frame. Waking the handler ends it (call_start may end the call:
   nothing of c or s is touched after). */
void call_threads_wake(engine *e, call *c, strand *s, int nvalues) {
  for (;;) {
    uncount(s);
    s->wait = NULL;
    strand *outer = c->cur;
    c->cur = s;
    int nres = 0;
    int status = call_resume(e, c, s->co, nvalues, &nres);
    c->cur = outer;
    settle(c, s, status, nres);
    if (s->state == STRAND_RUN || call_over(e, c, s)) return;
    join *j = ready_waiter(s);
    if (!j) return;
    if (!j->w.strand) {
      call_wake(c, 0); /* the handler waited for it */
      return;
    }
    s = j->w.strand;
    nvalues = 0;
  }
}

/* Close s's pending <close> variables (a parked thread, or one that failed
   of its own error), as the call, within the ended call's grace. */
static void close_thread(engine *e, call *c, strand *s, bool ending) {
  int status = lua_status(s->co);
  if (status == LUA_OK) return; /* ended, or running (it resumed the one that runs) */
  if (status != LUA_YIELD && (c->cancelled || c->timed_out)) return; /* hooks off: unbounded */
  call *outer = e->running;
  strand *cur = c->cur;
  c->cur = NULL; /* a __close may not wait */
  if (ending && c->close_by <= 0) c->close_by = clock_now() + CLOSE_GRACE;
  lua_sethook(s->co, call_count_hook, LUA_MASKCOUNT, HOOK_COUNT);
  e->running = c;
  int r = lua_resetthread(s->co);
  e->running = outer;
  c->cur = cur;
  if (r != LUA_OK && status == LUA_YIELD)
    log_msg(LOG_WARNING, "call %.*s: a __close of a thread's <close> variables failed: %s",
            (int)c->id_len, c->id, error_text(s->co));
  lua_settop(s->co, 0);
}

/* Stop a running thread: its wait aborted, its <close> variables closed. */
static void stop(engine *e, call *c, strand *s) {
  if (s->state != STRAND_RUN) return;
  s->state = STRAND_STOPPED;
  if (s->wait) {
    call_wait *w = s->wait;
    s->wait = NULL;
    uncount(s);
    w->abort(w);
  }
  close_thread(e, c, s, false);
}

void call_threads_end(engine *e, call *c) {
  strand *list = c->threads;
  c->threads = NULL;
  int running = 0;
  /* every wait first: no transfer, child or socket outlives the call, even
     if a __close below runs long */
  for (strand *s = list; s; s = s->next) {
    if (s->state == STRAND_RUN) running++;
    if (s->wait) {
      call_wait *w = s->wait;
      s->wait = NULL;
      uncount(s);
      w->abort(w);
    }
    if (s->state == STRAND_FAILED && !s->seen && !c->cancelled && !c->timed_out)
      log_msg(LOG_WARNING, "call %.*s: a thread failed and nothing waited for it: %s", (int)c->id_len,
              c->id, s->bad_yield ? "it yielded" : error_text(s->co));
  }
  if (running)
    log_msg(LOG_DEBUG, "call %.*s ended: %d thread(s) stopped", (int)c->id_len, c->id, running);
  lua_State *L = c->v->L;
  for (strand *s = list, *next; s; s = next) {
    next = s->next;
    if (s->state == STRAND_RUN || s->state == STRAND_FAILED) {
      s->state = STRAND_STOPPED;
      close_thread(e, c, s, true);
    }
    *(call **)lua_getextraspace(s->co) = NULL;
    s->c = NULL;
    s->co = NULL;
    s->waiter = NULL;
    luaL_unref(L, LUA_REGISTRYINDEX, s->co_ref);
    luaL_unref(L, LUA_REGISTRYINDEX, s->handle_ref); /* last: s lives in it */
  }
}

/* }====== */

/* {====== the Lua side */

static strand *check_handle(lua_State *L, int idx) {
  strand *s = luaL_checkudata(L, idx, THREAD_TYPE);
  if (!s->c) luaL_error(L, "mcp.spawn: this thread's call has ended");
  return s;
}

/* The call running L, which may start and wait for threads here. */
static call *waiting_call(lua_State *L, const char *fname) {
  call *c = call_current(L);
  const char *why = call_cannot_park(L, c);
  if (why) luaL_error(L, "%s: %s", fname, why);
  if (!lua_isyieldable(L))
    luaL_error(L, "%s: cannot wait here (inside a C function such as a metamethod or a "
               "string.gsub callback)", fname);
  if (c->close_by > 0) luaL_error(L, "%s: the call is ending", fname);
  return c;
}

static int handle_tostring(lua_State *L) {
  strand *s = luaL_checkudata(L, 1, THREAD_TYPE);
  static const char *const names[] = {"running", "done", "failed", "stopped"};
  lua_pushfstring(L, "mcp.thread (%s)", s->c ? names[s->state] : "ended with its call");
  return 1;
}

/* A new thread of c on L's stack (its handle), fn at idx and the nargs
   values above it moved onto its coroutine, run until it first waits. */
static strand *spawn(lua_State *L, call *c, int nargs) {
  engine *e = c->e;
  luaL_checkstack(L, 4, NULL);
  strand *s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  if (luaL_getmetatable(L, THREAD_TYPE) == LUA_TNIL) {
    lua_pop(L, 1);
    call_threads_metatable(L);
    luaL_getmetatable(L, THREAD_TYPE);
  }
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  s->handle_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  s->co = lua_newthread(L);
  s->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  s->c = c;
  *(call **)lua_getextraspace(s->co) = c;
  lua_sethook(s->co, call_count_hook, LUA_MASKCOUNT, HOOK_COUNT);
  s->next = c->threads;
  c->threads = s;
  lua_insert(L, -(nargs + 2)); /* the handle below fn and its arguments */
  lua_xmove(L, s->co, nargs + 1);
  strand *outer = c->cur;
  c->cur = s;
  watchdog_begin(e, c); /* the watchdog watches the coroutine that runs */
  int nres = 0;
  int status = lua_resume(s->co, L, nargs, &nres);
  c->cur = outer;
  watchdog_begin(e, c);
  settle(c, s, status, nres);
  if (c->oom) luaL_error(L, "not enough memory"); /* the call fails of it (call_start) */
  return s;
}

/* mcp.spawn(fn, ...) -> handle: fn(...) runs as a thread of the call. */
static int l_spawn(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  call *c = waiting_call(L, "mcp.spawn");
  spawn(L, c, lua_gettop(L) - 1);
  return 1;
}

/* Copy the value at idx of s's (stopped) stack onto L's top. */
static void copy_from(lua_State *L, strand *s, int idx) {
  if (!lua_checkstack(s->co, 1)) luaL_error(L, "mcp.spawn: out of stack"); /* never raises on co */
  lua_pushvalue(s->co, idx);
  lua_xmove(s->co, L, 1);
}

/* A thread's outcome at its waiter: its results (copies: a handle may be
   waited for again), or its error raised again as it was — a string that
   names no position gets the thread's (its stack is still there). */
static int outcome(lua_State *L, strand *s) {
  s->seen = true;
  if (s->state == STRAND_DONE) {
    luaL_checkstack(L, s->nres, "mcp.spawn: too many results");
    for (int i = 0; i < s->nres; i++) copy_from(L, s, -s->nres + i);
    return s->nres;
  }
  if (s->state == STRAND_STOPPED) return luaL_error(L, "mcp.spawn: the thread was stopped");
  if (s->bad_yield) {
    buf where;
    buf_init(&where);
    call_script_position(s->co, &where);
    lua_pushlstring(L, where.p ? where.p : "", where.len);
    buf_free(&where);
    lua_pushliteral(L, "mcp.spawn: a thread may only yield by waiting (mcp.http, h:wait(), ...)");
    lua_concat(L, 2);
    return lua_error(L);
  }
  copy_from(L, s, -1);
  size_t n;
  const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
  if (msg && !call_has_position(msg, n)) {
    buf where;
    buf_init(&where);
    call_script_position(s->co, &where);
    lua_pushlstring(L, where.p ? where.p : "", where.len);
    buf_free(&where);
    lua_insert(L, -2);
    lua_concat(L, 2);
  }
  return lua_error(L);
}

static join *new_join(lua_State *L, int n, bool all) {
  join *j = lua_newuserdatauv(L, sizeof *j + (size_t)n * sizeof(strand *), 0);
  memset(j, 0, sizeof *j);
  j->w.abort = join_abort;
  j->w.what = "mcp.thread";
  j->all = all;
  return j;
}

static int wait_done(lua_State *L, int status, lua_KContext k) {
  (void)status, (void)k;
  strand *s = check_handle(L, 1);
  return outcome(L, s);
}

/* h:wait() -> the thread's results, or its error raised here. */
static int l_wait(lua_State *L) {
  strand *s = check_handle(L, 1);
  if (s->c != call_current(L)) return luaL_error(L, "h:wait: the thread belongs to another call");
  if (s->state != STRAND_RUN) return outcome(L, s);
  call *c = waiting_call(L, "h:wait");
  if (L == s->co) return luaL_error(L, "h:wait: a thread cannot wait for itself");
  if (s->waiter) return luaL_error(L, "h:wait: something else waits for this thread already");
  lua_settop(L, 1);
  join *j = new_join(L, 1, false);
  j->targets[j->n++] = s;
  s->waiter = j;
  call_park(c, &j->w);
  return lua_yieldk(L, 0, 0, wait_done);
}

/* mcp.all's failure: the others stop, its error is raised. Stack: 1 the
   functions, 2 the join, 3.. the handles. */
static int all_failed(lua_State *L, join *j, strand *failed) {
  call *c = failed->c;
  for (int i = 0; i < j->n; i++) stop(c->e, c, j->targets[i]);
  return outcome(L, failed);
}

/* Every thread done: the first result of each, in order. */
static int all_results(lua_State *L, join *j) {
  luaL_checkstack(L, j->n, NULL);
  for (int i = 0; i < j->n; i++) {
    strand *s = j->targets[i];
    s->seen = true;
    if (s->nres > 0) {
      lua_pushvalue(s->co, -s->nres);
      lua_xmove(s->co, L, 1);
    } else {
      lua_pushnil(L);
    }
  }
  return j->n;
}

static int all_done(lua_State *L, int status, lua_KContext k) {
  (void)status, (void)k;
  join *j = lua_touserdata(L, 2);
  if (j->woke && j->woke->state != STRAND_DONE) return all_failed(L, j, j->woke);
  for (int i = 0; i < j->n; i++) /* woken by the last to end */
    if (j->targets[i]->state != STRAND_DONE) return all_failed(L, j, j->targets[i]);
  return all_results(L, j);
}

/* mcp.all{ f, g, ... } -> f's first result, g's, ...: each function a
   thread of the call, all at once; the first to fail stops the others and
   its error is raised here. */
static int l_all(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  call *c = waiting_call(L, "mcp.all");
  lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
  if (n > 10000) return luaL_error(L, "mcp.all: %I functions, at most 10000", n);
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_rawgeti(L, 1, i) != LUA_TFUNCTION)
      return luaL_error(L, "mcp.all: item %I is a %s, not a function", i, luaL_typename(L, -1));
    lua_pop(L, 1);
  }
  join *j = new_join(L, (int)n, true);
  luaL_checkstack(L, (int)n + 4, NULL);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    strand *s = spawn(L, c, 0);
    j->targets[j->n++] = s;
    if (s->state == STRAND_FAILED) return all_failed(L, j, s);
  }
  bool pending = false;
  for (int i = 0; i < j->n; i++)
    if (j->targets[i]->state == STRAND_RUN) j->targets[i]->waiter = j, pending = true;
  if (!pending) return all_results(L, j);
  call_park(c, &j->w);
  return lua_yieldk(L, 0, 0, all_done);
}

/* {=== ctx:sleep in a thread: a timer of its own (the call's timer is the
   handler's) */
typedef struct nap {
  call_wait w;
  uv_timer_t t;
} nap;

static void nap_closed(uv_handle_t *h) { free(h->data); }

static void nap_over(uv_timer_t *t) {
  nap *n = t->data;
  uv_close((uv_handle_t *)&n->t, nap_closed); /* freed on the loop's next turn */
  call_wake_wait(&n->w, 0);
}

static void nap_abort(call_wait *w) {
  nap *n = (nap *)w;
  uv_timer_stop(&n->t);
  uv_close((uv_handle_t *)&n->t, nap_closed);
}

static int nap_done(lua_State *L, int status, lua_KContext k) {
  (void)L, (void)status, (void)k;
  return 0;
}

int call_threads_sleep(lua_State *L, call *c, double seconds) {
  nap *n = calloc(1, sizeof *n);
  if (!n) return luaL_error(L, "ctx:sleep: out of memory");
  n->w.abort = nap_abort;
  n->w.what = "sleep";
  uv_timer_init(call_loop(c), &n->t);
  n->t.data = n;
  double ms = seconds > 0 ? seconds * 1000.0 : 0;
  if (ms > 1e12) ms = 1e12; /* the call's deadline comes first anyway */
  uv_update_time(call_loop(c));
  uv_timer_start(&n->t, nap_over, (uint64_t)ms, 0);
  call_park(c, &n->w);
  return lua_yieldk(L, 0, 0, nap_done);
}
/* }=== */

void call_threads_metatable(lua_State *L) {
  if (luaL_newmetatable(L, THREAD_TYPE)) {
    lua_newtable(L);
    lua_pushcfunction(L, l_wait);
    lua_setfield(L, -2, "wait");
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, handle_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
}

/* Only two light functions at load: the handle's metatable is made by the
   first mcp.spawn (or by luamcp test, call_threads_metatable), so an app
   that never spawns holds nothing more (bench/callgrind.sh: the heap's
   make-up moves a call's GC share). */
void call_threads_register(lua_State *L) {
  lua_pushcfunction(L, l_spawn);
  lua_setfield(L, -2, "spawn");
  lua_pushcfunction(L, l_all);
  lua_setfield(L, -2, "all");
}

/* }====== */
