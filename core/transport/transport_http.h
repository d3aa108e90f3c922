/* transport_http.h — MCP Streamable HTTP (spec 2025-11-25) on civetweb: one
 * endpoint, /mcp. POST carries one JSON-RPC message and is answered as JSON,
 * or as an SSE stream when the call emits anything before its result; GET
 * opens a session's standalone SSE stream; DELETE ends a session. Workers
 * never touch a lua_State: they hand messages to the engine and relay what
 * it writes. */
#ifndef LUAMCP_TRANSPORT_HTTP_H
#define LUAMCP_TRANSPORT_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "server.h"

typedef struct http_options {
  const char *host;        /* address to bind (default 127.0.0.1) */
  int port;
  const char *const *allow_origins; /* extra Origin values allowed */
  size_t nallow_origins;
  /* CORS (docs/http.md, "CORS"): origins whose pages may call /mcp from a
     browser (exact, validated by transport_http_check; also let through
     the Origin check), or cors_any ('*': every origin, no authorization) */
  const char *const *cors_origins;
  size_t ncors_origins;
  bool cors_any;
  const char *token;       /* bearer token required on every request, or NULL */
  /* OAuth 2.1 resource server (docs/http.md, "Authorization"), off when
     auth_resource is NULL: this server's canonical URI (the audience its
     tokens must name), the issuers trusted, their keys (a JWKS file; NULL:
     found through their metadata), the scopes it supports (space- or
     comma-separated), the clock skew, and for opaque tokens (RFC 7662
     introspection) the endpoint (NULL: the issuer's metadata says) and
     this server's credentials there (NULL client id: no introspection) */
  const char *auth_resource;
  const char *const *auth_issuers;
  size_t nauth_issuers;
  const char *auth_jwks;
  const char *auth_scopes;
  double auth_skew;
  bool auth_plain_jwt; /* also JWTs typed JWT or not at all, not only RFC 9068's at+jwt */
  const char *auth_introspect;
  const char *auth_client_id, *auth_client_secret;
  const char *cert, *key;  /* TLS (PEM files), or NULL */
  bool stateless;          /* no sessions; GET is 405 */
  size_t max_body;         /* bytes; larger POST bodies get 413 */
  int threads;             /* civetweb workers (each request in flight and SSE stream holds one) */
  size_t max_streams;      /* streams open at once (GET, subscriptions/listen), past it 503; 0: threads / 5 */
  size_t max_streams_per_peer; /* ... from one remote address: 429; 0: half of max_streams */
  double header_timeout;   /* seconds for a request's head (and any read or write without progress) */
  double body_timeout;     /* seconds for a request's whole body */
  double session_idle;     /* seconds before an idle session is ended */
  double init_timeout;     /* the same for a session that never sent notifications/initialized */
  size_t max_sessions;     /* initialize beyond this many live sessions gets 503 */
  size_t max_sessions_per_peer; /* ... from one remote address: 429; 0: no limit */
  double init_rate;        /* initialize per second per remote address (a bucket of 10 s); 0: no limit */
  size_t stream_buffer;    /* bytes a stream may have unsent before it is parked or dropped */
  double keepalive;        /* seconds between SSE keep-alive comments */
  bool dev;                /* also serve the developer page at /dev */
  /* this process's name among a service's instances: the prefix of its
     session ids (NAME.<hex>), which a proxy in front routes on */
  const char *instance;
  /* peers whose X-Forwarded-For and X-Forwarded-Host are believed (a reverse
     proxy in front): the client's address and Host are taken from them */
  const char *const *trust_proxies;
  size_t ntrust_proxies;
  /* the listener is up (READY=1 for systemd), or NULL */
  void (*listening)(const char *url);
} http_options;

/* The one spelling of an IP address (inet_ntop's; an IPv4-mapped IPv6
   address as IPv4) into out: how the HTTP transport classifies and counts
   a client's address. False when in is no address. */
bool http_canonical_addr(const char *in, char *out, size_t cap);

/* The longest --instance NAME. */
#define HTTP_INSTANCE_MAX 32
/* Is name a usable --instance (1..HTTP_INSTANCE_MAX of [A-Za-z0-9_-])? */
bool transport_http_instance_ok(const char *name);

/* Serve until engine_finish (a signal) and the calls in flight are done;
   runs the engine on the calling thread. Returns 0, or 1 when the server
   could not start (the reason is logged). */
int transport_http_serve(server *srv, const http_options *o);
/* Do the --auth-* and --token options make sense together (URLs parsed:
   https, or http to a loopback host, no userinfo)? False with why: a usage
   error, said before anything loads or listens. */
bool transport_http_check(const http_options *o, char *why, size_t cap);
/* luamcp check: the --auth-* options as serve would take them, each
   issuer's keys fetched once (a line each on stdout; why not on stderr).
   0 when they work (or there are none), 1 when not. */
int transport_http_check_auth(const http_options *o);

#endif
