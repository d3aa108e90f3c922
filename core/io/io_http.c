/* io_http.c — mcp.http (see io_http.h): HTTP(S) requests that park the
 * call while libcurl's multi interface runs the transfer on the engine's
 * loop, the way curl's docs/examples/multi-uv.c drives it: curl tells which
 * sockets to watch (a uv_poll_t each) and when to call it back (one
 * uv_timer_t, which exists only while curl has a timeout pending: nothing of
 * ours stays open on the loop once the transfers are over); on either we
 * call curl_multi_socket_action and wake the calls whose transfers ended.
 *
 * One multi handle for the process, kept across app reloads: it holds the
 * connection cache and the DNS cache, so calls reuse connections. Name
 * resolution runs on curl's threaded resolver (checked at start-up); a
 * transfer aborted while it resolves leaves its resolver thread detached
 * (CURLOPT_QUICK_EXIT) rather than joining it on the loop.
 *
 * Lifetimes: an operation is a userdata on the handler's stack (the stack of
 * a yielded C function survives the yield), so Lua frees its memory; what it
 * holds outside Lua (the easy handle, header list, buffers) is released by
 * the first of: the result being built, the call's abort, __close, __gc.
 *
 * libcurl is loaded when mcp.http is first used (curl_dl.h). */
#include "io_http.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>
#include <lua.h>

#include "buf.h"
#include "call.h"
#include "curl_dl.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "sandbox.h"
#include "trace.h"

#define OP_TYPE "mcp.http.op"
#define POOL_MAX 32             /* idle easy handles kept for the next requests */
#define MAX_CONNECTS 1024       /* idle connections the cache keeps open: as many as calls may wait at once (64 made 1,000 calls in flight open one connection each) */
#define DEFAULT_MAX_SIZE ((lua_Integer)64 << 20)
#define HEAD_MAX (1u << 20)     /* response header bytes: curl 7.88 sets no bound */
#define DEFAULT_REDIRECTS 10
#define MAX_REDIRECTS 1000


/* {====================================================== the multi handle */

static struct {
  uv_loop_t *loop;
  CURLM *multi;
  uv_timer_t *timer;
  bool in_timer;
  CURL *pool[POOL_MAX];
  int npool;
} H;

typedef struct sock_watch {
  uv_poll_t poll; /* first: the close callback frees the handle */
  curl_socket_t fd;
  int events;   /* what curl asked to wait for (UV_READABLE, UV_WRITABLE) */
  bool closing; /* curl is done with the socket: the handle is being closed */
} sock_watch;

static void drain(void);

static void free_handle(uv_handle_t *h) { free(h); }

static void curl_on_poll(uv_poll_t *p, int status, int events) {
  sock_watch *w = (sock_watch *)p;
  int flags = 0, running;
  /* An error on the socket (POLLERR: libuv stops the handle and says
     UV_EBADF with no events) is the peer's doing, often a connection it
     closed that curl was about to reuse. Curl, told the socket is ready
     for what it waits on, reads or writes and finds out itself: it retries
     a dead reused connection on a new one, as its own poll loop does.
     CURL_CSELECT_ERR would fail the transfer ("select/poll returned
     error"). */
  bool err = status < 0;
  if (err) events = w->events;
  if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  curl_multi_socket_action(H.multi, w->fd, flags, &running);
  /* libuv stopped the handle: watch again if curl still waits on it (a
     close is pending until the loop's next pass: w is still there) */
  if (err && !w->closing && !uv_is_active((uv_handle_t *)&w->poll) && w->events)
    uv_poll_start(&w->poll, w->events, curl_on_poll);
  drain();
}

static void curl_on_timer(uv_timer_t *t) {
  (void)t;
  int running;
  H.in_timer = true;
  curl_multi_socket_action(H.multi, CURL_SOCKET_TIMEOUT, 0, &running);
  H.in_timer = false;
  /* curl counts a timer that fired as gone (no -1 follows): not restarted,
     it is closed like one curl stopped */
  if (H.timer && !uv_is_active((uv_handle_t *)H.timer)) {
    uv_close((uv_handle_t *)H.timer, free_handle);
    H.timer = NULL;
  }
  drain();
}

static int on_curl_timer(CURLM *m, long ms, void *ud) {
  (void)m, (void)ud;
  if (ms < 0) {
    /* nothing pending: no handle of ours stays open, so the engine's loop
       closes cleanly when it ends (it knows nothing of them) */
    if (H.timer) uv_close((uv_handle_t *)H.timer, free_handle);
    H.timer = NULL;
    return 0;
  }
  if (!H.timer) {
    if (!(H.timer = malloc(sizeof *H.timer))) return -1;
    uv_timer_init(H.loop, H.timer);
    uv_unref((uv_handle_t *)H.timer);
  }
  /* libuv runs a timer restarted with 0 from its own callback again in the
     same pass: 1 ms then, so that sockets get their turn */
  if (ms == 0 && H.in_timer) ms = 1;
  uv_timer_start(H.timer, curl_on_timer, (uint64_t)ms, 0);
  return 0;
}

static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *ud, void *sp) {
  (void)easy, (void)ud;
  sock_watch *w = sp;
  if (what == CURL_POLL_REMOVE) {
    if (w) {
      curl_multi_assign(H.multi, fd, NULL);
      w->closing = true;
      uv_close((uv_handle_t *)&w->poll, free_handle); /* stops watching now */
    }
    return 0;
  }
  if (!w) {
    w = malloc(sizeof *w);
    if (!w) return -1;
    if (uv_poll_init_socket(H.loop, &w->poll, fd) != 0) {
      free(w);
      return -1; /* curl fails the transfers on this socket */
    }
    w->fd = fd;
    w->closing = false;
    /* a watch must not keep the loop alive past the engine's own end */
    uv_unref((uv_handle_t *)&w->poll);
    curl_multi_assign(H.multi, fd, w);
  }
  int events = 0;
  if (what & CURL_POLL_IN) events |= UV_READABLE;
  if (what & CURL_POLL_OUT) events |= UV_WRITABLE;
  w->events = events;
  uv_poll_start(&w->poll, events, curl_on_poll);
  return 0;
}

/* The multi handle on loop, created on first use. */
static bool http_init(uv_loop_t *loop) {
  if (H.multi && H.loop == loop) return true;
  if (!curl_dl_ready()) return false;
  /* A new engine's loop (the previous one ended, handles and all): start
     over; what the old multi held went with that loop. */
  memset(&H, 0, sizeof H);
  H.loop = loop;
  if (!(H.multi = curl_multi_init())) return false;
  curl_multi_setopt(H.multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
  curl_multi_setopt(H.multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
  curl_multi_setopt(H.multi, CURLMOPT_MAXCONNECTS, (long)MAX_CONNECTS);
  return true;
}

static CURL *easy_get(void) { return H.npool ? H.pool[--H.npool] : curl_easy_init(); }

static void easy_put(CURL *e) {
  if (H.npool < POOL_MAX) {
    curl_easy_reset(e); /* also forgets the pointers into the finished op */
    H.pool[H.npool++] = e;
  } else {
    curl_easy_cleanup(e);
  }
}

/* }====================================================== */

/* {====================================================== one request */

typedef struct http_op {
  call_wait wait; /* first: abort gets &op->wait */
  call *c;
  CURL *easy;
  bool running; /* in the multi handle */
  bool too_big, head_too_big;
  bool capped; /* max_size is what the call's memory limit leaves */
  bool retried; /* once on a new connection (retry_fresh) */
  unsigned answers; /* status lines received, redirects' too */
  long timeout_ms, redirects;
  char method[32];
  CURLcode result;
  size_t max_size;
  const char *url; /* a string anchored on the handler's stack */
  const sandbox *sb; /* --sandbox: every request, redirects too, must be declared */
  char *refused;     /* the redirect the sandbox stopped (malloc'd) */
  struct curl_slist *hdrs;
  buf req;  /* the JSON-encoded request body */
  buf head; /* the response's header lines (also scratch before the transfer) */
  buf body;
  trace_span *span; /* its CLIENT span when the call is traced, or NULL */
  char err[CURL_ERROR_SIZE];
} http_op;

/* Let go of everything outside Lua; idempotent. A transfer still running
   is removed, which closes its connection (curl closes a connection whose
   response was cut short), and its handle is not reused. */
static void op_release(http_op *op) {
  if (op->span) { /* not ended by its answer: the call ended first */
    trace_error(op->span, "the call ended before the transfer");
    trace_end(op->span);
    op->span = NULL;
  }
  if (op->easy) {
    if (op->running) {
      curl_multi_remove_handle(H.multi, op->easy);
      curl_easy_cleanup(op->easy);
    } else {
      easy_put(op->easy);
    }
    op->easy = NULL;
    op->running = false;
  }
  curl_slist_free_all(op->hdrs);
  op->hdrs = NULL;
  free(op->refused);
  op->refused = NULL;
  buf_free(&op->req);
  buf_free(&op->head);
  buf_free(&op->body);
}

static void op_abort(call_wait *w) { op_release((http_op *)w); }

static int op_gc(lua_State *L) {
  op_release(lua_touserdata(L, 1));
  return 0;
}

static size_t origin_len(const char *url) { /* scheme://authority */
  const char *p = strstr(url, "://");
  if (!p) return 0;
  p += 3;
  return (size_t)(p - url) + strcspn(p, "/?#");
}

static bool same_origin(const char *a, const char *b) {
  size_t n = origin_len(a);
  return n && n == origin_len(b) && strncasecmp(a, b, n) == 0;
}

static bool may_repeat(const char *method) { /* RFC 9110 9.2.2: idempotent */
  static const char *const idem[] = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"};
  for (size_t i = 0; method && i < sizeof idem / sizeof *idem; i++)
    if (strcmp(method, idem[i]) == 0) return true;
  return false;
}

/* Curl retries a request whose reused connection is found dead before any
   byte of the answer, but on another cached connection, which a server that
   closes its idle connections may have closed as well; after five it gives
   up. One more try, on a new connection, ends that, for a request that may
   be repeated and got no answer at all: the request that failed, not the
   redirects before it. Returns whether the transfer runs again. */
static bool retry_fresh(http_op *op, CURLcode rc) {
  if (op->retried || op->too_big || op->head_too_big || op->refused ||
      (rc != CURLE_SEND_ERROR && rc != CURLE_RECV_ERROR && rc != CURLE_GOT_NOTHING))
    return false;
  CURL *e = op->easy;
  long hops = 0;
  char *url = NULL, *method = NULL, *first = NULL;
  curl_off_t spent_us = 0;
  if (curl_easy_getinfo(e, CURLINFO_REDIRECT_COUNT, &hops) != CURLE_OK ||
      curl_easy_getinfo(e, CURLINFO_EFFECTIVE_URL, &url) != CURLE_OK || !url ||
      curl_easy_getinfo(e, CURLINFO_EFFECTIVE_METHOD, &method) != CURLE_OK ||
      curl_easy_getinfo(e, CURLINFO_TOTAL_TIME_T, &spent_us) != CURLE_OK)
    return false;
  /* restarted from a redirect's target, the request carries the script's
     headers as a first request does: only to the origin they were for */
  if (op->answers > (unsigned long)hops || !may_repeat(method) ||
      (hops && !same_origin(url, op->url)))
    return false;
  long left_ms = op->timeout_ms - (long)(spent_us / 1000);
  if (left_ms <= 0) return false;
  /* after a 303 (or a 301/302 of a POST) curl asks with GET */
  bool to_get = strcmp(method, "GET") == 0 && strcmp(op->method, "GET") != 0;
  if (hops && !(first = strdup(url))) return false; /* url belongs to the handle */
  if (first) curl_easy_setopt(e, CURLOPT_URL, first);
  free(first);
  if (to_get) curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, left_ms);
  curl_easy_setopt(e, CURLOPT_MAXREDIRS, op->redirects - hops);
  op->retried = true;
  op->err[0] = 0;
  op->head.len = op->body.len = 0;
  return curl_multi_add_handle(H.multi, e) == CURLM_OK;
}

/* A request nobody waits for (io_http_send): its answer is dropped. It
   begins as an op does, with what set to this. */
static const char fire_what[] = "io_http_send";
typedef struct fire {
  call_wait wait; /* only wait.what: tells it from an op */
  struct curl_slist *hdrs;
} fire;

static size_t fire_drop(char *p, size_t size, size_t n, void *ud) {
  (void)p, (void)ud;
  return size * n;
}

bool io_http_send(uv_loop_t *loop, const char *url, const char *const *headers, const char *body,
                  size_t len, long timeout_ms) {
  if (curl_dl_why() || !http_init(loop)) return false;
  fire *f = calloc(1, sizeof *f);
  CURL *e = f ? easy_get() : NULL;
  if (!e) {
    free(f);
    return false;
  }
  f->wait.what = fire_what;
  for (const char *const *h = headers; h && *h; h++) {
    struct curl_slist *l = curl_slist_append(f->hdrs, *h);
    if (l) f->hdrs = l;
  }
  struct curl_slist *l = curl_slist_append(f->hdrs, "Expect:");
  if (l) f->hdrs = l;
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)f);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_USERAGENT, "luamcp/" LUAMCP_VERSION);
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, body);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, f->hdrs);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fire_drop);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
  if (curl_multi_add_handle(H.multi, e) != CURLM_OK) {
    curl_slist_free_all(f->hdrs);
    easy_put(e);
    free(f);
    return false;
  }
  return true;
}

/* Finished transfers: out of the multi handle, their calls resumed. */
static void drain(void) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(H.multi, &left))) {
    if (m->msg != CURLMSG_DONE) continue;
    CURL *easy = m->easy_handle;
    CURLcode rc = m->data.result; /* m is gone after remove_handle */
    char *p = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &p);
    http_op *op = (http_op *)p;
    curl_multi_remove_handle(H.multi, easy);
    if (op->wait.what == fire_what) { /* sent, and nobody waits */
      fire *f = (fire *)p;
      curl_slist_free_all(f->hdrs);
      easy_put(easy);
      free(f);
      continue;
    }
    if (retry_fresh(op, rc)) continue;
    if (metrics_on) {
      long code = 0;
      if (rc == CURLE_OK) curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
      static const char *const classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
      const char *cls = rc != CURLE_OK || code < 100 || code > 599 ? "error" : classes[code / 100 - 1];
      metric_add(metric_at(M_OUT_HTTP, (const char *const[]){cls}), 1);
    }
    op->running = false;
    op->result = rc;
    call_wake_wait(&op->wait, 0); /* runs Lua: it may start and abort transfers */
  }
}

static size_t on_header(char *p, size_t size, size_t n, void *ud) {
  http_op *op = ud;
  size_t len = size * n;
  /* a new response (after a redirect, a 100 Continue): its headers count */
  if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) op->head.len = 0, op->answers++;
  if (len > HEAD_MAX - op->head.len) {
    op->head_too_big = true;
    return 0; /* fails the transfer */
  }
  buf_put(&op->head, p, len);
  return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
  http_op *op = ud;
  size_t len = size * n;
  if (len > op->max_size - op->body.len) {
    op->too_big = true;
    return 0;
  }
  if (!op->body.cap) { /* room for the announced length at once */
    curl_off_t cl = -1;
    curl_easy_getinfo(op->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    if (cl > 0 && (uint64_t)cl <= op->max_size) buf_reserve(&op->body, (size_t)cl);
  }
  buf_put(&op->body, p, len);
  return len;
}

/* Under --sandbox, before each request is sent (after its connection is
   made): a redirect must lead where app.lua's permissions.http allows. */
static int on_prereq(void *ud, char *ip, char *local_ip, int port, int local_port) {
  (void)ip, (void)local_ip, (void)port, (void)local_port;
  http_op *op = ud;
  char *u = NULL;
  curl_easy_getinfo(op->easy, CURLINFO_EFFECTIVE_URL, &u);
  if (u && sandbox_url_allowed(op->sb, u)) return CURL_PREREQFUNC_OK;
  free(op->refused);
  op->refused = strdup(u ? u : "?");
  return CURL_PREREQFUNC_ABORT;
}

/* }====================================================== */

/* {====================================================== the result */

/* Push the header table: lowercase names, repeated headers joined. */
static void push_headers(lua_State *L, http_op *op) {
  lua_createtable(L, 0, 8);
  int t = lua_gettop(L);
  char *s = op->head.p, *end = s + op->head.len;
  while (s && s < end) {
    char *eol = memchr(s, '\n', (size_t)(end - s));
    char *next = eol ? eol + 1 : end;
    if (!eol) eol = end;
    if (eol > s && eol[-1] == '\r') eol--;
    char *colon = memchr(s, ':', (size_t)(eol - s));
    /* status lines and obsolete folded lines (leading blank) are skipped */
    if (colon && colon > s && *s != ' ' && *s != '\t') {
      for (char *q = s; q < colon; q++)
        if (*q >= 'A' && *q <= 'Z') *q = (char)(*q + 32);
      char *v = colon + 1, *ve = eol;
      while (v < ve && (*v == ' ' || *v == '\t')) v++;
      while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
      lua_pushlstring(L, s, (size_t)(colon - s));
      lua_pushvalue(L, -1);
      if (lua_rawget(L, t) == LUA_TNIL) {
        lua_pop(L, 1);
        lua_pushlstring(L, v, (size_t)(ve - v));
      } else {
        lua_pushliteral(L, ", ");
        lua_pushlstring(L, v, (size_t)(ve - v));
        lua_concat(L, 3);
      }
      lua_rawset(L, t);
    }
    s = next;
  }
}

/* application/json, or any type with a +json suffix (parameters ignored). */
static bool is_json_type(const char *ct, size_t n) {
  size_t i = 0;
  while (i < n && (ct[i] == ' ' || ct[i] == '\t')) i++;
  size_t j = i;
  while (j < n && ct[j] != ';' && ct[j] != ' ' && ct[j] != '\t') j++;
  size_t len = j - i;
  const char *m = ct + i;
  if (len == 16 && strncasecmp(m, "application/json", 16) == 0) return true;
  return len > 5 && strncasecmp(m + len - 5, "+json", 5) == 0 && memchr(m, '/', len);
}

/* Resumed: the transfer ended. A call that ends first (its deadline, a
   cancel) is never resumed: op_abort has removed the transfer. */
static int http_done(lua_State *L, int status, lua_KContext k) {
  (void)status;
  http_op *op = lua_touserdata(L, (int)k);
  if (op->result != CURLE_OK) {
    char msg[CURL_ERROR_SIZE + 64];
    if (op->refused) {
      lua_pushstring(L, op->refused);
      op_release(op);
      return luaL_error(L, "mcp.http: the redirect to %s is not allowed under --sandbox: no "
                        "prefix in app.lua's permissions.http covers it (%s)", lua_tostring(L, -1),
                        op->url);
    }
    if ((op->too_big || op->result == CURLE_FILESIZE_EXCEEDED) && op->capped)
      snprintf(msg, sizeof msg, "the response is larger than the call may still hold under "
               "--memory-limit (%zu bytes)", op->max_size);
    else if (op->too_big || op->result == CURLE_FILESIZE_EXCEEDED)
      snprintf(msg, sizeof msg, "the response is larger than max_size (%zu bytes)", op->max_size);
    else if (op->head_too_big)
      snprintf(msg, sizeof msg, "the response headers are larger than %u bytes", HEAD_MAX);
    else
      snprintf(msg, sizeof msg, "%s", op->err[0] ? op->err : curl_easy_strerror(op->result));
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = 0;
    if (op->span) {
      trace_attr_str(op->span, "error.type", "transport");
      trace_error(op->span, msg);
      trace_end(op->span);
      op->span = NULL;
    }
    op_release(op);
    return luaL_error(L, "mcp.http: %s (%s)", msg, op->url);
  }
  long code = 0;
  char *eff = NULL;
  curl_easy_getinfo(op->easy, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_getinfo(op->easy, CURLINFO_EFFECTIVE_URL, &eff);
  if (op->span) {
    trace_attr_int(op->span, "http.response.status_code", code);
    if (code >= 400) {
      char st[24];
      snprintf(st, sizeof st, "%ld", code);
      trace_attr_str(op->span, "error.type", st);
      trace_error(op->span, st);
    }
    trace_end(op->span);
    op->span = NULL;
  }
  lua_createtable(L, 0, 5);
  int r = lua_gettop(L);
  lua_pushinteger(L, code);
  lua_setfield(L, r, "status");
  lua_pushstring(L, eff ? eff : op->url);
  lua_setfield(L, r, "url");
  push_headers(L, op);
  lua_getfield(L, -1, "content-type"); /* our own table: no metamethods */
  size_t ctn = 0;
  const char *ct = lua_tolstring(L, -1, &ctn);
  bool json = ct && is_json_type(ct, ctn);
  lua_pop(L, 1);
  lua_setfield(L, r, "headers");
  lua_pushlstring(L, op->body.p ? op->body.p : "", op->body.len);
  op_release(op); /* the body is a Lua string now: one copy at a time */
  if (json) {
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    const char *err;
    if (json_decode(L, s, n, &err)) lua_setfield(L, r, "json");
  }
  lua_setfield(L, r, "body");
  return 1;
}

/* }====================================================== */

/* {====================================================== starting */

enum { O_METHOD, O_URL, O_HEADERS, O_BODY, O_JSON, O_TIMEOUT, O_FOLLOW, O_MAX_SIZE,
       O_INSECURE, O_N };
static const char *const option_names[O_N] = {"method", "url", "headers", "body", "json",
                                              "timeout", "follow", "max_size", "insecure"};

static bool is_tchar(unsigned char ch) { /* RFC 9110 token */
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static bool is_token(const char *s, size_t n) {
  if (!n) return false;
  for (size_t i = 0; i < n; i++)
    if (!is_tchar((unsigned char)s[i])) return false;
  return true;
}

/* Add the headers table at idx to op->hdrs; notes whether Content-Type and
   Expect were among them. */
static void add_headers(lua_State *L, int idx, http_op *op, bool *ctype, bool *expect) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    size_t kn, vn;
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "mcp.http: header names must be strings (got a %s)", luaL_typename(L, -2));
    const char *k = lua_tolstring(L, -2, &kn);
    if (!is_token(k, kn)) luaL_error(L, "mcp.http: invalid header name '%s'", k);
    int vt = lua_type(L, -1);
    if (vt != LUA_TSTRING && vt != LUA_TNUMBER)
      luaL_error(L, "mcp.http: header '%s' must be a string (got a %s)", k, luaL_typename(L, -1));
    const char *v = lua_tolstring(L, -1, &vn); /* a number turns into a string in place: only the value */
    for (size_t i = 0; i < vn; i++)
      if (v[i] == '\r' || v[i] == '\n' || v[i] == '\0')
        luaL_error(L, "mcp.http: header '%s' holds a line break or NUL", k);
    if (strcasecmp(k, "content-type") == 0) *ctype = true;
    if (strcasecmp(k, "expect") == 0) *expect = true;
    op->head.len = 0;
    buf_put(&op->head, k, kn);
    if (vn) { /* "Name;" is curl's way to send an empty value ("Name:" would drop it) */
      buf_put(&op->head, ": ", 2);
      buf_put(&op->head, v, vn);
    } else {
      buf_putc(&op->head, ';');
    }
    struct curl_slist *l = curl_slist_append(op->hdrs, op->head.p);
    if (!l) luaL_error(L, "mcp.http: out of memory");
    op->hdrs = l;
    lua_pop(L, 1);
  }
  op->head.len = 0;
}

static void add_header(lua_State *L, http_op *op, const char *line) {
  struct curl_slist *l = curl_slist_append(op->hdrs, line);
  if (!l) luaL_error(L, "mcp.http: out of memory");
  op->hdrs = l;
}

/* The request: options from the table at opts (0: none), the URL at
   url_arg and the body (a string: body=, anything else: json=) at body_arg
   when given positionally (0: from opts). Parks the call. */
/* What a request's options say, checked (the option values stay on the
   Lua stack at their `at` indexes). */
typedef struct req_opts {
  int at[O_N];
  const char *url;
  char method[32];
  bool has_body, insecure;
  double timeout; /* seconds; 0: none */
  long redirects;
  lua_Integer max_size;
} req_opts;

/* Every option, raw (no metamethods): unknown names are mistakes; url and
   body may come as arguments instead. */
static void collect_options(lua_State *L, int opts, int url_arg, int body_arg, req_opts *o) {
  if (opts) {
    lua_pushnil(L);
    while (lua_next(L, opts)) {
      lua_pop(L, 1);
      const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
      int i = 0;
      while (k && i < O_N && strcmp(k, option_names[i]) != 0) i++;
      if (!k || i == O_N)
        luaL_error(L, "mcp.http: unknown option %s", k ? k : luaL_typename(L, -1));
      if ((i == O_URL && url_arg) || ((i == O_BODY || i == O_JSON) && body_arg))
        luaL_error(L, "mcp.http: option '%s' is given as an argument already", k);
    }
    for (int i = 0; i < O_N; i++) {
      lua_pushstring(L, option_names[i]);
      if (lua_rawget(L, opts) != LUA_TNIL) o->at[i] = lua_gettop(L);
      else lua_pop(L, 1);
    }
  }
  if (url_arg) o->at[O_URL] = url_arg;
  if (body_arg) o->at[lua_type(L, body_arg) == LUA_TSTRING ? O_BODY : O_JSON] = body_arg;
}

/* url (under --sandbox, a URL app.lua permits), method and body */
static void check_target(lua_State *L, req_opts *o) {
  const int *at = o->at;
  size_t url_len;
  if (!at[O_URL] || lua_type(L, at[O_URL]) != LUA_TSTRING)
    luaL_error(L, "mcp.http: url must be a string");
  const char *url = o->url = lua_tolstring(L, at[O_URL], &url_len);
  if (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0)
    luaL_error(L, "mcp.http: only http:// and https:// URLs are allowed (%s)", url);
  if (strlen(url) != url_len) luaL_error(L, "mcp.http: the URL holds a NUL byte");
  const sandbox *sb = sandbox_of(L);
  if (sb) sandbox_check_url(L, sb, url);
  o->has_body = at[O_BODY] || at[O_JSON];
  if (at[O_BODY] && at[O_JSON]) luaL_error(L, "mcp.http: give body or json, not both");
  if (at[O_BODY] && lua_type(L, at[O_BODY]) != LUA_TSTRING)
    luaL_error(L, "mcp.http: body must be a string (json= encodes a table)");
  if (at[O_METHOD]) {
    size_t n = 0;
    const char *m = lua_type(L, at[O_METHOD]) == LUA_TSTRING ? lua_tolstring(L, at[O_METHOD], &n) : NULL;
    if (!m || !is_token(m, n) || n >= sizeof o->method)
      luaL_error(L, "mcp.http: method must be an HTTP method name such as \"PUT\"");
    for (size_t i = 0; i <= n; i++) o->method[i] = (char)(m[i] >= 'a' && m[i] <= 'z' ? m[i] - 32 : m[i]);
  } else {
    strcpy(o->method, o->has_body ? "POST" : "GET");
  }
  if (o->has_body && strcmp(o->method, "HEAD") == 0) luaL_error(L, "mcp.http: HEAD takes no body");
}

/* timeout, follow, max_size, insecure, headers */
static void check_limits(lua_State *L, req_opts *o) {
  const int *at = o->at;
  if (at[O_TIMEOUT]) {
    int isnum;
    o->timeout = lua_tonumberx(L, at[O_TIMEOUT], &isnum);
    if (!isnum || !(o->timeout > 0) || isinf(o->timeout))
      luaL_error(L, "mcp.http: timeout must be a positive number of seconds");
  }
  o->redirects = DEFAULT_REDIRECTS;
  if (at[O_FOLLOW]) {
    int isint;
    if (lua_type(L, at[O_FOLLOW]) == LUA_TBOOLEAN) {
      o->redirects = lua_toboolean(L, at[O_FOLLOW]) ? DEFAULT_REDIRECTS : 0;
    } else {
      lua_Integer f = lua_tointegerx(L, at[O_FOLLOW], &isint);
      if (!isint || f < 0 || f > MAX_REDIRECTS)
        luaL_error(L, "mcp.http: follow must be a boolean or a number of redirects (0-%d)",
                   MAX_REDIRECTS);
      o->redirects = (long)f;
    }
  }
  o->max_size = DEFAULT_MAX_SIZE;
  if (at[O_MAX_SIZE]) {
    int isint;
    o->max_size = lua_tointegerx(L, at[O_MAX_SIZE], &isint);
    if (!isint || o->max_size <= 0 || (uint64_t)o->max_size > SIZE_MAX / 2)
      luaL_error(L, "mcp.http: max_size must be a positive number of bytes");
  }
  o->insecure = at[O_INSECURE] && lua_toboolean(L, at[O_INSECURE]);
  if (at[O_INSECURE] && lua_type(L, at[O_INSECURE]) != LUA_TBOOLEAN)
    luaL_error(L, "mcp.http: insecure must be a boolean");
  if (at[O_HEADERS] && lua_type(L, at[O_HEADERS]) != LUA_TTABLE)
    luaL_error(L, "mcp.http: headers must be a table of name = value");
}

/* The transfer as the options say; data: the body (or NULL). */
static void configure(CURL *e, http_op *op, const req_opts *o, const char *data, size_t data_len,
                      call *c) {
  long redirects = o->redirects;
  curl_easy_setopt(e, CURLOPT_URL, o->url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)op);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, op->err);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075700 /* 7.87: no join of a resolver thread on abort */
  curl_easy_setopt(e, CURLOPT_QUICK_EXIT, 1L);
#endif
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  /* under --sandbox each request curl sends (a redirect's too) is checked
     first; a libcurl without the hook (before 7.80) follows none */
  if (op->sb && (curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq) != CURLE_OK ||
                 curl_easy_setopt(e, CURLOPT_PREREQDATA, op) != CURLE_OK))
    redirects = 0;
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, redirects > 0 ? 1L : 0L);
  curl_easy_setopt(e, CURLOPT_MAXREDIRS, redirects);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "luamcp/" LUAMCP_VERSION);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, ""); /* every encoding curl decodes */
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, op);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, op);
  curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)o->max_size);
  if (o->insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  /* the call's deadline bounds every request; without a shorter timeout=
     the engine's deadline comes first (its abort, its message) and curl's
     is only a net */
  double left = call_time_left(c);
  double t = o->timeout > 0 && o->timeout < left ? o->timeout : left + 1.0;
  op->timeout_ms = (long)ceil(t * 1000.0);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, op->timeout_ms);
  op->redirects = redirects;
  memcpy(op->method, o->method, sizeof op->method);
  const char *method = o->method;
  if (strcmp(method, "HEAD") == 0) {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (strcmp(method, "GET") != 0 || o->has_body) {
    if (strcmp(method, "POST") != 0) curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    if (o->has_body || strcmp(method, "POST") == 0) {
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)data_len);
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, data ? data : "");
    }
  }
  if (op->hdrs) curl_easy_setopt(e, CURLOPT_HTTPHEADER, op->hdrs);
}

/* url as a trace may show it: no user:password, each query value
   REDACTED (API keys travel there); malloc'd */
static char *url_redacted(const char *url) {
  buf b;
  buf_init(&b);
  const char *host = strstr(url, "://");
  host = host ? host + 3 : url;
  buf_put(&b, url, (size_t)(host - url));
  const char *end_auth = host + strcspn(host, "/?#");
  const char *at = memchr(host, '@', (size_t)(end_auth - host));
  if (at) buf_puts(&b, "REDACTED:REDACTED@"), host = at + 1;
  const char *q = strchr(host, '?');
  if (!q) {
    buf_puts(&b, host);
    return buf_take(&b, NULL);
  }
  buf_put(&b, host, (size_t)(q - host + 1));
  for (const char *p = q + 1; *p && *p != '#';) {
    size_t n = strcspn(p, "&#");
    const char *eq = memchr(p, '=', n);
    buf_put(&b, p, eq ? (size_t)(eq - p) : n);
    if (eq) buf_puts(&b, "=REDACTED");
    p += n;
    if (*p == '&') buf_putc(&b, '&'), p++;
  }
  return buf_take(&b, NULL);
}

/* The host of url (without brackets, userinfo or port) and its port (the
   scheme's default when none is written), or 0 when url has no authority. */
static long url_host_port(const char *url, char *host, size_t cap) {
  const char *p = strstr(url, "://");
  if (!p) return 0;
  bool https = p - url == 5 && strncasecmp(url, "https", 5) == 0;
  const char *a = p + 3, *end = a + strcspn(a, "/?#");
  for (const char *at = a; at < end; at++)
    if (*at == '@') a = at + 1; /* userinfo (refused before a span starts, but never shown) */
  const char *h = a, *he;
  if (*h == '[') {
    he = memchr(h, ']', (size_t)(end - h));
    if (!he) return 0;
    h++;
  } else {
    he = memchr(h, ':', (size_t)(end - h));
    if (!he) he = end;
  }
  if (he == h || (size_t)(he - h) >= cap) return 0;
  memcpy(host, h, (size_t)(he - h));
  host[he - h] = '\0';
  const char *colon = memchr(he, ':', (size_t)(end - he));
  long port = colon && colon + 1 < end ? strtol(colon + 1, NULL, 10) : https ? 443 : 80;
  return port > 0 && port < 65536 ? port : 0;
}

static int start(lua_State *L, int opts, int url_arg, int body_arg) {
  luaL_checkstack(L, 2 * O_N + 8, NULL);
  call *c = call_current(L);
  const char *why = call_cannot_park(L, c);
  if (why) return luaL_error(L, "mcp.http: %s", why);
  /* a yield from here would fail after the transfer was started */
  if (!lua_isyieldable(L))
    return luaL_error(L, "mcp.http: cannot wait here (inside a C function such as a metamethod "
                      "or a string.gsub callback)");
  if (opts && lua_isnoneornil(L, opts)) opts = 0;
  if (opts) luaL_checktype(L, opts, LUA_TTABLE);
  req_opts o = {0};
  collect_options(L, opts, url_arg, body_arg, &o);
  check_target(L, &o);
  check_limits(L, &o);
  const char *no_curl = curl_dl_why();
  if (no_curl) return luaL_error(L, "mcp.http: %s", no_curl);
  if (!http_init(call_loop(c))) return luaL_error(L, "mcp.http: libcurl failed to start");

  /* From here the op owns what is allocated; __close releases it if an
     error comes before the transfer ends. */
  http_op *op = lua_newuserdatauv(L, sizeof *op, 0);
  memset(op, 0, sizeof *op);
  luaL_setmetatable(L, OP_TYPE);
  int op_idx = lua_gettop(L);
  lua_toclose(L, op_idx);
  op->url = o.url;
  op->sb = sandbox_of(L);
  op->max_size = (size_t)o.max_size;
  /* the body is held here, then copied into the call's heap: no more than
     the call may still grow by (--memory-limit), whatever max_size says */
  size_t room = call_memory_room(c);
  if (room < op->max_size) op->max_size = room, op->capped = true;

  bool ctype = false, expect = false;
  if (o.at[O_HEADERS]) add_headers(L, o.at[O_HEADERS], op, &ctype, &expect);
  const char *data = NULL;
  size_t data_len = 0;
  if (o.at[O_JSON]) {
    char err[256];
    if (!json_encode(L, o.at[O_JSON], &op->req, err, sizeof err))
      return luaL_error(L, "mcp.http: json: %s", err);
    data = op->req.p, data_len = op->req.len;
    if (!ctype) add_header(L, op, "Content-Type: application/json");
  } else if (o.at[O_BODY]) {
    data = lua_tolstring(L, o.at[O_BODY], &data_len); /* anchored on this stack */
  }
  if (o.has_body && !expect) add_header(L, op, "Expect:"); /* no 100-continue round trip */
  /* a CLIENT span under the call's, named in the request's traceparent */
  trace_span *parent = trace_on ? call_span(c) : NULL;
  if (parent && (op->span = trace_start(trace_context(parent), o.method, TRACE_CLIENT))) {
    trace_attr_str(op->span, "http.request.method", o.method);
    char *shown = url_redacted(o.url);
    trace_attr_str(op->span, "url.full", shown ? shown : "");
    free(shown);
    char host[256];
    long port = url_host_port(o.url, host, sizeof host);
    if (port > 0) { /* required of an HTTP CLIENT span */
      trace_attr_str(op->span, "server.address", host);
      trace_attr_int(op->span, "server.port", port);
    }
    char tp[56], line[80];
    trace_format(trace_context(op->span), tp);
    snprintf(line, sizeof line, "traceparent: %s", tp);
    add_header(L, op, line);
  }

  CURL *e = op->easy = easy_get();
  if (!e) return luaL_error(L, "mcp.http: out of memory");
  configure(e, op, &o, data, data_len, c);
  CURLMcode mc = curl_multi_add_handle(H.multi, e);
  if (mc != CURLM_OK) return luaL_error(L, "mcp.http: %s", curl_multi_strerror(mc));
  op->running = true;
  op->c = c;
  op->wait.abort = op_abort;
  op->wait.what = "mcp.http";
  call_park(c, &op->wait);
  return lua_yieldk(L, 0, (lua_KContext)op_idx, http_done);
}

/* mcp.http.request{ method=, url=, headers=, body=, json=, timeout=, follow=,
   max_size=, insecure= } -> { status=, headers=, body=, json=, url= } */
static int http_request(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  return start(L, 1, 0, 0);
}

/* mcp.http.get(url [, options]) */
static int http_get(lua_State *L) {
  luaL_checkstring(L, 1);
  lua_settop(L, 2);
  return start(L, 2, 1, 0);
}

/* mcp.http.post(url, body [, options]): a string is sent as is, anything
   else as JSON */
static int http_post(lua_State *L) {
  luaL_checkstring(L, 1);
  luaL_checkany(L, 2);
  if (lua_isnil(L, 2)) return luaL_argerror(L, 2, "a body (a string, or a value for JSON)");
  lua_settop(L, 3);
  return start(L, 3, 1, 2);
}

/* }====================================================== */

void io_http_push(lua_State *L) {
  if (luaL_newmetatable(L, OP_TYPE)) {
    lua_pushcfunction(L, op_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, op_gc);
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);
  static const luaL_Reg funcs[] = {
      {"request", http_request}, {"get", http_get}, {"post", http_post}, {NULL, NULL}};
  luaL_newlib(L, funcs);
}
