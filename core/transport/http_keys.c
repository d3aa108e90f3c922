/* http_keys.c — the keys luamcp checks access tokens with: each trusted
 * issuer's JWKS, from --auth-jwks or found through the issuer's own
 * metadata (RFC 8414, else OpenID discovery) and fetched by a thread of its
 * own. Why not the engine's loop, where mcp.http runs: the loop turns only
 * under the run lock, so a refetch would wait behind every Lua handler; a
 * key fetch needs neither Lua nor the loop, and the same libcurl serves it
 * (http_client_fetch). Requests never fetch: a worker that meets an
 * unknown kid asks the fetcher and waits for it (AUTH_KEY_WAIT at most).
 *
 * Keys are kept as long as the JWKS response's Cache-Control allows
 * (clamped to [AUTH_MAX_AGE_MIN, AUTH_MAX_AGE_MAX], AUTH_MAX_AGE_DEFAULT
 * without one) and fetched again before they lapse; a failed fetch keeps
 * the keys there were (an authorization server that is down does not lock
 * everyone out) and is tried again with back-off. An issuer with no keys
 * yet gets its requests refused 503, never let in. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_internal.h"
#include "http_client.h"
#include "json.h"
#include "log.h"

#define AUTH_REFETCH_MIN 30.0       /* s between fetches an unknown kid may cause */
#define AUTH_RETRY_NO_KEYS 2.0      /* s between fetches while an issuer has no keys */
#define AUTH_KEY_WAIT 5.0           /* s a request waits for a refetch it asked for */
#define AUTH_FETCH_TIMEOUT 10.0     /* s per document */
#define AUTH_DOC_MAX (1u << 20)     /* bytes of a metadata or JWKS document */
#define AUTH_MAX_AGE_DEFAULT 3600.0
#define AUTH_MAX_AGE_MIN 60.0
#define AUTH_MAX_AGE_MAX 86400.0
#define AUTH_BACKOFF_MAX 300.0

struct auth_issuer {
  const char *issuer;  /* as configured (its string outlives the server) */
  jwk_set *keys;       /* current; NULL: none yet (under keys_lock) */
  bool from_file;      /* --auth-jwks: never fetched */
  /* under fetch_lock */
  bool wanted;         /* a request asked for a refetch */
  bool fetching;       /* the fetcher is at it */
  double next_fetch;   /* when the keys are due again (0: now) */
  double last_fetch;   /* when the last fetch began */
  double last_asked;   /* when an unknown kid last made one */
  unsigned gen;        /* fetches finished, good or bad */
  unsigned failures;   /* in a row */
  char *introspect;    /* its metadata's introspection_endpoint, or NULL */
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts); /* pthread_cond_timedwait's clock */
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct timespec at(double t) {
  struct timespec ts;
  ts.tv_sec = (time_t)t;
  ts.tv_nsec = (long)((t - floor(t)) * 1e9);
  return ts;
}

/* Is the host (n bytes, brackets gone) a loopback one: localhost, ::1 or
   127.0.0.0/8 written as four decimal numbers? */
static bool loopback_host(const char *h, size_t n) {
  if ((n == 9 && memcmp(h, "localhost", 9) == 0) || (n == 3 && memcmp(h, "::1", 3) == 0)) return true;
  int parts = 0, digits = 0, value = 0;
  bool first_127 = false;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || h[i] == '.') {
      if (!digits || value > 255) return false;
      if (parts == 0) first_127 = value == 127;
      parts++, digits = 0, value = 0;
    } else if (h[i] >= '0' && h[i] <= '9' && digits < 3) {
      value = value * 10 + (h[i] - '0'), digits++;
    } else {
      return false;
    }
  }
  return parts == 4 && first_127;
}

/* The URL parsed, not matched by prefix: https, or http to a loopback host;
   a host; no userinfo (user@host: "http://127.0.0.1@evil" names evil); a
   numeric port if any; no fragment, and no query unless allowed. */
bool http_auth_url_ok(const char *u, bool allow_query) {
  bool https = strncmp(u, "https://", 8) == 0;
  if (!https && strncmp(u, "http://", 7) != 0) return false;
  if (strchr(u, '#') || strpbrk(u, " \t\r\n\"\\") || (!allow_query && strchr(u, '?'))) return false;
  const char *auth = u + (https ? 8 : 7), *end = auth + strcspn(auth, "/?");
  if (memchr(auth, '@', (size_t)(end - auth))) return false;
  const char *host = auth, *hend, *port;
  if (*host == '[') {
    hend = memchr(host, ']', (size_t)(end - host));
    if (!hend) return false;
    host++;
    port = hend + 1;
    if (port < end && *port != ':') return false;
  } else {
    hend = memchr(host, ':', (size_t)(end - host));
    if (!hend) hend = end;
    port = hend;
  }
  if (hend == host) return false;
  if (port < end) { /* ":NNNNN" */
    long p = 0;
    const char *d = port + 1;
    if (d == end) return false;
    for (; d < end; d++) {
      if (*d < '0' || *d > '9' || (p = p * 10 + (*d - '0')) > 65535) return false;
    }
    if (p == 0) return false;
  }
  return https || loopback_host(host, (size_t)(hend - host));
}

/* {====== fetching */

/* The metadata URLs to try for issuer, in order (RFC 8414 3.1, then
   OpenID Connect Discovery 4, as the MCP specification lists them). */
static size_t metadata_urls(const char *issuer, char urls[3][1024]) {
  const char *host = strstr(issuer, "://") + 3;
  const char *slash = strchr(host, '/');
  int origin = (int)(slash ? (size_t)(slash - issuer) : strlen(issuer));
  const char *path = slash ? slash : "";
  size_t plen = strlen(path);
  while (plen && path[plen - 1] == '/') plen--;
  if (!plen) {
    snprintf(urls[0], 1024, "%.*s/.well-known/oauth-authorization-server", origin, issuer);
    snprintf(urls[1], 1024, "%.*s/.well-known/openid-configuration", origin, issuer);
    return 2;
  }
  snprintf(urls[0], 1024, "%.*s/.well-known/oauth-authorization-server%.*s", origin, issuer,
           (int)plen, path);
  snprintf(urls[1], 1024, "%.*s/.well-known/openid-configuration%.*s", origin, issuer,
           (int)plen, path);
  snprintf(urls[2], 1024, "%.*s%.*s/.well-known/openid-configuration", origin, issuer, (int)plen,
           path);
  return 3;
}

/* The issuer's jwks_uri from its metadata (malloc'd), or NULL with err;
   its introspection_endpoint in *introspect (malloc'd) when it has one. */
static char *discover(http_server *srv, const char *issuer, char **introspect, char *err,
                      size_t cap) {
  char urls[3][1024];
  size_t n = metadata_urls(issuer, urls);
  char last[256] = "";
  for (size_t i = 0; i < n; i++) {
    buf doc;
    buf_init(&doc);
    long max_age;
    char why[256];
    http_client_request get = {.url = urls[i], .timeout = AUTH_FETCH_TIMEOUT, .max = AUTH_DOC_MAX,
                           .cancel = &srv->auth.stop};
    if (!http_client_fetch(&get, &doc, &max_age, why, sizeof why)) {
      snprintf(last, sizeof last, "%.120s: %.120s", urls[i], why);
      buf_free(&doc);
      continue;
    }
    json_span d = {doc.p ? doc.p : "", doc.len}, iss, jwks;
    buf got, uri;
    buf_init(&got), buf_init(&uri);
    char *found = NULL;
    /* RFC 8414 3.3: the document must name the issuer it was asked for */
    if (!json_validate(d.p, d.n, NULL, NULL) || json_kind(d) != '{')
      snprintf(err, cap, "%.300s: not a JSON object", urls[i]);
    else if (!json_object_get(d, "issuer", &iss) || json_kind(iss) != '"' ||
             (json_string_unescape(iss, &got), !got.p) || strcmp(got.p, issuer) != 0)
      snprintf(err, cap, "%.300s names another issuer (%.150s)", urls[i], got.p ? got.p : "none");
    else if (!json_object_get(d, "jwks_uri", &jwks) || json_kind(jwks) != '"' ||
             (json_string_unescape(jwks, &uri), !uri.p) || !http_auth_url_ok(uri.p, true))
      snprintf(err, cap, "%.300s: no jwks_uri luamcp may fetch (https, or http on loopback)",
               urls[i]);
    else
      found = buf_take(&uri, NULL);
    json_span ie;
    buf ep;
    buf_init(&ep);
    if (found && json_object_get(d, "introspection_endpoint", &ie) && json_kind(ie) == '"' &&
        (json_string_unescape(ie, &ep), ep.p) && http_auth_url_ok(ep.p, true))
      *introspect = buf_take(&ep, NULL);
    buf_free(&ep);
    buf_free(&doc), buf_free(&got), buf_free(&uri);
    return found; /* a document that answers decides, good or bad */
  }
  snprintf(err, cap, "no metadata found (%s)", last);
  return NULL;
}

/* Fetch the keys of issuer i: the new set and how long it may be kept, or
   NULL with err. */
static jwk_set *fetch_keys(http_server *srv, const char *issuer, double *keep, char **introspect,
                           char *err, size_t cap) {
  char *uri = discover(srv, issuer, introspect, err, cap);
  if (!uri) return NULL;
  buf doc;
  buf_init(&doc);
  long max_age = -1;
  char why[256], perr[128];
  jwk_set *keys = NULL;
  http_client_request get = {.url = uri, .timeout = AUTH_FETCH_TIMEOUT, .max = AUTH_DOC_MAX,
                         .cancel = &srv->auth.stop};
  if (!http_client_fetch(&get, &doc, &max_age, why, sizeof why)) {
    snprintf(err, cap, "%s: %s", uri, why);
  } else if (!(keys = jwk_set_parse(doc.p ? doc.p : "", doc.len, perr, sizeof perr))) {
    snprintf(err, cap, "%s: %s", uri, perr);
  } else if (!jwk_set_count(keys)) {
    snprintf(err, cap, "%s: no key luamcp can verify with", uri);
    jwk_set_free(keys);
    keys = NULL;
  }
  *keep = max_age < 0 ? AUTH_MAX_AGE_DEFAULT : (double)max_age;
  if (*keep < AUTH_MAX_AGE_MIN) *keep = AUTH_MAX_AGE_MIN;
  if (*keep > AUTH_MAX_AGE_MAX) *keep = AUTH_MAX_AGE_MAX;
  free(uri);
  buf_free(&doc);
  return keys;
}

/* The issuer due first, or NULL (then *wake: when one will be). Under
   fetch_lock. */
static struct auth_issuer *due(http_server *srv, double t, double *wake) {
  *wake = t + AUTH_MAX_AGE_MAX;
  for (size_t i = 0; i < srv->auth.nissuers; i++) {
    struct auth_issuer *is = &srv->auth.issuers[i];
    if (is->from_file) continue;
    if (is->wanted || is->next_fetch <= t) return is;
    if (is->next_fetch < *wake) *wake = is->next_fetch;
  }
  return NULL;
}

static void *fetcher_main(void *arg) {
  http_server *srv = arg;
  pthread_mutex_lock(&srv->auth.fetch_lock);
  while (!atomic_load(&srv->auth.stop)) {
    double t = now_s(), wake;
    struct auth_issuer *is = due(srv, t, &wake);
    if (!is) {
      struct timespec ts = at(wake);
      pthread_cond_timedwait(&srv->auth.fetch_cv, &srv->auth.fetch_lock, &ts);
      continue;
    }
    is->last_fetch = t;
    is->fetching = true;
    pthread_mutex_unlock(&srv->auth.fetch_lock);
    char err[512] = "";
    double keep = 0;
    char *introspect = NULL;
    jwk_set *keys = fetch_keys(srv, is->issuer, &keep, &introspect, err, sizeof err);
    jwk_set *old = NULL;
    if (keys) {
      pthread_rwlock_wrlock(&srv->auth.keys_lock);
      old = is->keys;
      is->keys = keys;
      pthread_rwlock_unlock(&srv->auth.keys_lock);
      log_msg(old ? LOG_DEBUG : LOG_INFO, "authorization: %zu key(s) of %s, kept %.0f s",
              jwk_set_count(keys), is->issuer, keep);
    } else if (!atomic_load(&srv->auth.stop)) {
      log_msg(LOG_WARNING, "authorization: the keys of %s cannot be fetched: %s%s", is->issuer,
              err, is->keys ? " (the keys fetched before still serve)" : "");
    }
    jwk_set_free(old);
    pthread_mutex_lock(&srv->auth.fetch_lock);
    if (introspect) free(is->introspect), is->introspect = introspect;
    t = now_s();
    if (keys) {
      is->failures = 0;
      is->next_fetch = t + keep;
    } else {
      double backoff = AUTH_RETRY_NO_KEYS * pow(2, is->failures < 6 ? is->failures : 6);
      is->failures++;
      is->next_fetch = t + (backoff < AUTH_BACKOFF_MAX ? backoff : AUTH_BACKOFF_MAX);
    }
    is->wanted = is->fetching = false;
    is->gen++;
    pthread_cond_broadcast(&srv->auth.fetched_cv);
  }
  pthread_mutex_unlock(&srv->auth.fetch_lock);
  return NULL;
}

/* Room for peer's request to wait for a refetch (fetch_lock held): taken. */
static bool take_wait(http_server *srv, const char *peer) {
  if (srv->auth.key_waiters >= AUTH_KEY_WAITERS) return false;
  for (int i = 0; i < srv->auth.key_waiters; i++)
    if (strcmp(srv->auth.key_waiter[i], peer) == 0) return false;
  snprintf(srv->auth.key_waiter[srv->auth.key_waiters++], sizeof srv->auth.key_waiter[0], "%s", peer);
  return true;
}

static void give_wait(http_server *srv, const char *peer) {
  for (int i = 0; i < srv->auth.key_waiters; i++)
    if (strcmp(srv->auth.key_waiter[i], peer) == 0) {
      int last = --srv->auth.key_waiters;
      if (i != last) memcpy(srv->auth.key_waiter[i], srv->auth.key_waiter[last], sizeof srv->auth.key_waiter[0]);
      return;
    }
}

/* Ask for issuer is's keys again and wait (AUTH_KEY_WAIT at most) until
   the fetch is over. False when it is too soon after the last one asked
   (the answer stays what it was): a stream of tokens with made-up kids
   costs one fetch per AUTH_REFETCH_MIN; while there are no keys, one per
   AUTH_RETRY_NO_KEYS. False with *full when there is no room to wait. */
static bool refetch(http_server *srv, struct auth_issuer *is, bool have_keys, const char *peer,
                    bool *full) {
  *full = false;
  if (is->from_file) return false;
  pthread_mutex_lock(&srv->auth.fetch_lock);
  double t = now_s();
  bool busy = is->wanted || is->fetching || !is->last_fetch; /* its answer is coming */
  double since = have_keys ? t - is->last_asked : t - is->last_fetch;
  if (!busy && (is->last_asked > 0 || !have_keys) &&
      since < (have_keys ? AUTH_REFETCH_MIN : AUTH_RETRY_NO_KEYS)) {
    pthread_mutex_unlock(&srv->auth.fetch_lock);
    return false;
  }
  if (!take_wait(srv, peer)) {
    pthread_mutex_unlock(&srv->auth.fetch_lock);
    *full = true;
    return false;
  }
  if (have_keys && !busy) is->last_asked = t;
  unsigned gen = is->gen;
  is->wanted = true;
  pthread_cond_signal(&srv->auth.fetch_cv);
  struct timespec until = at(t + AUTH_KEY_WAIT);
  while (is->gen == gen && !atomic_load(&srv->auth.stop))
    if (pthread_cond_timedwait(&srv->auth.fetched_cv, &srv->auth.fetch_lock, &until) != 0) break;
  bool done = is->gen != gen;
  give_wait(srv, peer);
  pthread_mutex_unlock(&srv->auth.fetch_lock);
  return done;
}

/* }====== */

static jwt_status verify_now(http_server *srv, const char *tok, size_t n, long long now,
                             jwt_claims *c, struct auth_issuer **which, bool *had_keys) {
  jwt_issuer list[16];
  size_t k = srv->auth.nissuers < 16 ? srv->auth.nissuers : 16;
  pthread_rwlock_rdlock(&srv->auth.keys_lock);
  for (size_t i = 0; i < k; i++)
    list[i] = (jwt_issuer){srv->auth.issuers[i].issuer, srv->auth.issuers[i].keys};
  jwt_policy p = {list, k, srv->opt.auth_resource, now, (long long)srv->opt.auth_skew,
                  !srv->opt.auth_plain_jwt};
  jwt_status st = jwt_verify(tok, n, &p, c);
  *which = NULL;
  for (size_t i = 0; c->issuer && i < k; i++)
    if (strcmp(list[i].issuer, c->issuer) == 0) {
      *which = &srv->auth.issuers[i];
      *had_keys = list[i].keys != NULL;
    }
  pthread_rwlock_unlock(&srv->auth.keys_lock);
  return st;
}

jwt_status http_keys_verify(http_server *srv, const char *tok, size_t n, long long now,
                            const char *peer, jwt_claims *c, bool *unavailable) {
  *unavailable = false;
  struct auth_issuer *is;
  bool had_keys = false;
  jwt_status st = verify_now(srv, tok, n, now, c, &is, &had_keys);
  /* a key the issuer may have published since (rotation), or none yet */
  bool unknown = st == JWT_UNKNOWN_KID || (st == JWT_NO_KEY && !had_keys) ||
                 (!c->kid && (st == JWT_SIGNATURE || st == JWT_NO_KEY));
  bool full = false;
  if (!is || !unknown || !refetch(srv, is, had_keys, peer, &full)) {
    *unavailable = full || (is && st == JWT_NO_KEY && !had_keys);
    return st;
  }
  jwt_claims_free(c);
  st = verify_now(srv, tok, n, now, c, &is, &had_keys);
  *unavailable = is && st == JWT_NO_KEY && !had_keys;
  return st;
}

bool http_keys_init(http_server *srv, char *why, size_t cap) {
  const http_options *o = &srv->opt;
  if (o->auth_jwks && o->nauth_issuers != 1) {
    snprintf(why, cap, "--auth-jwks holds one issuer's keys: give exactly one --auth-issuer "
             "(without --auth-jwks, each issuer's keys are found from its metadata)");
    return false;
  }
  srv->auth.issuers = calloc(o->nauth_issuers, sizeof *srv->auth.issuers);
  srv->auth.nissuers = o->nauth_issuers;
  pthread_rwlock_init(&srv->auth.keys_lock, NULL);
  pthread_mutex_init(&srv->auth.fetch_lock, NULL);
  pthread_cond_init(&srv->auth.fetch_cv, NULL);
  pthread_cond_init(&srv->auth.fetched_cv, NULL);
  atomic_init(&srv->auth.stop, false);
  for (size_t i = 0; i < o->nauth_issuers; i++) srv->auth.issuers[i].issuer = o->auth_issuers[i];
  if (o->auth_jwks) {
    buf text;
    buf_init(&text);
    if (!buf_read_file(&text, o->auth_jwks)) {
      buf_free(&text);
      snprintf(why, cap, "--auth-jwks %s: cannot be read", o->auth_jwks);
      return false;
    }
    char err[128];
    jwk_set *keys = jwk_set_parse(text.p ? text.p : "", text.len, err, sizeof err);
    buf_free(&text);
    if (!keys || !jwk_set_count(keys)) {
      snprintf(why, cap, "--auth-jwks %s: %s", o->auth_jwks,
               keys ? "no key luamcp can verify with (RSA of 2048 bits or more, EC P-256 "
                      "or P-384, Ed25519; \"use\":\"sig\")"
                    : err);
      jwk_set_free(keys);
      return false;
    }
    srv->auth.issuers[0].keys = keys;
    srv->auth.issuers[0].from_file = true;
    log_msg(LOG_INFO, "authorization: tokens of %s for %s (keys: %zu, from %s)",
            o->auth_issuers[0], o->auth_resource, jwk_set_count(keys), o->auth_jwks);
    return true;
  }
  if (pthread_create(&srv->auth.fetcher, NULL, fetcher_main, srv) != 0) {
    snprintf(why, cap, "cannot start the thread that fetches the issuers' keys");
    return false;
  }
  srv->auth.fetcher_started = true;
  for (size_t i = 0; i < o->nauth_issuers; i++)
    log_msg(LOG_INFO, "authorization: tokens of %s for %s (keys: from its metadata)",
            o->auth_issuers[i], o->auth_resource);
  return true;
}

void http_keys_free(http_server *srv) {
  if (!srv->auth.issuers) return;
  if (srv->auth.fetcher_started) {
    pthread_mutex_lock(&srv->auth.fetch_lock);
    atomic_store(&srv->auth.stop, true);
    pthread_cond_broadcast(&srv->auth.fetch_cv);
    pthread_cond_broadcast(&srv->auth.fetched_cv);
    pthread_mutex_unlock(&srv->auth.fetch_lock);
    pthread_join(srv->auth.fetcher, NULL);
  }
  for (size_t i = 0; i < srv->auth.nissuers; i++) {
    jwk_set_free(srv->auth.issuers[i].keys);
    free(srv->auth.issuers[i].introspect);
  }
  free(srv->auth.issuers);
  srv->auth.issuers = NULL;
  pthread_rwlock_destroy(&srv->auth.keys_lock);
  pthread_mutex_destroy(&srv->auth.fetch_lock);
  pthread_cond_destroy(&srv->auth.fetch_cv);
  pthread_cond_destroy(&srv->auth.fetched_cv);
}

char *http_keys_introspection_endpoint(http_server *srv) {
  char *ep = NULL;
  pthread_mutex_lock(&srv->auth.fetch_lock);
  struct timespec until = at(now_s() + AUTH_KEY_WAIT);
  for (;;) {
    bool first_pending = false; /* an issuer not fetched once yet may name one */
    for (size_t i = 0; i < srv->auth.nissuers && !ep; i++) {
      const struct auth_issuer *is = &srv->auth.issuers[i];
      if (is->introspect) ep = strdup(is->introspect);
      first_pending |= !is->from_file && is->gen == 0;
    }
    if (ep || !first_pending || atomic_load(&srv->auth.stop) ||
        pthread_cond_timedwait(&srv->auth.fetched_cv, &srv->auth.fetch_lock, &until) != 0)
      break;
  }
  pthread_mutex_unlock(&srv->auth.fetch_lock);
  return ep;
}

/* luamcp check: each issuer's keys fetched once, waited for; a line each. */
bool http_keys_probe(http_server *srv, FILE *out) {
  bool ok = true;
  pthread_mutex_lock(&srv->auth.fetch_lock);
  struct timespec until = at(now_s() + 3 * AUTH_FETCH_TIMEOUT + 1);
  for (size_t i = 0; i < srv->auth.nissuers; i++) {
    struct auth_issuer *is = &srv->auth.issuers[i];
    while (!is->from_file && is->gen == 0 &&
           pthread_cond_timedwait(&srv->auth.fetched_cv, &srv->auth.fetch_lock, &until) == 0) {
    }
    pthread_rwlock_rdlock(&srv->auth.keys_lock);
    size_t n = is->keys ? jwk_set_count(is->keys) : 0;
    pthread_rwlock_unlock(&srv->auth.keys_lock);
    if (n)
      fprintf(out, "authorization: %s: %zu key(s)%s%s\n", is->issuer, n,
              is->introspect ? ", introspection at " : "", is->introspect ? is->introspect : "");
    else
      ok = false; /* the fetcher said why on stderr */
  }
  pthread_mutex_unlock(&srv->auth.fetch_lock);
  return ok;
}

bool http_keys_ready(http_server *srv, char *why, size_t cap) {
  if (!srv->auth.on) return true;
  bool ok = true;
  pthread_rwlock_rdlock(&srv->auth.keys_lock);
  for (size_t i = 0; ok && i < srv->auth.nissuers; i++)
    if (!srv->auth.issuers[i].keys || !jwk_set_count(srv->auth.issuers[i].keys)) {
      snprintf(why, cap, "authorization: no keys of %s yet", srv->auth.issuers[i].issuer);
      ok = false;
    }
  pthread_rwlock_unlock(&srv->auth.keys_lock);
  return ok;
}
