/* cmd_db.c — luamcp db [--data DIR] APPDIR SUBCOMMAND: the app's mcp.db
 * file (DATA/db.sqlite, the data folder found as serve finds it) from the
 * command line:
 *   backup FILE       SQLite's online backup API: one read transaction, so
 *                     the copy is consistent while a server writes (WAL:
 *                     readers do not block it); written to FILE.tmp-PID,
 *                     then renamed
 *   restore FILE      FILE checked (quick_check), then copied in by the
 *                     backup API (the file in rollback mode meanwhile: the
 *                     WAL checkpointed, FILE's page size may differ; then
 *                     WAL again), the database before kept as db.sqlite.before-restore.
 *                     Refused while a luamcp process has the database open:
 *                     each holds a shared flock on db.sqlite.lock (db_hold),
 *                     restore takes it exclusive without waiting
 *   migrate [--status]  apply the pending migrations, or list them all
 *   query [--write] [--table] SQL [ARG...]  one statement, its rows as JSON
 *                     lines (or aligned columns);
 *                     read-only unless --write (SQLITE_OPEN_READONLY)
 *   shell [--write]   Debian's sqlite3 on the file (-readonly unless --write)
 * Read-only subcommands never make the data folder.
 *
 * --db postgres://…: migrate and query on PostgreSQL (query: cmd_db_pg.c);
 * backup, restore and shell are pg_dump's, pg_restore's and psql's, which
 * do them better than we would (consistent dumps of a live database,
 * parallel restores): the error says so. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cli.h"
#include "db.h"
#include "db_internal.h"

static FILE *out;

static int fail(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "luamcp db: ");
  fprintf(stderr, fmt, a, b);
  fputc('\n', stderr);
  return 1;
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* a and b name one file */
static bool same_file(const char *a, const char *b) {
  struct stat x, y;
  return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* a connection's setup, for the backup's loops */
static sqlite3 *open_db(const char *file, int flags, buf *why) {
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(file, &db, flags | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    buf_printf(why, "%s: cannot open: %s", file, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return NULL;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 5000);
  return db;
}

/* src's main database into dst's, in one step (one read transaction of
   src: a consistent snapshot), waiting while a lock is held. */
static bool copy(sqlite3 *src, sqlite3 *dst, buf *why) {
  sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
  if (!b) {
    buf_printf(why, "%s", sqlite3_errmsg(dst));
    return false;
  }
  int rc, tries = 0;
  while ((rc = sqlite3_backup_step(b, -1)) == SQLITE_BUSY || rc == SQLITE_LOCKED) {
    if (++tries > 500) break; /* 5 s */
    struct timespec ts = {0, 10000000L};
    nanosleep(&ts, NULL);
  }
  sqlite3_backup_finish(b);
  if (rc != SQLITE_DONE) {
    buf_printf(why, "%s", rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? "the database stayed locked 5 s"
                                                                   : sqlite3_errstr(rc));
    return false;
  }
  return true;
}

static bool exec(sqlite3 *db, const char *sql, buf *why) {
  char *e = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &e) == SQLITE_OK) return true;
  buf_printf(why, "%s", e ? e : sqlite3_errmsg(db));
  sqlite3_free(e);
  return false;
}

/* the rows of every table of db (sqlite_% aside) */
static long long count_rows(sqlite3 *db, int *tables) {
  sqlite3_stmt *st = NULL;
  long long rows = 0;
  *tables = 0;
  if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE "
                         "'sqlite\\_%' ESCAPE '\\'", -1, &st, NULL) != SQLITE_OK)
    return -1;
  while (sqlite3_step(st) == SQLITE_ROW) {
    char *q = sqlite3_mprintf("SELECT count(*) FROM \"%w\"", (const char *)sqlite3_column_text(st, 0));
    sqlite3_stmt *c = NULL;
    if (q && sqlite3_prepare_v2(db, q, -1, &c, NULL) == SQLITE_OK && sqlite3_step(c) == SQLITE_ROW)
      rows += sqlite3_column_int64(c, 0), ++*tables;
    sqlite3_finalize(c);
    sqlite3_free(q);
  }
  sqlite3_finalize(st);
  return rows;
}

static long long pragma_int(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  long long v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

/* PRAGMA quick_check of file: "ok", or why not into why */
static bool check_file(const char *file, buf *why) {
  sqlite3 *db = open_db(file, SQLITE_OPEN_READONLY, why);
  if (!db) return false;
  sqlite3_stmt *st = NULL;
  bool ok = false;
  if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL) != SQLITE_OK)
    buf_printf(why, "%s: %s", file, sqlite3_errmsg(db));
  else if (sqlite3_step(st) != SQLITE_ROW)
    buf_printf(why, "%s: %s", file, sqlite3_errmsg(db));
  else if (strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0)
    buf_printf(why, "%s: quick_check: %s", file, (const char *)sqlite3_column_text(st, 0));
  else
    ok = true;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return ok;
}

/* live's snapshot into file (made as file.tmp-PID, then renamed), in
   rollback-journal mode: one file holds it all */
static bool backup_to(const char *live, const char *file, buf *why, long long *pages, long long *rows,
                      int *tables) {
  char tmp[PATH_MAX + 32];
  snprintf(tmp, sizeof tmp, "%s.tmp-%ld", file, (long)getpid());
  unlink(tmp);
  sqlite3 *src = open_db(live, SQLITE_OPEN_READWRITE, why); /* WAL: the -shm is written */
  if (!src) return false;
  sqlite3 *dst = open_db(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, why);
  bool ok = dst && copy(src, dst, why) && exec(dst, "PRAGMA journal_mode=DELETE", why);
  if (ok) {
    *pages = pragma_int(dst, "PRAGMA page_count");
    *rows = count_rows(dst, tables);
  }
  sqlite3_close(src);
  if (dst && sqlite3_close(dst) != SQLITE_OK) ok = false;
  if (ok) {
    int fd = open(tmp, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) fsync(fd), close(fd);
    if (rename(tmp, file) != 0) {
      buf_printf(why, "%s: %s", file, strerror(errno));
      ok = false;
    }
  }
  if (!ok) unlink(tmp);
  return ok;
}

static int db_backup(const char *live, const char *file) {
  if (!exists(live)) return fail("%s: no database there yet (nothing to back up)%s", live, "");
  if (same_file(live, file)) return fail("%s is the database itself: back it up to another file%s", file, "");
  buf why;
  buf_init(&why);
  long long pages = 0, rows = 0;
  int tables = 0;
  if (!backup_to(live, file, &why, &pages, &rows, &tables)) {
    fail("backup failed: %s%s", why.p ? why.p : "?", "");
    buf_free(&why);
    return 1;
  }
  struct stat st;
  stat(file, &st);
  fprintf(out, "backed up %s to %s: %lld rows in %d tables, %lld pages, %lld bytes\n", live, file, rows,
          tables, pages, (long long)st.st_size);
  return 0;
}

static int db_restore(const char *data, const char *live, const char *file) {
  buf why;
  buf_init(&why);
  if (!exists(file)) return fail("%s: %s", file, strerror(ENOENT));
  if (same_file(live, file)) return fail("%s is the database itself%s", file, "");
  if (!check_file(file, &why)) {
    fail("%s is not a sound SQLite database: %s", file, why.p);
    return buf_free(&why), 1;
  }
  if (db_mkdirs(data) != 0) return fail("cannot make the data folder %s: %s", data, strerror(errno));
  char lock[PATH_MAX + 64], before[PATH_MAX + 64];
  snprintf(lock, sizeof lock, "%s.lock", live);
  snprintf(before, sizeof before, "%s.before-restore", live);
  int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return fail("%s: %s", lock, strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return fail("%s is open in a luamcp process (serve, call or test hold %s): stop it, then restore",
                live, lock);
  }
  bool ok = true;
  long long pages = 0, rows = 0;
  int tables = 0;
  if (exists(live)) {
    ok = backup_to(live, before, &why, &pages, &rows, &tables);
    if (!ok) fail("cannot keep the database before as %s: %s", before, why.p);
    else fprintf(out, "kept the database before as %s (%lld rows)\n", before, rows);
  }
  sqlite3 *src = NULL, *dst = NULL;
  if (ok) {
    why.len = 0;
    ok = (src = open_db(file, SQLITE_OPEN_READONLY, &why)) &&
         (dst = open_db(live, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &why)) &&
         exec(dst, "PRAGMA journal_mode=DELETE", &why) && copy(src, dst, &why) &&
         exec(dst, "PRAGMA journal_mode=WAL", &why);
    if (ok) {
      pages = pragma_int(dst, "PRAGMA page_count");
      rows = count_rows(dst, &tables);
    } else {
      fail("restore failed: %s%s", why.p ? why.p : "?", "");
    }
  }
  sqlite3_close(src);
  sqlite3_close(dst);
  close(fd); /* the lock: servers may open it again */
  buf_free(&why);
  if (!ok) return 1;
  fprintf(out, "restored %s from %s: %lld rows in %d tables, %lld pages\n", live, file, rows, tables, pages);
  return 0;
}

static int db_migrate_cmd(const char *appdir, const char *data, const char *live, bool status) {
  buf o, errors;
  buf_init(&o), buf_init(&errors);
  int code = 0;
  if (status) {
    size_t pending = 0;
    bool ok = db_migrate_status(appdir, live, &o, &pending, &errors);
    fwrite(o.p ? o.p : "", 1, o.len, out);
    if (!o.len) fprintf(out, "no migrations (%s/migrations is empty or missing)\n", appdir);
    else fprintf(out, "%zu pending\n", pending);
    if (!ok) fprintf(stderr, "%.*s", (int)errors.len, errors.p), code = 1;
  } else {
    (void)data;
    if (live) db_set_path(live); /* else PostgreSQL's, set already */
    if (!db_migrate(appdir, false, NULL, &errors)) {
      fprintf(stderr, "%.*s", (int)errors.len, errors.p ? errors.p : "");
      code = 1;
    } else {
      size_t pending = 0;
      db_migrate_status(appdir, live, &o, &pending, &errors);
      fwrite(o.p ? o.p : "", 1, o.len, out);
    }
  }
  buf_free(&o), buf_free(&errors);
  return code;
}

static void json_str(const char *s, size_t n) {
  fputc('"', out);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') fputc('\\', out), fputc(c, out);
    else if (c == '\n') fputs("\\n", out);
    else if (c == '\r') fputs("\\r", out);
    else if (c == '\t') fputs("\\t", out);
    else if (c < 0x20) fprintf(out, "\\u%04x", c);
    else fputc(c, out);
  }
  fputc('"', out);
}

/* --table: the rows as aligned columns (NULL for null, a BLOB in hex) */
typedef struct table {
  int ncols;
  size_t *width;
  char **cells; /* row-major, header first */
  size_t n, cap;
} table;

static void table_cell(table *t, sqlite3_stmt *st, int c) {
  buf b;
  buf_init(&b);
  switch (sqlite3_column_type(st, c)) {
  case SQLITE_NULL: buf_puts(&b, "NULL"); break;
  case SQLITE_BLOB: {
    const unsigned char *p = sqlite3_column_blob(st, c);
    for (int k = 0; k < sqlite3_column_bytes(st, c); k++) buf_printf(&b, "%02x", p[k]);
    break;
  }
  default: buf_put(&b, sqlite3_column_text(st, c), (size_t)sqlite3_column_bytes(st, c));
  }
  for (size_t i = 0; i < b.len; i++)
    if (b.p[i] == '\n' || b.p[i] == '\t' || b.p[i] == '\r') b.p[i] = ' ';
  buf_putc(&b, '\0');
  if (t->n == t->cap) t->cells = realloc(t->cells, (t->cap = t->cap ? 2 * t->cap : 64) * sizeof *t->cells);
  size_t len = b.len - 1, chars = 0;
  for (size_t i = 0; i < len; i++) chars += ((unsigned char)b.p[i] & 0xC0) != 0x80; /* UTF-8 */
  if (chars > t->width[c]) t->width[c] = chars;
  t->cells[t->n++] = buf_take(&b, NULL);
}

static void table_print(table *t) {
  for (size_t i = 0; i < t->n; i++) {
    int c = (int)(i % (size_t)t->ncols);
    const char *v = t->cells[i];
    size_t chars = 0;
    for (const char *p = v; *p; p++) chars += ((unsigned char)*p & 0xC0) != 0x80;
    fputs(v, out);
    if (c + 1 < t->ncols) fprintf(out, "%*s", (int)(t->width[c] - chars + 2), "");
    else fputc('\n', out);
    if (i + 1 == (size_t)t->ncols) { /* under the header */
      for (int k = 0; k < t->ncols; k++) {
        for (size_t w = 0; w < t->width[k]; w++) fputc('-', out);
        fputs(k + 1 < t->ncols ? "  " : "\n", out);
      }
    }
    free(t->cells[i]);
  }
  free(t->cells), free(t->width);
}

static int db_query(const char *live, bool write, bool as_table, const char *sql, const char **args,
                    int nargs) {
  if (!exists(live)) return fail("%s: no database there yet%s", live, "");
  buf why;
  buf_init(&why);
  sqlite3 *db = open_db(live, write ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY, &why);
  if (!db) {
    fail("%s%s", why.p, "");
    return buf_free(&why), 1;
  }
  sqlite3_stmt *st = NULL;
  const char *tail = NULL;
  int code = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &st, &tail) != SQLITE_OK) {
    code = fail("%s%s", sqlite3_errmsg(db), "");
  } else if (!st) {
    code = fail("no statement in '%s'%s", sql, "");
  } else if (tail && tail[strspn(tail, " \t\r\n;")]) {
    code = fail("one statement at a time: '%s' follows%s", tail, "");
  } else if (!write && !sqlite3_stmt_readonly(st)) {
    code = fail("this statement writes: query is read-only unless --write%s%s", "", "");
  } else if (sqlite3_bind_parameter_count(st) != nargs) {
    char n[32];
    snprintf(n, sizeof n, "%d", sqlite3_bind_parameter_count(st));
    code = fail("the statement has %s parameters, %s given", n, nargs == 1 ? "1 was" : "another number were");
  } else {
    for (int i = 0; i < nargs; i++) sqlite3_bind_text(st, i + 1, args[i], -1, SQLITE_STATIC);
    int rc, ncols = sqlite3_column_count(st);
    table t = {.ncols = ncols, .width = calloc((size_t)ncols + 1, sizeof(size_t))};
    for (int c = 0; as_table && c < ncols; c++) { /* the header */
      buf b;
      buf_init(&b);
      buf_puts(&b, sqlite3_column_name(st, c));
      if (t.n == t.cap) t.cells = realloc(t.cells, (t.cap = t.cap ? 2 * t.cap : 64) * sizeof *t.cells);
      if (b.len > t.width[c]) t.width[c] = b.len;
      buf_putc(&b, '\0');
      t.cells[t.n++] = buf_take(&b, NULL);
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (as_table) {
        for (int c = 0; c < ncols; c++) table_cell(&t, st, c);
        continue;
      }
      fputc('{', out);
      for (int c = 0; c < ncols; c++) {
        if (c) fputc(',', out);
        const char *name = sqlite3_column_name(st, c);
        json_str(name, strlen(name));
        fputc(':', out);
        switch (sqlite3_column_type(st, c)) {
        case SQLITE_INTEGER: fprintf(out, "%lld", (long long)sqlite3_column_int64(st, c)); break;
        case SQLITE_FLOAT: fprintf(out, "%.17g", sqlite3_column_double(st, c)); break;
        case SQLITE_NULL: fputs("null", out); break;
        case SQLITE_BLOB: {
          const unsigned char *p = sqlite3_column_blob(st, c);
          int n = sqlite3_column_bytes(st, c);
          fputc('"', out);
          for (int k = 0; k < n; k++) fprintf(out, "%02x", p[k]);
          fputc('"', out);
          break;
        }
        default:
          json_str((const char *)sqlite3_column_text(st, c), (size_t)sqlite3_column_bytes(st, c));
        }
      }
      fputs("}\n", out);
    }
    if (as_table && ncols && rc == SQLITE_DONE) table_print(&t);
    else {
      for (size_t i = 0; i < t.n; i++) free(t.cells[i]);
      free(t.cells), free(t.width);
    }
    if (rc != SQLITE_DONE) code = fail("%s%s", sqlite3_errmsg(db), "");
    else if (write && !sqlite3_stmt_readonly(st))
      fprintf(stderr, "%d rows changed\n", sqlite3_changes(db));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  buf_free(&why);
  return code;
}

static int db_shell(const char *live, bool write) {
  if (!exists(live)) return fail("%s: no database there yet%s", live, "");
  fflush(out);
  char *argv[] = {"sqlite3", write ? NULL : "-readonly", NULL, NULL};
  if (write) argv[1] = (char *)live;
  else argv[2] = (char *)live;
  /* the real stdout back for the shell */
  if (fileno(out) != 1) dup2(fileno(out), 1);
  execvp("sqlite3", argv);
  if (errno == ENOENT)
    return fail("sqlite3 is not installed (Debian: apt-get install sqlite3); 'luamcp db DIR query SQL' "
                "works without it%s%s", "", "");
  return fail("sqlite3: %s%s", strerror(errno), "");
}

#define USAGE "see 'luamcp db --help'"

int cmd_db(int argc, char **argv) {
  options o = {.command = "db"};
  const char *pos[64];
  int npos = 0;
  bool write = false, status = false, as_table = false, dashdash = false;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (dashdash || a[0] != '-' || a[1] != '-') { /* -1, -: values */
      if (npos == 64) cli_die_usage("db: too many arguments (%s)", a);
      pos[npos++] = a;
    } else if (strcmp(a, "--") == 0) {
      dashdash = true;
    } else if (strcmp(a, "--data") == 0) {
      if (i + 1 >= argc || !*argv[i + 1]) cli_die_usage("%s needs a DIR", a);
      o.data = argv[++i];
    } else if (strcmp(a, "--db") == 0 || strcmp(a, "--db-password-file") == 0 || strcmp(a, "--db-pool") == 0) {
      if (i + 1 >= argc || !*argv[i + 1]) cli_die_usage("%s needs a value", a);
      const char *v = argv[++i];
      if (a[4] == 0) o.db = v;
      else if (a[5] == 'p' && a[6] == 'a') o.db_password_file = v;
      else o.db_pool = atoi(v);
    } else if (strcmp(a, "--write") == 0) {
      write = true;
    } else if (strcmp(a, "--table") == 0) {
      as_table = true;
    } else if (strcmp(a, "--status") == 0) {
      status = true;
    } else {
      cli_die_usage("db: unknown option %s (" USAGE ")", a);
    }
  }
  if (npos < 2) cli_die_usage("db needs APPDIR and a subcommand: backup, restore, migrate, query, shell (%s)",
                              USAGE);
  const char *dir = pos[0], *sub = pos[1];
  int want = -1; /* arguments after the subcommand */
  if (!strcmp(sub, "backup") || !strcmp(sub, "restore")) want = 1;
  else if (!strcmp(sub, "migrate") || !strcmp(sub, "shell")) want = 0;
  else if (strcmp(sub, "query") != 0) cli_die_usage("db: unknown subcommand '%s' (backup, restore, migrate, "
                                                    "query, shell)", sub);
  if (want >= 0 && npos - 2 != want)
    cli_die_usage(want ? "db %s needs one FILE" : "db %s takes no argument", sub);
  if (!strcmp(sub, "query") && npos < 3) cli_die_usage("db %s needs SQL", sub);
  if (write && strcmp(sub, "query") != 0 && strcmp(sub, "shell") != 0)
    cli_die_usage("%s is an option of db query and db shell", "--write");
  if (as_table && strcmp(sub, "query") != 0) cli_die_usage("%s is an option of db query", "--table");
  if (status && strcmp(sub, "migrate") != 0) cli_die_usage("%s is an option of db migrate", "--status");
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "luamcp db: %s: not an app folder\n", dir);
    return 1;
  }
  if (o.db && o.data) cli_die_usage("%s: --data is SQLite's folder, --db PostgreSQL: one or the other", "--db");
  if (o.db) {
    if (!strcmp(sub, "backup") || !strcmp(sub, "restore") || !strcmp(sub, "shell")) {
      fprintf(stderr, "luamcp db: %s on PostgreSQL: use %s (luamcp db does %s only on its SQLite file)\n", sub,
              !strcmp(sub, "backup") ? "pg_dump, e.g. pg_dump -Fc -f FILE URL"
              : !strcmp(sub, "restore") ? "pg_restore, e.g. pg_restore --clean -d URL FILE"
                                        : "psql URL",
              sub);
      return 1;
    }
    cli_use_postgres(&o, false);
    out = fdopen(cli_protect_stdout(), "w");
    int code = !strcmp(sub, "migrate") ? db_migrate_cmd(dir, NULL, NULL, status)
                                       : cmd_db_pg_query(out, write, as_table, pos[2], pos + 3, npos - 3);
    fclose(out);
    return code;
  }
  out = fdopen(cli_protect_stdout(), "w");
  /* the data folder is named after the app: loaded only when its name is needed */
  app *a = NULL;
  const char *state = getenv("STATE_DIRECTORY");
  if (!o.data && !(state && *state)) {
    app_config cfg = {.page_size = 100, .load_timeout = 10, .migrate = APP_MIGRATE_NONE};
    if (!(a = cli_load(dir, &cfg))) return 1;
  }
  char data[PATH_MAX], live[PATH_MAX + 16];
  bool named = cli_data_dir(&o, a, dir, data, sizeof data);
  if (a) app_free(a);
  if (!named) {
    fprintf(stderr, "luamcp db: no data folder (set --data DIR, or HOME)\n");
    return 1;
  }
  snprintf(live, sizeof live, "%s/db.sqlite", data);
  int code;
  if (!strcmp(sub, "backup")) code = db_backup(live, pos[2]);
  else if (!strcmp(sub, "restore")) code = db_restore(data, live, pos[2]);
  else if (!strcmp(sub, "migrate")) code = db_migrate_cmd(dir, data, live, status);
  else if (!strcmp(sub, "query")) code = db_query(live, write, as_table, pos[2], pos + 3, npos - 3);
  else code = db_shell(live, write);
  fclose(out);
  return code;
}
