/* cmd_db_pg.c — `luamcp db APPDIR --db URL query …` on PostgreSQL (cmd_db.c
 * has the rest): one statement, ? or :name… as on SQLite (only ? here:
 * the ARGs bind in order, as text, the column's type deciding), its rows
 * as JSON lines or aligned columns; read-only (BEGIN READ ONLY) unless
 * --write. Backups and a shell are PostgreSQL's own tools' (pg_dump,
 * pg_restore, psql): cmd_db.c says so. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pq_dl.h"

#include "cli.h"
#include "db_internal.h"
#include "db_placeholders.h"

static void json_str(FILE *out, const char *s, size_t n) {
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

static void print_json(FILE *out, PGresult *r) {
  for (int i = 0; i < PQntuples(r); i++) {
    fputc('{', out);
    for (int c = 0; c < PQnfields(r); c++) {
      if (c) fputc(',', out);
      json_str(out, PQfname(r, c), strlen(PQfname(r, c)));
      fputc(':', out);
      const char *v = PQgetvalue(r, i, c);
      Oid t = PQftype(r, c);
      if (PQgetisnull(r, i, c)) fputs("null", out);
      else if (t == 20 || t == 21 || t == 23 || t == 26 || t == 700 || t == 701)
        strspn(v, "0123456789.-+eE") == strlen(v) ? fputs(v, out) : json_str(out, v, strlen(v));
      else if (t == 16) fputs(v[0] == 't' ? "1" : "0", out);
      else json_str(out, v, (size_t)PQgetlength(r, i, c));
    }
    fputs("}\n", out);
  }
}

static void print_table(FILE *out, PGresult *r) {
  int nc = PQnfields(r), nr = PQntuples(r);
  size_t *w = calloc((size_t)nc + 1, sizeof *w);
  if (!w) return;
  for (int c = 0; c < nc; c++) w[c] = strlen(PQfname(r, c));
  for (int i = 0; i < nr; i++)
    for (int c = 0; c < nc; c++) {
      size_t n = PQgetisnull(r, i, c) ? 4 : (size_t)PQgetlength(r, i, c);
      if (n > w[c]) w[c] = n;
    }
  for (int c = 0; c < nc; c++) fprintf(out, "%s%-*s", c ? "  " : "", (int)w[c], PQfname(r, c));
  fputc('\n', out);
  for (int i = 0; i < nr; i++) {
    for (int c = 0; c < nc; c++)
      fprintf(out, "%s%-*s", c ? "  " : "", (int)w[c], PQgetisnull(r, i, c) ? "NULL" : PQgetvalue(r, i, c));
    fputc('\n', out);
  }
  free(w);
}

static int failed(PGconn *pg, PGresult *r) {
  const char *m = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
  fprintf(stderr, "luamcp db: %s%s", m ? m : PQerrorMessage(pg), m ? "\n" : "");
  PQclear(r);
  PQfinish(pg);
  return 1;
}

int cmd_db_pg_query(FILE *out, bool write, bool as_table, const char *sql, const char **args, int nargs) {
  char why[600];
  db_placeholders ph;
  if (!db_placeholders_translate(sql, strlen(sql), &ph, why, sizeof why)) {
    fprintf(stderr, "luamcp db: %s\n", why);
    return 1;
  }
  if (ph.kind == DB_PH_NAMED || ph.n != nargs) {
    fprintf(stderr, "luamcp db: the statement has %d parameter%s (? only here), %d given\n", ph.n,
            ph.n == 1 ? "" : "s", nargs);
    db_placeholders_free(&ph);
    return 1;
  }
  PGconn *pg = db_pg_connect_blocking(why, sizeof why);
  if (!pg) {
    fprintf(stderr, "luamcp db: %s\n", why);
    db_placeholders_free(&ph);
    return 1;
  }
  PGresult *r = PQexec(pg, write ? "BEGIN" : "BEGIN READ ONLY");
  if (PQresultStatus(r) != PGRES_COMMAND_OK) return db_placeholders_free(&ph), failed(pg, r);
  PQclear(r);
  r = PQexecParams(pg, ph.sql, ph.n, NULL, args, NULL, NULL, 0);
  db_placeholders_free(&ph);
  ExecStatusType st = PQresultStatus(r);
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    if (!write && strstr(PQresultErrorMessage(r), "read-only transaction"))
      fprintf(stderr, "luamcp db: this statement writes: query is read-only unless --write\n");
    return failed(pg, r);
  }
  if (st == PGRES_TUPLES_OK) as_table ? print_table(out, r) : print_json(out, r);
  else if (write) fprintf(stderr, "%s rows changed\n", *PQcmdTuples(r) ? PQcmdTuples(r) : "0");
  PQclear(r);
  r = PQexec(pg, "COMMIT");
  if (PQresultStatus(r) != PGRES_COMMAND_OK) return failed(pg, r);
  PQclear(r);
  PQfinish(pg);
  return 0;
}
