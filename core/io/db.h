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

#endif
