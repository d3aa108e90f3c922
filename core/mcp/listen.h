/* listen.h — subscriptions/listen (2026-07-28): a request that stays open
 * and carries the change notifications its filter asked for, each stamped
 * with the subscription's id (the listen request's own id, same JSON
 * type). It replaces resources/subscribe and the GET stream of the 2025
 * era, which stay for 2025 sessions beside it.
 *
 * Lifetime: acknowledged at once (with what the server honours of the
 * filter); ends when the client cancels it (stdio: notifications/cancelled
 * naming it; HTTP: by closing the stream), when its session ends, or at
 * shutdown with its graceful result {resultType: "complete"}.
 *
 * Bounds: a filter names at most 1024 URIs in at most 256 KiB (more is
 * -32602); each URI is kept once, in an index by URI, so a
 * resources/updated reaches its listeners without a walk of every filter.
 * Over HTTP a listen is a stream of the transport's pool (--max-streams,
 * --max-streams-per-peer); MAX_LISTENERS bounds them in all. */
#ifndef LUAMCP_LISTEN_H
#define LUAMCP_LISTEN_H

#include <stdbool.h>
#include <stddef.h>

#include "server_internal.h"

/* The strings of a filter's resourceSubscriptions array (v: a JSON array),
   to each(ud, uri, n) unescaped; with each NULL, only checked against the
   bounds (1024 URIs, 256 KiB). NULL, or what is wrong (-32602's message). */
const char *listen_scan_filter(json_span v, void (*each)(void *, const char *, size_t), void *ud);
/* subscriptions/listen: open one (or answer the error). */
void listen_open(server *srv, inmsg *im);
/* Which kinds a notification method belongs to, for the filters. */
/* Deliver a change to every listener whose filter has it: a list_changed
   method (params NULL), or notifications/resources/updated for uri. */
void listen_list_changed(server *srv, const char *method);
/* The same, to the listeners whose caller sees(who, ud) holds for. */
void listen_list_changed_if(server *srv, const char *method,
                            bool (*sees)(const principal *who, void *ud), void *ud);
void listen_resource_updated(server *srv, const char *uri, size_t n);
/* The client cancelled the listen request `id` of session s: it ends
   without a further message. True when there was one. */
bool listen_cancel(server *srv, const session *s, json_span id);
/* The client closed the stream out answers (HTTP): its listener goes now,
   without a word, rather than at the next notification. */
void listen_end_outlet(server *srv, const outlet *out);
/* Session s ended: its listeners close without a word. */
void listen_end_session(server *srv, const session *s);
/* Shutdown: every listener gets its graceful result and closes. */
void listen_close_all(server *srv);
/* How many are open (for the limit). */
size_t listen_count(const server *srv);

#endif
