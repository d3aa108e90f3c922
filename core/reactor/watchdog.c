/* watchdog.c — a handler that holds the engine where the count hook does
 * not reach (a blocking C call, a __gc finalizer): reported with its
 * script line, and past every limit the process ends (engine.h). */
#include "engine_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"

/* Where the stalled handler is: the first Lua function from `level` up
   (file:line), and the name of the C function at level 0 when it is one. */
static void blocked_report(engine *e, call *c, lua_State *L, double seconds, bool in_c) {
  lua_Debug ar;
  char where[256] = "", what[96] = "a C function";
  if (in_c && lua_getstack(L, 0, &ar) && lua_getinfo(L, "nS", &ar) && ar.what[0] == 'C' && ar.name)
    snprintf(what, sizeof what, "%s%s'%s'", ar.namewhat, ar.namewhat[0] ? " " : "", ar.name);
  for (int level = in_c ? 1 : 0; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    snprintf(where, sizeof where, "%s:%d: ", ar.short_src, ar.currentline);
    break;
  }
  char msg[512];
  snprintf(msg, sizeof msg,
           "%s%s blocked the server for %.0f ms (no other request was served meanwhile); "
           "mcp.exec, mcp.http and mcp.socket wait without blocking",
           where, what, seconds * 1000);
  e->h.blocked(e->h.ud, c, msg);
}

/* Armed by the watchdog on a stalled coroutine: the first event after the
   blocking C function returns (its return, or an instruction). */
static void blocked_hook(lua_State *L, lua_Debug *ar) {
  call *c = call_current(L);
  lua_sethook(L, call_count_hook, LUA_MASKCOUNT, HOOK_COUNT);
  if (!c) return;
  engine *e = c->e;
  double since = (double)atomic_exchange(&e->blocked_since, 0) * 1e-6;
  if (since > 0) blocked_report(e, c, L, clock_now() - since, ar->event == LUA_HOOKRET);
  call_count_hook(L, ar);
}

/* Where the watchdog's thread finds L: "file:line: " of its innermost Lua
   frame, and whether that frame runs as a __gc finalizer. It reads a state
   another thread owns, so only once the heartbeat has stood still for a
   whole check: the engine thread is stuck (in a C call, or in Lua code
   that runs without hooks), its stack is not being changed under us. */
static bool stuck_where(lua_State *L, char *where, size_t cap, bool *lua_at_top, bool *in_gc) {
  lua_Debug ar;
  *where = '\0';
  *lua_at_top = *in_gc = false;
  if (!L || !lua_getstack(L, 0, &ar) || !lua_getinfo(L, "S", &ar)) return false;
  *lua_at_top = ar.what[0] != 'C';
  for (int level = 0; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sln", &ar)) break;
    if (ar.name && strcmp(ar.name, "__gc") == 0) *in_gc = true;
    if (!*where && ar.currentline > 0) snprintf(where, cap, "%s:%d: ", ar.short_src, ar.currentline);
    if (*where && (*in_gc || level > 8)) break;
  }
  return true;
}

/* A stall that began at `still`: which limit it has outlived, if any. */
static const char *past_every_limit(engine *e, double still, double limit, double now) {
  if (now - still < 1) return NULL; /* a stall, not a slow check */
  if (limit > 0 && now - still >= limit) return "past --restart-on-stall";
  double asked = (double)atomic_load(&e->finish_asked) * 1e-6;
  if (asked > 0 && now >= asked + e->opt.shutdown_grace + 1)
    return "past --shutdown-grace after the signal to stop";
  double until = (double)atomic_load(&e->watched_until) * 1e-6;
  if (until <= 0 || atomic_load(&e->watched) == NULL) until = still + e->opt.call_timeout;
  if (now >= until + e->opt.shutdown_grace)
    return "in code no time limit can stop (a C function or a __gc finalizer), past its "
           "--timeout and a further --shutdown-grace";
  return NULL;
}

static void *watchdog_main(void *arg) {
  engine *e = arg;
  double warn = e->opt.warn_blocking, limit = e->opt.stalled ? e->opt.stall_limit : 0;
  double every = 1;
  if (warn > 0 && warn / 4 < every) every = warn / 4;
  if (limit > 0 && limit / 4 < every) every = limit / 4;
  if (every < 0.01) every = 0.01;
  /* a stall: the run lock held and the heartbeat (hooks, resumes, lock
     hand-overs) unchanged since `still` (first seen then, so at most
     `every` late); `armed`: when blocked_hook was set on the coroutine */
  uint_fast64_t last = 0;
  double still = 0, armed = 0;
  bool told = false; /* the hookless-Lua report of this stall is out */
  pthread_mutex_lock(&e->watch_mu);
  while (!e->watch_stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + every;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&e->watch_cv, &e->watch_mu, &ts);
    lua_State *L = atomic_load(&e->watched);
    uint_fast64_t beat = atomic_load_explicit(&e->heartbeat, memory_order_relaxed);
    double now = clock_now();
    if (!atomic_load(&e->held) || beat != last) {
      last = beat;
      still = now, armed = 0, told = false;
      continue;
    }
    char where[256];
    bool lua_top, in_gc;
    const char *why = e->opt.stalled ? past_every_limit(e, still, limit, now) : NULL;
    if (why) { /* ends the process (engine.h) */
      stuck_where(L, where, sizeof where, &lua_top, &in_gc);
      e->opt.stalled(now - still, where, why);
      still = now; /* it came back: a new stall from here */
      continue;
    }
    if (!L || warn <= 0) continue;
    if (armed > 0) {
      /* set a check ago and not run: the coroutine is in a C call, or in
         Lua code that runs without hooks -- a __gc finalizer (Lua turns
         hooks off for them), which nothing reports when it returns */
      if (!told && now - armed >= every * 0.9 &&
          stuck_where(L, where, sizeof where, &lua_top, &in_gc) && (lua_top || in_gc)) {
        log_msg(LOG_WARNING,
                "%s%s has blocked the server for %.0f ms so far (Lua runs finalizers without "
                "hooks: no time limit stops it; nothing else is served until it returns)",
                where, in_gc ? "a __gc finalizer" : "Lua code running without hooks",
                (now - still) * 1000);
        told = true;
      }
      continue;
    }
    if (atomic_load(&e->blocked_since) || now - still < warn) continue;
    atomic_store(&e->arming, true);
    if (atomic_load(&e->watched) == L) { /* still running: watch_end waits for us */
      atomic_store(&e->blocked_since, (uint_fast64_t)(still * 1e6));
      armed = now;
      /* Lua allows setting a hook from another thread or a signal handler
         (ldebug.c): the next event on that coroutine runs it */
      lua_sethook(L, blocked_hook, LUA_MASKRET | LUA_MASKCALL | LUA_MASKCOUNT, 1);
    }
    atomic_store(&e->arming, false);
  }
  pthread_mutex_unlock(&e->watch_mu);
  return NULL;
}

void watchdog_begin(engine *e, call *c) {
  if (!e->watching) return;
  engine_beat(e);
  double until = c->close_by > 0 ? c->close_by : c->deadline;
  atomic_store(&e->watched_until, (uint_fast64_t)(until * 1e6));
  atomic_store(&e->watched, c->cur ? c->cur->co : c->co); /* a thread of the call, or its handler */
}

/* The handler yielded or returned: the watchdog lets go of its coroutine;
   a stall it armed but that no Lua event reported (C code to the end) is
   reported here. */
void watchdog_end(engine *e, call *c) {
  if (!e->watching) return;
  atomic_store(&e->watched, NULL);
  while (atomic_load(&e->arming)) {} /* a lua_sethook under way: nanoseconds */
  double since = (double)atomic_exchange(&e->blocked_since, 0) * 1e-6;
  if (since > 0) {
    lua_State *co = c->cur ? c->cur->co : c->co;
    lua_sethook(co, call_count_hook, LUA_MASKCOUNT, HOOK_COUNT);
    blocked_report(e, c, co, clock_now() - since, false);
  }
}

void watchdog_start(engine *e) {
  if (e->opt.warn_blocking > 0 || e->opt.stalled)
    e->watching = pthread_create(&e->watchdog, NULL, watchdog_main, e) == 0;
}

void watchdog_stop(engine *e) {
  if (!e->watching) return;
  pthread_mutex_lock(&e->watch_mu);
  e->watch_stop = true;
  pthread_cond_signal(&e->watch_cv);
  pthread_mutex_unlock(&e->watch_mu);
  pthread_join(e->watchdog, NULL);
}
