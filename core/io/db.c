/* db.c — mcp.db (db.h): the Lua API, the queue of statements and the
 * transaction's owner, on the engine's loop; db_sqlite.c runs them.
 *
 * One statement at a time is on each connection; the others wait here,
 * in order: what writes (exec, transactions, a call's reads inside its
 * transaction) for the writer, query and one for the readers (once the
 * writer made the file; a reader sends back what writes). While a call
 * holds the transaction (from its BEGIN's dispatch to the job after which
 * SQLite says none is open), only its statements and rollbacks are handed
 * to the writer: two calls' transactions never interleave.
 *
 * A job is malloc'd (the thread may hold it after its call ended); the
 * call's coroutine keeps a box on its stack, which gets the finished job
 * back for the continuation and frees it if Lua unwinds first. The call
 * ending while parked (timeout, cancel, shutdown): the job leaves the
 * queue, or is interrupted on the thread and freed when it comes back;
 * a transaction the call held is rolled back first of all (a rollback at
 * the queue's head). The Lua half of mcp.db.tx (lua/mcp.lua) holds a tx
 * guard as a to-be-closed variable: it rolls back what is left open when
 * the handler unwinds (its __close runs on a call's end too, engine.h). */
#include "db.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "call.h"
#include "db_internal.h"
#include "json.h"
#include "luax.h"
#include "metrics.h"
#include "sandbox.h"
#include "trace.h"

#define BOX_TYPE "mcp.db.job"
#define TX_TYPE "mcp.db.tx"
#define SQL_MAX (1 << 30) /* SQLite's own bound on a statement's text (SQLITE_MAX_SQL_LENGTH) */
#define DETACHED_BUDGET 5.0 /* seconds a rollback may wait for another process's lock */

struct db_box {
  db_job *job; /* the finished job, until the continuation frees it */
};

typedef struct db_tx {
  unsigned gen; /* of the BEGIN it belongs to */
  int level;    /* 1: the transaction; n > 1: savepoint luamcp_n */
  bool open;
} db_tx;

typedef struct queue {
  db_job *head, *tail;
} queue;

static struct {
  char *path;          /* the SQLite file, or PostgreSQL's URL */
  const db_backend *be;
  uv_loop_t *loop;
  uv_async_t *async;
  queue w, r;          /* waiting for the writer, for a reader */
  bool busy[DB_CONNS_MAX]; /* a job is on that connection */
  bool writer_ready;   /* the writer has the file open: readers may open it */
  call *owner;         /* holds the transaction, or NULL */
  call *lost;          /* its transaction ended under it (an error of SQLite's rolled
                          it back): its statements fail until its tx returns */
  unsigned gen;        /* of the last BEGIN */
  unsigned lost_gen;   /* the lost transaction's */
  int depth;           /* the owner's levels open */
} D;

/* {====================================================== the queues */

static void on_async(uv_async_t *h);

static void notify(void) { uv_async_send(D.async); } /* a thread's, under its lock */

static void push(queue *q, db_job *j, bool at_head) {
  j->next = NULL;
  if (at_head) {
    j->next = q->head;
    q->head = j;
    if (!q->tail) q->tail = j;
  } else {
    if (q->tail) q->tail->next = j;
    else q->head = j;
    q->tail = j;
  }
}

static bool unlink_from(queue *q, db_job *j) {
  for (db_job **pp = &q->head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next)
    if (*pp == j) {
      *pp = j->next;
      if (q->tail == j) q->tail = prev;
      j->next = NULL;
      return true;
    }
  return false;
}

static bool unlink_job(db_job *j) { return unlink_from(&D.w, j) || unlink_from(&D.r, j); }

static const db_backend *be(void) { return D.be ? D.be : &db_backend_sqlite; }

static void dispatch(void) {
  const db_backend *b = be();
  if (!D.busy[0]) {
    db_job *j = D.w.head;
    while (j && !(j->detached || !D.owner || j->c == D.owner)) j = j->next;
    if (j) {
      unlink_from(&D.w, j);
      if (j->begins_tx) D.owner = j->c, D.depth = 1, j->gen = ++D.gen;
      else if (D.owner && j->c == D.owner) j->expect_tx = true;
      j->depth = D.depth;
      D.busy[0] = true;
      b->run(j, 0); /* its thread runs (ensure_started) */
    }
  }
  /* PostgreSQL: [0] is the transactions' (a long read there would hold
     every mcp.db.tx up), unless it is the only one and none is open */
  int n = b->conns(), first = b->any_conn && n == 1 && !D.owner && !D.w.head ? 0 : 1;
  for (int i = first; i < n && D.r.head; i++) {
    if (D.busy[i]) continue;
    db_job *j = D.r.head;
    unlink_from(&D.r, j);
    D.busy[i] = true;
    if (!b->run(j, i)) { /* the writer reads too */
      D.busy[i] = false;
      push(&D.w, j, false);
    }
  }
}

static void end_span(db_job *j, const char *err) {
  if (!j->span) return;
  if (err) trace_error(j->span, err);
  trace_end(j->span);
  j->span = NULL;
}

/* A detached job: runs before anything else waiting, no call waits. */
static void push_detached(const char *sql) {
  db_job *j = calloc(1, sizeof *j);
  if (j && !(j->sql = strdup(sql))) free(j), j = NULL;
  if (!j) return; /* the connection's close still rolls back */
  j->sql_len = strlen(sql);
  j->kind = DB_EXEC;
  j->detached = true;
  j->budget = DETACHED_BUDGET;
  atomic_init(&j->aborted, false);
  push(&D.w, j, true);
}

/* The owner's transaction, rolled back: its call ended, or its tx guard
   went without a commit. */
static void tx_abandon(void) {
  if (!D.owner) return;
  D.owner = NULL;
  D.depth = 0;
  push_detached("ROLLBACK");
}

static void count(db_job *j) {
  if (!metrics_on || j->detached) return;
  const char *result = atomic_load(&j->aborted) || !j->c ? "interrupted" : j->err ? "error" : "ok";
  metric_add(metric_at(M_DB, (const char *const[]){result}), 1);
}

static void complete(db_job *j) {
  count(j);
  if (j->conn == 0 && D.owner && j->c == D.owner && j->autocommit) {
    if (!j->ends_tx && !j->begins_tx) D.lost = j->c, D.lost_gen = D.gen; /* not by COMMIT: by an error */
    D.owner = NULL, D.depth = 0;
  }
  if (j->detached || atomic_load(&j->aborted) || !j->c) {
    end_span(j, j->err ? j->err : "the call ended before the statement");
    db_job_free(j);
    return;
  }
  end_span(j, j->err);
  j->box->job = j;
  call_wake_wait(&j->wait, 0); /* runs Lua: it may queue and abort jobs */
}

static void on_async(uv_async_t *h) {
  (void)h;
  db_job *j;
  while ((j = be()->done())) {
    D.busy[j->conn] = false;
    if (j->conn == 0 && j->opened) D.writer_ready = true;
    if (j->to_writer && !atomic_load(&j->aborted) && j->c) { /* a reader found it writes */
      j->to_writer = false;
      push(&D.w, j, false);
      continue;
    }
    complete(j);
  }
  dispatch();
}

static void job_abort(call_wait *w) {
  db_job *j = (db_job *)w;
  if (D.owner && D.owner == j->c) tx_abandon();
  if (D.lost == j->c) D.lost = NULL;
  j->c = NULL; /* its address may be another call's soon */
  j->box = NULL;
  if (unlink_job(j)) {
    count(j);
    end_span(j, "the call ended before the statement");
    db_job_free(j);
  } else {
    be()->abort(j); /* freed when the thread hands it back */
  }
  dispatch();
}

static bool ensure_started(call *c) {
  uv_loop_t *loop = call_loop(c);
  if (D.loop != loop || !D.async) {
    /* a loop of a new engine (db_close ended the last one's) */
    uv_async_t *a = malloc(sizeof *a);
    if (!a || uv_async_init(loop, a, on_async) != 0) {
      free(a);
      return false;
    }
    uv_unref((uv_handle_t *)a);
    D.async = a;
    D.loop = loop;
  }
  return be()->start(D.path, notify, loop);
}

/* }====================================================== */

/* {====================================================== the Lua side */


static int box_gc(lua_State *L) {
  db_box *b = lua_touserdata(L, 1);
  db_job_free(b->job);
  b->job = NULL;
  return 0;
}

/* a copy of the Lua value at i, or false (type BAD: what it is) */
static bool to_value(lua_State *L, int i, db_value *v) {
  switch (lua_type(L, i)) {
  case LUA_TNIL: v->type = DBV_NULL; return true;
  case LUA_TBOOLEAN: v->type = DBV_INT, v->i = lua_toboolean(L, i); return true;
  case LUA_TNUMBER:
    if (lua_isinteger(L, i)) v->type = DBV_INT, v->i = lua_tointeger(L, i);
    else v->type = DBV_REAL, v->d = lua_tonumber(L, i);
    return true;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, i, &n);
    v->type = memchr(s, 0, n) || !json_utf8_valid(s, n) ? DBV_BLOB : DBV_TEXT;
    if (!(v->s = malloc(n + 1))) return luaL_error(L, "mcp.db: out of memory"), false;
    memcpy(v->s, s, n + 1);
    v->n = n;
    return true;
  }
  case LUA_TLIGHTUSERDATA:
    if (json_isnull(L, i)) return v->type = DBV_NULL, true;
    /* fall through */
  default:
    v->type = DBV_BAD;
    v->s = strdup(luaL_typename(L, i));
    return false;
  }
}

/* the values after sql: 2..top */
static void collect_params(lua_State *L, db_job *j, int top, const char *fname) {
  int n = top - 1;
  if (n == 1 && lua_type(L, 2) == LUA_TTABLE) {
    j->named = true;
    size_t count = 0;
    lua_pushnil(L);
    while (lua_next(L, 2)) {
      lua_pop(L, 1);
      if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "%s: the table of named parameters has a %s key (names are strings)", fname,
                   luaL_typename(L, -1));
      count++;
    }
    if (!count) return;
    if (!(j->params = calloc(count, sizeof *j->params))) luaL_error(L, "%s: out of memory", fname);
    lua_pushnil(L);
    while (lua_next(L, 2) && j->nparams < count) {
      db_value *v = &j->params[j->nparams++];
      to_value(L, -1, v); /* a value that cannot be bound fails if the statement uses it */
      if (!(v->name = strdup(lua_tostring(L, -2)))) luaL_error(L, "%s: out of memory", fname);
      lua_pop(L, 1);
    }
    return;
  }
  if (n <= 0) return;
  if (!(j->params = calloc((size_t)n, sizeof *j->params))) luaL_error(L, "%s: out of memory", fname);
  for (int i = 0; i < n; i++) {
    db_value *v = &j->params[j->nparams++];
    if (!to_value(L, i + 2, v))
      luaL_error(L, "%s: cannot bind a %s (parameter %d: a string, number, boolean, nil or mcp.null)",
                 fname, v->s ? v->s : "value", i + 1);
  }
}

/* the statement's first word, as a span names its operation */
static void operation_name(const char *sql, size_t n, char out[24]) {
  size_t i = 0, k = 0;
  while (i < n && (isspace((unsigned char)sql[i]) || sql[i] == '(')) i++;
  while (i < n && k < 23 && isalpha((unsigned char)sql[i])) out[k++] = (char)toupper((unsigned char)sql[i++]);
  out[k] = 0;
  if (!k) strcpy(out, "sqlite");
}

static int finish(lua_State *L, int status, lua_KContext ctx);

/* Queue the job in box at box_idx for c and park: the continuation gets
   the finished job back. */
static int park(lua_State *L, call *c, int box_idx, lua_KFunction k, const char *fname) {
  db_box *b = lua_touserdata(L, box_idx);
  db_job *j = b->job;
  if (!ensure_started(c)) return luaL_error(L, "%s: the database thread did not start", fname);
  j->c = c;
  j->box = b;
  j->room = call_memory_room(c);
  j->budget = call_time_left(c);
  j->sandboxed = sandbox_of(L) != NULL;
  trace_span *parent = trace_on ? call_span(c) : NULL;
  if (parent) {
    char op[24];
    operation_name(j->sql, j->sql_len, op);
    if ((j->span = trace_start(trace_context(parent), op, TRACE_CLIENT))) {
      trace_attr_str(j->span, "db.system.name", be()->system);
      trace_attr_str(j->span, "db.operation.name", op);
    }
  }
  j->wait.abort = job_abort;
  j->wait.what = "mcp.db";
  b->job = NULL; /* the queue's now */
  /* a read outside the call's transaction: a reader's, once the writer
     made the file; on PostgreSQL anything outside the call's transaction */
  bool read = !j->begins_tx && D.owner != c && (be()->any_conn || (j->kind != DB_EXEC && D.writer_ready));
  push(read ? &D.r : &D.w, j, false);
  call_park(c, &j->wait);
  dispatch();
  return lua_yieldk(L, 0, (lua_KContext)box_idx, k);
}

/* A new job in a to-be-closed box on the stack (its index in *box_idx). */
static db_job *new_job(lua_State *L, const char *sql, size_t len, int kind, const char *fname,
                       int *box_idx) {
  db_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->job = NULL;
  luaL_setmetatable(L, BOX_TYPE);
  *box_idx = lua_gettop(L);
  lua_toclose(L, *box_idx);
  db_job *j = calloc(1, sizeof *j);
  if (!j) luaL_error(L, "%s: out of memory", fname);
  b->job = j;
  atomic_init(&j->aborted, false);
  j->kind = kind;
  if (!(j->sql = malloc(len + 1))) luaL_error(L, "%s: out of memory", fname);
  memcpy(j->sql, sql, len + 1);
  j->sql_len = len;
  return j;
}

/* The call running on L, which may park here; errors at level (1: the
   caller of the C function; 2: the caller of lua/mcp.lua's tx). */
static call *parkable(lua_State *L, const char *fname, int level) {
  call *c = call_current(L);
  const char *why = call_cannot_park(L, c);
  if (why) luax_raise_at(L, level, "%s: %s", fname, why);
  if (!lua_isyieldable(L))
    luax_raise_at(L, level, "%s: cannot wait here (inside a C function such as a metamethod or a "
             "string.gsub callback)", fname);
  if (!D.path) luax_raise_at(L, level, "%s: this command has no data folder", fname);
  /* a transaction belongs to the handler (its guard, its statements in
     order): a thread of mcp.spawn neither opens one nor runs in one */
  if (call_in_thread(L) && (strcmp(fname, "mcp.db.tx") == 0 || D.owner == c))
    luax_raise_at(L, level, "%s: a thread of mcp.spawn %s", fname,
             D.owner == c ? "cannot use the database while its handler holds a transaction"
                          : "cannot open a transaction: mcp.db.tx belongs to the handler");
  if (D.lost == c)
    luax_raise_at(L, level, "%s: the transaction was rolled back (by an earlier error): nothing more runs in it",
             fname);
  return c;
}

static const char *const fnames[] = {"mcp.db.query", "mcp.db.one", "mcp.db.exec"};

static int start(lua_State *L, int kind) {
  const char *fname = fnames[kind];
  int top = lua_gettop(L);
  if (lua_type(L, 1) != LUA_TSTRING) return luaL_error(L, "%s: the SQL must be a string", fname);
  call *c = parkable(L, fname, 1);
  luaL_checkstack(L, 8, NULL);
  size_t len;
  const char *sql = lua_tolstring(L, 1, &len);
  if (len > SQL_MAX) return luaL_error(L, "%s: the SQL text is longer than %d bytes", fname, SQL_MAX);
  int box_idx;
  db_job *j = new_job(L, sql, len, kind, fname, &box_idx);
  collect_params(L, j, top, fname);
  return park(L, c, box_idx, finish, fname);
}

static void push_cell(lua_State *L, const db_value *v) {
  switch (v->type) {
  case DBV_INT: lua_pushinteger(L, (lua_Integer)v->i); break;
  case DBV_REAL: lua_pushnumber(L, v->d); break;
  case DBV_TEXT:
  case DBV_BLOB: lua_pushlstring(L, v->s, v->n); break;
  default: json_pushnull(L);
  }
}

static void push_row(lua_State *L, const db_job *j, size_t r) {
  lua_createtable(L, 0, j->ncols);
  const db_value *row = j->cells + r * (size_t)j->ncols;
  for (int i = 0; i < j->ncols; i++) {
    push_cell(L, &row[i]);
    lua_setfield(L, -2, j->cols[i]);
  }
}

/* The box's finished job is done with: freed, the box empty. */
static void box_drop(db_box *b) {
  db_job_free(b->job);
  b->job = NULL;
}

/* A transaction step's job (begun, committed): NULL after raising when it
   went missing or failed (its error as mcp.db.tx's, the job freed first). */
static db_job *tx_result(lua_State *L, db_box *b) {
  db_job *j = b->job;
  if (!j) {
    luax_raise_at(L, 2, "mcp.db.tx: the result went missing");
    return NULL;
  }
  if (!j->err) return j;
  lua_pushstring(L, j->err);
  box_drop(b);
  luax_raise_at(L, 2, "mcp.db.tx: %s", lua_tostring(L, -1));
  return NULL;
}

static int finish(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  int box_idx = (int)ctx;
  db_box *b = lua_touserdata(L, box_idx);
  db_job *j = b->job;
  if (!j) return luaL_error(L, "mcp.db: the statement's result went missing");
  const char *fname = fnames[j->kind];
  if (j->err) {
    lua_pushfstring(L, "%s: %s", fname, j->err);
    box_drop(b);
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
    return lua_error(L);
  }
  luaL_checkstack(L, 8, NULL);
  if (j->kind == DB_EXEC) {
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, (lua_Integer)j->changes);
    lua_setfield(L, -2, "changes");
    lua_pushinteger(L, (lua_Integer)j->last_id);
    lua_setfield(L, -2, "last_id");
  } else if (j->kind == DB_ONE) {
    if (j->nrows) push_row(L, j, 0);
    else lua_pushnil(L);
  } else {
    lua_createtable(L, j->nrows > INT32_MAX ? 0 : (int)j->nrows, 0);
    json_push_array_mt(L);
    lua_setmetatable(L, -2);
    for (size_t r = 0; r < j->nrows; r++) {
      push_row(L, j, r);
      lua_rawseti(L, -2, (lua_Integer)r + 1);
    }
  }
  box_drop(b);
  return 1;
}

static int db_query(lua_State *L) { return start(L, DB_ROWS); }
static int db_one(lua_State *L) { return start(L, DB_ONE); }
static int db_exec(lua_State *L) { return start(L, DB_EXEC); }

/* {====== transactions: the C half of mcp.db.tx (lua/mcp.lua), whose
   errors are the author's at level 2 */

/* g is the transaction (or savepoint) open now */
static bool tx_current(const db_tx *g) {
  return g->open && D.owner && g->gen == D.gen && g->level == D.depth;
}

/* Roll back what g holds (nothing when the transaction ended already). */
static void tx_drop(db_tx *g) {
  if (g->open && g->level == 1 && g->gen == D.lost_gen && D.lost) D.lost = NULL; /* its tx returns */
  if (!tx_current(g)) {
    g->open = false;
    return;
  }
  g->open = false;
  if (g->level == 1) {
    tx_abandon();
  } else {
    char sql[96];
    snprintf(sql, sizeof sql, "ROLLBACK TO luamcp_%d; RELEASE luamcp_%d", g->level, g->level);
    push_detached(sql);
    D.depth = g->level - 1;
  }
  dispatch();
}

static int tx_gc(lua_State *L) {
  tx_drop(lua_touserdata(L, 1));
  return 0;
}

static int begun(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  int box_idx = (int)ctx;
  db_box *b = lua_touserdata(L, box_idx);
  db_job *j = b->job;
  db_tx *g = lua_touserdata(L, box_idx - 1);
  if (j && j->begins_tx) g->gen = j->gen;
  if (j && j->err) {
    if (g->level > 1 && tx_current(g)) D.depth = g->level - 1;
    g->open = false;
  }
  if (!tx_result(L, b)) return 0; /* raised */
  box_drop(b);
  lua_pushvalue(L, box_idx - 1);
  return 1;
}

/* core.db.begin(): a tx guard, once BEGIN IMMEDIATE (or a savepoint,
   within the call's own transaction) is done */
static int db_begin(lua_State *L) {
  call *c = parkable(L, "mcp.db.tx", 2);
  lua_settop(L, 0);
  db_tx *g = lua_newuserdatauv(L, sizeof *g, 0);
  memset(g, 0, sizeof *g);
  luaL_setmetatable(L, TX_TYPE);
  if (D.owner == c && D.depth > 0) { /* nested: a savepoint, after the statements before it */
    char sql[64];
    g->gen = D.gen;
    g->level = ++D.depth;
    g->open = true;
    snprintf(sql, sizeof sql, "SAVEPOINT luamcp_%d", g->level);
    int box_idx;
    new_job(L, sql, strlen(sql), DB_EXEC, "mcp.db.tx", &box_idx);
    return park(L, c, box_idx, begun, "mcp.db.tx");
  }
  int box_idx;
  db_job *j = new_job(L, "BEGIN IMMEDIATE", 15, DB_EXEC, "mcp.db.tx", &box_idx);
  j->begins_tx = true;
  g->level = 1; /* its gen comes with BEGIN's dispatch */
  g->open = true;
  return park(L, c, box_idx, begun, "mcp.db.tx");
}

static int committed(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  int box_idx = (int)ctx;
  db_box *b = lua_touserdata(L, box_idx);
  db_tx *g = lua_touserdata(L, 1);
  if (!tx_result(L, b)) return 0; /* raised; a failed COMMIT leaves it open: its guard rolls it back */
  box_drop(b);
  g->open = false;
  if (g->level > 1) D.depth = g->level - 1;
  return 0;
}

/* core.db.commit(g) */
static int db_commit(lua_State *L) {
  db_tx *g = luaL_checkudata(L, 1, TX_TYPE);
  call *c = call_current(L);
  if (!tx_current(g) || D.owner != c) {
    tx_drop(g);
    return luax_raise_at(L, 2, "mcp.db.tx: the transaction was rolled back (by an earlier error)");
  }
  parkable(L, "mcp.db.tx", 2);
  lua_settop(L, 1);
  char sql[64];
  if (g->level == 1) snprintf(sql, sizeof sql, "COMMIT");
  else snprintf(sql, sizeof sql, "RELEASE luamcp_%d", g->level);
  int box_idx;
  db_job *j = new_job(L, sql, strlen(sql), DB_EXEC, "mcp.db.tx", &box_idx);
  j->ends_tx = g->level == 1;
  return park(L, c, box_idx, committed, "mcp.db.tx");
}

/* core.db.rollback(g): queued before anything else (the call goes on) */
static int db_rollback(lua_State *L) {
  tx_drop(luaL_checkudata(L, 1, TX_TYPE));
  return 0;
}
/* }====== */

/* }====================================================== */

void db_set_path(const char *file) {
  free(D.path);
  D.path = file ? strdup(file) : NULL;
  D.be = &db_backend_sqlite;
}

bool db_set_postgres(const char *url, const char *password, int pool, char *why, size_t cap) {
  if (!db_pg_configure(url, password, pool, why, cap)) return false;
  free(D.path);
  D.path = strdup(url);
  D.be = &db_backend_pg;
  return D.path != NULL;
}

bool db_is_postgres(void) { return D.be == &db_backend_pg; }

const char *db_path_set(void) { return D.be == &db_backend_pg ? NULL : D.path; }

static void free_handle(uv_handle_t *h) { free(h); }

void db_close(void) {
  be()->stop();
  db_job *j;
  while ((j = be()->done())) complete(j); /* their calls ended: freed */
  while ((j = D.w.head)) { /* rollbacks only: the close rolls back */
    D.w.head = j->next;
    db_job_free(j);
  }
  while ((j = D.r.head)) { /* none: their calls ended first */
    D.r.head = j->next;
    db_job_free(j);
  }
  D.w.tail = D.r.tail = NULL;
  memset(D.busy, 0, sizeof D.busy);
  D.writer_ready = false;
  D.owner = NULL;
  D.depth = 0;
  D.gen++; /* guards still around hold nothing */
  if (D.async) uv_close((uv_handle_t *)D.async, free_handle);
  D.async = NULL;
  D.loop = NULL;
}

void db_push(lua_State *L) {
  if (luaL_newmetatable(L, BOX_TYPE)) {
    lua_pushcfunction(L, box_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, box_gc);
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, TX_TYPE)) {
    lua_pushcfunction(L, tx_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, tx_gc);
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);
  static const luaL_Reg funcs[] = {{"query", db_query},   {"one", db_one},
                                   {"exec", db_exec},     {"begin", db_begin},
                                   {"commit", db_commit}, {"rollback", db_rollback},
                                   {NULL, NULL}};
  luaL_newlib(L, funcs);
}
