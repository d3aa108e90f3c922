/* session.h — one connected client: what was negotiated at initialize, its
 * log level and subscriptions, and where unsolicited messages go. The
 * engine (whoever holds its run lock) owns the fields; the lifetime is reference-counted because
 * transports (HTTP workers) and the engine both hold sessions. */
#ifndef LUAMCP_SESSION_H
#define LUAMCP_SESSION_H

#include <stdatomic.h>
#include <stdbool.h>

#include "principal.h"

#include "outlet.h"
#include "protocol.h"

typedef struct session {
  bool initialized; /* initialize answered */
  bool ready;       /* notifications/initialized received */
  int version;
  int log_level;    /* notifications/message at or above this level */
  bool client_sampling, client_elicitation, client_roots;
  bool client_ui; /* declared the MCP Apps extension (io.modelcontextprotocol/ui) */
  bool caps_unknown; /* a stateless 2025-11-25 request: no initialize told us the capabilities */
  char **subscriptions;
  size_t nsubscriptions;
  /* where messages that answer no request go (list_changed,
     resources/updated): stdout, or an HTTP GET stream; may be NULL */
  outlet *standalone;
  /* owners: the transport's table and every queued message or call that
     points here; freed by the last session_unref */
  atomic_int refs;
  atomic_bool ended; /* DELETEd or expired: calls of it are dropped */
  bool ephemeral;    /* one stateless HTTP request: never tracked, gone with it */
  bool internal;     /* the server's own (mount.c): may send luamcp/mount/refresh */
  char peer[48];     /* the client's address (HTTP, after --trust-proxy); "" over stdio */
  char id[80];       /* its Mcp-Session-Id (HTTP, 2025-11-25); "" otherwise */
  principal *who;    /* its last request's caller (a reference; the engine's holder's), or NULL */
  void (*on_free)(struct session *s); /* transport cleanup, may be NULL */
  void *transport; /* the transport's own per-session data */
} session;

/* A session with one reference (the caller's). */
session *session_new(void);
void session_ref(session *s);
void session_unref(session *s);

bool session_subscribe(session *s, const char *uri, size_t n);
void session_unsubscribe(session *s, const char *uri, size_t n);
bool session_is_subscribed(const session *s, const char *uri, size_t n);

#endif
