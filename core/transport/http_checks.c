/* http_checks.c — the checks a request passes before anything else
 * (http_internal.h): Host and Origin against DNS rebinding, the framing
 * (Content-Length with Transfer-Encoding is 400: civetweb would read the
 * body as chunked and take the rest as a second request), the bearer
 * token, and the client's address behind a trusted reverse proxy. */
#include "http_internal.h"

#include <ctype.h>
#include <arpa/inet.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsonrpc.h"
#include "log.h"

/* {====================================================== checks */

/* host[:port] exactly (n bytes): a bracketed IPv6 literal or a name of
   letters, digits, '-', '.', '_' and '~' (no userinfo, no path), and a port
   of 1-65535 if any. The host part goes to *h, *hn. */
static bool parse_authority(const char *p, size_t n, const char **h, size_t *hn) {
  size_t i = 0;
  if (n && p[0] == '[') {
    const char *close = memchr(p, ']', n);
    if (!close || close == p + 1) return false;
    for (i = 1; p + i < close; i++)
      if (!isxdigit((unsigned char)p[i]) && p[i] != ':' && p[i] != '.') return false;
    i++;
  } else {
    while (i < n && (isalnum((unsigned char)p[i]) || strchr("-._~", p[i]) != NULL)) i++;
  }
  if (i == 0) return false;
  *h = p, *hn = i;
  if (i == n) return true;
  if (p[i] != ':' || n - i - 1 < 1 || n - i - 1 > 5) return false;
  unsigned port = 0;
  for (i++; i < n; i++) {
    if (!isdigit((unsigned char)p[i])) return false;
    port = port * 10 + (unsigned)(p[i] - '0');
  }
  return port >= 1 && port <= 65535;
}

static bool same_name(const char *h, size_t n, const char *name) {
  return strlen(name) == n && strncasecmp(h, name, n) == 0;
}

bool http_bound_to_loopback(const http_server *srv) {
  const char *h = srv->opt.host;
  return strcmp(h, "127.0.0.1") == 0 || strcmp(h, "localhost") == 0 ||
         strncmp(h, "127.", 4) == 0;
}

/* A loopback name, or the address the server is bound to. */
static bool loopback_host(const http_server *srv, const char *h, size_t n) {
  return same_name(h, n, "localhost") || same_name(h, n, "127.0.0.1") ||
         same_name(h, n, "[::1]") || same_name(h, n, srv->opt.host);
}

/* {====== behind a reverse proxy (--trust-proxy) */

/* Did the request come from a proxy we were told to trust? Only then are
   its X-Forwarded-* headers believed: anyone else could send them. */
static bool from_proxy(const http_server *srv, const struct mg_connection *conn) {
  const char *addr = mg_get_request_info(conn)->remote_addr;
  for (size_t i = 0; i < srv->opt.ntrust_proxies; i++)
    if (strcmp(addr, srv->opt.trust_proxies[i]) == 0) return true;
  return false;
}

/* (transport_http.h) so that ::ffff:127.0.0.1 and 0:0:0:0:0:0:0:1 are
   loopback and a client has one entry in the per-peer limits however it is
   written */
bool http_canonical_addr(const char *in, char *out, size_t cap) {
  struct in_addr v4;
  struct in6_addr v6;
  if (inet_pton(AF_INET, in, &v4) == 1) return inet_ntop(AF_INET, &v4, out, (socklen_t)cap) != NULL;
  if (inet_pton(AF_INET6, in, &v6) != 1) return false;
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    memcpy(&v4, v6.s6_addr + 12, 4);
    return inet_ntop(AF_INET, &v4, out, (socklen_t)cap) != NULL;
  }
  return inet_ntop(AF_INET6, &v6, out, (socklen_t)cap) != NULL;
}

/* The client's address as the proxy saw it: the last X-Forwarded-For
   entry (the one the proxy appended; earlier ones are the client's say),
   in its one spelling. */
static bool forwarded_for(const struct mg_connection *conn, char *out, size_t cap) {
  const char *v = mg_get_header(conn, "X-Forwarded-For");
  if (!v) return false;
  const char *last = strrchr(v, ',');
  last = last ? last + 1 : v;
  while (*last == ' ' || *last == '\t') last++;
  size_t n = strcspn(last, " \t");
  char text[INET6_ADDRSTRLEN + 1];
  if (n == 0 || n >= sizeof text) return false;
  memcpy(text, last, n);
  text[n] = '\0';
  return http_canonical_addr(text, out, cap);
}

static bool loopback_addr(const char *a) {
  return strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0;
}

/* The remote address the per-peer limits count: the client's behind a
   trusted proxy, else the connection's. */
void http_peer_address(const http_server *srv, const struct mg_connection *conn, char *out,
                         size_t cap) {
  if (from_proxy(srv, conn) && forwarded_for(conn, out, cap)) return;
  snprintf(out, cap, "%s", mg_get_request_info(conn)->remote_addr);
}

/* }====== */

/* DNS-rebinding and cross-site protection (http_internal.h says how). */
int http_origin_check(const http_server *srv, struct mg_connection *conn) {
  const char *host = mg_get_header(conn, "Host"), *h;
  size_t hn;
  bool loopback = http_bound_to_loopback(srv);
  if (from_proxy(srv, conn)) {
    /* the Host the client sent to the proxy, and the policy of the
       client's side: a loopback client may be a rebound browser page */
    const char *fh = mg_get_header(conn, "X-Forwarded-Host");
    char client[48];
    if (fh) host = fh;
    if (forwarded_for(conn, client, sizeof client)) loopback = loopback_addr(client);
  }
  if (host && !parse_authority(host, strlen(host), &h, &hn)) return 400;
  if (loopback && (!host || !loopback_host(srv, h, hn))) return 403;
  const char *origin = mg_get_header(conn, "Origin");
  if (!origin) return 0; /* not a browser */
  if (srv->opt.cors_any) return 0; /* '*': every page may call (never with authorization) */
  for (size_t i = 0; i < srv->opt.ncors_origins; i++)
    if (strcasecmp(origin, srv->opt.cors_origins[i]) == 0) return 0;
  for (size_t i = 0; i < srv->opt.nallow_origins; i++)
    if (strcasecmp(origin, srv->opt.allow_origins[i]) == 0) return 0;
  if (!loopback) return 403;
  const char *rest = NULL;
  if (strncasecmp(origin, "http://", 7) == 0) rest = origin + 7;
  else if (strncasecmp(origin, "https://", 8) == 0) rest = origin + 8;
  if (!rest || !parse_authority(rest, strlen(rest), &h, &hn)) return 403;
  return loopback_host(srv, h, hn) ? 0 : 403;
}

/* {====== CORS */

#define CORS_EXPOSE "Access-Control-Expose-Headers: Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate\r\n"

/* No Access-Control-Allow-Credentials: tokens travel in Authorization,
   which a page sets itself; luamcp reads no cookie. */
bool http_cors_headers(const http_server *srv, struct mg_connection *conn, char *out, size_t cap) {
  const char *origin = mg_get_header(conn, "Origin");
  if (!origin) return false;
  if (srv->opt.cors_any) {
    snprintf(out, cap, "Access-Control-Allow-Origin: *\r\n" CORS_EXPOSE);
    return true;
  }
  for (size_t i = 0; i < srv->opt.ncors_origins; i++)
    if (strcasecmp(origin, srv->opt.cors_origins[i]) == 0) {
      /* the request's spelling (a browser compares exactly); it matched a
         checked origin, so it holds nothing else */
      int n = snprintf(out, cap, "Access-Control-Allow-Origin: %s\r\nVary: Origin\r\n" CORS_EXPOSE, origin);
      return n > 0 && (size_t)n < cap;
    }
  return false;
}

#define CORS_HEADERS "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, " \
                     "Last-Event-ID, Mcp-Method, Mcp-Name"

/* Does the comma list asked for name only headers a client of /mcp sends
   (Mcp-Param-* included: 2026-07-28's x-mcp-header parameters)? */
static bool cors_headers_allowed(const char *list) {
  static const char *const names[] = {"content-type", "accept", "authorization", "mcp-session-id",
                                      "mcp-protocol-version", "last-event-id", "mcp-method", "mcp-name"};
  const char *p = list;
  for (;;) {
    p += strspn(p, " \t");
    size_t n = strcspn(p, ", \t");
    if (!n) return false;
    bool ok = n > 10 && strncasecmp(p, "mcp-param-", 10) == 0 &&
              strspn(p + 10, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == n - 10;
    for (size_t i = 0; !ok && i < sizeof names / sizeof *names; i++)
      ok = strlen(names[i]) == n && strncasecmp(p, names[i], n) == 0;
    if (!ok) return false;
    p += n;
    p += strspn(p, " \t");
    if (!*p) return true;
    if (*p++ != ',') return false;
  }
}

int http_cors_preflight(struct mg_connection *conn, const char *methods) {
  const char *asked = mg_get_header(conn, "Access-Control-Request-Headers");
  /* what it asks when all of it is allowed (Mcp-Param-* cannot be listed
     ahead), else the list: the browser then refuses what is not in it */
  const char *allow = asked && *asked && strlen(asked) < 1024 && cors_headers_allowed(asked) ? asked : CORS_HEADERS;
  buf b;
  buf_init(&b);
  http_start_response(&b, 204, NULL);
  buf_printf(&b, "Access-Control-Allow-Methods: %s\r\n"
                 "Access-Control-Allow-Headers: %s\r\nAccess-Control-Max-Age: 86400\r\n\r\n", methods, allow);
  http_send_all(conn, &b);
  buf_free(&b);
  return 204;
}

/* }====== */

/* 0, or the status of an answer already sent (the connection then closes):
   a body framed two ways (Content-Length and Transfer-Encoding, or two
   Content-Lengths that differ) is how requests are smuggled past a proxy
   that reads it the other way; a Content-Length that is not all digits
   is read by civetweb as its leading number. */
int http_framing_check(struct mg_connection *conn) {
  const struct mg_request_info *ri = mg_get_request_info(conn);
  const char *cl = NULL, *why = NULL;
  int nte = 0, nhost = 0;
  for (int i = 0; i < ri->num_headers && !why; i++) {
    const char *name = ri->http_headers[i].name, *v = ri->http_headers[i].value;
    if (strcasecmp(name, "Transfer-Encoding") == 0 && nte++) why = "two Transfer-Encoding headers";
    if (strcasecmp(name, "Host") == 0 && nhost++) why = "two Host headers"; /* which one is checked? */
    if (strcasecmp(name, "Content-Length") != 0) continue;
    if (!*v || strspn(v, "0123456789") != strlen(v)) why = "a Content-Length that is not a number";
    else if (cl && strcmp(cl, v) != 0) why = "two different Content-Length headers";
    cl = v;
  }
  if (!why && cl && nte) why = "both Content-Length and Transfer-Encoding";
  if (!why) return 0;
  char msg[96];
  snprintf(msg, sizeof msg, "Bad Request: %s", why);
  /* what follows the head cannot be trusted to be a request of its own */
  mg_disable_connection_keep_alive(conn);
  return http_respond_error(conn, 400, JSONRPC_INVALID_REQUEST, msg, "Connection: close\r\n");
}

/* Constant-time comparison: the time taken does not tell how much matched. */
bool http_token_ok(const http_server *srv, struct mg_connection *conn) {
  if (!srv->opt.token) return true;
  const char *h = mg_get_header(conn, "Authorization");
  if (!h || strncasecmp(h, "Bearer ", 7) != 0) return false;
  const char *got = h + 7, *want = srv->opt.token;
  size_t gn = strlen(got), wn = strlen(want);
  unsigned char diff = (unsigned char)(gn != wn);
  for (size_t i = 0; i < wn; i++) diff |= (unsigned char)(want[i] ^ (i < gn ? got[i] : 0));
  return diff == 0;
}

/* Does an Accept header admit this media type (or a wildcard)? */
bool http_accepts(const char *accept, const char *type) {
  if (!accept) return false;
  if (strstr(accept, type) || strstr(accept, "*/*")) return true;
  char major[32];
  const char *slash = strchr(type, '/');
  snprintf(major, sizeof major, "%.*s/*", (int)(slash - type), type);
  return strstr(accept, major) != NULL;
}

/* }====================================================== */
