/* db_internal.h — what db.c (mcp.db: the Lua API, parking, transactions)
 * and db_sqlite.c (the connections' threads) share: a job, the one unit of
 * work the loop hands to a connection's thread. The loop owns a job except
 * between db_sqlite_run and db_sqlite_done; its call may end meanwhile
 * (db_sqlite_abort), and the thread still hands it back. */
#ifndef LUAMCP_DB_INTERNAL_H
#define LUAMCP_DB_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "call.h"

enum { DBV_NULL, DBV_INT, DBV_REAL, DBV_TEXT, DBV_BLOB, DBV_BAD };

/* A parameter (name: malloc'd, without its ':', or NULL: positional) or a
   result cell; DBV_BAD: a Lua value that cannot be bound (s: its type). */
typedef struct db_value {
  int type;
  int64_t i;
  double d;
  char *s; /* TEXT, BLOB (malloc'd, NUL-terminated), BAD's type name */
  size_t n;
  char *name;
} db_value;

enum { DB_ROWS, DB_ONE, DB_EXEC };

typedef struct db_box db_box;

typedef struct db_job {
  call_wait wait; /* first: abort gets &job->wait */
  struct db_job *next;
  /* the request (read by the thread) */
  int kind;
  bool named;      /* params by name (one table), else by position */
  bool sandboxed;  /* --sandbox: the authorizer refuses what touches files */
  bool expect_tx;  /* the call holds the transaction: it must still be open */
  bool begins_tx;  /* BEGIN: the call holds the transaction from dispatch */
  bool ends_tx;    /* COMMIT */
  bool detached;   /* no call waits (a rollback): errors are dropped */
  char *sql;
  size_t sql_len;
  db_value *params;
  size_t nparams;
  size_t room;   /* result bytes the call may still hold (--memory-limit) */
  double budget; /* seconds the busy handler may wait for a lock */
  atomic_bool aborted;
  /* the outcome (written by the thread) */
  char *err;      /* malloc'd message, or NULL */
  int ncols;
  char **cols;
  db_value *cells; /* nrows * ncols */
  size_t nrows, cap;
  int64_t changes, last_id;
  bool autocommit; /* no transaction open after the job */
  bool opened;     /* the connection is open (the file exists) */
  bool to_writer;  /* a reader found it writes: the writer's job */
  int conn;        /* where it runs: 0 the writer, then the readers */
  unsigned gen;    /* a BEGIN's: the transaction's number, given at dispatch */
  int depth;       /* the transaction's levels open at dispatch (1: no savepoint) */
  /* the loop's */
  call *c;
  db_box *box;
  struct trace_span *span;
} db_job;

void db_job_free(db_job *j);

/* The file db_set_path gave (NULL: none); set before serving, read by any thread. */
const char *db_path_set(void);

/* Make dir and the folders above it (0700); -1 with errno on failure. */
int db_mkdirs(const char *dir);

/* The connections: the writer and DB_CONNS - 1 readers (WAL: they read
   while it writes, each a snapshot of what was committed when its
   statement began). */
#define DB_CONNS 3

/* Before the first job: the writer's thread (false: it did not start);
   path: the database file (the writer makes its folder). notify is called
   from a connection's thread (under its lock) when a job is done. */
bool db_sqlite_start(const char *path, void (*notify)(void));
/* Hand j to connection i (0: the writer, never false; nothing else
   running there); a reader's thread starts at its first job (false: it
   did not). A reader hands back a statement that writes unrun (to_writer). */
bool db_sqlite_run(db_job *j, int i);
/* A job a connection finished (its conn is free again), or NULL. */
db_job *db_sqlite_done(void);
/* j's call ended: the thread stops it soon (sqlite3_interrupt) and still
   hands it back. */
void db_sqlite_abort(db_job *j);
/* Stop the thread after its job, close the connection (an open
   transaction rolls back); a later job starts it again. */
void db_sqlite_stop(void);

/* {====== the backends: how db.c hands jobs to connections and takes them
   back (the SQLite threads below, PostgreSQL on the loop: db_pg.c) */
#define DB_CONNS_MAX 64

typedef struct db_backend {
  const char *system;  /* db.system.name of a span */
  bool any_conn;       /* every connection runs anything (else [0] writes, the others read) */
  int (*conns)(void);  /* how many: [0] runs the transactions */
  /* before the first job; notify: a job is done (any thread) */
  bool (*start)(const char *where, void (*notify)(void), uv_loop_t *loop);
  bool (*run)(db_job *j, int i);
  db_job *(*done)(void);
  void (*abort)(db_job *j);
  void (*stop)(void);
} db_backend;

extern const db_backend db_backend_sqlite;
/* PostgreSQL (db_pg.c): the URL and pool db_set_postgres gave. */
extern const db_backend db_backend_pg;
bool db_pg_configure(const char *url, const char *password, int pool, char *why, size_t cap);
/* A blocking connection of its own (migrations, luamcp db): NULL with why. */
struct pg_conn;
struct pg_conn *db_pg_connect_blocking(char *why, size_t cap);
/* The URL (no password in it), for messages. */
const char *db_pg_url(void);
/* }====== */

#endif
