/* test_db_placeholders.c — ? and :name to $n for PostgreSQL
 * (core/io/db_placeholders.c): what is translated, what is left alone
 * (strings, identifiers, comments, dollar quotes, casts), the errors. */
#include <stdlib.h>

#include "check.h"
#include "db_placeholders.h"

static char why[128];

static const char *tr(const char *sql, int *n, int *kind) {
  static db_placeholders p;
  db_placeholders_free(&p);
  if (!db_placeholders_translate(sql, strlen(sql), &p, why, sizeof why)) return NULL;
  if (n) *n = p.n;
  if (kind) *kind = p.kind;
  return p.sql;
}

int main(void) {
  int n, kind;
  CHECK_STR(tr("SELECT 1", &n, &kind), "SELECT 1");
  CHECK(n == 0 && kind == DB_PH_NONE);
  CHECK_STR(tr("SELECT * FROM t WHERE a = ? AND b = ?", &n, &kind), "SELECT * FROM t WHERE a = $1 AND b = $2");
  CHECK(n == 2 && kind == DB_PH_POSITIONAL);
  CHECK_STR(tr("INSERT INTO t VALUES (?,?,?)", &n, NULL), "INSERT INTO t VALUES ($1,$2,$3)");
  CHECK(n == 3);
  /* left alone */
  CHECK_STR(tr("SELECT '?', 'it''s ?', ? ", &n, NULL), "SELECT '?', 'it''s ?', $1 ");
  CHECK(n == 1);
  CHECK_STR(tr("SELECT E'\\' ?', ?", &n, NULL), "SELECT E'\\' ?', $1");
  CHECK_STR(tr("SELECT \"a?\"\"b\" FROM t WHERE x = ?", &n, NULL), "SELECT \"a?\"\"b\" FROM t WHERE x = $1");
  CHECK_STR(tr("SELECT 1 -- what?\n, ?", &n, NULL), "SELECT 1 -- what?\n, $1");
  CHECK_STR(tr("SELECT /* a /* nested ? */ still ? */ ?", &n, NULL), "SELECT /* a /* nested ? */ still ? */ $1");
  CHECK(n == 1);
  CHECK_STR(tr("SELECT $$ ? $$, $x$ :a $ $x$, ?", &n, NULL), "SELECT $$ ? $$, $x$ :a $ $x$, $1");
  CHECK_STR(tr("SELECT ?::text, x::int FROM t", &n, NULL), "SELECT $1::text, x::int FROM t");
  CHECK_STR(tr("SELECT $1, a$b, ?", &n, NULL), "SELECT $1, a$b, $1");
  /* names: one number each, repeated names share it */
  CHECK_STR(tr("SELECT :a, :b_2, :a, :a::int", &n, &kind), "SELECT $1, $2, $1, $1::int");
  CHECK(n == 2 && kind == DB_PH_NAMED);
  db_placeholders p;
  CHECK(db_placeholders_translate(":x + :y + :x", 12, &p, why, sizeof why));
  CHECK(p.n == 2 && p.names && strcmp(p.names[0], "x") == 0 && strcmp(p.names[1], "y") == 0);
  db_placeholders_free(&p);
  CHECK_STR(tr("SELECT ':a', \":b\", :c -- :d", &n, NULL), "SELECT ':a', \":b\", $1 -- :d");
  CHECK(n == 1);
  CHECK_STR(tr("SELECT a[1:2]", &n, NULL), "SELECT a[1:2]");
  CHECK(n == 0);
  /* unterminated runs are PostgreSQL's to report */
  CHECK_STR(tr("SELECT '?", &n, NULL), "SELECT '?");
  CHECK_STR(tr("SELECT /* ?", &n, NULL), "SELECT /* ?");
  CHECK_STR(tr("SELECT $t$ ?", &n, NULL), "SELECT $t$ ?");
  /* a placeholder glued to a word stays apart from it */
  CHECK_STR(tr("SELECT a?b", &n, NULL), "SELECT a $1 b");
  CHECK_STR(tr("SELECT :a$b$ + 1", &n, NULL), "SELECT $1 + 1");
  /* errors */
  CHECK(!tr("SELECT ?, :a", NULL, NULL));
  CHECK(strstr(why, "mixes") != NULL);
  CHECK(!tr("SELECT :a, ?", NULL, NULL));
  size_t big = 65536 * 2;
  char *many = malloc(big + 1);
  for (size_t i = 0; i < big; i += 2) many[i] = '?', many[i + 1] = ',';
  many[big] = 0;
  CHECK(!db_placeholders_translate(many, big, &p, why, sizeof why));
  CHECK(strstr(why, "65535") != NULL);
  CHECK(db_placeholders_translate(many, big - 2, &p, why, sizeof why) && p.n == 65535);
  db_placeholders_free(&p);
  free(many);
  /* statements: a ; inside quotes, comments or a function's body does not end one */
  const char *script = "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql; -- a;\n"
                       "INSERT INTO t VALUES ('a;b', \"c;\"); /* ; */ SELECT 2";
  size_t len = strlen(script), e1 = db_placeholders_statement_end(script, len, 0);
  CHECK(e1 == strlen("CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;"));
  size_t e2 = db_placeholders_statement_end(script, len, e1);
  CHECK(strncmp(script + e2 - 3, "\");", 3) == 0);
  CHECK(db_placeholders_statement_end(script, len, e2) == len);
  tr("", NULL, NULL);
  db_placeholders_free(&(db_placeholders){0});
  return check_report("test_db_placeholders");
}
