/* test_db.c — test.db (see test_db.h): SQL on the test file's database
 * from the test's code, on a sqlite3 connection of its own. Errors are
 * raised at the test's line (not lua/test.lua's, which wraps these). */
#include "test_db.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <sqlite3.h>

#include "db.h"
#include "json.h"
#include "luax.h"

#define BUSY_MS 5000 /* a handler's open transaction, at most */

static sqlite3 *conn;
static char *conn_file; /* what conn has open */

enum { TDB_EXEC, TDB_QUERY, TDB_ONE };
static const char *const fnames[] = {"test.db.exec", "test.db.query", "test.db.one"};

/* luaL_error at the first line that is not lua/test.lua's */
static int tdb_raise(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tdb_raise(lua_State *L, const char *fmt, ...) {
  lua_Debug ar;
  int level = 1;
  while (lua_getstack(L, level, &ar) && lua_getinfo(L, "S", &ar) &&
         (strcmp(ar.source, "=test.lua") == 0 || strcmp(ar.what, "C") == 0))
    level++;
  va_list ap;
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  return luax_error_at(L, level);
}

void test_db_close(void) {
  if (conn) sqlite3_close_v2(conn);
  conn = NULL;
  free(conn_file);
  conn_file = NULL;
}

static sqlite3 *opened(lua_State *L, const char *fname) {
  const char *file = db_path_set();
  if (!file) tdb_raise(L, "%s: this run has no database", fname);
  if (conn && strcmp(conn_file, file) == 0) return conn;
  test_db_close();
  if (sqlite3_open_v2(file, &conn, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
    lua_pushfstring(L, "%s: cannot open %s: %s", fname, file, conn ? sqlite3_errmsg(conn) : "out of memory");
    test_db_close();
    return tdb_raise(L, "%s", lua_tostring(L, -1)), NULL;
  }
  conn_file = strdup(file);
  db_hold(file); /* as every connection to it (restore's rule) */
  sqlite3_busy_timeout(conn, BUSY_MS);
  /* as mcp.db's connections are: WAL (the file may be new), foreign keys */
  sqlite3_exec(conn, "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON", NULL, NULL, NULL);
  return conn;
}

/* Bind Lua value i to parameter k of st; false when it cannot be. */
static bool bind_value(lua_State *L, int i, sqlite3_stmt *st, int k) {
  switch (lua_type(L, i)) {
  case LUA_TNIL: return sqlite3_bind_null(st, k) == SQLITE_OK;
  case LUA_TBOOLEAN: return sqlite3_bind_int(st, k, lua_toboolean(L, i)) == SQLITE_OK;
  case LUA_TNUMBER:
    if (lua_isinteger(L, i)) return sqlite3_bind_int64(st, k, (sqlite3_int64)lua_tointeger(L, i)) == SQLITE_OK;
    return sqlite3_bind_double(st, k, lua_tonumber(L, i)) == SQLITE_OK;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, i, &n);
    if (memchr(s, 0, n) || !json_utf8_valid(s, n)) /* as mcp.db: a blob */
      return sqlite3_bind_blob64(st, k, s, n, SQLITE_TRANSIENT) == SQLITE_OK;
    return sqlite3_bind_text64(st, k, s, n, SQLITE_TRANSIENT, SQLITE_UTF8) == SQLITE_OK;
  }
  case LUA_TLIGHTUSERDATA:
    if (json_isnull(L, i)) return sqlite3_bind_null(st, k) == SQLITE_OK;
    return false;
  default: return false;
  }
}

/* The values after sql (2..top) bound to st, or a raise (st finalized). */
static void bind_all(lua_State *L, sqlite3_stmt *st, int top, const char *fname) {
  int want = sqlite3_bind_parameter_count(st);
  bool named = top == 2 && lua_type(L, 2) == LUA_TTABLE;
  if (!named && top - 1 != want) {
    sqlite3_finalize(st);
    tdb_raise(L, "%s: the statement has %d parameter(s), %d value(s) given", fname, want, top - 1);
  }
  for (int k = 1; k <= want; k++) {
    int i = k + 1;
    const char *name = sqlite3_bind_parameter_name(st, k);
    if (named) {
      if (!name || !name[1]) {
        sqlite3_finalize(st);
        tdb_raise(L, "%s: parameter %d has no name: give the values in order, not in a table", fname, k);
      }
      lua_getfield(L, 2, name + 1);
      i = lua_gettop(L);
      if (lua_isnil(L, i)) {
        sqlite3_finalize(st);
        tdb_raise(L, "%s: the table has no '%s'", fname, name + 1);
      }
    }
    bool ok = bind_value(L, i, st, k);
    const char *what = luaL_typename(L, i);
    if (named) lua_pop(L, 1);
    if (!ok) {
      sqlite3_finalize(st);
      tdb_raise(L, "%s: parameter %d is a %s: only strings, numbers, booleans, nil and mcp.null bind",
                fname, k, what);
    }
  }
}

static void push_cell(lua_State *L, sqlite3_stmt *st, int c) {
  switch (sqlite3_column_type(st, c)) {
  case SQLITE_INTEGER: lua_pushinteger(L, (lua_Integer)sqlite3_column_int64(st, c)); break;
  case SQLITE_FLOAT: lua_pushnumber(L, sqlite3_column_double(st, c)); break;
  case SQLITE_TEXT:
    lua_pushlstring(L, (const char *)sqlite3_column_text(st, c), (size_t)sqlite3_column_bytes(st, c));
    break;
  case SQLITE_BLOB: {
    const void *p = sqlite3_column_blob(st, c);
    lua_pushlstring(L, p ? p : "", (size_t)sqlite3_column_bytes(st, c));
    break;
  }
  default: json_pushnull(L);
  }
}

static int run(lua_State *L, int kind) {
  const char *fname = fnames[kind];
  int top = lua_gettop(L);
  if (lua_type(L, 1) != LUA_TSTRING) return tdb_raise(L, "%s: the SQL must be a string", fname);
  size_t len;
  const char *sql = lua_tolstring(L, 1, &len), *end = sql + len;
  sqlite3 *db = opened(L, fname);
  int changes_before = sqlite3_total_changes(db);
  if (kind == TDB_QUERY) lua_newtable(L);
  int out = lua_gettop(L); /* the rows (query) */
  bool got = false;        /* one: a row */
  lua_Integer nrows = 0;
  for (const char *p = sql; p < end;) {
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    if (sqlite3_prepare_v2(db, p, (int)(end - p), &st, &tail) != SQLITE_OK)
      return tdb_raise(L, "%s: %s", fname, sqlite3_errmsg(db));
    p = tail;
    if (!st) continue; /* blanks, a comment */
    bool more = false;
    for (const char *q = tail; q < end; q++)
      if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r' && *q != ';') more = true;
    if (more && (kind != TDB_EXEC || top > 1)) {
      sqlite3_finalize(st);
      return tdb_raise(L, "%s: one statement at a time (exec runs several when it has no parameters)", fname);
    }
    bind_all(L, st, top, fname);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (kind == TDB_EXEC || got) continue;
      lua_createtable(L, 0, sqlite3_column_count(st));
      for (int c = 0; c < sqlite3_column_count(st); c++) {
        push_cell(L, st, c);
        lua_setfield(L, -2, sqlite3_column_name(st, c));
      }
      if (kind == TDB_ONE) got = true;
      else lua_rawseti(L, out, ++nrows);
    }
    if (rc != SQLITE_DONE) {
      lua_pushstring(L, sqlite3_errmsg(db));
      sqlite3_finalize(st);
      return tdb_raise(L, "%s: %s", fname, lua_tostring(L, -1));
    }
    sqlite3_finalize(st);
  }
  if (kind == TDB_EXEC) {
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, sqlite3_total_changes(db) - changes_before);
    lua_setfield(L, -2, "changes");
    lua_pushinteger(L, (lua_Integer)sqlite3_last_insert_rowid(db));
    lua_setfield(L, -2, "last_id");
  } else if (kind == TDB_ONE && !got) {
    lua_pushnil(L);
  }
  return 1;
}

static int tdb_exec(lua_State *L) { return run(L, TDB_EXEC); }
static int tdb_query(lua_State *L) { return run(L, TDB_QUERY); }
static int tdb_one(lua_State *L) { return run(L, TDB_ONE); }

void test_db_register(lua_State *L) {
  static const luaL_Reg fns[] = {{"db_exec", tdb_exec}, {"db_query", tdb_query}, {"db_one", tdb_one}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
