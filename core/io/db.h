/* db.h — mcp.db: SQL on the app's embedded SQLite database from handlers,
 * never blocking the engine (docs/lua-api.md#data).
 *
 *   mcp.db.query(sql, ...)  -- the rows: a list of tables keyed by column
 *   mcp.db.one(sql, ...)    -- the first row, or nil
 *   mcp.db.exec(sql, ...)   -- { changes =, last_id = }
 *   mcp.db.tx(fn)           -- fn atomically (BEGIN IMMEDIATE … COMMIT);
 *                              nested: a savepoint (lua/mcp.lua)
 *
 * Values after sql bind the statement's ? in order, or one table binds
 * its :name parameters; nothing is ever formatted into the text. A
 * writer and two readers, each a connection on a thread of its own
 * (db_sqlite.c): each statement parks its call (call.h) until a thread is
 * done with it, the engine serving the others meanwhile; a call that
 * times out or is cancelled has its statement interrupted. A transaction belongs to the call that began it:
 * no other call's statement runs until it ends, and a call that ends
 * inside one rolls it back.
 *
 * Nothing is opened before the first use: the file (db_set_path) is made
 * then, with its folder. */
#ifndef LUAMCP_DB_H
#define LUAMCP_DB_H

#include <stdatomic.h>
#include <stdbool.h>

#include "buf.h"

typedef struct lua_State lua_State;

/* Push the mcp.db table (core.db). */
void db_push(lua_State *L);
/* The database file of the app served (NULL: none, mcp.db raises). Before
   serving. */
void db_set_path(const char *file);
/* The file db_set_path gave, or NULL (luamcp test's test.db opens it too:
   core/cli/test_db.c). */
const char *db_path_set(void);
/* After serving, before the engine is freed: the thread stops, the file is
   closed (a transaction still open rolls back), nothing stays on the
   engine's loop. A later use opens it again. */
void db_close(void);

/* The app's migrations (docs/lua-api.md#migrations, db_migrate.c):
   APP_DIR/migrations/NNN_name.sql, those not applied yet run in the order
   of NNN, all in one transaction, each recorded in luamcp_migrations with
   its checksum; on the file db_set_path gave (none: nothing is done), or,
   scratch, on an in-memory database where every one runs (luamcp check).
   On any thread, on a connection of its own; *stop (if given) ends a wait
   for a lock or a long statement. False: nothing of them was applied, one
   "FILE:LINE: message" line per problem in errors. */
bool db_migrate(const char *app_dir, bool scratch, const atomic_bool *stop, buf *errors);

/* A luamcp process that opens the database file (mcp.db's connections,
   the migrations) holds a shared flock(2) on FILE.lock (made beside it)
   until it exits; `luamcp db DIR restore` takes it exclusive, so it is
   refused while one is open, and one that opens meanwhile waits for it.
   Once per file per process; -1 with errno when the lock file cannot be
   made (the caller goes on: SQLite's own locks still hold). */
int db_hold(const char *file);

/* What `luamcp db DIR migrate --status` prints: each migration of
   APP_DIR/migrations and of luamcp_migrations in file (opened read-only;
   not there: none applied), one line each — applied (and when), edited
   (its checksum differs), pending, or gone (applied, file removed). False
   with the problems in errors (an edited one is one); *pending counts
   those not applied. */
bool db_migrate_status(const char *app_dir, const char *file, buf *out, size_t *pending, buf *errors);

#endif
