/* db_placeholders.h — mcp.db's parameters in PostgreSQL's spelling: the
 * statement's ? (in order) or :name (one number per distinct name) become
 * $1, $2, … wherever PostgreSQL would read them as SQL — not inside a
 * 'string' (E'…' with its backslashes too), a "quoted identifier", a
 * -- comment, a nested block comment or a $tag$dollar-quoted$tag$ string.
 * A :: cast is not a name; a $n already written is left as it is. */
#ifndef LUAMCP_DB_PLACEHOLDERS_H
#define LUAMCP_DB_PLACEHOLDERS_H

#include <stdbool.h>
#include <stddef.h>

#define DB_PLACEHOLDERS_MAX 65535 /* PostgreSQL's bound on a statement's parameters */

enum { DB_PH_NONE, DB_PH_POSITIONAL, DB_PH_NAMED };

typedef struct db_placeholders {
  char *sql;    /* malloc'd, NUL-terminated */
  size_t len;
  int kind;     /* what the text uses */
  int n;        /* $1..$n */
  char **names; /* DB_PH_NAMED: names[k] (without ':') is $k+1 (malloc'd) */
} db_placeholders;

/* False (nothing to free) with why: the text mixes ? and :name, or has
   more than DB_PLACEHOLDERS_MAX. */
bool db_placeholders_translate(const char *sql, size_t len, db_placeholders *out, char *why,
                               size_t cap);
void db_placeholders_free(db_placeholders *p);

/* Where the statement that begins at s[i] ends: just past its ';' (one
   outside strings, identifiers, comments and dollar quotes), or n. */
size_t db_placeholders_statement_end(const char *s, size_t n, size_t i);

#endif
