/* test_db.h — `luamcp test`'s test.db (docs/testing.md): the test file's
 * database from a test's own code, outside any call:
 *
 *   test.db.exec(sql, ...)   -- { changes =, last_id = }; several statements
 *                               when there are no parameters
 *   test.db.query(sql, ...)  -- the rows: a list of tables keyed by column
 *   test.db.one(sql, ...)    -- the first row, or nil
 *
 * Parameters and values as mcp.db's (positional ?, or one table of :name
 * parameters; nil and mcp.null are NULL, booleans 1/0; NULL in a row is
 * mcp.null). A connection of this file's own on the file mcp.db uses
 * (db_path_set: the test file's fresh database, or --data's), synchronous,
 * with a busy timeout: a test is not a call, and nothing else runs while it
 * does, but a handler's transaction still open (a task) is waited for. */
#ifndef LUAMCP_TEST_DB_H
#define LUAMCP_TEST_DB_H

typedef struct lua_State lua_State;

/* Set db_exec, db_query and db_one in the table on top of L's stack (the
   bridge lua/test.lua gets). */
void test_db_register(lua_State *L);
/* Close the connection (the end of a test file). */
void test_db_close(void);

#endif
