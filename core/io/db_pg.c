/* db_pg.c — mcp.db on PostgreSQL (db_internal.h's backend): a small pool
 * of libpq connections driven by the engine's loop, no thread of ours.
 * Each connection is made with PQconnectStartParams/PQconnectPoll, then
 * non-blocking (PQsetnonblocking); a job is sent with PQsendQueryParams
 * (or PQsendQuery: exec's several statements without parameters), in
 * single-row mode so a result is bounded row by row by the call's memory
 * room, and read as PQsocket becomes readable (a uv_poll_t:
 * PQconsumeInput, PQisBusy, PQgetResult). An idle connection is watched
 * too, so one the server closed (a restart, pg_terminate_backend) is
 * dropped at once and the next job connects again.
 *
 * ? and :name become $n (db_placeholders.c); values go as text with a type
 * (int4 or int8, float8; strings as unknown, so the column decides), blobs as
 * binary bytea. Cells come back by type: int2/4/8 and oid integers,
 * float4/8 numbers, bool 0/1, bytea bytes, NULL mcp.null, anything else
 * its text.
 *
 * db.c hands the transactions to connection 0 and everything else to the
 * others (any_conn: each runs anything), so a long read never holds a
 * transaction up.
 *
 * mcp.db.tx's BEGIN is `BEGIN; SELECT pg_advisory_xact_lock(K)`: one
 * transaction of mcp.db.tx at a time in the database, across instances,
 * as SQLite's BEGIN IMMEDIATE gives — code that is right on SQLite (read,
 * change, write back) stays right here. An error inside the transaction
 * aborts it on PostgreSQL: it is rolled back at once (the call's later
 * statements fail, as on SQLite after an error that rolled back), except
 * inside a savepoint, whose ROLLBACK TO mends it.
 *
 * A call that ends while its statement runs: a PQcancel on libuv's thread
 * pool (it connects and waits, so never on the loop), and the job is read
 * to its end as usual — the connection stays, and the rollback db.c
 * queues runs on it next. A job still connecting is dropped with its
 * connection. Password: never in the URL (db_pg_configure refuses one);
 * libpq's PGPASSWORD/PGPASSFILE, or the one given (a file's), never shown. */
#include "db_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pq_dl.h"

#include "db_placeholders.h"

#define ROW_COST 64  /* what a row's table costs in Lua, about (as db_sqlite.c) */
#define CELL_COST 40
#define TX_LOCK "7310135049812316161" /* pg_advisory_xact_lock's key for mcp.db.tx */

enum { OID_BOOL = 16, OID_BYTEA = 17, OID_INT8 = 20, OID_INT2 = 21, OID_INT4 = 23, OID_OID = 26,
       OID_FLOAT4 = 700, OID_FLOAT8 = 701 };

enum { PC_DOWN, PC_CONNECTING, PC_IDLE, PC_BUSY, PC_ROLLBACK };

typedef struct pgc {
  int idx;
  int state;
  PGconn *pg;
  uv_poll_t *poll; /* on fd; malloc'd, freed by its close callback */
  int fd, events;
  db_job *cur;
  size_t used;     /* result bytes taken */
  bool cancelling; /* a PQcancel is on its way: nothing new runs here before it is done */
  db_job *held;    /* a job finished meanwhile, handed back when it is */
} pgc;

static struct {
  char *url;      /* as given: no password in it */
  char *password; /* from a file, or NULL: libpq's own ways */
  int n;
  pgc c[DB_CONNS_MAX];
  uv_loop_t *loop;
  void (*notify)(void);
  db_job *done;
} P;

static void on_poll(uv_poll_t *h, int status, int events);
static void step(pgc *k);

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

/* libpq's messages end with a newline */
static void trimmed(const char *msg, char *out, size_t cap) {
  snprintf(out, cap, "%s", msg && *msg ? msg : "unknown error");
  size_t n = strlen(out);
  while (n && (out[n - 1] == '\n' || out[n - 1] == ' ')) out[--n] = 0;
}

bool db_pg_configure(const char *url, const char *password, int pool, char *why, size_t cap) {
  if (!pq_dl_ready()) {
    snprintf(why, cap, "%s", pq_dl_why());
    return false;
  }
  char *err = NULL;
  PQconninfoOption *opts = PQconninfoParse(url, &err);
  if (!opts) {
    char m[256];
    trimmed(err, m, sizeof m);
    snprintf(why, cap, "not a PostgreSQL URL: %s", m);
    PQfreemem(err);
    return false;
  }
  bool has_password = false;
  for (PQconninfoOption *o = opts; o->keyword; o++)
    if (strcmp(o->keyword, "password") == 0 && o->val && *o->val) has_password = true;
  PQconninfoFree(opts);
  if (has_password) {
    snprintf(why, cap, "the URL holds a password (anyone can read a command line): leave it out, "
             "and give it by PGPASSWORD, a PGPASSFILE, or --db-password-file FILE");
    return false;
  }
  if (pool < 1 || pool > DB_CONNS_MAX) {
    snprintf(why, cap, "the pool takes 1 to %d connections", DB_CONNS_MAX);
    return false;
  }
  free(P.url);
  P.url = strdup(url);
  if (P.password) memset(P.password, 0, strlen(P.password)), free(P.password);
  P.password = password ? strdup(password) : NULL;
  P.n = pool;
  return P.url != NULL;
}

/* {====== the socket */
static void poll_closed(uv_handle_t *h) { free(h); }

static void unwatch(pgc *k) {
  if (k->poll) uv_close((uv_handle_t *)k->poll, poll_closed);
  k->poll = NULL;
  k->fd = -1;
  k->events = 0;
}

static void watch(pgc *k, int events) {
  int fd = k->pg ? PQsocket(k->pg) : -1;
  if (fd < 0) return unwatch(k);
  if (k->poll && fd != k->fd) unwatch(k); /* libpq tried another address */
  if (!k->poll) {
    uv_poll_t *p = malloc(sizeof *p);
    if (!p || uv_poll_init_socket(P.loop, p, fd) != 0) {
      free(p);
      return;
    }
    p->data = k;
    uv_unref((uv_handle_t *)p); /* an idle pool keeps no loop alive */
    k->poll = p, k->fd = fd, k->events = 0;
  }
  if (events != k->events) {
    k->events = events;
    uv_poll_start(k->poll, events, on_poll);
  }
}

static void drop(pgc *k) {
  unwatch(k);
  if (k->pg) PQfinish(k->pg);
  k->pg = NULL;
  k->state = PC_DOWN;
}
/* }====== */

/* {====== a job's end */
static void hand_back(db_job *j) {
  j->next = P.done;
  P.done = j;
  P.notify();
}

static void finish_job(pgc *k) {
  db_job *j = k->cur;
  k->cur = NULL;
  if (!j) return;
  j->autocommit = !k->pg || PQtransactionStatus(k->pg) == PQTRANS_IDLE;
  j->opened = k->pg != NULL;
  /* a cancel still on its way would stop the next statement run here */
  if (k->cancelling) k->held = j;
  else hand_back(j);
}

static void lost(pgc *k, const char *msg) {
  char m[512];
  trimmed(msg, m, sizeof m);
  db_job *j = k->cur;
  if (j) { /* the server's own last word (a FATAL error) comes first when it gave one */
    char *said = j->err;
    j->err = NULL;
    if (atomic_load(&j->aborted)) set_err(j, "interrupted");
    set_err(j, "the connection to PostgreSQL %s was lost (%s); it is made again at the next statement",
            P.url, said ? said : m);
    free(said);
  }
  drop(k);
  finish_job(k);
}

/* Results are all read: the transaction's state decides what follows. */
static void job_done(pgc *k) {
  db_job *j = k->cur;
  PGTransactionStatusType ts = PQtransactionStatus(k->pg);
  bool stray = ts != PQTRANS_IDLE && !j->begins_tx && !j->expect_tx && !j->detached;
  bool aborted_tx = ts == PQTRANS_INERROR && j->depth <= 1 && !j->detached;
  if (k->state == PC_BUSY && (stray || aborted_tx || (ts == PQTRANS_INERROR && j->begins_tx))) {
    if (stray) set_err(j, "transactions are mcp.db.tx's (BEGIN, SAVEPOINT and COMMIT are not statements of their own)");
    if (PQsendQuery(k->pg, "ROLLBACK") && PQflush(k->pg) >= 0) {
      k->state = PC_ROLLBACK;
      watch(k, UV_READABLE);
      return;
    }
    return lost(k, PQerrorMessage(k->pg));
  }
  k->state = PC_IDLE;
  finish_job(k);
  watch(k, UV_READABLE);
}

/* a cell, by its column's type */
static bool take_cell(db_job *j, PGresult *r, int col, db_value *v, size_t *used) {
  if (PQgetisnull(r, 0, col)) return v->type = DBV_NULL, true;
  const char *s = PQgetvalue(r, 0, col);
  size_t len = (size_t)PQgetlength(r, 0, col);
  switch (PQftype(r, col)) {
  case OID_INT2:
  case OID_INT4:
  case OID_INT8:
  case OID_OID: v->type = DBV_INT, v->i = strtoll(s, NULL, 10); return true;
  case OID_FLOAT4:
  case OID_FLOAT8: v->type = DBV_REAL, v->d = strtod(s, NULL); return true;
  case OID_BOOL: v->type = DBV_INT, v->i = s[0] == 't'; return true;
  case OID_BYTEA: {
    size_t n = 0;
    unsigned char *b = PQunescapeBytea((const unsigned char *)s, &n);
    if (!b) return set_err(j, "out of memory"), false;
    *used += n;
    if (*used > j->room || !(v->s = malloc(n + 1))) {
      PQfreemem(b);
      return false;
    }
    memcpy(v->s, b, n);
    v->s[n] = 0;
    v->n = n;
    v->type = DBV_BLOB;
    PQfreemem(b);
    return true;
  }
  default:
    *used += len;
    if (*used > j->room || !(v->s = malloc(len + 1))) return false;
    memcpy(v->s, s, len + 1);
    v->n = len;
    v->type = DBV_TEXT;
    return true;
  }
}

/* one row (single-row mode): false when past the room or out of memory */
static bool take_row(db_job *j, PGresult *r, size_t *used) {
  int n = PQnfields(r);
  if (!j->cols) {
    j->ncols = n;
    if (!(j->cols = calloc((size_t)n + 1, sizeof *j->cols))) return set_err(j, "out of memory"), false;
    for (int i = 0; i < n; i++) {
      if (!(j->cols[i] = strdup(PQfname(r, i)))) return set_err(j, "out of memory"), false;
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
  for (int i = 0; i < n; i++)
    if (!take_cell(j, r, i, &row[i], used)) return false;
  return *used <= j->room;
}

static void take_error(db_job *j, PGresult *r) {
  const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
  const char *detail = PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL);
  const char *pos = PQresultErrorField(r, PG_DIAG_STATEMENT_POSITION);
  char m[512];
  trimmed(msg ? msg : PQresultErrorMessage(r), m, sizeof m);
  if (atomic_load(&j->aborted)) snprintf(m, sizeof m, "interrupted");
  if (pos && detail) set_err(j, "%s (at character %s of the statement; %s)", m, pos, detail);
  else if (pos) set_err(j, "%s (at character %s of the statement)", m, pos);
  else if (detail) set_err(j, "%s (%s)", m, detail);
  else set_err(j, "%s", m);
}

static void take_result(pgc *k, PGresult *r) {
  db_job *j = k->cur;
  switch (PQresultStatus(r)) {
  case PGRES_SINGLE_TUPLE:
    if (k->state != PC_BUSY || j->err) break;
    if (j->kind == DB_EXEC) { /* INSERT … RETURNING id: the last row's first integer */
      if (PQnfields(r) > 0 && !PQgetisnull(r, 0, 0) &&
          (PQftype(r, 0) == OID_INT8 || PQftype(r, 0) == OID_INT4 || PQftype(r, 0) == OID_INT2))
        j->last_id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
      break;
    }
    if (j->kind == DB_ONE && j->nrows) break; /* the rest are read and dropped */
    if (!take_row(j, r, &k->used) && !j->err)
      set_err(j, "the result is larger than the call's memory limit leaves room for");
    break;
  case PGRES_TUPLES_OK:
  case PGRES_COMMAND_OK:
    if (k->state == PC_BUSY && j->kind == DB_EXEC) {
      const char *t = PQcmdTuples(r);
      if (t && *t) j->changes += strtoll(t, NULL, 10);
    }
    break;
  case PGRES_EMPTY_QUERY:
    if (k->state == PC_BUSY && j->kind != DB_EXEC) set_err(j, "the text holds no statement");
    break;
  default:
    if (k->state == PC_BUSY) take_error(j, r);
  }
  PQclear(r);
}

/* read what came: results, then the job's end */
static void consume(pgc *k) {
  if (!PQconsumeInput(k->pg)) return lost(k, PQerrorMessage(k->pg));
  while (k->cur && !PQisBusy(k->pg)) {
    PGresult *r = PQgetResult(k->pg);
    if (!r) {
      if (PQstatus(k->pg) == CONNECTION_BAD) return lost(k, PQerrorMessage(k->pg));
      if (k->state == PC_ROLLBACK) {
        k->state = PC_IDLE;
        finish_job(k);
        watch(k, UV_READABLE);
      } else {
        job_done(k);
      }
      return;
    }
    take_result(k, r);
  }
  PGnotify *note;
  while ((note = PQnotifies(k->pg))) PQfreemem(note);
  if (PQstatus(k->pg) == CONNECTION_BAD) lost(k, PQerrorMessage(k->pg));
}
/* }====== */

/* {====== sending a job */
typedef struct params {
  const char **values;
  int *lengths, *formats;
  Oid *types;
  char (*nums)[32];
} params;

static void params_free(params *p) {
  free(p->values), free(p->lengths), free(p->formats), free(p->types), free(p->nums);
}

static bool bind_one(db_job *j, params *p, int i, const db_value *v, const char *shown) {
  p->formats[i] = 0;
  p->types[i] = 0;
  p->lengths[i] = 0;
  switch (v->type) {
  case DBV_NULL: p->values[i] = NULL; return true;
  case DBV_INT:
    snprintf(p->nums[i], sizeof p->nums[i], "%" PRId64, v->i);
    /* int4 when it fits: it widens to bigint where one is wanted, while an
       int8 would not narrow to a function's integer (repeat, left, ...) */
    p->values[i] = p->nums[i], p->types[i] = v->i >= INT32_MIN && v->i <= INT32_MAX ? OID_INT4 : OID_INT8;
    return true;
  case DBV_REAL:
    if (isnan(v->d)) snprintf(p->nums[i], sizeof p->nums[i], "NaN");
    else if (isinf(v->d)) snprintf(p->nums[i], sizeof p->nums[i], v->d > 0 ? "Infinity" : "-Infinity");
    else snprintf(p->nums[i], sizeof p->nums[i], "%.17g", v->d);
    p->values[i] = p->nums[i], p->types[i] = OID_FLOAT8;
    return true;
  case DBV_TEXT: p->values[i] = v->s; return true; /* unknown: the column's type decides */
  case DBV_BLOB:
    if (v->n > INT32_MAX) return set_err(j, "%s is longer than 2 GiB", shown), false;
    p->values[i] = v->s, p->lengths[i] = (int)v->n, p->formats[i] = 1, p->types[i] = OID_BYTEA;
    return true;
  default:
    set_err(j, "cannot bind a %s to %s (a string, number, boolean, nil or mcp.null)", v->s, shown);
    return false;
  }
}

static bool bind_all(db_job *j, const db_placeholders *ph, params *p) {
  if (ph->kind == DB_PH_NAMED && !j->named) {
    set_err(j, "the statement names its parameter :%s: pass one table of values by name", ph->names[0]);
    return false;
  }
  if (ph->kind == DB_PH_POSITIONAL && j->named) {
    set_err(j, "the statement has a positional parameter (?) but the values are given by name");
    return false;
  }
  if (!j->named && (size_t)ph->n != j->nparams) {
    set_err(j, "the statement has %d parameter%s, %zu value%s given", ph->n, ph->n == 1 ? "" : "s",
            j->nparams, j->nparams == 1 ? "" : "s");
    return false;
  }
  size_t n = (size_t)ph->n;
  p->values = calloc(n + 1, sizeof *p->values);
  p->lengths = calloc(n + 1, sizeof *p->lengths);
  p->formats = calloc(n + 1, sizeof *p->formats);
  p->types = calloc(n + 1, sizeof *p->types);
  p->nums = calloc(n + 1, sizeof *p->nums);
  if (!p->values || !p->lengths || !p->formats || !p->types || !p->nums) return set_err(j, "out of memory"), false;
  for (int i = 0; i < ph->n; i++) {
    char shown[300];
    const db_value *v = NULL;
    if (ph->kind == DB_PH_NAMED) {
      snprintf(shown, sizeof shown, ":%s", ph->names[i]);
      for (size_t q = 0; q < j->nparams && !v; q++)
        if (strcmp(j->params[q].name, ph->names[i]) == 0) v = &j->params[q];
      if (!v) return set_err(j, "no value for %s (mcp.null binds NULL)", shown), false;
    } else {
      snprintf(shown, sizeof shown, "parameter %d", i + 1);
      v = &j->params[i];
    }
    if (!bind_one(j, p, i, v, shown)) return false;
  }
  return true;
}

/* Send k->cur; false: it failed before anything was sent (its error set). */
static bool send_job(pgc *k) {
  db_job *j = k->cur;
  k->used = 0;
  if (j->expect_tx && PQtransactionStatus(k->pg) == PQTRANS_IDLE) {
    set_err(j, "the transaction was rolled back (by an earlier error): nothing more runs in it");
    return false;
  }
  int ok;
  if (j->begins_tx) {
    ok = PQsendQuery(k->pg, "BEGIN; SELECT pg_advisory_xact_lock(" TX_LOCK ")");
  } else {
    db_placeholders ph;
    char why[160];
    if (!db_placeholders_translate(j->sql, j->sql_len, &ph, why, sizeof why)) {
      set_err(j, "%s", why);
      return false;
    }
    if (ph.n == 0 && j->kind == DB_EXEC && !j->named && j->nparams == 0) {
      ok = PQsendQuery(k->pg, j->sql); /* several statements may run */
    } else {
      params p = {0};
      if (!bind_all(j, &ph, &p)) {
        params_free(&p);
        db_placeholders_free(&ph);
        return false;
      }
      ok = PQsendQueryParams(k->pg, ph.sql, ph.n, p.types, p.values, p.lengths, p.formats, 0);
      params_free(&p);
    }
    db_placeholders_free(&ph);
  }
  if (!ok) {
    lost(k, PQerrorMessage(k->pg));
    return true; /* handed back already */
  }
  PQsetSingleRowMode(k->pg);
  k->state = PC_BUSY;
  int f = PQflush(k->pg);
  if (f < 0) lost(k, PQerrorMessage(k->pg));
  else watch(k, f ? UV_READABLE | UV_WRITABLE : UV_READABLE);
  return true;
}

static void start_job(pgc *k) {
  if (!send_job(k)) {
    k->state = PC_IDLE;
    finish_job(k);
  }
}
/* }====== */

/* {====== connecting */
static void quiet(void *ud, const char *msg) { (void)ud, (void)msg; } /* NOTICEs are not ours to print */

static void connect_start(pgc *k) {
  const char *keys[6], *vals[6];
  int n = 0;
  keys[n] = "dbname", vals[n++] = P.url; /* expanded: the URL's parts */
  keys[n] = "application_name", vals[n++] = "luamcp";
  keys[n] = "client_encoding", vals[n++] = "UTF8";
  if (P.password) keys[n] = "password", vals[n++] = P.password;
  keys[n] = NULL, vals[n] = NULL;
  k->pg = PQconnectStartParams(keys, vals, 1);
  if (!k->pg || PQstatus(k->pg) == CONNECTION_BAD) {
    char m[512];
    trimmed(k->pg ? PQerrorMessage(k->pg) : "out of memory", m, sizeof m);
    if (k->cur) set_err(k->cur, "cannot connect to PostgreSQL %s: %s", P.url, m);
    drop(k);
    finish_job(k);
    return;
  }
  PQsetNoticeProcessor(k->pg, quiet, NULL);
  k->state = PC_CONNECTING;
  watch(k, UV_WRITABLE);
}

static void connect_step(pgc *k) {
  /* a poll of its own for each step: libpq may close the socket and open
     another (the next address, SSL refused) with the same number, which
     epoll would no longer watch under the old registration */
  unwatch(k);
  switch (PQconnectPoll(k->pg)) {
  case PGRES_POLLING_READING: watch(k, UV_READABLE); return;
  case PGRES_POLLING_WRITING: watch(k, UV_WRITABLE); return;
  case PGRES_POLLING_OK:
    if (PQsetnonblocking(k->pg, 1) != 0) break;
    k->state = PC_IDLE;
    watch(k, UV_READABLE);
    if (k->cur) start_job(k);
    return;
  default: break;
  }
  char m[512];
  trimmed(PQerrorMessage(k->pg), m, sizeof m);
  if (k->cur) set_err(k->cur, "cannot connect to PostgreSQL %s: %s", P.url, m);
  drop(k);
  finish_job(k);
}
/* }====== */

static void step(pgc *k) {
  switch (k->state) {
  case PC_CONNECTING: connect_step(k); break;
  case PC_IDLE: /* the server closed it, or said something unasked */
    if (!PQconsumeInput(k->pg) || PQstatus(k->pg) == CONNECTION_BAD) drop(k);
    else {
      PGnotify *note;
      while ((note = PQnotifies(k->pg))) PQfreemem(note);
    }
    break;
  case PC_BUSY:
  case PC_ROLLBACK: consume(k); break;
  default: break;
  }
}

static void on_poll(uv_poll_t *h, int status, int events) {
  pgc *k = h->data;
  if (!k || h != k->poll) return;
  if ((k->state == PC_BUSY || k->state == PC_ROLLBACK) && (events & UV_WRITABLE || status < 0)) {
    int f = PQflush(k->pg);
    if (f < 0) return lost(k, PQerrorMessage(k->pg));
    if (k->poll) watch(k, f ? UV_READABLE | UV_WRITABLE : UV_READABLE);
  }
  step(k);
}

/* {====== the backend */
static int pg_conns(void) { return P.n ? P.n : 1; }

static bool pg_start(const char *where, void (*notify)(void), uv_loop_t *loop) {
  (void)where;
  if (!P.url) return false;
  /* a new engine's loop: db_close (pg_stop) closed the last one's connections */
  P.loop = loop;
  P.notify = notify;
  return true;
}

static bool pg_run(db_job *j, int i) {
  pgc *k = &P.c[i];
  k->idx = i;
  j->conn = i;
  k->cur = j;
  if (k->state == PC_DOWN) connect_start(k);
  else start_job(k);
  return true;
}

static db_job *pg_done(void) {
  db_job *j = P.done;
  if (j) P.done = j->next, j->next = NULL;
  return j;
}

typedef struct cancel_req {
  uv_work_t w;
  PGcancel *cancel;
  pgc *k;
} cancel_req;

static void cancel_work(uv_work_t *w) {
  cancel_req *c = w->data;
  char err[256];
  PQcancel(c->cancel, err, sizeof err); /* connects to the server and waits: off the loop */
}

static void cancel_after(uv_work_t *w, int status) {
  (void)status;
  cancel_req *c = w->data;
  PQfreeCancel(c->cancel);
  pgc *k = c->k;
  free(c);
  k->cancelling = false;
  if (k->held) hand_back(k->held);
  k->held = NULL;
}

static void pg_abort(db_job *j) {
  atomic_store(&j->aborted, true);
  pgc *k = &P.c[j->conn];
  if (k->cur != j) return;
  if (k->state == PC_CONNECTING) {
    set_err(j, "interrupted");
    drop(k);
    finish_job(k);
    return;
  }
  if (k->state != PC_BUSY) return;
  if (k->cancelling) return;
  cancel_req *c = calloc(1, sizeof *c);
  if (c && (c->cancel = PQgetCancel(k->pg))) {
    c->w.data = c;
    c->k = k;
    if (uv_queue_work(P.loop, &c->w, cancel_work, cancel_after) == 0) {
      k->cancelling = true;
      return;
    }
    PQfreeCancel(c->cancel);
  }
  free(c);
  set_err(j, "interrupted");
  drop(k); /* no cancel could be sent: the connection goes, and its statement with it */
  finish_job(k);
}

static void pg_stop(void) {
  for (int i = 0; i < DB_CONNS_MAX; i++) {
    pgc *k = &P.c[i];
    if (k->cur) set_err(k->cur, "interrupted");
    drop(k); /* a transaction still open rolls back */
    k->cancelling = false; /* its cancel_after finds nothing held */
    finish_job(k);
    if (k->held) hand_back(k->held);
    k->held = NULL;
  }
}

const db_backend db_backend_pg = {
    .system = "postgresql",
    .any_conn = true,
    .conns = pg_conns,
    .start = pg_start,
    .run = pg_run,
    .done = pg_done,
    .abort = pg_abort,
    .stop = pg_stop,
};

const char *db_pg_url(void) { return P.url ? P.url : "(none)"; }

PGconn *db_pg_connect_blocking(char *why, size_t cap) {
  if (!P.url || !pq_dl_ready()) {
    snprintf(why, cap, "no PostgreSQL URL");
    return NULL;
  }
  const char *keys[5] = {"dbname", "application_name", "client_encoding", NULL, NULL};
  const char *vals[5] = {P.url, "luamcp", "UTF8", NULL, NULL};
  if (P.password) keys[3] = "password", vals[3] = P.password;
  PGconn *pg = PQconnectdbParams(keys, vals, 1);
  if (!pg || PQstatus(pg) != CONNECTION_OK) {
    char m[512];
    trimmed(pg ? PQerrorMessage(pg) : "out of memory", m, sizeof m);
    snprintf(why, cap, "cannot connect to PostgreSQL %s: %s", P.url, m);
    PQfinish(pg);
    return NULL;
  }
  return pg;
}
/* }====== */
