/* http_introspect.c — opaque access tokens: luamcp cannot read them, so it
 * asks the authorization server (RFC 7662 token introspection) with its own
 * client credentials, on the worker that holds the request (never the
 * engine's loop). What the answer says is checked as a JWT's claims are:
 * active, meant for this server (aud names --auth-resource: the
 * specification's audience rule holds for opaque tokens too; an answer
 * without aud is refused), from a trusted issuer, not expired, naming
 * someone (sub, else the client: client_id). A token let in is cached like
 * a verified JWT, until its exp. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "http_internal.h"
#include "clock.h"
#include "http_client.h"
#include "json.h"
#include "log.h"

#define INTROSPECT_TIMEOUT 5.0  /* s: a request waits for the answer */
#define INTROSPECT_MAX 65536    /* bytes of an answer */
/* A flood of made-up tokens (each one a POST with our client secret,
   holding a worker up to INTROSPECT_TIMEOUT) holds this many workers at
   most, and one address this many; the rest are answered 503 at once. A
   token refused is refused again for REFUSED_TTL without asking. */
#define INTROSPECT_AT_ONCE 8
#define INTROSPECT_PER_PEER 2
#define REFUSED_SLOTS 1024
#define REFUSED_TTL 10.0

static struct {
  pthread_mutex_t lock;
  uint64_t seed; /* of the tokens' hash: a client cannot aim at a slot */
  struct { uint64_t h; double until; } refused[REFUSED_SLOTS];
  int at_once;
  struct { char peer[48]; int n; } peers[INTROSPECT_AT_ONCE];
} flood = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t token_hash(const char *tok, size_t n) {
  if (!flood.seed) {
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s || !s) s = (uint64_t)(uintptr_t)&flood ^ 0x9e3779b97f4a7c15u;
    flood.seed = s | 1;
  }
  uint64_t h = 1469598103934665603u ^ flood.seed;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)tok[i]) * 1099511628211u;
  return h ? h : 1;
}

/* Room for one more introspection of peer's (flood.lock held): taken. */
static bool take_room(const char *peer) {
  if (flood.at_once >= INTROSPECT_AT_ONCE) return false;
  int free_slot = -1;
  for (int i = 0; i < INTROSPECT_AT_ONCE; i++) {
    if (flood.peers[i].n && strcmp(flood.peers[i].peer, peer) == 0) {
      if (flood.peers[i].n >= INTROSPECT_PER_PEER) return false;
      flood.peers[i].n++;
      flood.at_once++;
      return true;
    }
    if (!flood.peers[i].n && free_slot < 0) free_slot = i;
  }
  /* fewer than INTROSPECT_AT_ONCE in flight: a slot is free */
  snprintf(flood.peers[free_slot].peer, sizeof flood.peers[free_slot].peer, "%s", peer);
  flood.peers[free_slot].n = 1;
  flood.at_once++;
  return true;
}

static void give_room(const char *peer) {
  for (int i = 0; i < INTROSPECT_AT_ONCE; i++)
    if (flood.peers[i].n && strcmp(flood.peers[i].peer, peer) == 0) {
      flood.peers[i].n--;
      break;
    }
  flood.at_once--;
}

/* RFC 3986 unreserved characters as they are, the rest %XX: a form value. */
static void form_value(buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        c == '-' || c == '.' || c == '_' || c == '~') {
      buf_putc(b, (char)c);
    } else {
      buf_putc(b, '%');
      buf_putc(b, hex[c >> 4]);
      buf_putc(b, hex[c & 15]);
    }
  }
}

/* A string member of obj (malloc'd), or NULL. */
static char *introspect_member(json_span obj, const char *key) {
  json_span v;
  buf b;
  if (!json_object_get(obj, key, &v) || json_kind(v) != '"') return NULL;
  buf_init(&b);
  json_string_unescape(v, &b);
  if (!b.p || strlen(b.p) != b.len) { /* a NUL inside: not a value we compare */
    buf_free(&b);
    return NULL;
  }
  return buf_take(&b, NULL);
}

/* Does aud (a string or an array of strings) name resource? */
static bool names_resource(json_span aud, const char *resource) {
  if (json_kind(aud) == '"') return json_string_eq(aud, resource);
  if (json_kind(aud) != '[') return false;
  size_t pos = 0;
  json_span item;
  while (json_array_next(aud, &pos, &item))
    if (json_kind(item) == '"' && json_string_eq(item, resource)) return true;
  return false;
}

static bool trusted(const http_server *srv, const char *iss) {
  for (size_t i = 0; i < srv->opt.nauth_issuers; i++)
    if (strcmp(srv->opt.auth_issuers[i], iss) == 0) return true;
  return false;
}

/* The answer's claims as a principal, or NULL with why. */
static principal *judge(http_server *srv, json_span doc, long long now, const char **why) {
  json_span active, aud;
  if (!json_object_get(doc, "active", &active) || active.n != 4 || memcmp(active.p, "true", 4) != 0) {
    *why = "the token is not active";
    return NULL;
  }
  if (!json_object_get(doc, "aud", &aud) || !names_resource(aud, srv->opt.auth_resource)) {
    *why = "the token is not meant for this server (aud)";
    return NULL;
  }
  /* read as a JWT's dates are (jwt_numeric_date: at most 15 digits, so a
     huge one is malformed, never an overflow) */
  long long skew = (long long)srv->opt.auth_skew, e = 0, nb = 0;
  int has_exp = jwt_numeric_date(doc, "exp", &e), has_nbf = jwt_numeric_date(doc, "nbf", &nb);
  if (has_exp < 0 || (has_exp && e <= 0) || has_nbf < 0) {
    *why = has_nbf < 0 ? "the introspection answer is malformed (nbf)"
                       : "the introspection answer is malformed (exp)";
    return NULL;
  }
  if (has_exp && e + skew <= now) {
    *why = "the token has expired";
    return NULL;
  }
  if (has_nbf && nb - skew > now) {
    *why = "the token is not valid yet";
    return NULL;
  }
  jwt_claims c = {0};
  c.issuer = introspect_member(doc, "iss");
  if (c.issuer && !trusted(srv, c.issuer)) {
    free(c.issuer);
    *why = "the token's issuer is not trusted";
    return NULL;
  }
  /* without iss: the issuer whose server answered (the first) */
  if (!c.issuer && !(c.issuer = strdup(srv->opt.auth_issuers[0]))) {
    *why = "out of memory";
    return NULL;
  }
  c.client_id = introspect_member(doc, "client_id");
  /* the caller must have a stable identity: sub; without sub (a client
     credentials token: oidc-provider writes none) the client itself, as
     RFC 9068 2.2 names such a token's subject; with neither, no one */
  json_span sub;
  bool is_client = !json_object_get(doc, "sub", &sub);
  c.subject = is_client ? (c.client_id ? strdup(c.client_id) : NULL) : introspect_member(doc, "sub");
  if (!c.subject || !c.subject[0]) {
    *why = !is_client ? "the introspection answer is malformed (sub)"
           : c.client_id && c.client_id[0] ? "out of memory"
           : "the token names no subject and no client (sub, client_id)";
    jwt_claims_free(&c);
    return NULL;
  }
  c.scope = introspect_member(doc, "scope");
  /* no exp: kept a minute, then asked again */
  c.exp = e ? e : now + 60;
  c.payload = strndup(doc.p, doc.n);
  c.payload_len = doc.n;
  principal *p = principal_from_claims(&c);
  jwt_claims_free(&c);
  if (p) p->subject_is_client = is_client;
  else *why = "out of memory";
  return p;
}

static principal *introspect_now(http_server *srv, const char *tok, size_t n, long long now,
                                 const char **why, bool *unavailable);

principal *http_introspect(http_server *srv, const char *tok, size_t n, long long now,
                           const char *peer, const char **why, bool *unavailable) {
  *unavailable = false;
  uint64_t h = 0;
  pthread_mutex_lock(&flood.lock);
  h = token_hash(tok, n);
  double t = clock_now();
  size_t slot = (size_t)(h % REFUSED_SLOTS);
  bool refused_lately = flood.refused[slot].h == h && flood.refused[slot].until > t;
  bool room = !refused_lately && take_room(peer);
  pthread_mutex_unlock(&flood.lock);
  if (refused_lately) {
    *why = "the token is not active";
    return NULL;
  }
  if (!room) {
    *unavailable = true;
    *why = "too many tokens are being checked now";
    return NULL;
  }
  principal *p = introspect_now(srv, tok, n, now, why, unavailable);
  pthread_mutex_lock(&flood.lock);
  give_room(peer);
  if (!p && !*unavailable) flood.refused[slot].h = h, flood.refused[slot].until = clock_now() + REFUSED_TTL;
  pthread_mutex_unlock(&flood.lock);
  return p;
}

static principal *introspect_now(http_server *srv, const char *tok, size_t n, long long now,
                                 const char **why, bool *unavailable) {
  char *found = NULL;
  const char *endpoint = srv->opt.auth_introspect;
  if (!endpoint) endpoint = found = http_keys_introspection_endpoint(srv);
  if (!endpoint) {
    *unavailable = true;
    *why = "the authorization server's introspection endpoint is not known yet";
    return NULL;
  }
  buf form, body;
  buf_init(&form), buf_init(&body);
  buf_puts(&form, "token=");
  form_value(&form, tok, n);
  buf_puts(&form, "&token_type_hint=access_token");
  /* RFC 6749 2.3.1: the credentials form-encoded, then Basic */
  buf id, secret;
  buf_init(&id), buf_init(&secret);
  form_value(&id, srv->opt.auth_client_id, strlen(srv->opt.auth_client_id));
  form_value(&secret, srv->opt.auth_client_secret, strlen(srv->opt.auth_client_secret));
  http_client_request r = {.url = endpoint, .timeout = INTROSPECT_TIMEOUT, .max = INTROSPECT_MAX,
                       .cancel = &srv->auth.stop, .form = form.p, .user = id.p, .password = secret.p};
  long max_age;
  char err[256];
  principal *p = NULL;
  if (!http_client_fetch(&r, &body, &max_age, err, sizeof err)) {
    log_msg(LOG_WARNING, "authorization: introspection at %s failed: %s", endpoint, err);
    *unavailable = true;
    *why = "the authorization server could not be asked about the token";
  } else {
    json_span doc = {body.p ? body.p : "", body.len};
    if (!json_validate(doc.p, doc.n, NULL, NULL) || json_kind(doc) != '{')
      *why = "the introspection answer is not a JSON object";
    else
      p = judge(srv, doc, now, why);
  }
  /* the form held the token, secret the secret: neither outlives this */
  memset(form.p, 0, form.len);
  if (secret.p) memset(secret.p, 0, secret.len);
  buf_free(&form), buf_free(&body), buf_free(&id), buf_free(&secret);
  free(found);
  return p;
}
