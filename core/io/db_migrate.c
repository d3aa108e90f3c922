/* db_migrate.c — the app's migrations (db.h): DIR/migrations/NNN_name.sql,
 * applied in the order of their numbers, all that are pending in one
 * transaction (BEGIN IMMEDIATE … COMMIT: a failing one leaves nothing of
 * the set applied), each recorded in luamcp_migrations(name, checksum,
 * applied_at) with the SHA-256 of its bytes.
 *
 * It runs on the thread that loads the app (a reload's own thread while
 * the version before keeps serving) on a connection of its own, opened and
 * closed here: SQLite's locks (WAL) keep it apart from mcp.db's writer, and
 * its busy handler waits for a transaction a handler holds (at most
 * MIGRATE_BUSY seconds, or until the load is stopped). Scratch: an
 * in-memory database, every migration from nothing (luamcp check).
 *
 * What is refused (a load error, one line each): a file of migrations/ whose
 * name is not NNN_name.sql, two files with one number, a statement that
 * fails (FILE:LINE: SQLite's message), a statement that begins or ends a
 * transaction, an applied migration whose file changed (its checksum), a
 * new migration numbered below one applied already. An applied migration
 * whose file is gone is a warning: the database keeps what it did.
 *
 * On PostgreSQL (--db): the same files, in one transaction that holds an
 * advisory lock (two instances loading at once apply them once), each
 * statement run apart so an error names its FILE:LINE; a file of
 * migrations/postgres/ replaces the portable one of the same NNN there (or
 * adds its own number), and is recorded under its own name.
 *
 * They run last in a load (app.c): nothing after them can fail it. A
 * reload stopped once they committed (a newer change came, or shutdown)
 * publishes nothing, and the newer load finds them applied. */
#include "db.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "pq_dl.h"
#include <nettle/sha2.h>
#include <sqlite3.h>

#include "buf.h"
#include "db_internal.h"
#include "db_placeholders.h"
#include "log.h"

#define MIGRATE_BUSY 30.0 /* seconds to wait for another connection's write lock */

typedef struct migration {
  char *name;      /* NNN_name.sql */
  uint64_t number; /* NNN */
  char sum[65];    /* hex SHA-256 of the file */
  buf text;
  bool applied;
  const char *dir; /* its folder when not the portable one (migrations/postgres) */
} migration;

typedef struct ctx {
  const atomic_bool *stop;
  const char *file;
  double since;
  bool guard; /* refuse BEGIN/COMMIT/ROLLBACK: a migration's statement runs */
} ctx;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int busy(void *ud, int count) {
  ctx *c = ud;
  if (count == 0) {
    c->since = now();
    log_msg(LOG_INFO, "%s: the migrations wait for the write lock (a transaction of another "
            "connection holds it; at most %g s)", c->file, MIGRATE_BUSY);
  }
  if ((c->stop && atomic_load(c->stop)) || now() - c->since >= MIGRATE_BUSY) return 0;
  struct timespec ts = {0, (count < 10 ? count + 1 : 10) * 1000000L};
  nanosleep(&ts, NULL);
  return 1;
}

static int progress(void *ud) {
  ctx *c = ud;
  return c->stop && atomic_load(c->stop);
}

static int authorize(void *ud, int action, const char *a, const char *b, const char *db,
                     const char *trigger) {
  (void)a, (void)b, (void)db, (void)trigger;
  return ((ctx *)ud)->guard && action == SQLITE_TRANSACTION ? SQLITE_DENY : SQLITE_OK;
}

/* NNN_name.sql: its number, or false */
static bool parse_name(const char *name, uint64_t *number) {
  const char *p = name;
  uint64_t n = 0;
  int digits = 0;
  while (isdigit((unsigned char)*p)) {
    if (++digits > 18) return false;
    n = n * 10 + (uint64_t)(*p++ - '0');
  }
  if (!digits || *p++ != '_') return false;
  const char *start = p;
  while (isalnum((unsigned char)*p) || *p == '_' || *p == '-') p++;
  if (p == start || strcmp(p, ".sql") != 0) return false;
  *number = n;
  return true;
}

/* editors' scratch files (reload.c ignores the same) */
static bool scratch_name(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || name[0] == '.' || name[0] == '#' || name[n - 1] == '~') return true;
  if (strcmp(name, "4913") == 0) return true;
  const char *dot = strrchr(name, '.');
  return dot && (strcmp(dot, ".swp") == 0 || strcmp(dot, ".swx") == 0 || strcmp(dot, ".tmp") == 0);
}

static int by_number(const void *x, const void *y) {
  const migration *a = x, *b = y;
  if (a->number != b->number) return a->number < b->number ? -1 : 1;
  return strcmp(a->name, b->name);
}

static void sha256_hex(const char *p, size_t n, char out[65]) {
  struct sha256_ctx h;
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_init(&h);
  sha256_update(&h, n, (const uint8_t *)p);
  sha256_digest(&h, sizeof d, d);
  for (int i = 0; i < SHA256_DIGEST_SIZE; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void free_list(migration *m, size_t n) {
  for (size_t i = 0; i < n; i++) free(m[i].name), buf_free(&m[i].text), free((char *)m[i].dir);
  free(m);
}

/* The files of dir (DIR/migrations), in order; *n 0 without the folder.
   False with the problems in errors. */
static bool read_list(const char *dir, migration **out, size_t *n, buf *errors) {
  *out = NULL, *n = 0;
  struct dirent **names;
  int k = scandir(dir, &names, NULL, alphasort);
  if (k < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return true;
    buf_printf(errors, "%s: cannot open the migrations folder: %s\n", dir, strerror(errno));
    return false;
  }
  bool ok = true;
  migration *m = calloc((size_t)k + 1, sizeof *m);
  size_t count = 0;
  for (int i = 0; i < k; i++) {
    const char *name = names[i]->d_name;
    char path[4096 + 256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    if (scratch_name(name) || stat(path, &st) != 0 || S_ISDIR(st.st_mode)) continue;
    uint64_t number;
    if (!parse_name(name, &number)) {
      buf_printf(errors, "%s: not a migration's name: name each NNN_name.sql (digits, '_', then "
                 "letters, digits, '_' or '-'), applied in the order of NNN\n", path);
      ok = false;
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      buf_printf(errors, "%s: not a regular file\n", path);
      ok = false;
      continue;
    }
    migration *x = &m[count++];
    x->name = strdup(name);
    x->number = number;
    buf_init(&x->text);
    if (!buf_read_file(&x->text, path)) {
      buf_printf(errors, "%s: cannot read: %s\n", path, strerror(errno));
      ok = false;
    }
    sha256_hex(x->text.p ? x->text.p : "", x->text.len, x->sum);
  }
  for (int i = 0; i < k; i++) free(names[i]);
  free(names);
  qsort(m, count, sizeof *m, by_number);
  for (size_t i = 1; i < count; i++)
    if (m[i].number == m[i - 1].number) {
      buf_printf(errors, "%s/%s: its number %" PRIu64 " is also %s's: each migration has a number "
                 "of its own\n", dir, m[i].name, m[i].number, m[i - 1].name);
      ok = false;
    }
  *out = m, *n = count;
  return ok;
}

/* the line of the byte at off in text (1-based) */
static int line_at(const char *text, size_t off) {
  int line = 1;
  for (size_t i = 0; i < off; i++) line += text[i] == '\n';
  return line;
}

/* where a statement starts: past blanks and comments */
static size_t skip_blank(const char *s, size_t i, size_t end) {
  for (;;) {
    while (i < end && isspace((unsigned char)s[i])) i++;
    if (i + 1 < end && s[i] == '-' && s[i + 1] == '-') {
      while (i < end && s[i] != '\n') i++;
    } else if (i + 1 < end && s[i] == '/' && s[i + 1] == '*') {
      const char *close = NULL;
      for (size_t k = i + 2; k + 1 < end && !close; k++)
        if (s[k] == '*' && s[k + 1] == '/') close = s + k;
      i = close ? (size_t)(close - s) + 2 : end;
    } else {
      return i;
    }
  }
}

/* Run one migration's statements; FILE:LINE: why into errors. */
static bool run_one(sqlite3 *db, ctx *c, const char *dir, migration *m, buf *errors) {
  const char *text = m->text.p ? m->text.p : "";
  size_t len = m->text.len;
  const char *nul = memchr(text, 0, len);
  if (nul) {
    buf_printf(errors, "%s/%s:%d: a NUL byte in the SQL\n", dir, m->name, line_at(text, (size_t)(nul - text)));
    return false;
  }
  if (len > (size_t)1 << 30) { /* SQLite's own bound on a statement's text */
    buf_printf(errors, "%s/%s: longer than 1 GiB\n", dir, m->name);
    return false;
  }
  const char *p = text, *end = text + len;
  while (p < end) {
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    c->guard = true;
    int rc = sqlite3_prepare_v2(db, p, (int)(end - p), &st, &tail);
    const char *err = NULL;
    size_t at = skip_blank(text, (size_t)(p - text), len);
    if (rc != SQLITE_OK) {
      int off = sqlite3_error_offset(db);
      if (off >= 0) at = (size_t)(p - text) + (size_t)off;
      err = sqlite3_errmsg(db);
    } else if (st) {
      while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
      if (rc != SQLITE_DONE) {
        int off = sqlite3_error_offset(db);
        if (off >= 0) at = (size_t)(p - text) + (size_t)off;
        err = sqlite3_errmsg(db);
      }
    }
    c->guard = false;
    if (err) {
      if (rc == SQLITE_AUTH || strstr(err, "not authorized"))
        err = "a migration may not begin or end a transaction (BEGIN, COMMIT, ROLLBACK): luamcp runs "
              "all pending migrations in one";
      else if (c->stop && atomic_load(c->stop) && rc == SQLITE_INTERRUPT)
        err = "interrupted: the load was stopped";
      buf_printf(errors, "%s/%s:%d: %s\n", dir, m->name, line_at(text, at), err);
      sqlite3_finalize(st);
      return false;
    }
    sqlite3_finalize(st);
    if (!tail || tail <= p) break;
    p = tail;
  }
  return true;
}

static bool exec(sqlite3 *db, const char *sql, const char *what, buf *errors) {
  char *e = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &e) == SQLITE_OK) return true;
  buf_printf(errors, "%s: %s\n", what, e ? e : sqlite3_errmsg(db));
  sqlite3_free(e);
  return false;
}

static bool note_applied(const char *dir, migration *m, size_t n, const char *name, const char *sum,
                         const char *file, bool warn, buf *errors);
static bool check_order(const char *dir, migration *m, size_t n, const char *file, buf *errors);
static bool read_all(const char *dir, bool pg, migration **out, size_t *n, buf *errors);
static bool migrate_pg(const char *dir, migration *m, size_t n, buf *errors);

/* What luamcp_migrations holds: mark the applied, check their checksums,
   refuse a new one numbered below an applied one. */
static bool check_applied(sqlite3 *db, const char *dir, migration *m, size_t n, const char *file,
                          bool warn, buf *errors) {
  for (size_t i = 0; i < n; i++) m[i].applied = false;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "SELECT name, checksum FROM luamcp_migrations ORDER BY name", -1, &st,
                         NULL) != SQLITE_OK) {
    buf_printf(errors, "%s: luamcp_migrations: %s\n", file, sqlite3_errmsg(db));
    return false;
  }
  bool ok = true;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    ok &= note_applied(dir, m, n, (const char *)sqlite3_column_text(st, 0),
                       (const char *)sqlite3_column_text(st, 1), file, warn, errors);
  if (rc != SQLITE_DONE) {
    buf_printf(errors, "%s: luamcp_migrations: %s\n", file, sqlite3_errmsg(db));
    ok = false;
  }
  sqlite3_finalize(st);
  return ok && check_order(dir, m, n, file, errors);
}

/* one row of luamcp_migrations: its migration marked applied, or why not */
static bool note_applied(const char *dir, migration *m, size_t n, const char *name, const char *sum,
                         const char *file, bool warn, buf *errors) {
    if (!name) return true;
    migration *x = NULL;
    for (size_t i = 0; i < n && !x; i++)
      if (strcmp(m[i].name, name) == 0) x = &m[i];
    if (!x) {
      if (warn)
        log_msg(LOG_WARNING, "%s/%s: applied to %s earlier, and no longer in migrations/ (what it did "
              "stays in the database)", dir, name, file);
      return true;
    }
    x->applied = true;
    if (!sum || strcmp(sum, x->sum) != 0) {
      buf_printf(errors, "%s/%s:1: edited after it was applied to %s (checksum sha256:%.12s… recorded, "
                 "the file's is sha256:%.12s…): an applied migration stays as it was; put the "
                 "change in a new migration\n", x->dir ? x->dir : dir, name, file, sum ? sum : "(none)", x->sum);
      return false;
    }
    return true;
}

/* no new migration numbered below an applied one */
static bool check_order(const char *dir, migration *m, size_t n, const char *file, buf *errors) {
  bool ok = true;
  const migration *last = NULL; /* the applied one with the highest number */
  for (size_t i = 0; i < n; i++)
    if (m[i].applied) last = &m[i];
  for (size_t i = 0; ok && last && i < n; i++)
    if (!m[i].applied && m[i].number < last->number) {
      buf_printf(errors, "%s/%s: new, but numbered below %s, applied already to %s: number it "
                 "after the last applied migration\n", m[i].dir ? m[i].dir : dir, m[i].name, last->name, file);
      ok = false;
    }
  return ok;
}

/* luamcp_migrations is there */
static bool has_table(sqlite3 *db) {
  sqlite3_stmt *st = NULL;
  bool yes = sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = "
                                "'luamcp_migrations'", -1, &st, NULL) == SQLITE_OK &&
             sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return yes;
}

static bool apply(sqlite3 *db, ctx *c, const char *dir, migration *m, size_t n, const char *file,
                  bool scratch, buf *errors) {
  size_t errlen = errors->len;
  if (!scratch && has_table(db)) {
    /* a look first, without the write lock: most loads have nothing to apply,
       and need not wait for a transaction a handler holds */
    if (!check_applied(db, dir, m, n, file, true, errors)) return false;
    size_t pending = 0;
    for (size_t i = 0; i < n; i++) pending += !m[i].applied;
    if (!pending) return true;
  }
  if (!exec(db, "BEGIN IMMEDIATE", file, errors)) {
    if (sqlite3_errcode(db) == SQLITE_BUSY)
      buf_printf(errors, "%s: another connection held the write lock for %g s: the migrations "
                 "were not applied\n", file, MIGRATE_BUSY);
    return false;
  }
  bool ok = exec(db,
                 "CREATE TABLE IF NOT EXISTS luamcp_migrations(name TEXT PRIMARY KEY, checksum TEXT "
                 "NOT NULL, applied_at INTEGER NOT NULL)",
                 file, errors);
  if (ok && !scratch) ok = check_applied(db, dir, m, n, file, false, errors); /* again: another process may have applied some */
  size_t applied = 0;
  for (size_t i = 0; ok && i < n; i++) {
    if (m[i].applied) continue;
    if (!(ok = run_one(db, c, dir, &m[i], errors))) break;
    sqlite3_stmt *st = NULL;
    ok = sqlite3_prepare_v2(db, "INSERT INTO luamcp_migrations(name, checksum, applied_at) VALUES (?, ?, ?)",
                            -1, &st, NULL) == SQLITE_OK;
    if (ok) {
      sqlite3_bind_text(st, 1, m[i].name, -1, SQLITE_STATIC);
      sqlite3_bind_text(st, 2, m[i].sum, -1, SQLITE_STATIC);
      sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL));
      ok = sqlite3_step(st) == SQLITE_DONE;
    }
    if (!ok)
      buf_printf(errors, "%s/%s: cannot record it in luamcp_migrations: %s\n", dir, m[i].name,
                 sqlite3_errmsg(db));
    sqlite3_finalize(st);
    applied++;
  }
  if (ok && sqlite3_get_autocommit(db)) { /* cannot be (the authorizer): never commit half */
    buf_printf(errors, "%s: the migrations' transaction ended early\n", file);
    ok = false;
  }
  if (ok) ok = exec(db, "COMMIT", file, errors);
  if (!ok) {
    if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    if (errors->len == errlen) buf_printf(errors, "%s: the migrations failed\n", file);
    return false;
  }
  if (applied && !scratch)
    log_msg(LOG_INFO, "%s: %zu migration%s applied (up to %s)", file, applied, applied == 1 ? "" : "s",
            m[n - 1].name);
  return true;
}

bool db_migrate(const char *app_dir, bool scratch, const atomic_bool *stop, buf *errors) {
  char dir[4096];
  if (strcmp(app_dir, ".") == 0) snprintf(dir, sizeof dir, "migrations");
  else snprintf(dir, sizeof dir, "%s/migrations", app_dir);
  migration *m;
  size_t n;
  bool pg = !scratch && db_is_postgres();
  if (!read_all(dir, pg, &m, &n, errors)) {
    free_list(m, n);
    return false;
  }
  if (pg) {
    bool ok = !n || migrate_pg(dir, m, n, errors);
    free_list(m, n);
    return ok;
  }
  const char *file = scratch ? ":memory:" : db_path_set();
  if (!n || !file) { /* nothing to apply, or no data folder (mcp.db is off) */
    free_list(m, n);
    return true;
  }
  if (!scratch) {
    char folder[4096];
    snprintf(folder, sizeof folder, "%s", file);
    char *slash = strrchr(folder, '/');
    if (slash && slash != folder) {
      *slash = 0;
      if (db_mkdirs(folder) != 0) {
        buf_printf(errors, "%s: cannot make the data folder: %s\n", folder, strerror(errno));
        free_list(m, n);
        return false;
      }
    }
  }
  if (!scratch) db_hold(file);
  ctx c = {.stop = stop, .file = file};
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(file, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  bool ok = rc == SQLITE_OK;
  if (!ok) buf_printf(errors, "%s: cannot open: %s\n", file, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  if (ok) {
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_handler(db, busy, &c);
    sqlite3_progress_handler(db, 1000, progress, &c);
    sqlite3_set_authorizer(db, authorize, &c);
    ok = exec(db,
              scratch ? "PRAGMA foreign_keys=ON; PRAGMA trusted_schema=OFF;"
                      : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
                        "PRAGMA trusted_schema=OFF;",
              file, errors);
  }
  if (ok) ok = apply(db, &c, dir, m, n, file, scratch, errors);
  sqlite3_close(db);
  free_list(m, n);
  return ok;
}

static void when_of(sqlite3_int64 at, char out[32]) {
  time_t t = (time_t)at;
  struct tm tm;
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
}

typedef struct applied_row {
  char *name, *sum;
  int64_t at;
} applied_row;

static void free_rows(applied_row *r, size_t n) {
  for (size_t i = 0; i < n; i++) free(r[i].name), free(r[i].sum);
  free(r);
}

static bool add_row(applied_row **r, size_t *n, const char *name, const char *sum, int64_t at) {
  applied_row *p = realloc(*r, (*n + 1) * sizeof *p);
  if (!p) return false;
  *r = p;
  p[*n] = (applied_row){name ? strdup(name) : NULL, sum ? strdup(sum) : NULL, at};
  ++*n;
  return true;
}

/* luamcp_migrations of a SQLite file (not there: none) */
static bool rows_sqlite(const char *file, applied_row **rows, size_t *nrows, buf *errors) {
  struct stat sb;
  if (stat(file, &sb) != 0) return true; /* nothing applied (and nothing made) */
  sqlite3 *db = NULL;
  sqlite3_stmt *all = NULL;
  bool ok = true;
  if (sqlite3_open_v2(file, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
    buf_printf(errors, "%s: cannot open: %s\n", file, db ? sqlite3_errmsg(db) : "out of memory");
    ok = false;
  } else {
    sqlite3_busy_timeout(db, 5000);
    if (has_table(db)) {
      if (sqlite3_prepare_v2(db, "SELECT name, checksum, applied_at FROM luamcp_migrations ORDER BY applied_at, name",
                             -1, &all, NULL) != SQLITE_OK) {
        buf_printf(errors, "%s: luamcp_migrations: %s\n", file, sqlite3_errmsg(db));
        ok = false;
      }
      while (all && sqlite3_step(all) == SQLITE_ROW)
        add_row(rows, nrows, (const char *)sqlite3_column_text(all, 0),
                (const char *)sqlite3_column_text(all, 1), sqlite3_column_int64(all, 2));
    }
  }
  sqlite3_finalize(all);
  sqlite3_close(db);
  return ok;
}

static void quiet(void *ud, const char *msg) { (void)ud, (void)msg; } /* NOTICEs are not ours to print */

static void pg_message(PGconn *pg, PGresult *r, char *out, size_t cap) {
  const char *m = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
  snprintf(out, cap, "%s", m ? m : PQerrorMessage(pg));
  size_t n = strlen(out);
  while (n && (out[n - 1] == '\n' || out[n - 1] == ' ')) out[--n] = 0;
}

static bool pg_ok(PGconn *pg, const char *sql, const char *what, buf *errors) {
  PGresult *r = PQexec(pg, sql);
  bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
  if (!ok) {
    char m[512];
    pg_message(pg, r, m, sizeof m);
    buf_printf(errors, "%s: %s\n", what, m);
  }
  PQclear(r);
  return ok;
}

/* luamcp_migrations on PostgreSQL (not there: none) */
static bool rows_pg(PGconn *pg, const char *where, applied_row **rows, size_t *nrows, buf *errors) {
  PGresult *r = PQexec(pg, "SELECT name, checksum, applied_at FROM luamcp_migrations WHERE "
                           "to_regclass('luamcp_migrations') IS NOT NULL ORDER BY applied_at, name");
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    char m[512];
    pg_message(pg, r, m, sizeof m);
    PQclear(r);
    if (strstr(m, "does not exist")) return true; /* none applied */
    buf_printf(errors, "%s: luamcp_migrations: %s\n", where, m);
    return false;
  }
  for (int i = 0; i < PQntuples(r); i++)
    add_row(rows, nrows, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), strtoll(PQgetvalue(r, i, 2), NULL, 10));
  PQclear(r);
  return true;
}

bool db_migrate_status(const char *app_dir, const char *file, buf *out, size_t *pending, buf *errors) {
  char dir[4096];
  if (strcmp(app_dir, ".") == 0) snprintf(dir, sizeof dir, "migrations");
  else snprintf(dir, sizeof dir, "%s/migrations", app_dir);
  *pending = 0;
  migration *m;
  size_t n;
  bool pg = db_is_postgres();
  bool ok = read_all(dir, pg, &m, &n, errors);
  applied_row *rows = NULL;
  size_t nrows = 0;
  char where[600];
  if (pg) {
    PGconn *c = db_pg_connect_blocking(where, sizeof where);
    if (!c) buf_printf(errors, "%s\n", where), ok = false;
    snprintf(where, sizeof where, "PostgreSQL %s", db_pg_url());
    if (c) PQsetNoticeProcessor(c, quiet, NULL), ok &= rows_pg(c, where, &rows, &nrows, errors);
    PQfinish(c);
    file = where;
  } else {
    ok &= rows_sqlite(file, &rows, &nrows, errors);
  }
  char when[32];
  for (size_t i = 0; i < n; i++) {
    const applied_row *r = NULL;
    for (size_t k = 0; k < nrows && !r; k++)
      if (rows[k].name && strcmp(rows[k].name, m[i].name) == 0) r = &rows[k];
    if (!r) {
      buf_printf(out, "pending  %s\n", m[i].name), ++*pending;
      continue;
    }
    when_of(r->at, when);
    if (r->sum && strcmp(r->sum, m[i].sum) == 0) {
      buf_printf(out, "applied  %s  %s  sha256:%.12s\n", m[i].name, when, m[i].sum);
    } else {
      buf_printf(out, "edited   %s  %s  applied as sha256:%.12s, the file is now sha256:%.12s\n", m[i].name,
                 when, r->sum ? r->sum : "(none)", m[i].sum);
      buf_printf(errors, "%s/%s: edited after it was applied to %s: serve refuses to load; put the "
                 "change in a new migration\n", m[i].dir ? m[i].dir : dir, m[i].name, file);
      ok = false;
    }
  }
  for (size_t k = 0; k < nrows; k++) {
    size_t i = 0;
    while (rows[k].name && i < n && strcmp(m[i].name, rows[k].name) != 0) i++;
    if (!rows[k].name || i < n) continue;
    when_of(rows[k].at, when);
    buf_printf(out, "gone     %s  %s  applied, no longer in migrations/\n", rows[k].name, when);
  }
  free_rows(rows, nrows);
  free_list(m, n);
  return ok;
}

/* {====== PostgreSQL */

/* migrations/ and, on PostgreSQL, migrations/postgres/: one of the same
   number there replaces the portable one */
static bool read_all(const char *dir, bool pg, migration **out, size_t *n, buf *errors) {
  bool ok = read_list(dir, out, n, errors);
  if (!pg) return ok;
  char sub[4200];
  snprintf(sub, sizeof sub, "%s/postgres", dir);
  migration *p;
  size_t np;
  ok &= read_list(sub, &p, &np, errors);
  if (!np) return free_list(p, np), ok;
  migration *all = realloc(*out, (*n + np + 1) * sizeof *all);
  if (!all) {
    free_list(p, np);
    return false;
  }
  size_t count = *n;
  for (size_t i = 0; i < np; i++) {
    p[i].dir = strdup(sub);
    size_t k = 0;
    while (k < count && all[k].number != p[i].number) k++;
    if (k < count) free(all[k].name), buf_free(&all[k].text), free((char *)all[k].dir);
    else count++;
    all[k] = p[i];
  }
  free(p);
  qsort(all, count, sizeof *all, by_number);
  *out = all, *n = count;
  return ok;
}

/* the statement's first word is one that begins or ends a transaction */
static bool tx_word(const char *s, size_t n) {
  static const char *const words[] = {"BEGIN", "COMMIT", "ROLLBACK", "START", "END", "ABORT",
                                      "SAVEPOINT", "RELEASE", "PREPARE"};
  char w[16];
  size_t k = 0;
  while (k < n && k < sizeof w - 1 && isalpha((unsigned char)s[k])) w[k] = (char)toupper((unsigned char)s[k]), k++;
  w[k] = 0;
  for (size_t i = 0; i < sizeof words / sizeof *words; i++)
    if (strcmp(w, words[i]) == 0) return true;
  return false;
}

/* one migration, a statement at a time (an error's line is its own) */
static bool run_one_pg(PGconn *pg, const char *dir, migration *m, buf *errors) {
  const char *text = m->text.p ? m->text.p : "";
  size_t len = m->text.len;
  const char *folder = m->dir ? m->dir : dir;
  const char *nul = memchr(text, 0, len);
  if (nul) {
    buf_printf(errors, "%s/%s:%d: a NUL byte in the SQL\n", folder, m->name, line_at(text, (size_t)(nul - text)));
    return false;
  }
  size_t i = 0;
  while (i < len) {
    size_t start = skip_blank(text, i, len), end = db_placeholders_statement_end(text, len, start);
    i = end;
    if (start >= end) continue;
    if (tx_word(text + start, end - start)) {
      buf_printf(errors, "%s/%s:%d: a migration may not begin or end a transaction (BEGIN, COMMIT, "
                 "ROLLBACK): luamcp runs all pending migrations in one\n", folder, m->name, line_at(text, start));
      return false;
    }
    char *sql = malloc(end - start + 1);
    if (!sql) return false;
    memcpy(sql, text + start, end - start);
    sql[end - start] = 0;
    PGresult *r = PQexec(pg, sql);
    free(sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_EMPTY_QUERY) {
      char msg[512];
      pg_message(pg, r, msg, sizeof msg);
      const char *pos = PQresultErrorField(r, PG_DIAG_STATEMENT_POSITION);
      size_t at = start;
      if (pos && atol(pos) > 0 && start + (size_t)atol(pos) - 1 < end) at = start + (size_t)atol(pos) - 1;
      buf_printf(errors, "%s/%s:%d: %s\n", folder, m->name, line_at(text, at), msg);
      PQclear(r);
      return false;
    }
    PQclear(r);
  }
  return true;
}

static bool migrate_pg(const char *dir, migration *m, size_t n, buf *errors) {
  char where[600];
  PGconn *pg = db_pg_connect_blocking(where, sizeof where);
  if (!pg) {
    buf_printf(errors, "%s\n", where);
    return false;
  }
  PQsetNoticeProcessor(pg, quiet, NULL);
  snprintf(where, sizeof where, "PostgreSQL %s", db_pg_url());
  /* one migrator at a time in the database: two instances loading at once
     apply each migration once */
  bool ok = pg_ok(pg, "BEGIN; SELECT pg_advisory_xact_lock(7310135049812316162); CREATE TABLE IF NOT "
                      "EXISTS luamcp_migrations(name text PRIMARY KEY, checksum text NOT NULL, "
                      "applied_at bigint NOT NULL)", where, errors);
  if (ok) {
    applied_row *rows = NULL;
    size_t nrows = 0;
    ok = rows_pg(pg, where, &rows, &nrows, errors);
    for (size_t k = 0; ok && k < nrows; k++)
      ok &= note_applied(dir, m, n, rows[k].name, rows[k].sum, where, true, errors);
    free_rows(rows, nrows);
    ok = ok && check_order(dir, m, n, where, errors);
  }
  size_t applied = 0;
  for (size_t i = 0; ok && i < n; i++) {
    if (m[i].applied) continue;
    if (!(ok = run_one_pg(pg, dir, &m[i], errors))) break;
    char at[32];
    snprintf(at, sizeof at, "%lld", (long long)time(NULL));
    const char *vals[3] = {m[i].name, m[i].sum, at};
    PGresult *r = PQexecParams(pg, "INSERT INTO luamcp_migrations(name, checksum, applied_at) VALUES ($1, $2, $3)",
                               3, NULL, vals, NULL, NULL, 0);
    if (!(ok = PQresultStatus(r) == PGRES_COMMAND_OK)) {
      char msg[512];
      pg_message(pg, r, msg, sizeof msg);
      buf_printf(errors, "%s/%s: cannot record it in luamcp_migrations: %s\n", dir, m[i].name, msg);
    }
    PQclear(r);
    applied++;
  }
  if (ok && PQtransactionStatus(pg) != PQTRANS_INTRANS) {
    buf_printf(errors, "%s: the migrations' transaction ended early\n", where);
    ok = false;
  }
  if (ok) ok = pg_ok(pg, "COMMIT", where, errors);
  else PQclear(PQexec(pg, "ROLLBACK"));
  PQfinish(pg);
  if (ok && applied)
    log_msg(LOG_INFO, "%s: %zu migration%s applied (up to %s)", where, applied, applied == 1 ? "" : "s",
            m[n - 1].name);
  return ok;
}
/* }====== */
