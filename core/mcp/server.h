/* server.h — the MCP server: what transports hand messages to. It owns the
 * sessions, answers the MCP methods (methods.c) from the app's registry
 * snapshot or by starting handler calls on the engine (engine.h), shapes
 * their results, batches each round's output per outlet, and publishes
 * reloads (reload.c). Transports sit on top: stdio hands lines as they
 * come; HTTP parses a request once and reads its envelope (its headers
 * are checked against it) and hands both on, so the server does neither
 * again; both write what their outlets are given. */
#ifndef LUAMCP_SERVER_H
#define LUAMCP_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "app.h"
#include "engine.h"
#include "envelope.h"
#include "jsonrpc.h"
#include "outlet.h"
#include "principal.h"
#include "trace.h"
#include "session.h"

typedef struct server_options {
  engine_options engine;
  app_config app; /* how apps are loaded (again, on reload) */
  double state_ttl; /* seconds a multi round-trip requestState stays valid */
  double task_ttl;  /* seconds a task lives (its work, then its result): ttlMs */
  size_t max_tasks_per_peer; /* tasks one client address may hold (0: tasks.c's default) */
  const char *instance; /* --instance: named in the access log */
  principal *as; /* who a request without a token of its own comes from (luamcp call --as); the
                    caller's, kept for the server's life; NULL: nobody */
} server_options;

typedef struct server server;

/* The error of a request whose caller's token lacks a scope the item
   declares (its data: {"scope": what to ask for}); HTTP answers it 403
   with an insufficient_scope challenge. */
#define SERVER_INSUFFICIENT_SCOPE -32043
#define SERVER_INSUFFICIENT_SCOPE_TEXT "-32043"

server *server_new(app *a, const server_options *opt);
/* Who the requests submitted from now on come from when they carry no token
   (opt.as; luamcp test sets it call by call). As opt.as, the caller keeps
   it alive for the server's life. Only while the engine is not running. */
void server_set_caller(server *srv, principal *who);
/* Frees the server, its engine and the app. */
void server_free(server *srv);
engine *server_engine(server *srv);

/* {====== any thread */
/* Hand one message (malloc'd; ownership passes) to the server; its answer
   goes to reply (NULL for notifications and responses). The server takes
   its own reference to s. notifications/cancelled takes effect at once,
   even while a handler runs. If the server is finishing, the message is
   dropped and reply->finish called. reply->finish may be called from any
   thread, the caller's own included, before server_submit returns.
   parsed: msg already classified by the caller (its spans point into
   msg), or NULL. */
void server_submit(server *srv, session *s, outlet *reply, char *msg, size_t len,
                   const jsonrpc_msg *parsed);
/* The same from HTTP, with the envelope the transport read and checked
   (NULL: the message has none; its spans point into msg), and the
   request's Mcp-Param-* headers ("Name\0value\0" pairs, the names without
   the prefix; ownership passes; NULL for none), which tools/call checks
   against the tool's x-mcp-header parameters, and who sent it (its
   verified token's principal: the server takes a reference; NULL: none),
   and the HTTP request's trace context (traceparent; NULL: none). */
void server_submit_http(server *srv, session *s, outlet *reply, char *msg, size_t len,
                        const jsonrpc_msg *parsed, const envelope *env, char *params,
                        size_t params_len, principal *who, const trace_ctx *parent);
/* What the app version serving now declares, appended to scopes (every
   scope an item requires, space-separated) and name (serverInfo.name):
   the Protected Resource Metadata's. */
void server_app_facts(server *srv, buf *scopes, buf *name);
/* The session ended (DELETE, expiry): its calls are dropped, its standalone
   outlet finished and released. */
void server_end_session(server *srv, session *s);
/* Make stream the session's standalone outlet (an HTTP GET stream); a
   previous one is finished. stream->finish is called when it is released. */
void server_attach(server *srv, session *s, outlet *stream);
/* The client closed the stream of a request that stays open (HTTP:
   subscriptions/listen): what writes to it goes. Takes a reference of the
   caller's: stream->finish is called once the server is done with it. */
void server_stream_closed(server *srv, session *s, outlet *stream);
/* }====== */

/* The engine's run-lock holder (an input the engine reads: stdio): take
   one message (borrowed; copied only if it must wait); answers go to
   s->standalone. */
void server_accept(server *srv, session *s, const char *msg, size_t len);
/* Can it serve every request now (any thread)? Its store and the other
   instances (--store, --bus: Redis connected); false with why. */
bool server_ready(server *srv, char *why, size_t cap);
/* Request m was answered with a JSON-RPC error by the transport, before
   the server saw it (its envelope or headers were wrong): counted as the
   server counts its own (mcp_server_requests_total; version: the revision
   it named, PROTO_NONE for none of ours). Any thread. */
void server_count_refused(const jsonrpc_msg *m, int version);

#endif
