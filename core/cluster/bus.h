/* bus.h — change notifications shared between the instances of one service
 * (--bus redis://HOST:PORT[/N]), over Redis pub/sub.
 *
 * Why: one luamcp process serves one core; a service of several behind a
 * proxy must still tell every client of a change — mcp.notify_updated(uri)
 * in a handler on instance A reaches a subscriptions/listen stream (or a
 * 2025 session's subscription) held open by instance B, and a reload's
 * list_changed reaches every instance's listeners.
 *
 * Once per listener: an event is delivered to this instance's own clients at
 * once, as without a bus, and published; what comes back from Redis with
 * this process's own origin (a random id per process, not --instance, so two
 * instances misnamed alike still hear each other) is dropped. So local
 * delivery needs no round trip and keeps working while Redis is away; events
 * of an outage are not sent later (a notification is a hint to re-read, not
 * data: a client that missed one re-reads on its next list or read). The
 * channel is luamcp:events:N (pub/sub ignores databases: N keeps services on
 * one Redis apart). Two connections: a subscriber (SUBSCRIBE mode takes the
 * whole connection) and a publisher; both reconnect (redis_conn.h), and the
 * subscriber subscribes again each time.
 *
 * A message is "<origin16> L <list_changed method>" or "<origin16> U <uri>";
 * anything else from the channel is ignored (logged at debug).
 *
 * Each process also listens on a channel of its own, luamcp:to:N:<origin>,
 * for messages meant for it alone ("<from16> <kind> <body>"): a request for
 * one of its tasks from another instance, or the answer to one it sent
 * (tasks_remote.h). */
#ifndef LUAMCP_BUS_H
#define LUAMCP_BUS_H

#include <stdbool.h>
#include <stddef.h>

/* the length of an origin: hex digits of a random id per process */
#define BUS_ORIGIN_LEN 16

typedef struct bus bus;
struct server;

/* Connect srv to the bus at url (already checked by redis_url_parse); the
   connection comes up in the background. Before serving. */
bus *bus_new(struct server *srv, const char *url);
/* After serving, before server_free. NULL is fine. */
void bus_free(bus *b);

/* {====== the run-lock holder
   The server reaches the bus through the peers bus_new gives it
   (server_join: changes to publish, task requests to forward); these are
   for the cluster layer's own files (tasks_remote.c). */
/* This process's origin on the bus (16 hex digits), or NULL without one. */
const char *bus_origin(const struct server *srv);
/* "<our origin> <kind> <body>" to the instance of origin `to` (16 hex
   digits). False when the bus is down or absent: nothing was sent. heard,
   when not NULL, is told later how many processes received it (Redis'
   count of subscribers: 0 when no live instance has that origin; -1 when
   the bus went down first), with tag. */
bool bus_send(struct server *srv, const char *to, char kind, const char *body, size_t n,
              void (*heard)(struct server *srv, unsigned long long tag, long long receivers),
              unsigned long long tag);
/* }====== */

#endif
