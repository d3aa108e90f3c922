/* db_sqlite.c — the threads of mcp.db's connections (db_internal.h): the
 * writer and the readers, each a SQLite connection opened by its own thread
 * at its first job and used by it alone, running one job at a time while
 * the engine's loop goes on (a reader is query_only, and hands a statement
 * that would write back unrun, for the writer). The loop hands a job over
 * (db_sqlite_run) and is told when it is done
 * (notify: a uv_async_send of db.c's); a call that ends meanwhile has its
 * job stopped (sqlite3_interrupt, and a progress handler that reads the
 * job's aborted flag: an interrupt given between two statements of a job
 * would otherwise be forgotten by the next one).
 *
 * The file: WAL (readers never wait for the writer, a committed write is
 * in the log before COMMIT returns, so it survives the process being
 * killed), synchronous=NORMAL (a power loss may lose the last commits, never
 * the file), foreign keys on, trusted_schema off. Under --sandbox an
 * authorizer refuses ATTACH/DETACH, load_extension and every pragma but a
 * list of harmless ones (none that names a file or changes how the file is
 * written), and no database may be attached (SQLITE_LIMIT_ATTACHED 0). */
#include "db_internal.h"
#include "db.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sqlite3.h>

#define ROW_COST 64  /* what a row's table costs in Lua, about */
#define CELL_COST 40 /* a cell's slot and key */

/* One connection and its thread: [0] the writer, then the readers. */
typedef struct conn {
  pthread_cond_t cv;
  pthread_t thread;
  bool started, stop, reader;
  db_job *next;  /* handed over, not yet taken */
  db_job *cur;   /* running */
  sqlite3 *db;   /* the thread's (set and cleared under S.mu) */
} conn;

static struct {
  pthread_mutex_t mu;
  void (*notify)(void);
  char *path;
  db_job *done; /* finished, not yet taken back */
  conn c[DB_CONNS];
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

void db_job_free(db_job *j) {
  if (!j) return;
  for (size_t i = 0; i < j->nparams; i++) free(j->params[i].s), free(j->params[i].name);
  free(j->params);
  for (size_t i = 0; i < j->nrows * (size_t)j->ncols; i++) free(j->cells[i].s);
  free(j->cells);
  for (int i = 0; i < j->ncols; i++) free(j->cols[i]);
  free(j->cols);
  free(j->sql);
  free(j->err);
  free(j);
}

static void set_err(db_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(db_job *j, const char *fmt, ...) {
  if (j->err) return;
  va_list ap;
  va_start(ap, fmt);
  char tmp[1024];
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  j->err = strdup(tmp);
  if (!j->err) j->err = strdup("out of memory");
}

/* SQLite's message, with where in the statement when it says so */
static void sql_err(sqlite3 *db, db_job *j, const char *stmt_start) {
  const char *msg = sqlite3_errmsg(db);
  int off = -1;
#if SQLITE_VERSION_NUMBER >= 3038000
  off = sqlite3_error_offset(db);
#endif
  if (atomic_load(&j->aborted)) msg = "interrupted";
  if (off >= 0)
    set_err(j, "%s (at byte %ld of the statement)", msg, (long)(stmt_start - j->sql) + off);
  else
    set_err(j, "%s", msg);
}

/* {====== the sandbox's authorizer */
static bool pragma_allowed(const char *name, const char *value) {
  static const char *const any[] = {
      "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
      "foreign_key_list", "foreign_key_check", "foreign_keys", "integrity_check", "quick_check",
      "user_version", "data_version", "freelist_count", "page_count", "collation_list",
      "function_list", "module_list", "pragma_list", "recursive_triggers", "defer_foreign_keys",
      "case_sensitive_like", "optimize", "cache_size"};
  static const char *const read_only[] = {"schema_version", "page_size", "journal_mode",
                                          "synchronous", "application_id", "encoding",
                                          "compile_options"};
  for (size_t i = 0; i < sizeof any / sizeof *any; i++)
    if (sqlite3_stricmp(name, any[i]) == 0) return true;
  for (size_t i = 0; i < sizeof read_only / sizeof *read_only; i++)
    if (sqlite3_stricmp(name, read_only[i]) == 0) return value == NULL;
  return false;
}

static int authorize(void *ud, int action, const char *a, const char *b, const char *db,
                     const char *trigger) {
  (void)db, (void)trigger;
  db_job *j = ((conn *)ud)->cur; /* the thread's own read: cur changes on this thread only */
  if (!j || !j->sandboxed) return SQLITE_OK;
  switch (action) {
  case SQLITE_ATTACH:
  case SQLITE_DETACH: return SQLITE_DENY;
  case SQLITE_FUNCTION: return b && sqlite3_stricmp(b, "load_extension") == 0 ? SQLITE_DENY : SQLITE_OK;
  case SQLITE_PRAGMA: return a && pragma_allowed(a, b) ? SQLITE_OK : SQLITE_DENY;
  default: return SQLITE_OK;
  }
}
/* }====== */

static int progress(void *ud) {
  db_job *j = ((conn *)ud)->cur;
  return j && atomic_load(&j->aborted);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Another process holds the lock: wait (at most the job's budget) while
   its call lasts. */
static int busy(void *ud, int count) {
  static __thread double since;
  db_job *j = ((conn *)ud)->cur;
  if (count == 0) since = now();
  if (!j || atomic_load(&j->aborted) || now() - since >= j->budget) return 0;
  struct timespec ts = {0, (count < 10 ? count + 1 : 10) * 1000000L};
  nanosleep(&ts, NULL);
  return 1;
}

int db_mkdirs(const char *dir) {
  char tmp[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof tmp) return -1;
  memcpy(tmp, dir, n + 1);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(tmp, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

int db_hold(const char *file) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static char held[4096]; /* one file at a time (luamcp test: one per test file, in turn) */
  static int held_fd = -1;
  pthread_mutex_lock(&mu);
  if (held_fd >= 0 && strcmp(held, file) == 0) return pthread_mutex_unlock(&mu), 0;
  char lock[4096 + 8];
  snprintf(lock, sizeof lock, "%s.lock", file);
  int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return pthread_mutex_unlock(&mu), -1;
  /* a restore holds it exclusive for as long as it copies: wait for it */
  while (flock(fd, LOCK_SH) != 0 && errno == EINTR) {}
  if (held_fd >= 0) close(held_fd);
  held_fd = fd;
  snprintf(held, sizeof held, "%s", file);
  pthread_mutex_unlock(&mu);
  return 0; /* held until the process exits (or holds another file) */
}

/* The writer makes the folder and the file; a reader opens the file (the
   writer's first job made it) and is query_only. */
static bool open_conn(conn *k, db_job *j) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", S.path);
  char *slash = strrchr(dir, '/');
  if (!k->reader && slash && slash != dir) {
    *slash = 0;
    if (db_mkdirs(dir) != 0) {
      set_err(j, "cannot make the data folder %s: %s", dir, strerror(errno));
      return false;
    }
  }
  db_hold(S.path);
  sqlite3 *c = NULL;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (k->reader ? 0 : SQLITE_OPEN_CREATE);
  int rc = sqlite3_open_v2(S.path, &c, flags, NULL);
  if (rc != SQLITE_OK) {
    set_err(j, "cannot open %s: %s", S.path, c ? sqlite3_errmsg(c) : sqlite3_errstr(rc));
    sqlite3_close(c);
    return false;
  }
  sqlite3_extended_result_codes(c, 1);
  sqlite3_busy_handler(c, busy, k);
  char *e = NULL;
  const char *setup = k->reader ? "PRAGMA query_only=ON; PRAGMA foreign_keys=ON; PRAGMA trusted_schema=OFF;"
                                : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
                                  "PRAGMA trusted_schema=OFF;";
  if (sqlite3_exec(c, setup, NULL, NULL, &e) != SQLITE_OK) {
    set_err(j, "cannot set up %s: %s", S.path, e ? e : "?");
    sqlite3_free(e);
    sqlite3_close(c);
    return false;
  }
  sqlite3_set_authorizer(c, authorize, k);
  sqlite3_progress_handler(c, 1000, progress, k);
  pthread_mutex_lock(&S.mu); /* db_sqlite_abort reads it */
  k->db = c;
  pthread_mutex_unlock(&S.mu);
  return true;
}

/* {====== one job */
static bool bind_one(db_job *j, sqlite3_stmt *st, int i, const db_value *v, const char *shown) {
  int rc;
  switch (v->type) {
  case DBV_NULL: rc = sqlite3_bind_null(st, i); break;
  case DBV_INT: rc = sqlite3_bind_int64(st, i, v->i); break;
  case DBV_REAL: rc = sqlite3_bind_double(st, i, v->d); break;
  case DBV_TEXT: rc = sqlite3_bind_text64(st, i, v->s, v->n, SQLITE_STATIC, SQLITE_UTF8); break;
  case DBV_BLOB: rc = sqlite3_bind_blob64(st, i, v->s, v->n, SQLITE_STATIC); break;
  default: set_err(j, "cannot bind a %s to %s (a string, number, boolean, nil or mcp.null)", v->s, shown); return false;
  }
  if (rc != SQLITE_OK) set_err(j, "cannot bind %s: %s", shown, sqlite3_errstr(rc));
  return rc == SQLITE_OK;
}

static bool bind_all(db_job *j, sqlite3_stmt *st) {
  int n = sqlite3_bind_parameter_count(st);
  if (!j->named) {
    for (int i = 1; i <= n; i++) {
      const char *name = sqlite3_bind_parameter_name(st, i);
      if (name && name[0] != '?') {
        set_err(j, "the statement names its parameter %s: pass one table of values by name", name);
        return false;
      }
    }
    if ((size_t)n != j->nparams) {
      set_err(j, "the statement has %d parameter%s, %zu value%s given", n, n == 1 ? "" : "s",
              j->nparams, j->nparams == 1 ? "" : "s");
      return false;
    }
    for (int i = 1; i <= n; i++) {
      char shown[32];
      snprintf(shown, sizeof shown, "parameter %d", i);
      if (!bind_one(j, st, i, &j->params[i - 1], shown)) return false;
    }
    return true;
  }
  for (int i = 1; i <= n; i++) {
    const char *name = sqlite3_bind_parameter_name(st, i);
    if (!name || name[0] == '?') {
      set_err(j, "the statement has a positional parameter (?) but the values are given by name");
      return false;
    }
    const db_value *v = NULL;
    for (size_t k = 0; k < j->nparams && !v; k++)
      if (strcmp(j->params[k].name, name + 1) == 0) v = &j->params[k];
    if (!v) {
      set_err(j, "no value for %s (mcp.null binds NULL)", name);
      return false;
    }
    if (!bind_one(j, st, i, v, name)) return false;
  }
  return true;
}

static bool take_row(db_job *j, sqlite3_stmt *st, size_t *used) {
  int n = sqlite3_column_count(st);
  if (!j->cols) {
    j->ncols = n;
    if (!(j->cols = calloc((size_t)n + 1, sizeof *j->cols))) return set_err(j, "out of memory"), false;
    for (int i = 0; i < n; i++) {
      const char *name = sqlite3_column_name(st, i);
      if (!(j->cols[i] = strdup(name ? name : "?"))) return set_err(j, "out of memory"), false;
      *used += strlen(j->cols[i]);
    }
  }
  if (j->nrows == j->cap) {
    size_t cap = j->cap ? j->cap * 2 : 16;
    db_value *p = realloc(j->cells, cap * (size_t)(n ? n : 1) * sizeof *p);
    if (!p) return set_err(j, "out of memory"), false;
    j->cells = p, j->cap = cap;
  }
  db_value *row = j->cells + j->nrows * (size_t)n;
  memset(row, 0, (size_t)n * sizeof *row);
  j->nrows++;
  *used += ROW_COST + (size_t)n * CELL_COST;
  for (int i = 0; i < n; i++) {
    db_value *v = &row[i];
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER: v->type = DBV_INT, v->i = sqlite3_column_int64(st, i); break;
    case SQLITE_FLOAT: v->type = DBV_REAL, v->d = sqlite3_column_double(st, i); break;
    case SQLITE_TEXT:
    case SQLITE_BLOB: {
      bool text = sqlite3_column_type(st, i) == SQLITE_TEXT;
      const void *p = text ? (const void *)sqlite3_column_text(st, i) : sqlite3_column_blob(st, i);
      size_t len = (size_t)sqlite3_column_bytes(st, i);
      *used += len;
      if (*used > j->room) return false; /* the caller says why */
      v->s = malloc(len + 1);
      if (!v->s) return set_err(j, "out of memory"), false;
      if (len) memcpy(v->s, p, len);
      v->s[len] = 0;
      v->n = len;
      v->type = text ? DBV_TEXT : DBV_BLOB;
      break;
    }
    default: v->type = DBV_NULL;
    }
  }
  return *used <= j->room;
}

static void run_job(conn *k, db_job *j) {
  sqlite3 *c = k->db;
  if (j->expect_tx && sqlite3_get_autocommit(c)) {
    set_err(j, "the transaction was rolled back (by an earlier error): nothing more runs in it");
    return;
  }
  sqlite3_limit(c, SQLITE_LIMIT_ATTACHED, j->sandboxed ? 0 : 10);
  sqlite3_int64 total0 = sqlite3_total_changes64(c);
  int nstmt = 0;
  size_t used = 0;
  const char *sql = j->sql, *end = j->sql + j->sql_len;
  while (sql < end && !j->err) {
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    if (sqlite3_prepare_v2(c, sql, (int)(end - sql), &st, &tail) != SQLITE_OK) {
      if (k->reader) { /* the writer's own temp tables, or an error it will say */
        j->to_writer = true;
        return;
      }
      sql_err(c, j, sql);
      break;
    }
    if (!st) { /* blanks or a comment */
      sql = tail;
      continue;
    }
    if (++nstmt > 1 && (j->kind != DB_EXEC || j->nparams || j->named)) {
      set_err(j, j->kind == DB_EXEC ? "with parameters the text must be one statement"
                                    : "the text must be one statement (mcp.db.exec runs several, without parameters)");
      sqlite3_finalize(st);
      break;
    }
    if (k->reader && !sqlite3_stmt_readonly(st)) { /* a write: the writer's */
      j->to_writer = true;
      sqlite3_finalize(st);
      return;
    }
    if (!bind_all(j, st)) {
      sqlite3_finalize(st);
      break;
    }
    sqlite3_int64 t0 = sqlite3_total_changes64(c);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (j->kind == DB_EXEC) continue;
      if (!take_row(j, st, &used)) {
        if (!j->err) set_err(j, "the result is larger than the call's memory limit leaves room for");
        break;
      }
      if (j->kind == DB_ONE) break;
    }
    if (!j->err && rc != SQLITE_ROW && rc != SQLITE_DONE) sql_err(c, j, sql);
    j->changes = sqlite3_total_changes64(c) != t0 ? sqlite3_changes64(c) : 0;
    sqlite3_finalize(st);
    sql = tail;
  }
  if (nstmt > 1) j->changes = sqlite3_total_changes64(c) - total0;
  j->last_id = sqlite3_last_insert_rowid(c);
  if (!j->err && nstmt == 0 && j->kind != DB_EXEC) set_err(j, "the text holds no statement");
}
/* }====== */

/* A statement that began a transaction of its own (BEGIN, SAVEPOINT) out of
   mcp.db.tx: rolled back, or the connection would hold it for every call. */
static void no_stray_tx(conn *k, db_job *j) {
  if (!k->db || sqlite3_get_autocommit(k->db) || j->begins_tx || j->expect_tx || j->detached) return;
  sqlite3_exec(k->db, "ROLLBACK", NULL, NULL, NULL);
  set_err(j, "transactions are mcp.db.tx's (BEGIN, SAVEPOINT and COMMIT are not statements of their own)");
}

static void *thread_main(void *ud) {
  conn *k = ud;
  pthread_mutex_lock(&S.mu);
  for (;;) {
    while (!k->next && !k->stop) pthread_cond_wait(&k->cv, &S.mu);
    if (!k->next) break;
    db_job *j = k->cur = k->next;
    k->next = NULL;
    pthread_mutex_unlock(&S.mu);
    if (!atomic_load(&j->aborted) && (k->db || open_conn(k, j))) run_job(k, j), no_stray_tx(k, j);
    else if (k->reader && !atomic_load(&j->aborted)) free(j->err), j->err = NULL, j->to_writer = true;
    else if (!j->err) set_err(j, "interrupted");
    j->autocommit = !k->db || sqlite3_get_autocommit(k->db);
    j->opened = k->db != NULL;
    pthread_mutex_lock(&S.mu);
    k->cur = NULL;
    j->next = S.done;
    S.done = j;
    S.notify();
  }
  sqlite3 *c = k->db;
  k->db = NULL;
  pthread_mutex_unlock(&S.mu);
  if (c) sqlite3_close_v2(c); /* an open transaction rolls back */
  return NULL;
}

static bool start_conn(int i) {
  conn *k = &S.c[i];
  if (k->started) return true;
  k->reader = i > 0;
  k->stop = false;
  pthread_cond_init(&k->cv, NULL);
  if (pthread_create(&k->thread, NULL, thread_main, k) != 0) {
    pthread_cond_destroy(&k->cv);
    return false;
  }
  k->started = true;
  return true;
}

bool db_sqlite_start(const char *path, void (*notify)(void)) {
  if (S.c[0].started) return true;
  free(S.path);
  if (!(S.path = strdup(path))) return false;
  S.notify = notify;
  return start_conn(0);
}

bool db_sqlite_run(db_job *j, int i) {
  if (!start_conn(i)) return false;
  conn *k = &S.c[i];
  j->conn = i;
  pthread_mutex_lock(&S.mu);
  k->next = j;
  pthread_cond_signal(&k->cv);
  pthread_mutex_unlock(&S.mu);
  return true;
}

db_job *db_sqlite_done(void) {
  pthread_mutex_lock(&S.mu);
  db_job *j = S.done;
  if (j) S.done = j->next, j->next = NULL;
  pthread_mutex_unlock(&S.mu);
  return j;
}

void db_sqlite_abort(db_job *j) {
  pthread_mutex_lock(&S.mu);
  atomic_store(&j->aborted, true);
  conn *k = &S.c[j->conn];
  if (k->cur == j && k->db) sqlite3_interrupt(k->db);
  pthread_mutex_unlock(&S.mu);
}

void db_sqlite_stop(void) {
  for (int i = 0; i < DB_CONNS; i++) {
    conn *k = &S.c[i];
    if (!k->started) continue;
    pthread_mutex_lock(&S.mu);
    k->stop = true;
    if (k->cur && k->db) atomic_store(&k->cur->aborted, true), sqlite3_interrupt(k->db);
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&S.mu);
    pthread_join(k->thread, NULL);
    pthread_cond_destroy(&k->cv);
    k->started = false;
  }
}

static int sqlite_conns(void) { return DB_CONNS; }
static bool sqlite_start(const char *where, void (*notify)(void), uv_loop_t *loop) {
  (void)loop;
  return db_sqlite_start(where, notify);
}

const db_backend db_backend_sqlite = {
    .system = "sqlite",
    .any_conn = false,
    .conns = sqlite_conns,
    .start = sqlite_start,
    .run = db_sqlite_run,
    .done = db_sqlite_done,
    .abort = db_sqlite_abort,
    .stop = db_sqlite_stop,
};
