/* store.h — mcp.store: get/set/incr/delete with an optional TTL, for data
 * that the instances of a service share (a counter, a rate limit, a cache
 * entry), unlike mcp.state, which is one process's Lua table.
 *
 *   mcp.store.set(key, value [, ttl])   -- value: a string or a number; true
 *   mcp.store.get(key)                  -- the string, or nil
 *   mcp.store.incr(key [, by [, ttl]])  -- the new integer; ttl only if the
 *                                          key has none (a fixed window)
 *   mcp.store.delete(key)               -- whether it existed
 *   mcp.store.add(key, value [, ttl])   -- set if absent (Redis: SET NX); whether it was
 *   mcp.store.cas(key, old, new [, ttl])-- new (nil: delete) only if the value is old
 *                                          (nil: absent), one script on Redis
 *   mcp.store.keys(prefix [, cursor])   -- a page of keys and the next cursor (SCAN)
 *
 * (mcp.store.update is lua/mcp.lua's: a cas loop here, a transaction on
 * the database.)
 *
 * Values are strings (numbers are stored as their decimal text), as Redis
 * keeps them, so a script counts the same way on one instance or ten. By
 * default the store is the app's database (lua/store_db.lua: the table
 * luamcp_store of mcp.db, durable); with --store memory it is this
 * process's memory (it survives reloads, not restarts), here; with
 * --store redis://HOST:PORT[/N] it is Redis database N,
 * over one hiredis connection on the engine's loop (redis_conn.h): each
 * operation parks its call (call.h) until the reply, so the engine goes on
 * meanwhile, and a call that times out or is cancelled drops its reply.
 * incr with a TTL is one server-side script (INCRBY, then PEXPIRE when the
 * key has no TTL): atomic across instances.
 *
 * Only inside a handler (a call): at load time there is no call to park,
 * and the two backends must behave alike. While Redis is unreachable an
 * operation raises at once (no waiting for a reconnection). */
#ifndef LUAMCP_STORE_H
#define LUAMCP_STORE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct lua_State lua_State;
typedef struct engine engine;

/* Push the C half of mcp.store (core.store): the operations above on
   memory or Redis, backend() ("db", "memory" or "redis": which one
   serves now) and now_ms() (the wall clock, for the database's TTLs).
   lua/mcp.lua makes mcp.store of it and of lua/store_db.lua. */
void store_push(lua_State *L);
/* --store memory: this process's memory instead of the database. Before
   serving. */
void store_use_memory(void);
/* --store URL (checked by redis_url_parse): use Redis from now on. Before
   serving, with the engine's loop. */
void store_use_redis(engine *e, const char *url);
/* Run e's loop (nothing else runs it yet: the command line's one-shot
   engine) until the Redis connection is up, it failed once, or `seconds`
   passed. True when it is up (or there is no Redis). */
bool store_wait_connected(engine *e, double seconds);
/* The Redis connection only (the memory store stays): before the engine
   it was made with is freed. */
void store_drop_redis(void);
/* Is the store usable now (any thread)? Memory always is; Redis while its
   connection is up. False with why ("redis HOST:PORT/N: not connected"). */
bool store_ready(char *why, size_t cap);
/* The Redis connection of --store, or NULL (mcp.redis, io_redis.c, sends
   its commands on it). */
typedef struct redis_conn redis_conn;
redis_conn *store_redis(void);
/* After serving, before the engine is freed. */
void store_close(void);

#endif
