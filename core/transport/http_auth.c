/* http_auth.c — luamcp as an OAuth 2.1 resource server (the specification's
 * basic/authorization): its Protected Resource Metadata (RFC 9728), and the
 * bearer token every /mcp request must carry, verified on the worker before
 * the request reaches the engine. A refusal is 401 with the challenge that
 * lets a client find the authorization server; the token itself is never
 * logged nor echoed. The keys are http_keys.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "http_internal.h"
#include "access_log.h"
#include "json.h"
#include "jsonrpc.h"
#include "log.h"
#include "metrics.h"

#define AUTH_HEADER_MAX 16384  /* larger than any real token; a refusal past it */
#define AUTH_CACHE_SLOTS 8192   /* a power of two; a full table overwrites */
#define AUTH_CACHE_PROBE 8

struct auth_cached {
  char *token;      /* the whole token: found by its tail, taken only when equal */
  size_t len;
  long long until;  /* exp + skew; 0: empty */
  principal *who;   /* who it names (a reference) */
};
#define WELL_KNOWN "/.well-known/oauth-protected-resource"

/* The path of a URL ("" for none): where RFC 9728 3.1 puts the metadata. */
static const char *url_path(const char *u) {
  const char *p = strchr(strstr(u, "://") + 3, '/');
  return p && strcmp(p, "/") != 0 ? p : "";
}

/* Append each scope of list (comma- or space-separated) not in seen yet. */
static void add_scopes(buf *b, buf *seen, const char *list) {
  for (const char *s = list; s && *s;) {
    size_t n = strcspn(s, " ,");
    bool dup = false;
    for (const char *t = seen->p; n && t && t < seen->p + seen->len && !dup;) {
      size_t m = strcspn(t, " ");
      dup = m == n && memcmp(t, s, n) == 0;
      t += m + 1;
    }
    if (n && !dup) {
      if (seen->len) buf_putc(b, ',');
      json_encode_string(b, s, n);
      buf_put(seen, s, n);
      buf_putc(seen, ' ');
    }
    s += n + (s[n] != 0);
  }
}

/* The metadata document: what a client reads after a 401 to find where to
   get a token and which scopes to ask for (those configured and those the
   app's items declare, as the version serving now has them). */
static void build_metadata(http_server *srv, buf *b) {
  const http_options *o = &srv->opt;
  buf app_scopes, name, seen;
  buf_init(&app_scopes), buf_init(&name), buf_init(&seen);
  server_app_facts(srv->srv, &app_scopes, &name);
  buf_puts(b, "{\"resource\":");
  json_encode_string(b, o->auth_resource, strlen(o->auth_resource));
  buf_puts(b, ",\"authorization_servers\":[");
  for (size_t i = 0; i < o->nauth_issuers; i++) {
    if (i) buf_putc(b, ',');
    json_encode_string(b, o->auth_issuers[i], strlen(o->auth_issuers[i]));
  }
  buf_puts(b, "]");
  if ((o->auth_scopes && *o->auth_scopes) || app_scopes.len) {
    buf_puts(b, ",\"scopes_supported\":[");
    add_scopes(b, &seen, o->auth_scopes);
    add_scopes(b, &seen, app_scopes.p);
    buf_puts(b, "]");
  }
  buf_puts(b, ",\"bearer_methods_supported\":[\"header\"]");
  if (name.len) {
    buf_puts(b, ",\"resource_name\":");
    json_encode_string(b, name.p, name.len);
  }
  buf_putc(b, '}');
  buf_free(&app_scopes), buf_free(&name), buf_free(&seen);
}

/* RFC 9728 3.1: the well-known path, then the resource's own path */
static void build_metadata_url(http_server *srv) {
  buf b;
  buf_init(&b);
  const char *r = srv->opt.auth_resource, *slash = strchr(strstr(r, "://") + 3, '/');
  int origin = (int)(slash ? (size_t)(slash - r) : strlen(r));
  buf_printf(&b, "%.*s%s%s", origin, r, WELL_KNOWN, url_path(r));
  srv->auth.metadata_url = buf_take(&b, NULL);
}

/* An Origin as a browser sends it: http or https, a host (a name, an IPv4
   address or [IPv6]), an optional port, nothing else (no path, no user@). */
static bool origin_ok(const char *o) {
  const char *r = strncmp(o, "https://", 8) == 0 ? o + 8 : strncmp(o, "http://", 7) == 0 ? o + 7 : NULL;
  if (!r || strlen(o) > 200) return false;
  size_t h;
  if (*r == '[') {
    h = strspn(r + 1, "0123456789abcdefABCDEF:.");
    if (!h || r[1 + h] != ']') return false;
    h += 2;
  } else {
    h = strspn(r, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.");
    if (!h || r[0] == '.' || r[0] == '-' || r[h - 1] == '.') return false;
  }
  r += h;
  if (*r == ':') {
    size_t d = strspn(r + 1, "0123456789");
    if (!d || d > 5 || atoi(r + 1) < 1 || atoi(r + 1) > 65535) return false;
    r += 1 + d;
  }
  return *r == '\0';
}

bool transport_http_check(const http_options *o, char *why, size_t cap) {
  for (size_t i = 0; i < o->ncors_origins; i++)
    if (!origin_ok(o->cors_origins[i])) {
      snprintf(why, cap, "--cors %s: an origin is scheme://host[:port] (http or https, no path, "
               "no trailing /), e.g. https://app.example.com or http://localhost:6274", o->cors_origins[i]);
      return false;
    }
  if (o->cors_any && (o->token || o->auth_resource)) {
    snprintf(why, cap, "--cors '*' lets every web page call this server: not with --token or "
             "--auth-resource; name the origins instead");
    return false;
  }
  if (!o->auth_resource) return true;
  if (!http_auth_url_ok(o->auth_resource, false)) {
    snprintf(why, cap, "--auth-resource %s: an absolute https URL (http only to a loopback host; no user@), "
             "no query, no fragment", o->auth_resource);
    return false;
  }
  if (!o->nauth_issuers) {
    snprintf(why, cap, "--auth-resource needs --auth-issuer, the authorization server that "
             "issues its tokens");
    return false;
  }
  for (size_t i = 0; i < o->nauth_issuers; i++)
    if (!http_auth_url_ok(o->auth_issuers[i], false)) {
      snprintf(why, cap, "--auth-issuer %s: an absolute https URL (http only to a loopback host; no user@)",
               o->auth_issuers[i]);
      return false;
    }
  if (o->token) {
    snprintf(why, cap, "--token (or LUAMCP_TOKEN) and --auth-resource exclude each other: "
             "one kind of token per server");
    return false;
  }
  if (o->auth_introspect && !http_auth_url_ok(o->auth_introspect, true)) {
    snprintf(why, cap, "--auth-introspect %s: an absolute https URL (http only to a loopback host; no user@)",
             o->auth_introspect);
    return false;
  }
  if (o->auth_client_id && !o->auth_introspect && o->auth_jwks) {
    snprintf(why, cap, "introspection with --auth-jwks needs --auth-introspect URL (nothing is "
             "fetched from the issuer's metadata)");
    return false;
  }
  return true;
}

/* A scope token a header may carry (RFC 6749 3.3: printable ASCII, no
   space, quote or backslash). */
static bool scope_token(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x21 || s[i] == '"' || s[i] == '\\' || (unsigned char)s[i] > 0x7E) return false;
  return n > 0;
}

bool http_auth_init(http_server *srv, char *why, size_t cap) {
  if (!srv->opt.auth_resource) return true;
  if (!transport_http_check(&srv->opt, why, cap)) return false;
  if (!http_keys_init(srv, why, cap)) return false;
  srv->auth.on = true;
  srv->auth.cache = calloc(AUTH_CACHE_SLOTS, sizeof *srv->auth.cache);
  pthread_mutex_init(&srv->auth.cache_lock, NULL);
  build_metadata_url(srv);
  /* a 401 names the scopes to ask for first (--auth-scopes); an item's own
     come by step-up, with the 403 that names them */
  buf sc;
  buf_init(&sc);
  for (const char *s = srv->opt.auth_scopes; s && *s;) {
    size_t n = strcspn(s, " ,");
    if (scope_token(s, n)) {
      if (sc.len) buf_putc(&sc, ' ');
      buf_put(&sc, s, n);
    }
    s += n + (s[n] != 0);
  }
  buf_putc(&sc, '\0');
  srv->auth.scope_param = buf_take(&sc, NULL);
  return true;
}

void http_auth_free(http_server *srv) {
  if (srv->auth.cache) {
    pthread_mutex_destroy(&srv->auth.cache_lock);
    for (size_t i = 0; i < AUTH_CACHE_SLOTS; i++) {
      free(srv->auth.cache[i].token);
      principal_unref(srv->auth.cache[i].who);
    }
  }
  free(srv->auth.cache);
  http_keys_free(srv);
  free(srv->auth.metadata_url);
  free(srv->auth.scope_param);
  memset(&srv->auth, 0, sizeof srv->auth);
}

/* GET the metadata: at the well-known path, its form with the resource's
   path (RFC 9728 3.1), and with /mcp (what clients try first when the
   resource is this server's endpoint). Not ours: 0. */
int http_auth_route(http_server *srv, struct mg_connection *conn, const char *uri) {
  if (!srv->auth.on || strncmp(uri, WELL_KNOWN, sizeof WELL_KNOWN - 1) != 0) return 0;
  const char *rest = uri + sizeof WELL_KNOWN - 1;
  if (*rest && strcmp(rest, "/mcp") != 0 && strcmp(rest, url_path(srv->opt.auth_resource)) != 0)
    return 0;
  const char *m = mg_get_request_info(conn)->request_method;
  if (strcmp(m, "OPTIONS") == 0 && http_cors_current()) return http_cors_preflight(conn, "GET, HEAD, OPTIONS");
  if (strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0)
    return http_respond_error(conn, 405, JSONRPC_INVALID_REQUEST, "Method not allowed", "Allow: GET\r\n");
  /* public and the same for everyone: any origin may read it */
  buf doc;
  buf_init(&doc);
  build_metadata(srv, &doc);
  /* an allowed --cors origin already has its own (http_cors_headers) */
  int status = http_respond(conn, 200, http_cors_current() ? NULL : "Access-Control-Allow-Origin: *\r\n", "application/json",
                            doc.p, doc.len);
  buf_free(&doc);
  return status;
}

static int challenge(http_server *srv, struct mg_connection *conn, int status, const char *error,
                     const char *description) {
  char extra[2048], msg[160], scope[1024] = "";
  const char *sp = srv->auth.scope_param;
  if (status == 401 && sp && *sp && strlen(sp) + 12 < sizeof scope) snprintf(scope, sizeof scope, ", scope=\"%s\"", sp);
  if (error)
    snprintf(extra, sizeof extra,
             "WWW-Authenticate: Bearer resource_metadata=\"%s\"%s, error=\"%s\", "
             "error_description=\"%s\"\r\n",
             srv->auth.metadata_url, scope, error, description);
  else
    snprintf(extra, sizeof extra, "WWW-Authenticate: Bearer resource_metadata=\"%s\"%s\r\n",
             srv->auth.metadata_url, scope);
  snprintf(msg, sizeof msg, "%s%s%s", status == 401 ? "Unauthorized" : "Bad Request",
           description ? ": " : "", description ? description : "");
  return http_respond_error(conn, status, JSONRPC_INVALID_REQUEST, msg, extra);
}

/* Does the query string carry a token (RFC 6750 2.3)? It must not: URLs
   end up in logs and histories. */
static bool token_in_query(const char *q) {
  for (const char *p = q; p && (p = strstr(p, "access_token=")); p++)
    if (p == q || p[-1] == '&') return true;
  return false;
}

/* Was this token verified and is it still within its exp? Then who it
   names (a reference). Else, when add is given, remember it as verified
   until its exp and skew, and NULL. The slot comes from
   the token's last bytes (its signature's: random for a real token; a
   crafted one only crowds its own slots), and a hit is the whole token
   equal, so no collision lets a token in: hashing it with SHA-256 instead
   cost as much as the rest of the request (callgrind). */
static principal *cache_hit(http_server *srv, const char *tok, size_t n, long long now,
                            principal *add) {
  uint64_t at = 0;
  memcpy(&at, tok + (n >= sizeof at ? n - sizeof at : 0), n >= sizeof at ? sizeof at : n);
  at *= 0x9e3779b97f4a7c15ull;  /* spread base64's 6 bits per byte */
  at >>= 20;
  principal *hit = NULL, *dropped = NULL;
  pthread_mutex_lock(&srv->auth.cache_lock);
  struct auth_cached *free_slot = NULL;
  for (size_t i = 0; i < AUTH_CACHE_PROBE && !hit; i++) {
    struct auth_cached *e = &srv->auth.cache[(at + i) & (AUTH_CACHE_SLOTS - 1)];
    bool live = e->until > now;
    if (live && e->len == n && memcmp(e->token, tok, n) == 0) hit = principal_ref(e->who);
    else if (!live && !free_slot) free_slot = e;
  }
  if (!hit && add) {
    struct auth_cached *e = free_slot ? free_slot : &srv->auth.cache[at & (AUTH_CACHE_SLOTS - 1)];
    char *copy = malloc(n);
    if (copy) {
      memcpy(copy, tok, n);
      free(e->token);
      dropped = e->who;
      *e = (struct auth_cached){copy, n, add->exp + (long long)srv->opt.auth_skew,
                                principal_ref(add)};
    }
  }
  pthread_mutex_unlock(&srv->auth.cache_lock);
  principal_unref(dropped); /* its last reference may be here: freed outside the lock */
  return hit;
}

/* --dev without --auth-resource: the page may call as a made-up caller
   (Mcp-Dev-As: SUBJECT [SCOPE...]) to try scope logic. The listing it
   narrows (with no identity, scopes do not apply), but the caller is what a
   script's own ctx.auth checks see: it can widen those. So it is honoured
   only on a server bound to loopback, which only this machine's processes
   reach; with authorization on, only a verified token names the caller. */
static principal *dev_identity(http_server *srv, struct mg_connection *conn) {
  const char *h = srv->opt.dev && http_bound_to_loopback(srv) ? mg_get_header(conn, "Mcp-Dev-As") : NULL;
  if (!h) return NULL;
  while (*h == ' ') h++;
  size_t n = strcspn(h, " ");
  if (!n || n > 256) return NULL;
  char subject[257];
  memcpy(subject, h, n);
  subject[n] = '\0';
  const char *scopes = h + n;
  while (*scopes == ' ') scopes++;
  return principal_made_up(strcmp(subject, "-") == 0 ? NULL : subject, scopes);
}

/* Three dot-separated parts: a JWT (anything else is opaque). */
static bool jwt_shaped(const char *tok, size_t n) {
  size_t dots = 0;
  for (size_t i = 0; i < n; i++) dots += tok[i] == '.';
  return dots == 2;
}

/* mcp_server_auth_refusals_total{reason} (a fixed word, never the client's),
   and a line of the access log (the request never reaches the engine,
   which writes the others) */
static void count_refusal(http_server *srv, struct mg_connection *conn, int status, const char *reason) {
  if (metrics_on) metric_add(metric_at(M_AUTH_REFUSALS, (const char *const[]){reason}), 1);
  if (!access_log_on()) return;
  char peer[48];
  http_peer_address(srv, conn, peer, sizeof peer);
  access_log_write_now(&(access_entry){.instance = srv->opt.instance, .peer = peer,
                                       .outcome = "refused", .status = status, .refused = reason});
}

static int auth_refused(http_server *srv, struct mg_connection *conn, const char *why,
                   const char *reason) {
  count_refusal(srv, conn, 401, reason);
  char peer[48];
  http_peer_address(srv, conn, peer, sizeof peer);
  /* per request: debug, or a client sending bad tokens floods the log (the
     refusals are counted in mcp_server_auth_refusals_total) */
  log_msg(LOG_DEBUG, "http: %s: token refused: %s", peer, why);
  return challenge(srv, conn, 401, "invalid_token", why);
}

int http_auth_check(http_server *srv, struct mg_connection *conn, principal **who) {
  *who = NULL;
  if (!srv->auth.on) {
    if (!http_token_ok(srv, conn)) {
      count_refusal(srv, conn, 401, mg_get_header(conn, "Authorization") ? "wrong_token" : "no_token");
      return http_respond_error(conn, 401, JSONRPC_INVALID_REQUEST, "Unauthorized",
                                "WWW-Authenticate: Bearer realm=\"luamcp\"\r\n");
    }
    *who = dev_identity(srv, conn);
    return 0;
  }
  if (token_in_query(mg_get_request_info(conn)->query_string)) {
    count_refusal(srv, conn, 400, "token_in_url");
    return challenge(srv, conn, 400, "invalid_request",
                     "a token goes in the Authorization header, never in the URL");
  }
  const char *h = mg_get_header(conn, "Authorization");
  if (!h) {
    count_refusal(srv, conn, 401, "no_token");
    return challenge(srv, conn, 401, NULL, NULL);
  }
  if (strncasecmp(h, "Bearer ", 7) != 0) {
    count_refusal(srv, conn, 401, "not_bearer");
    return challenge(srv, conn, 401, "invalid_request", "the Authorization header is not Bearer");
  }
  const char *tok = h + 7;
  while (*tok == ' ') tok++;
  size_t n = strlen(tok);
  while (n && tok[n - 1] == ' ') n--;
  if (n > AUTH_HEADER_MAX) {
    count_refusal(srv, conn, 401, "too_large");
    return challenge(srv, conn, 401, "invalid_token", "the token is too large");
  }
  long long now = (long long)time(NULL);
  if ((*who = cache_hit(srv, tok, n, now, NULL))) return 0;
  bool unavailable;
  if (srv->opt.auth_client_id && !jwt_shaped(tok, n)) { /* opaque: the issuer knows */
    const char *why = NULL;
    char peer[48];
    http_peer_address(srv, conn, peer, sizeof peer);
    *who = http_introspect(srv, tok, n, now, peer, &why, &unavailable);
    if (*who) {
      cache_hit(srv, tok, n, now, *who);
      return 0;
    }
    if (unavailable) {
      count_refusal(srv, conn, 503, "unavailable");
      return http_respond_error(conn, 503, JSONRPC_INTERNAL_ERROR,
                                "Service Unavailable: the token cannot be checked now",
                                "Retry-After: 5\r\n");
    }
    return auth_refused(srv, conn, why, "introspection");
  }
  jwt_claims c;
  char peer[48];
  http_peer_address(srv, conn, peer, sizeof peer);
  jwt_status st = http_keys_verify(srv, tok, n, now, peer, &c, &unavailable);
  if (unavailable) { /* never an open door: the client tries again */
    count_refusal(srv, conn, 503, "unavailable");
    jwt_claims_free(&c);
    return http_respond_error(conn, 503, JSONRPC_INTERNAL_ERROR,
                              "Service Unavailable: the keys that signed the token are being "
                              "fetched: try again shortly", "Retry-After: 1\r\n");
  }
  if (st == JWT_OK) {
    *who = principal_from_claims(&c);
    jwt_claims_free(&c);
    if (!*who)
      return http_respond_error(conn, 503, JSONRPC_INTERNAL_ERROR, "Out of memory",
                                "Retry-After: 1\r\n");
    cache_hit(srv, tok, n, now, *who);
    return 0;
  }
  jwt_claims_free(&c);
  return auth_refused(srv, conn, jwt_status_text(st), jwt_status_name(st));
}

bool http_auth_scope_challenge(http_server *srv, const char *json, size_t n, char *hdr, size_t cap) {
  json_span msg = {json, n}, err, code, data, scope;
  if (!srv->auth.on || !json_object_get(msg, "error", &err) ||
      !json_object_get(err, "code", &code) || code.n != 6 ||
      strncmp(code.p, SERVER_INSUFFICIENT_SCOPE_TEXT, 6) != 0 ||
      !json_object_get(err, "data", &data) || !json_object_get(data, "scope", &scope) ||
      json_kind(scope) != '"')
    return false;
  buf all, want;
  buf_init(&all), buf_init(&want);
  json_string_unescape(scope, &all);
  /* the scope tokens a header may carry (RFC 6749 3.3: no space, quote or
     backslash); a granted one that is not (an authorization server's odd
     scope) is left out, and the 403 a client can step up from stays */
  for (const char *s = all.p; s && *s;) {
    size_t k = strcspn(s, " ");
    if (scope_token(s, k)) {
      if (want.len) buf_putc(&want, ' ');
      buf_put(&want, s, k);
    }
    s += k + (s[k] != 0);
  }
  buf_putc(&want, '\0');
  /* too long for hdr: the JSON-RPC error alone (200) */
  bool ok = (size_t)snprintf(hdr, cap,
                             "WWW-Authenticate: Bearer error=\"insufficient_scope\", scope=\"%s\", "
                             "resource_metadata=\"%s\", error_description=\"a wider scope is needed\"\r\n",
                             want.p, srv->auth.metadata_url) < cap;
  buf_free(&all), buf_free(&want);
  return ok;
}
