/* redis_conn.h — one hiredis asynchronous connection on the engine's libuv
 * loop (through glue of its own, not hiredis' adapters/libuv.h: see
 * redis_conn.c) that comes back by itself: what the
 * bus (bus.c) and mcp.store (store.c) talk to Redis through.
 *
 * Why hiredis' async API and not mcp.socket: the bus and the store are the
 * server's, not a script's; they live across calls and reloads and must
 * never block the engine. Why one file: the reconnection policy is the same
 * for both — a lost connection (or one that never came up) is tried again
 * after 0.1 s, doubling to 5 s; the outage is logged once when it begins
 * and once when it ends, whatever the number of attempts; commands given
 * while it is down are refused at once (redis_conn_ctx is NULL), and
 * commands in flight when it drops get their callback with a NULL reply.
 *
 * Host names are resolved by hiredis when it connects, which blocks the loop
 * for as long as the resolver takes: give an IP address. Everything here is
 * for the engine's run-lock holder. */
#ifndef LUAMCP_REDIS_CONN_H
#define LUAMCP_REDIS_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <hiredis/async.h>
#include <uv.h>

typedef struct redis_url {
  char host[256];
  int port;
  int db; /* SELECTed on every (re)connection */
} redis_url;

/* redis://HOST:PORT[/N] (PORT default 6379, N default 0). False with why. */
bool redis_url_parse(const char *url, redis_url *out, char *why, size_t cap);

typedef struct redis_conn redis_conn;
typedef struct engine engine;

/* What the outage messages count over: the connections of one user (the
   bus has two) share one, so an outage is one line however many drop. */
typedef struct redis_health {
  const char *what; /* "bus", "store": the messages' prefix */
  const char *note; /* appended to the "unreachable" line, or NULL */
  _Atomic int down; /* connections of it that are down now */
  _Atomic int live; /* and up (readiness reads both from any thread) */
  double since;
} redis_health;

/* On e's loop. up: called on the loop each time the connection is (again) usable, after
   its SELECT was queued (a subscriber subscribes here). May be NULL. h
   outlives the connection. */
redis_conn *redis_conn_new(engine *e, const redis_url *u, redis_health *h,
                           void (*up)(redis_conn *rc, void *ud), void *ud);
/* The live context, or NULL while the connection is down. */
redisAsyncContext *redis_conn_ctx(redis_conn *rc);
/* "HOST:PORT/N", for messages. */
const char *redis_conn_name(const redis_conn *rc);
/* Close it: pending callbacks get NULL replies now; memory goes once the
   loop has closed the handles. */
void redis_conn_free(redis_conn *rc);

#endif
