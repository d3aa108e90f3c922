/* cmd_test.c — luamcp test [DIR] [FILTER]: the app's own tests,
 * DIR/tests/NAME_test.lua. Each file gets a fresh state of the app, loaded as
 * serve loads it, with lua/test.lua put in before app.lua and the scripts
 * (the fakes of the outside world must be what they capture), and a server
 * of its own that the file's clients reach in process, request by request
 * (engine_run_until): what a test gets is what a client would.
 * --watch runs the files again when the app or a test changes. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "cli.h"
#include "clock.h"
#include "embedded.h"
#include "json.h"
#include "jsonrpc.h"
#include "lua_api.h"
#include "principal.h"
#include "server.h"
#include "call.h"
#include "db.h"
#include "store.h"
#include "test_db.h"

#define TEST_KEY "luamcp.test" /* the registry's T of lua/test.lua */

/* n bytes of a name or message a test chose, as a terminal shows them:
   control bytes (an escape sequence would move the cursor or recolour the
   run) as \xHH. */
static void put_shown(FILE *out, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c < 0x20 && c != '\t') || c == 0x7F) fprintf(out, "\\x%02x", c);
    else fputc(c, out);
  }
}

/* {====================================================== one client session */

typedef struct tsession {
  outlet out; /* first: the outlet is the session's capture */
  buf lines;  /* what the server wrote to this client, not yet handed over */
  session *s;
  char want[32]; /* the id pump waits for */
} tsession;

typedef struct runner {
  server *srv;
  tsession **sess;
  size_t nsess;
  principal **who; /* every caller made up, kept for the server's life */
  size_t nwho;
  const char *revision;
  bool pumping;    /* the engine runs: a fake, an answer or a handler is calling */
  double limit;    /* seconds a test (or a file's top level) may run: --test-timeout */
  double deadline; /* of the one running (CLOCK_MONOTONIC), 0: none */
  size_t mem_limit; /* bytes a test's own code may grow the heap by: 4 x --memory-limit (0: none) */
} runner;

/* A test's own code has no call's hook: this one ends a test that loops
   (its calls have theirs). One runner at a time: luamcp test runs files in turn. */
static runner *hooked;

static void test_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  runner *r = hooked;
  if (!r || r->deadline <= 0 || clock_now() < r->deadline) return;
  lua_sethook(L, test_hook, LUA_MASKCOUNT, 1); /* every instruction now: a pcall cannot swallow it */
  lua_Debug at;
  char where[256] = "";
  if (!lua_getstack(L, 0, &at) || !lua_getinfo(L, "Sl", &at)) return;
  if (strcmp(at.source, "=test.lua") == 0) return; /* the runner's own code (its error handler) goes on */
  if (at.currentline > 0) snprintf(where, sizeof where, "%s:%d: ", at.short_src, at.currentline);
  char msg[400];
  snprintf(msg, sizeof msg, "%sthe test ran longer than %g s (luamcp test --test-timeout)", where, r->limit);
  lua_pushstring(L, msg); /* the position is in it: luaL_error would add the caller's */
  lua_error(L);
}

/* What the hook cannot reach (a C function, a __gc finalizer: Lua runs
   those without hooks) the guard does: a test still running this long past
   its limit ends the run the way serve ends a stall (exit 75), never a CI
   job that hangs. */
#define GUARD_GRACE 5.0
static _Atomic double guard_deadline; /* the running test's limit, 0: none */
static char guard_what[320];          /* written before guard_deadline is set */

static void *guard_main(void *arg) {
  (void)arg;
  for (;;) {
    struct timespec ts = {0, 250 * 1000 * 1000};
    nanosleep(&ts, NULL);
    double d = atomic_load(&guard_deadline);
    if (d > 0 && clock_now() > d + GUARD_GRACE) {
      fprintf(stderr, "luamcp: test: %s has not returned %.0f s past --test-timeout (a C function or a "
              "__gc finalizer that does not return: no time limit reaches it); exiting (status 75)\n",
              guard_what, GUARD_GRACE);
      fflush(stderr);
      _exit(75);
    }
  }
  return NULL;
}

/* The heap's accounting of the app's state (vm.c's allocator). */
static vm *heap_of(lua_State *L) {
  void *ud;
  lua_getallocf(L, &ud);
  return ud;
}

static void limit_begin(lua_State *L, runner *r) {
  hooked = r;
  r->deadline = clock_now() + r->limit;
  atomic_store(&guard_deadline, r->deadline);
  lua_sethook(L, test_hook, LUA_MASKCOUNT, 1000);
  /* a test that allocates without end fails ("not enough memory") instead of
     taking the machine: its calls have --memory-limit each within it */
  vm *v = heap_of(L);
  v->mem_ceiling = r->mem_limit ? v->mem_used + r->mem_limit : 0;
}

/* True when the limit passed (in C, where the hook does not run). */
static bool limit_end(lua_State *L, runner *r) {
  bool over = r->deadline > 0 && clock_now() > r->deadline;
  r->deadline = 0;
  atomic_store(&guard_deadline, 0);
  lua_sethook(L, NULL, 0, 0);
  heap_of(L)->mem_ceiling = 0;
  return over;
}

static bool test_capture_write(outlet *o, const char *p, size_t n) {
  buf_put(&((tsession *)o)->lines, p, n);
  return true;
}

static runner *runner_of(lua_State *L) { return lua_touserdata(L, lua_upvalueindex(1)); }

static tsession *session_at(lua_State *L, runner *r, int idx) {
  lua_Integer i = luaL_checkinteger(L, idx);
  if (i < 1 || (size_t)i > r->nsess) luaL_error(L, "luamcp test: no session %d", (int)i);
  return r->sess[i - 1];
}

static int bridge_session(lua_State *L) {
  runner *r = runner_of(L);
  tsession *t = calloc(1, sizeof *t);
  tsession **grown = realloc(r->sess, (r->nsess + 1) * sizeof *grown);
  if (!t || !grown) {
    free(t);
    return luaL_error(L, "luamcp test: out of memory");
  }
  r->sess = grown;
  t->out.write = test_capture_write;
  buf_init(&t->lines);
  t->s = session_new();
  t->s->standalone = &t->out; /* notifications and, in 2025-11-25, questions */
  r->sess[r->nsess++] = t;
  lua_pushinteger(L, (lua_Integer)r->nsess);
  return 1;
}

/* submit(session, line [, subject, scopes]) */
/* A request is the test's own: from inside the engine (a fake, a handler)
   it would wait on the engine that is waiting on it. */
static void not_nested(lua_State *L, runner *r) {
  if (r->pumping)
    luaL_error(L, "a test.app() client is used from the test's own code, not from a fake or a "
                  "handler (the server is busy with the request that called it)");
}

static int bridge_submit(lua_State *L) {
  runner *r = runner_of(L);
  not_nested(L, r);
  tsession *t = session_at(L, r, 1);
  size_t n;
  const char *line = luaL_checklstring(L, 2, &n);
  const char *subject = luaL_optstring(L, 3, NULL), *scopes = luaL_optstring(L, 4, NULL);
  principal *who = NULL;
  if (subject || scopes) {
    principal **grown = realloc(r->who, (r->nwho + 1) * sizeof *grown);
    if (!grown || !(who = principal_made_up(subject, scopes))) return luaL_error(L, "luamcp test: out of memory");
    r->who = grown;
    r->who[r->nwho++] = who;
  }
  server_set_caller(r->srv, who);
  char *msg = malloc(n + 1);
  if (!msg) return luaL_error(L, "luamcp test: out of memory");
  memcpy(msg, line, n);
  msg[n] = '\0';
  r->pumping = true; /* an idle engine runs the message (and its handler) right here */
  server_submit(r->srv, t->s, &t->out, msg, n, NULL);
  r->pumping = false;
  return 0;
}

/* Has the answer to t->want, or a request for the client, come? */
static bool pump_done(void *ud) {
  tsession *t = ud;
  for (const char *p = t->lines.p, *end = p + t->lines.len; p && p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) break;
    jsonrpc_msg m;
    jsonrpc_parse(p, (size_t)(nl - p), &m);
    if (m.kind == JSONRPC_REQUEST) return true;
    if (m.kind == JSONRPC_RESPONSE && m.id.n == strlen(t->want) && memcmp(m.id.p, t->want, m.id.n) == 0)
      return true;
    p = nl + 1;
  }
  return false;
}

/* pump(session, id): the lines that came until the answer to id (or a
   question) did, or the engine had nothing left to do. */
static int bridge_pump(lua_State *L) {
  runner *r = runner_of(L);
  not_nested(L, r);
  tsession *t = session_at(L, r, 1);
  snprintf(t->want, sizeof t->want, "%lld", (long long)luaL_checkinteger(L, 2));
  r->pumping = true;
  engine_run_until(server_engine(r->srv), pump_done, t);
  r->pumping = false;
  lua_newtable(L);
  size_t used = 0;
  int i = 0;
  for (const char *p = t->lines.p, *end = p + t->lines.len; p && p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) break;
    lua_pushlstring(L, p, (size_t)(nl - p));
    lua_rawseti(L, -2, ++i);
    used = (size_t)(nl + 1 - t->lines.p);
    p = nl + 1;
  }
  memmove(t->lines.p, t->lines.p + used, t->lines.len - used);
  t->lines.len -= used;
  if (i == 0) return luaL_error(L, "luamcp test: the server wrote no answer (request %s)", t->want);
  return 1;
}

/* The MCP schema's result definitions (lua/mcp-results.json), as JSON text */
static int bridge_schemas(lua_State *L) {
  size_t len;
  const char *src = embedded_source("mcp-results", &len);
  if (!src) return luaL_error(L, "luamcp test: mcp-results.json is not embedded");
  lua_pushlstring(L, src, len);
  return 1;
}

/* test_begin() / test_end(): the time limit of one test */
static int bridge_test_begin(lua_State *L) {
  limit_begin(L, runner_of(L));
  return 0;
}

/* test_end() -> nil, or why the test failed: it ran past its limit where
   the hook could not stop it (a C function) */
static int bridge_test_end(lua_State *L) {
  runner *r = runner_of(L);
  if (!limit_end(L, r)) return 0;
  lua_pushfstring(L, "the test ran longer than %f s (luamcp test --test-timeout)", r->limit);
  return 1;
}

/* spend(seconds): virtual time the running call (if any) used up; the
   call's timeout message when that took it past its deadline */
static int bridge_spend(lua_State *L) {
  if (!call_spend(L, luaL_checknumber(L, 1))) return 0;
  char msg[TIMEOUT_MSG_MAX];
  call_timeout_message(call_current(L), msg);
  lua_pushstring(L, msg);
  return 1;
}

static int park_done(lua_State *L, int status, lua_KContext k) {
  (void)L, (void)status, (void)k;
  return 0;
}

/* park(): a call whose virtual time ran past its deadline waits for it as
   ctx:sleep would, and the engine ends it as it ends any call timed out
   while waiting (its result, its outcome). Returns at once where a call
   cannot park (outside a call, in a coroutine the handler made). */
static int bridge_park(lua_State *L) {
  call *c = call_current(L);
  if (!c || L != call_thread(c) || !lua_isyieldable(L)) return 0;
  call_sleep(c, 0);
  return lua_yieldk(L, 0, 0, park_done);
}

static int bridge_now(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  lua_pushnumber(L, (double)ts.tv_sec + ts.tv_nsec / 1e9);
  return 1;
}

/* app_config.prelude: lua/test.lua, with its bridge, as require "mcp.test" */
static bool prelude(lua_State *L, void *ud, buf *errors) {
  runner *r = ud;
  lua_api_push_ctx(L, NULL); /* its metatable, whose sleep test.lua replaces */
  lua_pop(L, 1);
  call_threads_metatable(L); /* the threads' handles: test.lua wraps their wait */
  size_t len;
  const char *src = embedded_source("test", &len);
  if (!src || luaL_loadbufferx(L, src, len, "=test.lua", "t") != LUA_OK) {
    buf_printf(errors, "internal: %s\n", src ? lua_tostring(L, -1) : "test.lua is not embedded");
    return false;
  }
  static const luaL_Reg fns[] = {{"session", bridge_session}, {"submit", bridge_submit},
                                 {"pump", bridge_pump},       {"now", bridge_now},
                                 {"schemas", bridge_schemas},
                                 {"test_begin", bridge_test_begin}, {"test_end", bridge_test_end},
                                 {"spend", bridge_spend},           {"park", bridge_park},
                                 {NULL, NULL}};
  lua_newtable(L);
  lua_pushlightuserdata(L, r);
  luaL_setfuncs(L, fns, 1);
  test_db_register(L); /* db_exec, db_query, db_one: test.db */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "mcp");
  lua_remove(L, -2);
  lua_pushstring(L, r->revision);
  if (vm_pcall(L, 3, 1, NULL) != LUA_OK) {
    buf_printf(errors, "internal: %s\n", lua_tostring(L, -1));
    return false;
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, TEST_KEY);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_insert(L, -2);
  lua_setfield(L, -2, "mcp.test");
  return true;
}

/* }====================================================== */

/* {====================================================== results */

typedef struct result {
  char *file, *name, *message; /* message: NULL when it passed */
  buf details;
  double ms;
} result;

typedef struct results {
  result *r;
  size_t n;
} results;

static result *add(results *rs, const char *file, const char *name) {
  result *grown = realloc(rs->r, (rs->n + 1) * sizeof *grown);
  if (!grown) abort();
  rs->r = grown;
  result *r = &rs->r[rs->n++];
  *r = (result){.file = strdup(file), .name = strdup(name)};
  buf_init(&r->details);
  return r;
}

static void results_clear(results *rs) {
  for (size_t i = 0; i < rs->n; i++) {
    free(rs->r[i].file), free(rs->r[i].name), free(rs->r[i].message);
    buf_free(&rs->r[i].details);
  }
  free(rs->r);
  *rs = (results){0};
}

/* The file could not run: one failed result for it, the problem as given. */
static void file_failed(results *rs, const char *file, const char *what, const char *msg) {
  result *r = add(rs, file, what);
  r->message = strdup(msg);
}

/* A Lua string as C text: a NUL inside it shown as \0, not an end */
static char *dup_text(lua_State *L, int idx, const char *dflt) {
  size_t n;
  const char *s = lua_tolstring(L, idx, &n);
  if (!s) return strdup(dflt);
  buf b;
  buf_init(&b);
  for (size_t i = 0; i < n; i++) {
    if (s[i]) buf_putc(&b, s[i]);
    else buf_puts(&b, "\\0");
  }
  buf_putc(&b, '\0');
  return b.p;
}

/* T._run's list into rs */
static void take_results(lua_State *L, int idx, const char *file, results *rs) {
  for (lua_Integer i = 1; i <= (lua_Integer)lua_rawlen(L, idx); i++) {
    lua_rawgeti(L, idx, i);
    lua_getfield(L, -1, "name");
    char *name = dup_text(L, -1, "?");
    result *r = add(rs, file, name);
    free(name);
    lua_pop(L, 1);
    lua_getfield(L, -1, "ms");
    r->ms = lua_tonumber(L, -1);
    lua_getfield(L, -2, "ok");
    bool ok = lua_toboolean(L, -1);
    lua_pop(L, 2);
    if (!ok) {
      lua_getfield(L, -1, "message");
      r->message = dup_text(L, -1, "failed");
      lua_pop(L, 1);
      lua_getfield(L, -1, "details");
      for (lua_Integer k = 1; lua_istable(L, -1) && k <= (lua_Integer)lua_rawlen(L, -1); k++) {
        lua_rawgeti(L, -1, k);
        if (lua_isstring(L, -1)) {
          char *line = dup_text(L, -1, "");
          buf_printf(&r->details, "%s\n", line);
          free(line);
        }
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
}

/* }====================================================== */

/* {====================================================== running a file */

/* The app's name, from the first file that loaded it: JUnit's package */
static char junit_package[256];

/* A regular file (a FIFO would block the read forever); else why not. */
static const char *not_regular(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return strerror(errno);
  return S_ISREG(st.st_mode) ? NULL : "not a regular file";
}

/* Run DIR/rel (a test file) in a fresh state of the app. */
static void run_file(options *o, const char *dir, const char *rel, const char *filter, results *rs) {
  runner r = {.revision = o->test_revision ? o->test_revision : "2026-07-28",
              .limit = o->test_timeout > 0 ? o->test_timeout : 60,
              .mem_limit = o->server.engine.call_memory * 4};
  server_options so = o->server;
  so.app.prelude = prelude;
  so.app.prelude_ud = &r;
  buf errors;
  buf_init(&errors);
  app *a = app_load(dir, &so.app, NULL, &errors);
  if (!a) {
    buf_putc(&errors, '\0');
    file_failed(rs, rel, "(the app did not load)", errors.p);
    buf_free(&errors);
    return;
  }
  buf_free(&errors);
  if (!junit_package[0] && a->reg->name) snprintf(junit_package, sizeof junit_package, "%s", a->reg->name);
  /* mcp.db: --data's folder, else a fresh one of this file's own */
  char tmp[] = "/tmp/luamcp-test-XXXXXX", file[sizeof tmp + 16];
  bool own_data = !o->data && mkdtemp(tmp);
  if (o->data) cli_use_data(o, a, dir, false);
  else if (own_data) snprintf(file, sizeof file, "%s/db.sqlite", tmp), db_set_path(file);
  else db_set_path(NULL);
  /* with the app's migrations applied, as serving would */
  buf_init(&errors);
  bool migrated = db_migrate(a->dir, false, NULL, &errors);
  buf_putc(&errors, '\0');
  r.srv = server_new(a, &so);
  snprintf(guard_what, sizeof guard_what, "a test of %s", rel);
  lua_State *L = a->vm.L;
  char path[PATH_MAX + 256];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  buf src;
  buf_init(&src);
  char chunkname[PATH_MAX];
  snprintf(chunkname, sizeof chunkname, "@%s", rel);
  const char *odd = not_regular(path);
  if (!migrated) {
    file_failed(rs, rel, "(the migrations failed)", errors.p);
  } else if (odd) {
    char msg[PATH_MAX + 64];
    snprintf(msg, sizeof msg, "%s: cannot read: %s", rel, odd);
    file_failed(rs, rel, "(the file did not load)", msg);
  } else if (!buf_read_file(&src, path)) {
    char msg[PATH_MAX + 64];
    snprintf(msg, sizeof msg, "%s: cannot read: %s", rel, strerror(errno));
    file_failed(rs, rel, "(the file did not load)", msg);
  } else if (luaL_loadbufferx(L, src.p ? src.p : "", src.len, chunkname, "t") != LUA_OK) {
    file_failed(rs, rel, "(the file did not load)", lua_tostring(L, -1));
    lua_pop(L, 1);
  } else {
    lua_newtable(L); /* its own globals, falling through to the standard ones */
    lua_createtable(L, 0, 1);
    lua_pushglobaltable(L);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
    lua_setupvalue(L, -2, 1);
    limit_begin(L, &r); /* its top level, as a test */
    int st = vm_pcall(L, 0, 0, NULL);
    limit_end(L, &r);
    if (st != LUA_OK) {
      file_failed(rs, rel, "(the file did not run)", lua_tostring(L, -1));
      lua_pop(L, 1);
    } else {
      lua_getfield(L, LUA_REGISTRYINDEX, TEST_KEY);
      lua_getfield(L, -1, "_run");
      lua_remove(L, -2);
      lua_pushstring(L, rel);
      lua_pushstring(L, filter ? filter : "");
      if (vm_pcall(L, 2, 1, NULL) != LUA_OK) {
        file_failed(rs, rel, "(the tests did not run)", lua_tostring(L, -1));
      } else {
        take_results(L, lua_gettop(L), rel, rs);
      }
      lua_pop(L, 1);
    }
  }
  buf_free(&src);
  buf_free(&errors);
  db_close();
  test_db_close();
  server_free(r.srv); /* and the app */
  if (own_data) {
    static const char *const files[] = {"db.sqlite", "db.sqlite-wal", "db.sqlite-shm", "db.sqlite-journal", "db.sqlite.lock"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
      snprintf(file, sizeof file, "%s/%s", tmp, files[i]);
      unlink(file);
    }
    rmdir(tmp);
  }
  for (size_t i = 0; i < r.nsess; i++) {
    session_unref(r.sess[i]->s);
    buf_free(&r.sess[i]->lines);
    buf_free(&r.sess[i]->out.out);
    free(r.sess[i]);
  }
  free(r.sess);
  for (size_t i = 0; i < r.nwho; i++) principal_unref(r.who[i]);
  free(r.who);
}

static int is_test_file(const struct dirent *e) {
  size_t n = strlen(e->d_name);
  return e->d_name[0] != '.' && n > 9 && strcmp(e->d_name + n - 9, "_test.lua") == 0;
}

/* tests/NAME_test.lua, in name order; changed: only those (NULL: all) */
static void run_all(options *o, const char *dir, const char *filter, FILE *out, results *rs,
                    const char *only) {
  char tdir[PATH_MAX];
  snprintf(tdir, sizeof tdir, "%s/tests", dir);
  struct dirent **names;
  int n = scandir(tdir, &names, is_test_file, alphasort);
  if (n < 0) {
    fprintf(out, "%s: no tests/ folder (tests are tests/NAME_test.lua)\n", dir);
    return;
  }
  for (int i = 0; i < n; i++) {
    char rel[300];
    snprintf(rel, sizeof rel, "tests/%s", names[i]->d_name);
    if (!only || strcmp(only, rel) == 0) {
      size_t before = rs->n;
      run_file(o, dir, rel, filter, rs);
      if (rs->n > before) fprintf(out, "%s\n", rel);
      for (size_t k = before; k < rs->n; k++) {
        result *r = &rs->r[k];
        if (!r->message) {
          fputs("  ok    ", out);
          put_shown(out, r->name, strlen(r->name));
          fprintf(out, " (%.1f ms)\n", r->ms);
          continue;
        }
        fputs("  FAIL  ", out);
        put_shown(out, r->name, strlen(r->name));
        fputc('\n', out);
        for (const char *p = r->message; *p;) { /* indented, line by line */
          size_t len = strcspn(p, "\n");
          fputs("        ", out);
          put_shown(out, p, len);
          fputc('\n', out);
          p += len + (p[len] == '\n');
        }
        for (const char *p = r->details.p, *end = p + r->details.len; p && p < end;) {
          const char *nl = memchr(p, '\n', (size_t)(end - p));
          size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
          fputs("          ", out);
          put_shown(out, p, len);
          fputc('\n', out);
          p += len + 1;
        }
      }
    }
    free(names[i]);
  }
  free(names);
}

/* }====================================================== */

/* {====================================================== JUnit XML */

/* The length of a valid UTF-8 sequence at s (of n bytes) whose code point XML 1.0
   allows, else 0. */
static size_t xml_char(const unsigned char *s, size_t n, bool attr) {
  unsigned c = s[0];
  if (c < 0x80) return c >= 0x20 || c == '\t' || (!attr && (c == '\n' || c == '\r')) ? 1 : 0;
  size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (!len || len > n || c > 0xF4) return 0;
  unsigned long cp = c & (0x3F >> (len - 1));
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  static const unsigned long min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF)
    return 0;
  return len;
}

/* Text as XML allows it: escaped, and what is not a character of XML 1.0
   (invalid UTF-8, control bytes, NUL) as U+FFFD; in an attribute, line
   ends as references (a parser would turn them into spaces). */
static void xml_text_as(FILE *f, const char *s, size_t n, bool attr) {
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    unsigned char c = u[i];
    size_t len = xml_char(u + i, n - i, attr);
    if (c == '<') fputs("&lt;", f);
    else if (c == '>') fputs("&gt;", f);
    else if (c == '&') fputs("&amp;", f);
    else if (c == '"') fputs("&quot;", f);
    else if (attr && c == '\n') fputs("&#10;", f);
    else if (attr && c == '\r') fputs("&#13;", f);
    else if (!len) fputs("\xEF\xBF\xBD", f);
    else fwrite(u + i, 1, len, f);
    i += len ? len : 1;
  }
}
static void xml_text(FILE *f, const char *s, size_t n) { xml_text_as(f, s, n, false); }
static void xml_attr(FILE *f, const char *s, size_t n) { xml_text_as(f, s, n, true); }

/* The Ant JUnit schema (tests/vendor/JUnit.xsd): a testsuite per file. */
static bool write_junit(const char *path, const char *app_name, const results *rs) {
  char tmp[PATH_MAX + 16];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return false;
  char stamp[32], host[256] = "localhost";
  time_t now = time(NULL);
  struct tm tm;
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", gmtime_r(&now, &tm));
  if (gethostname(host, sizeof host) != 0 || !*host) strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n", f);
  int id = 0;
  for (size_t i = 0; i < rs->n;) {
    size_t j = i, failures = 0;
    double ms = 0;
    for (; j < rs->n && strcmp(rs->r[j].file, rs->r[i].file) == 0; j++) {
      failures += rs->r[j].message != NULL;
      ms += rs->r[j].ms;
    }
    fputs("  <testsuite package=\"", f);
    xml_attr(f, app_name, strlen(app_name));
    fprintf(f, "\" id=\"%d\" name=\"", id++);
    xml_attr(f, rs->r[i].file, strlen(rs->r[i].file));
    fprintf(f, "\" timestamp=\"%s\" hostname=\"", stamp);
    xml_attr(f, host, strlen(host));
    fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" time=\"%.3f\">\n    <properties/>\n",
            j - i, failures, ms / 1000);
    for (size_t k = i; k < j; k++) {
      const result *r = &rs->r[k];
      fputs("    <testcase name=\"", f);
      xml_attr(f, r->name, strlen(r->name));
      fputs("\" classname=\"", f);
      xml_attr(f, r->file, strlen(r->file));
      fprintf(f, "\" time=\"%.3f\"", r->ms / 1000);
      if (!r->message) {
        fputs("/>\n", f);
        continue;
      }
      fputs(">\n      <failure type=\"assertion\" message=\"", f);
      xml_attr(f, r->message, strlen(r->message));
      fputs("\">", f);
      xml_text(f, r->message, strlen(r->message));
      fputc('\n', f);
      if (r->details.len) xml_text(f, r->details.p, r->details.len);
      fputs("</failure>\n    </testcase>\n", f);
    }
    fputs("    <system-out/>\n    <system-err/>\n  </testsuite>\n", f);
    i = j;
  }
  fputs("</testsuites>\n", f);
  bool ok = fflush(f) == 0 && !ferror(f);
  ok = fclose(f) == 0 && ok;
  if (ok) ok = rename(tmp, path) == 0;
  else unlink(tmp);
  return ok;
}

/* }====================================================== */

/* {====================================================== --watch */

/* --watch: one inotify instance for the whole session, set up before the
   first run, so a save made while tests run is seen too. */
typedef struct watcher {
  int fd;
  const char *dir;
  int wd[6]; /* the folder itself (app.lua, and subfolders appearing), scripts, lib, widgets, tests,
                migrations */
} watcher;

static const char *const watched[] = {"", "/scripts", "/lib", "/widgets", "/tests", "/migrations"};
#define NWATCHED (int)(sizeof watched / sizeof *watched)

static void watch_add(watcher *w, int i) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s%s", w->dir, watched[i]);
  w->wd[i] = inotify_add_watch(w->fd, p, IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE |
                                            IN_DELETE | IN_ONLYDIR);
}

static bool watch_open(watcher *w, const char *dir) {
  w->dir = dir;
  w->fd = inotify_init1(IN_CLOEXEC);
  if (w->fd < 0) return false;
  for (int i = 0; i < NWATCHED; i++) watch_add(w, i);
  return true;
}

/* Block until a file of the app or of tests/ changed (events queued while the
   tests ran count), then a short quiet time; *changed gets a test file's
   tests/NAME when only it was saved (deleted or more than one: all run). */
static void wait_change(watcher *w, FILE *out, char *changed, size_t cap) {
  fprintf(out, "watching %s for changes (Ctrl-C ends)\n", w->dir);
  bool app = false, test = false;
  *changed = '\0';
  char ev[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
  int wait_ms = -1;
  for (;;) {
    struct pollfd pfd = {.fd = w->fd, .events = POLLIN};
    int r = poll(&pfd, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break; /* quiet for a while after a change: go */
    ssize_t n = read(w->fd, ev, sizeof ev);
    for (char *p = ev; n > 0 && p < ev + n;) {
      struct inotify_event *e = (struct inotify_event *)p;
      p += sizeof *e + e->len;
      if (!e->len || e->name[0] == '.') continue;
      size_t l = strlen(e->name);
      if (e->wd == w->wd[0]) {
        bool sub = false;
        for (int i = 1; i < NWATCHED; i++)
          if (strcmp(e->name, watched[i] + 1) == 0 && (e->mask & (IN_CREATE | IN_MOVED_TO))) {
            watch_add(w, i); /* a folder made after the start: watched from now on */
            sub = true;
          }
        if (!sub && strcmp(e->name, "app.lua") != 0) continue; /* the top: app.lua only */
        app = true;
      } else if (e->wd == w->wd[4]) {
        if (l < 9 || strcmp(e->name + l - 9, "_test.lua") != 0) continue;
        if (e->mask & (IN_DELETE | IN_MOVED_FROM)) app = true; /* gone: the rest still run */
        if (test && strcmp(changed + 6, e->name) != 0) app = true; /* two test files: all */
        test = true;
        snprintf(changed, cap, "tests/%s", e->name);
      } else {
        app = true;
      }
      wait_ms = 50;
    }
  }
  if (app) *changed = '\0';
}

/* }====================================================== */

int cmd_test(options *o) {
  if (o->nargs > 2) cli_die_usage("%s", "test takes [DIR] [FILTER]");
  const char *dir = o->nargs >= 1 ? o->args[0] : ".";
  const char *filter = o->nargs == 2 ? o->args[1] : NULL;
  int outfd = cli_protect_stdout();
  FILE *out = fdopen(outfd, "w");
  if (!out) return 1;
  setvbuf(out, NULL, _IOLBF, 0);
  char name[256] = "app";
  {
    const char *base = strrchr(dir, '/');
    snprintf(name, sizeof name, "%s", base && base[1] ? base + 1 : dir);
  }
  int status;
  char only[300] = "";
  watcher w = {.fd = -1};
  if (o->watch && !watch_open(&w, dir)) {
    fprintf(stderr, "luamcp: test --watch: inotify: %s\n", strerror(errno));
    return 1;
  }
  pthread_t guard;
  if (pthread_create(&guard, NULL, guard_main, NULL) == 0) pthread_detach(guard);
  /* mcp.store is lua/test.lua's fake (TTLs on the virtual clock): update's
     cas loop must reach it, not the database */
  store_use_memory();
  for (;;) {
    results rs = {0};
    double t0 = clock_now();
    run_all(o, dir, filter, out, &rs, *only ? only : NULL);
    double took = clock_now() - t0;
    size_t failed = 0;
    for (size_t i = 0; i < rs.n; i++) failed += rs.r[i].message != NULL;
    fprintf(out, "%zu passed, %zu failed (%.0f ms)\n", rs.n - failed, failed,
            took * 1e3);
    if (rs.n == 0) fprintf(out, "no test ran%s%s\n", filter ? " matching " : "", filter ? filter : "");
    status = failed || rs.n == 0 ? 1 : 0;
    if (o->junit && !write_junit(o->junit, junit_package[0] ? junit_package : name, &rs)) {
      fprintf(stderr, "luamcp: test: cannot write %s: %s\n", o->junit, strerror(errno));
      status = 1;
    }
    results_clear(&rs);
    if (!o->watch) break;
    wait_change(&w, out, only, sizeof only);
  }
  if (w.fd >= 0) close(w.fd);
  fclose(out);
  return status;
}
