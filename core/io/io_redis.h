/* io_redis.h — mcp.redis: any Redis command from a handler, on the
 * connection of --store redis://HOST:PORT/N (store.c's, redis_conn.h), and
 * pipelines of them. docs/lua-api.md ("Redis: mcp.redis") is the reference.
 *
 *   mcp.redis(cmd, arg...)            -- the reply: status and bulk -> string,
 *                                        integer -> integer, nil -> nil, array
 *                                        -> a Lua array (mcp.array_mt; nil
 *                                        elements mcp.null, nested arrays
 *                                        nested); an error reply raises
 *                                        "redis: ERR ..." at the script's line
 *   mcp.redis.pipeline(function(p) p(cmd, arg...) ... end)
 *   mcp.redis.pipeline{ {cmd, arg...}, ... }
 *                                     -- the list of the replies in order; an
 *                                        error reply is {err = "ERR ..."} in its
 *                                        slot, a nil one mcp.null
 *
 * Arguments are strings, or numbers as their decimal text (integers as
 * integers, floats as the shortest text that reads back the same). The
 * commands of a call (or of a pipeline: all written at once, one park for
 * every reply) go out on the one shared connection, so commands that would
 * change it for the others (SELECT, AUTH, HELLO, CLIENT, MULTI outside a
 * pipeline, WATCH, ...) or hold it (BLPOP, SUBSCRIBE, MONITOR, WAIT, XREAD
 * BLOCK, ...) are refused before anything is sent. A pipeline may hold
 * MULTI ... EXEC (or DISCARD): its commands are contiguous on the
 * connection.
 *
 * A reply (a pipeline's together) is kept in C until the call resumes: at
 * most 1,048,576 elements, 64 MiB of strings, arrays 32 deep (hiredis 0.14
 * reads 8) and what the call may still grow by (--memory-limit); past
 * those its slot is an error, not the value.
 *
 * One CLIENT span per command or pipeline (db.system.name=redis,
 * db.operation.name the command names, never an argument), and
 * mcp_redis_commands_total counts each reply as mcp.store's do. */
#ifndef LUAMCP_IO_REDIS_H
#define LUAMCP_IO_REDIS_H

typedef struct lua_State lua_State;

/* Push the mcp.redis table (core.redis): callable, with .pipeline. */
void io_redis_push(lua_State *L);

#endif
