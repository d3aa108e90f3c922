/* http_internal.h — what the files of the Streamable HTTP transport share
 * on purpose (transport_http.h says what it does as a whole):
 *   http_stream.c     a response's stream: the lines the engine writes,
 *                     the replay ring, relaying it on a connection (JSON
 *                     body or SSE), the responses themselves
 *   http_admission.c  who may hold what: sessions and their ids, peers and
 *                     their limits, open streams, slow bodies, the reaper
 *   http_checks.c     the request checks: Host, Origin, framing, the token,
 *                     the client's address behind --trust-proxy
 *   http_auth.c       the OAuth resource server: its metadata, the bearer
 *                     token of every request
 *   transport_http.c  the handlers (POST, GET, DELETE) and the server
 * Nothing outside core/transport/ includes it. */
#ifndef LUAMCP_HTTP_INTERNAL_H
#define LUAMCP_HTTP_INTERNAL_H

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <netinet/in.h>

#include <civetweb.h>

#include "jwt.h"
#include "principal.h"
#include "transport_http.h"

#define SESSION_ID_LEN 32 /* hex digits of the random part */
/* NAME.<hex>: the instance's name first, so a proxy can route on it */
#define SESSION_ID_MAX (HTTP_INSTANCE_MAX + 1 + SESSION_ID_LEN)
#define REPLAY_EVENTS 64 /* events a stream keeps for Last-Event-ID */
#define RECENT_STREAMS 8 /* streams a session keeps for resumption */
#define PEER_EVICT_IDLE 60 /* a session of an address at its limit may be ended after this idle */
#define INIT_BURST_SECONDS 10 /* a peer's initialize bucket holds this many seconds of --init-rate */

/* How long an idle keep-alive connection stays open, told to the client:
   Node's fetch (undici) reuses an idle socket for the hinted time less a
   second, so it never sends on one the server is closing (without the hint
   it keeps sockets 4 s against civetweb's 0.5 s: "fetch failed" now and then). */
#define KEEP_ALIVE_S 2

typedef struct http_server http_server;

typedef struct event {
  uint64_t seq;
  char *line;
  size_t len;
} event;

typedef struct hstream {
  outlet out; /* first: the engine sees the outlet */
  http_server *srv;
  atomic_int refs;
  pthread_mutex_t lock;
  pthread_cond_t cond; /* broadcast: a resumption and the relay it replaces may both wait */
  buf pending;   /* lines written by the engine, not yet sent */
  bool finished; /* the engine will write no more */
  bool detach;   /* the engine asked to end the current response early */
  bool gone;     /* the client went away: nothing more is kept */
  bool resumable; /* a session keeps it: a GET with Last-Event-ID can find it */
  /* the reader fell behind (or went away): no relay sends it, lines go to
     the replay ring only, until a resumption takes it up */
  bool parked;
  uint64_t owner; /* the relay that sends it; a newer one (a resumption) takes over */
  uint64_t id;   /* unique in the process, so per session too */
  uint64_t seq;  /* events made so far */
  bool sse;      /* answered as an event stream: resumable (Last-Event-ID) */
  bool answered; /* the lines written hold the request's answer (outlet.answered) */
  int error_code; /* that answer's JSON-RPC error, 0 for a result (outlet.error_code) */
  bool per_request; /* of a per-request revision (2026-07-28 on): no event ids, errors map to statuses */
  /* per-request: closing the connection is its cancellation (its
     session, id, and the connection's socket once looked up) */
  session *req_s;
  char *req_id;
  size_t req_id_len;
  int fd;        /* -1: not looked up yet; -2: not found */
  size_t cap;    /* bytes: pending at most, and the ring (but its newest event) */
  size_t ring_bytes;
  event replay[REPLAY_EVENTS];
} hstream;

/* One remote address: what the per-peer limits count (srv->lock). */
typedef struct peer {
  char addr[48];
  size_t nsessions;
  size_t nstreams; /* its GET and subscriptions/listen streams open */
  double tokens, refilled; /* the initialize bucket */
  struct peer *next;       /* in its hash bucket */
} peer;

#define PEER_BUCKETS 1024

typedef struct hsession {
  char id[SESSION_ID_MAX + 1];
  session *s;
  peer *peer;
  bool acked; /* notifications/initialized came: the longer idle limit applies */
  principal *owner; /* whose token opened it (a reference; NULL without authorization) */
  double last_seen, created;
  hstream *recent[RECENT_STREAMS]; /* each holds a reference */
  size_t nrecent;
  struct hsession *next, *prev; /* every session, for the reaper */
  struct hsession *hnext;       /* the next in its hash bucket */
} hsession;

struct http_server {
  server *srv; /* where messages go */
  engine *e;
  http_options opt;
  char instance[SESSION_ID_LEN + 1]; /* opt.instance when none was given */
  struct mg_context *ctx;
  pthread_mutex_t lock; /* sessions, and every hsession's fields */
  hsession *sessions;
  size_t nsessions;
  /* sessions by id: every request looks its session up, and a list walk
     was O(sessions) strcmp per request */
  hsession **buckets;
  size_t nbuckets; /* a power of two, at least nsessions */
  peer *peers[PEER_BUCKETS];
  size_t nstreams; /* streams being relayed: GET, and POSTs that stay open (listen) */
  size_t max_streams, max_streams_per_peer;
  atomic_bool stopping;
  /* shutting down: the engine is done, workers send what they have and end */
  atomic_bool draining;
  int active; /* handlers running (guarded by idle_lock) */
  pthread_mutex_t idle_lock;
  pthread_cond_t idle;
  atomic_uint_fast64_t next_stream;
  pthread_t reaper;
  pthread_mutex_t reaper_lock;
  pthread_cond_t reaper_cond;
  pthread_mutex_t body_lock; /* body_reads */
  struct body_read *body_reads;
#define AUTH_KEY_WAITERS 4
  struct {                 /* --auth-resource (http_auth.c); on false: off */
    bool on;
    char *metadata_url;    /* where the Protected Resource Metadata is, as the challenge names it */
    char *scope_param; /* --auth-scopes space-separated: a 401's scope= ("" for none) */
    /* tokens verified, with who they name, until they expire: steady
       traffic pays one signature check per token, not per request */
    pthread_mutex_t cache_lock;
    struct auth_cached *cache; /* AUTH_CACHE_SLOTS */
    /* the trusted issuers and their keys (http_keys.c) */
    struct auth_issuer *issuers;
    size_t nissuers;
    pthread_rwlock_t keys_lock; /* each issuer's keys, swapped by the fetcher */
    pthread_mutex_t fetch_lock; /* the rest of each issuer's state */
    pthread_cond_t fetch_cv;    /* the fetcher waits on it */
    pthread_cond_t fetched_cv;  /* requests wait on it for a refetch */
    /* requests waiting for a refetch (under fetch_lock), and whose: a few,
       one per address; the rest are answered 503 at once, never holding a
       worker */
    int key_waiters;
    char key_waiter[AUTH_KEY_WAITERS][48];
    pthread_t fetcher;
    bool fetcher_started;
    atomic_bool stop;
  } auth;
};

/* A request body being read, which the reaper cuts short past its
   deadline: civetweb's mg_read waits until its buffer is full as long as a
   byte comes every --header-timeout, so a trickling peer would hold the
   worker for hours. */
typedef struct body_read {
  double deadline;
  struct sockaddr_in peer;
  int local_port;
  bool cut;
  struct body_read *next, *prev;
} body_read;

/* {====== http_stream.c */
hstream *http_stream_new(http_server *srv);
void http_stream_unref(hstream *st);
/* Relay st on conn until the engine finishes it or the client goes away.
   sse: already an event stream (GET). replay_after: resend events after
   this sequence number first (Last-Event-ID). extra: headers for the first
   response (Mcp-Session-Id). The response also ends, the stream kept, when
   it is parked (its reader fell behind) or a resumption takes it over. */
int http_relay(http_server *srv, struct mg_connection *conn, hstream *st, bool sse,
               uint64_t replay_after, const char *extra);
/* A complete response with a body (or none), in one write. */
int http_respond(struct mg_connection *conn, int status, const char *extra, const char *type,
                 const char *body, size_t n);
/* An HTTP error with a JSON-RPC error body (id null: it answers no request
   the server accepted). */
int http_respond_error(struct mg_connection *conn, int status, int code, const char *msg,
                       const char *extra);
/* An HTTP error answering request id with a JSON-RPC error (data: a JSON
   value or NULL; extra: headers or NULL). */
int http_respond_rpc_error(struct mg_connection *conn, int status, json_span id, int code,
                           const char *msg, const char *data, const char *extra);
const char *http_status_text(int status);
/* The status line and the headers every answer carries into b (extra: more
   header lines, or NULL); the caller ends the headers. */
void http_start_response(buf *b, int status, const char *extra);
/* b in one write; false (and no keep-alive) when it was cut short. */
bool http_send_all(struct mg_connection *conn, const buf *b);
/* }====== */

/* {====== http_admission.c */
/* The POST stream st was answered with one JSON body: there is nothing to
   resume, so the session need not keep it (kept, a session's memory grew
   by a stream per call up to RECENT_STREAMS). */
void http_forget_stream(http_server *srv, const char *session_id, hstream *st);
void http_session_free(hsession *hs);
session *http_lookup_session(http_server *srv, struct mg_connection *conn, int *status, bool ack,
                             const principal *who);
/* The entry of a remote address, made when missing (caller holds srv->lock). */
peer *http_peer_get(http_server *srv, const char *addr);
void http_peer_refill(const http_server *srv, peer *p, double t);
void http_random_id(char out[SESSION_ID_LEN + 1]);
/* The body into body: 0, or the status to refuse it with (413 past max,
   408 when it has not all come within --body-timeout). */
int http_read_body(http_server *srv, struct mg_connection *conn, buf *body, size_t max);
/* Ends sessions idle for longer than the limit: a client that never sends
   DELETE must not leak. */
void *http_reaper_main(void *arg);
/* Caller holds srv->lock. Keeps st (a reference is taken) for resumption. */
void http_remember_stream(hsession *hs, hstream *st);
/* Peer p is at its session limit: end its least recently used session if it
   has been idle PEER_EVICT_IDLE s (caller holds srv->lock); else false and
   *wait, the seconds until one will be. */
bool http_evict_idle(http_server *srv, peer *p, double now, double *wait);
/* A new session of peer p, owned by who (caller holds srv->lock). */
hsession *http_session_create(http_server *srv, peer *p, principal *who);
/* The session with this id, or NULL (caller holds srv->lock). */
hsession *http_session_find(http_server *srv, const char *id);
/* Is who the one whose token opened hs (the same subject and client)?
   Another's token finds no session there. */
bool http_session_owned(const hsession *hs, const principal *who);
/* Unlink hs (caller holds srv->lock), tell the engine, free it. */
void http_session_remove(http_server *srv, hsession *hs);
/* A session for one stateless request: initialized as if the client had
   negotiated the version its header names. */
session *http_stateless_session(http_server *srv, struct mg_connection *conn);
/* A stream holds its worker for as long as it is open (civetweb: a worker
   per connection), so streams share one pool below --threads, and one
   address may hold only --max-streams-per-peer of it: the workers left
   are the requests'. 0 and *held set (release with http_stream_release), or
   the status to refuse with and *why. */
int http_stream_admit(http_server *srv, struct mg_connection *conn, peer **held, const char **why,
                      bool listen);
void http_stream_release(http_server *srv, peer *p, bool listen);
/* }====== */

/* {====== http_checks.c */
/* Does an Accept header admit this media type (or a wildcard)? */
bool http_accepts(const char *accept, const char *type);
/* 0, or the status of an answer already sent (the connection then closes):
   a body framed two ways (Content-Length and Transfer-Encoding, or two
   Content-Lengths that differ) is how requests are smuggled past a proxy
   that reads it the other way; a Content-Length that is not all digits
   is read by civetweb as its leading number. */
int http_framing_check(struct mg_connection *conn);
/* DNS-rebinding and cross-site protection, before anything else: 0 when
   the request may go on, else the status to refuse it with. Bound to
   loopback, Host must name loopback (its port is not compared: ssh -L and
   container port maps change it, and the name is what rebinding cannot
   fake). Origin, when present, must be an --allow-origin exactly, or
   (bound to loopback) http(s) on a loopback host; bound elsewhere, a page
   on the visitor's own machine is as foreign as any other. */
int http_origin_check(const http_server *srv, struct mg_connection *conn);

/* CORS (docs/http.md, "CORS"). The headers every answer to this request
   carries when its Origin is a --cors one (or '*' is): into out, true;
   else false (no CORS headers at all). */
bool http_cors_headers(const http_server *srv, struct mg_connection *conn, char *out, size_t cap);
/* Those headers for the request this thread is answering (route() sets
   and clears them; http_start_response adds them), or NULL. */
void http_cors_set(const char *headers);
const char *http_cors_current(void);
/* 204 to a preflight (OPTIONS) from an allowed origin; methods: those of
   the path ("GET, POST, DELETE, OPTIONS"). */
int http_cors_preflight(struct mg_connection *conn, const char *methods);
/* The remote address the per-peer limits count: the client's behind a
   trusted proxy, else the connection's. */
void http_peer_address(const http_server *srv, const struct mg_connection *conn, char *out,
                       size_t cap);
/* Constant-time comparison: the time taken does not tell how much matched. */
bool http_token_ok(const http_server *srv, struct mg_connection *conn);
/* }====== */

/* {====== http_auth.c */
/* Load --auth-jwks and build the metadata (before listening): false with
   why when the configuration cannot work. Nothing to do without
   --auth-resource. */
bool http_auth_init(http_server *srv, char *why, size_t cap);
void http_auth_free(http_server *srv);
/* The metadata at /.well-known/oauth-protected-resource[/path]: the status
   answered, or 0 when uri is not one of its paths. */
int http_auth_route(http_server *srv, struct mg_connection *conn, const char *uri);
/* The request's credentials: 0 when it may go on (*who: its token's
   principal, a reference for the caller; NULL without --auth-resource),
   else the status of the refusal already sent (401/400 with a Bearer
   challenge). --token when no --auth-resource. */
int http_auth_check(http_server *srv, struct mg_connection *conn, principal **who);
/* }====== */

/* {====== http_keys.c */
/* The issuers' keys: from --auth-jwks, or found through each issuer's
   metadata (RFC 8414 / OpenID discovery) by a thread of their own, kept as
   long as their Cache-Control says, fetched again on an unknown kid (at
   most every AUTH_REFETCH_MIN s). False with why when they cannot be had. */
bool http_keys_init(http_server *srv, char *why, size_t cap);
void http_keys_free(http_server *srv);
/* jwt_verify with the current keys, after one refetch when the token names
   a key not (yet) known. *unavailable (503): its issuer has no keys at all,
   or the refetch it would wait for already has every waiter it may (a few,
   one per address: tokens with made-up key ids never hold the workers that
   serve the others). peer: the client's address. */
jwt_status http_keys_verify(http_server *srv, const char *tok, size_t n, long long now,
                            const char *peer, jwt_claims *c, bool *unavailable);
/* luamcp check: wait for each issuer's first fetch and print what it gave;
   false when an issuer has no keys. */
bool http_keys_probe(http_server *srv, FILE *out);
/* The introspection_endpoint an issuer's metadata named (the first that
   did; malloc'd), or NULL; waits (AUTH_KEY_WAIT at most) for the issuers'
   first fetch. */
char *http_keys_introspection_endpoint(http_server *srv);
/* }====== */

/* {====== http_introspect.c */
/* Ask the authorization server about an opaque token (RFC 7662): its
   principal when it is active, meant for this server (aud) and from a
   trusted issuer, else NULL with why; *unavailable when the server could
   not be asked (503), or when as many are being asked already, in all or
   for this peer (client address): a flood of made-up tokens holds a few
   workers at most. A token refused is refused again for a while without
   asking. */
principal *http_introspect(http_server *srv, const char *tok, size_t n, long long now,
                           const char *peer, const char **why, bool *unavailable);
/* An absolute URL luamcp may name or fetch: https, or http on a loopback
   host; no fragment (nor query, unless allowed). */
bool http_auth_url_ok(const char *u, bool allow_query);
/* Is the MCP listener bound to a loopback address (only this machine's
   processes reach it)? */
bool http_bound_to_loopback(const http_server *srv);
/* Has every trusted issuer keys now (any thread; true without
   authorization)? False with why. */
bool http_keys_ready(http_server *srv, char *why, size_t cap);
/* }====== */

/* {====== http_auth.c, continued */
/* Is the answer json (n bytes) the server's refusal for a missing scope?
   Then the WWW-Authenticate line of a 403 (insufficient_scope, the scopes
   to ask for) in hdr. */
bool http_auth_scope_challenge(http_server *srv, const char *json, size_t n, char *hdr, size_t cap);
/* }====== */

#endif
