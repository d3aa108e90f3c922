/* io_socket.c — mcp.socket (see io_socket.h): luasocket's client subset on
 * the engine's libuv loop.
 *
 * The Lua object (a full userdata, `lsock`) points at a malloc'd `sock` that
 * holds the uv handles: uv_close is asynchronous, so the handles' memory
 * must outlive the userdata; the sock frees itself when both of its handles
 * (the stream and its timeout timer) have closed, and unhooks the userdata
 * then. A sock exists from connect() on; a fresh tcp() has no handle (it may
 * be made while the app loads, when there is no loop to put one on).
 *
 * An operation that must wait records the call it parks (s->c), its
 * outcome lands in the sock, and call_wake resumes the call with one
 * boolean: the continuation (which runs inside call_wake, before any close
 * callback can free the sock) builds the Lua results from the sock, so no
 * loop callback ever allocates in Lua. Woken with nothing means the call
 * timed out (the engine aborted the operation first). */
#include "io_socket.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <uv.h>

#include "call.h"
#include "sandbox.h"
#include "trace.h"

#define SOCK_TYPE "mcp.socket"
/* room offered to each read (the buffer goes once all is consumed) */
#define RBUF_CHUNK (64 * 1024)
/* unread data one socket may hold: a peer cannot grow us without bound */
#define RBUF_MAX ((size_t)64 << 20)

enum { K_TCP, K_UNIX };
enum { OP_CONNECT, OP_CONNECT_RET, OP_SEND, OP_RECV }; /* 2 bits of the continuation's k */
enum { PAT_LINE, PAT_ALL, PAT_COUNT };

typedef struct lsock lsock;
typedef struct resolve resolve;

typedef struct sock {
  union {
    uv_handle_t h;
    uv_stream_t s;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } u;
  uv_timer_t timer; /* the socket's own timeout (settimeout) */
  uv_connect_t creq;
  uv_write_t wreq;
  call_wait wait;
  call *c;      /* the call parked on this socket's operation, or NULL */
  lsock *ud;    /* the Lua object, until its __gc */
  resolve *res; /* the name lookup in flight */
  int op, closes;
  bool closing, connected, eof, timed_out;
  const char *err; /* a read error that ends reading (sticky) */
  int status;      /* connect/send outcome: 0 or a uv error */
  size_t sent;     /* bytes of the current send written so far */
  size_t wlen;     /* bytes handed to uv_write */
  char *buf;       /* received, unread: buf[rpos, rlen) */
  size_t rpos, rlen, cap, scan;
  int pat;
  size_t want;
  trace_span *span; /* --otlp: the connect, a CLIENT span of the call that made it */
} sock;

struct lsock {
  sock *s;
  int kind, family; /* family: AF_UNSPEC (IPv4 first), AF_INET or AF_INET6 */
  bool used;        /* connect was tried: without a sock, the object is closed */
  bool nodelay, keepalive;
  double timeout; /* seconds, < 0: none of its own */
};

struct resolve {
  uv_getaddrinfo_t req;
  sock *s; /* NULL once cancelled: the callback then only frees */
  int port;
};

/* {====================================================== errors */

/* luasocket's words where scripts test them ("closed", "timeout"). */
static const char *errstr(int status) {
  switch (status) {
    case UV_ETIMEDOUT: return "timeout";
    case UV_EOF:
    case UV_ECONNRESET:
    case UV_EPIPE:
    case UV_ECANCELED:
    case UV_ENOTCONN:
    case UV_EBADF: return "closed";
    case UV_EAI_NONAME:
    case UV_EAI_NODATA:
    case UV_EAI_FAIL:
    case UV_EAI_AGAIN: return "host not found";
    default: return uv_strerror(status);
  }
}

static int fail(lua_State *L, const char *msg) {
  lua_pushnil(L);
  lua_pushstring(L, msg);
  return 2;
}

/* }====================================================== */

/* {====================================================== handle lifetime */

/* The connect's span ends with its outcome (NULL: connected). */
static void end_span(sock *s, const char *error) {
  if (!s->span) return;
  if (error) trace_error(s->span, error);
  trace_end(s->span);
  s->span = NULL;
}

static void sock_on_closed(uv_handle_t *h) {
  sock *s = h->data;
  if (--s->closes) return;
  end_span(s, "the call ended before the connection was made");
  if (s->ud) s->ud->s = NULL;
  free(s->buf);
  free(s);
}

/* Close the connection (the peer sees it end) and stop what runs on it. The
   parked call, if any, is the caller's business (s->c is left alone). */
static void sock_close(sock *s) {
  if (s->closing) return;
  s->closing = true;
  if (s->res) {
    s->res->s = NULL;
    uv_cancel((uv_req_t *)&s->res->req); /* if not started yet; else it ends on its own */
    s->res = NULL;
  }
  s->closes = 2;
  uv_close(&s->u.h, sock_on_closed);
  uv_close((uv_handle_t *)&s->timer, sock_on_closed);
}

/* The operation is over: resume its call (the continuation reads the sock). */
static void finish(sock *s) {
  s->c = NULL;
  uv_timer_stop(&s->timer);
  lua_pushboolean(call_wait_thread(&s->wait), 1);
  call_wake_wait(&s->wait, 1);
}

/* The call ended first (timeout, cancellation, shutdown): the socket goes. */
static void sock_on_abort(call_wait *w) {
  sock *s = (sock *)((char *)w - offsetof(sock, wait));
  s->c = NULL;
  sock_close(s);
}

static void sock_on_timer(uv_timer_t *t) {
  sock *s = t->data;
  if (!s->c) return;
  if (s->op == OP_RECV) { /* luasocket: nil, "timeout", partial — and still usable */
    uv_read_stop(&s->u.s);
    s->timed_out = true;
  } else { /* a half-made connection or half-sent data: not reusable */
    if (s->op == OP_SEND) {
      size_t queued = s->u.s.write_queue_size;
      s->sent += s->wlen > queued ? s->wlen - queued : 0;
    }
    s->status = UV_ETIMEDOUT;
    sock_close(s);
  }
  finish(s);
}

static sock *sock_new(uv_loop_t *loop, lsock *ud) {
  sock *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  int rc = ud->kind == K_TCP ? uv_tcp_init(loop, &s->u.tcp) : uv_pipe_init(loop, &s->u.pipe, 0);
  if (rc != 0) {
    free(s);
    return NULL;
  }
  uv_timer_init(loop, &s->timer);
  s->u.h.data = s;
  s->timer.data = s;
  s->creq.data = s;
  s->wreq.data = s;
  s->wait.abort = sock_on_abort;
  s->wait.what = "mcp.socket";
  s->ud = ud;
  ud->s = s;
  if (ud->kind == K_TCP) {
    if (ud->nodelay) uv_tcp_nodelay(&s->u.tcp, 1);
    if (ud->keepalive) uv_tcp_keepalive(&s->u.tcp, 1, 60);
  }
  return s;
}

/* Park the call on s's operation (started by the caller) and yield. */
static int park(lua_State *L, lsock *ud, call *c, int op, lua_KFunction k) {
  sock *s = ud->s;
  s->c = c;
  s->op = op;
  if (ud->timeout >= 0 && ud->timeout < call_time_left(c))
    uv_timer_start(&s->timer, sock_on_timer, (uint64_t)ceil(ud->timeout * 1000.0), 0);
  call_park(c, &s->wait);
  return lua_yieldk(L, 0, ((lua_KContext)lua_gettop(L) << 2) | op, k);
}

static call *parkable(lua_State *L) {
  call *c = call_current(L);
  const char *msg = call_cannot_park(L, c);
  if (msg) luaL_error(L, "mcp.socket: %s", msg);
  return c;
}

/* The sock of an object ready for an operation, or NULL with the reason
   pushed (nil, msg). */
static sock *usable(lua_State *L, lsock *ud, int *nret) {
  sock *s = ud->s;
  const char *why = NULL;
  if (!s || s->closing) why = ud->used ? "closed" : "not connected";
  else if (s->c) why = "socket busy";
  if (why) *nret = fail(L, why);
  return why ? NULL : s;
}

/* }====================================================== */

/* {====================================================== connect */

static int connect_done(lua_State *L, int status, lua_KContext k);

static void on_connected(uv_connect_t *req, int status) {
  sock *s = req->data;
  if (s->closing || !s->c) return; /* closed meanwhile: ECANCELED */
  s->status = status;
  if (status == 0) s->connected = true;
  else sock_close(s);
  finish(s);
}

static int start_connect(sock *s, const struct sockaddr *addr) {
  return uv_tcp_connect(&s->creq, &s->u.tcp, addr, on_connected);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
  resolve *r = (resolve *)req;
  sock *s = r->s;
  int port = r->port;
  free(r);
  if (!s) { /* cancelled, or finished after its socket closed */
    uv_freeaddrinfo(res);
    return;
  }
  s->res = NULL;
  const struct addrinfo *pick = NULL;
  for (const struct addrinfo *a = res; a && status == 0; a = a->ai_next) /* IPv4 first */
    if (a->ai_family == AF_INET || (a->ai_family == AF_INET6 && !pick)) {
      pick = a;
      if (a->ai_family == AF_INET) break;
    }
  if (status == 0 && !pick) status = UV_EAI_NODATA;
  if (status == 0) {
    struct sockaddr_storage ss;
    memcpy(&ss, pick->ai_addr, pick->ai_addrlen);
    if (ss.ss_family == AF_INET) ((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
    else ((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
    status = start_connect(s, (const struct sockaddr *)&ss);
  }
  uv_freeaddrinfo(res);
  if (status != 0) {
    s->status = status;
    sock_close(s);
    finish(s);
  }
}

/* The object at 1, the address from 2 on; op tells what success returns. */
static int do_connect(lua_State *L, int op) {
  lsock *ud = luaL_checkudata(L, 1, SOCK_TYPE);
  const char *host = luaL_checkstring(L, 2);
  lua_Integer port = 0;
  if (ud->kind == K_TCP) {
    port = luaL_checkinteger(L, 3);
    luaL_argcheck(L, port >= 0 && port <= 65535, 3, "port out of range");
  } else {
    luaL_argcheck(L, strlen(host) < sizeof ((struct sockaddr_un *)0)->sun_path, 2,
                  "path too long");
  }
  const sandbox *sb = sandbox_of(L);
  if (sb) sandbox_check_socket(L, sb, host, ud->kind == K_TCP ? (long)port : -1);
  if (ud->s && !ud->s->closing) return fail(L, ud->s->c ? "socket busy" : "already connected");
  if (ud->used) return fail(L, "closed");
  call *c = parkable(L);
  sock *s = sock_new(call_loop(c), ud);
  if (!s) return fail(L, "out of memory");
  ud->used = true;
  trace_span *parent = trace_on ? call_span(c) : NULL;
  if (parent && (s->span = trace_start(trace_context(parent), "connect", TRACE_CLIENT))) {
    trace_attr_str(s->span, "network.transport", ud->kind == K_TCP ? "tcp" : "unix");
    trace_attr_str(s->span, "server.address", host);
    if (ud->kind == K_TCP) trace_attr_int(s->span, "server.port", port);
  }
  int rc = 0;
  if (ud->kind == K_UNIX) {
    uv_pipe_connect(&s->creq, &s->u.pipe, host, on_connected);
  } else {
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    if (ud->family != AF_INET6 && uv_ip4_addr(host, (int)port, &a4) == 0)
      rc = start_connect(s, (const struct sockaddr *)&a4);
    else if (ud->family != AF_INET && uv_ip6_addr(host, (int)port, &a6) == 0)
      rc = start_connect(s, (const struct sockaddr *)&a6);
    else { /* a name: looked up on libuv's thread pool, not on the loop */
      resolve *r = malloc(sizeof *r);
      if (!r) rc = UV_ENOMEM;
      else {
        struct addrinfo hints = {0};
        hints.ai_family = ud->family;
        hints.ai_socktype = SOCK_STREAM;
        r->s = s;
        r->port = (int)port;
        rc = uv_getaddrinfo(call_loop(c), &r->req, on_resolved, host, NULL, &hints);
        if (rc == 0) s->res = r;
        else free(r);
      }
    }
  }
  if (rc != 0) {
    end_span(s, errstr(rc));
    sock_close(s);
    return fail(L, errstr(rc));
  }
  return park(L, ud, c, op, connect_done);
}

static int m_connect(lua_State *L) { return do_connect(L, OP_CONNECT); }

/* }====================================================== */

/* {====================================================== receive */

/* Room for at least a chunk after the unread data; false past RBUF_MAX. */
static bool ensure_room(sock *s) {
  if (s->rpos == s->rlen) s->rpos = s->rlen = s->scan = 0;
  if (s->cap - s->rlen >= RBUF_CHUNK) return true;
  if (s->rpos) { /* slide the unread data to the front */
    memmove(s->buf, s->buf + s->rpos, s->rlen - s->rpos);
    s->rlen -= s->rpos;
    s->scan = s->scan > s->rpos ? s->scan - s->rpos : 0;
    s->rpos = 0;
    if (s->cap - s->rlen >= RBUF_CHUNK) return true;
  }
  if (s->rlen >= RBUF_MAX) return false;
  size_t cap = s->cap ? s->cap * 2 : RBUF_CHUNK;
  while (cap - s->rlen < RBUF_CHUNK) cap *= 2;
  char *p = realloc(s->buf, cap);
  if (!p) return false;
  s->buf = p;
  s->cap = cap;
  return true;
}

/* Can the receive in progress end now (done, or with an error)? */
static bool recv_ready(sock *s) {
  size_t avail = s->rlen - s->rpos;
  switch (s->pat) {
    case PAT_COUNT:
      if (avail >= s->want) return true;
      break;
    case PAT_LINE: {
      size_t from = s->scan > s->rpos && s->scan <= s->rlen ? s->scan : s->rpos;
      if (s->rlen > from && memchr(s->buf + from, '\n', s->rlen - from)) return true;
      s->scan = s->rlen;
      break;
    }
    default: break;
  }
  return s->eof || s->err || s->timed_out;
}

/* Read what the kernel already has, without waiting (the fd is non-blocking):
   data that is there needs no trip through the loop. */
static void read_now(sock *s) {
  uv_os_fd_t fd;
  if (uv_fileno(&s->u.h, &fd) != 0) return;
  while (!recv_ready(s)) {
    if (!ensure_room(s)) {
      s->err = "receive buffer full";
      return;
    }
    ssize_t n = read(fd, s->buf + s->rlen, s->cap - s->rlen);
    if (n > 0) s->rlen += (size_t)n;
    else if (n == 0 || errno == ECONNRESET) s->eof = true;
    else if (errno == EINTR) continue;
    else if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    else s->err = uv_strerror(-errno);
  }
}

static void sock_on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b) {
  (void)hint;
  sock *s = h->data;
  if (!ensure_room(s)) *b = uv_buf_init(NULL, 0); /* read_cb gets UV_ENOBUFS */
  else *b = uv_buf_init(s->buf + s->rlen, (unsigned)(s->cap - s->rlen));
}

static void sock_on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b) {
  (void)b;
  sock *s = st->data;
  if (n > 0) s->rlen += (size_t)n;
  else if (n == UV_EOF || n == UV_ECONNRESET) s->eof = true;
  else if (n == UV_ENOBUFS) s->err = "receive buffer full";
  else if (n < 0) s->err = uv_strerror((int)n);
  if (s->c && s->op == OP_RECV && recv_ready(s)) {
    uv_read_stop(st);
    finish(s);
  } else if (n < 0) uv_read_stop(st);
}

/* Add p[0, n) to b without its CRs (luasocket's "*l" drops every one). */
static void add_no_cr(luaL_Buffer *b, const char *p, size_t n) {
  const char *end = p + n;
  while (p < end) {
    const char *cr = memchr(p, '\r', (size_t)(end - p));
    size_t len = cr ? (size_t)(cr - p) : (size_t)(end - p);
    luaL_addlstring(b, p, len);
    p += len + (cr ? 1 : 0);
  }
}

/* Push the outcome of the receive in progress: data, or nil, err, partial
   (what was received, consumed all the same), prefixed by arg 3. */
static int recv_result(lua_State *L, sock *s) {
  size_t plen;
  const char *prefix = luaL_optlstring(L, 3, "", &plen);
  const char *p = s->buf ? s->buf + s->rpos : "";
  size_t avail = s->rlen - s->rpos, take = avail;
  bool ok = false;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addlstring(&b, prefix, plen);
  switch (s->pat) {
    case PAT_LINE: {
      const char *nl = memchr(p, '\n', avail);
      if (nl) {
        ok = true;
        take = (size_t)(nl - p) + 1;
      }
      add_no_cr(&b, p, ok ? take - 1 : take);
      break;
    }
    case PAT_COUNT:
      if (avail >= s->want) {
        ok = true;
        take = s->want;
      }
      luaL_addlstring(&b, p, take);
      break;
    default: /* "*a": everything, up to the end of the stream */
      ok = s->eof && !s->err;
      luaL_addlstring(&b, p, take);
      break;
  }
  luaL_pushresult(&b);
  s->rpos += take;
  s->scan = 0;
  if (s->rpos == s->rlen && s->buf) { /* an idle socket (a pool's) holds no buffer */
    free(s->buf);
    s->buf = NULL;
    s->rpos = s->rlen = s->cap = 0;
  }
  if (ok) return 1;
  lua_pushnil(L);
  lua_pushstring(L, s->err ? s->err : s->eof ? "closed" : "timeout");
  lua_rotate(L, -3, -1);
  return 3;
}

static int recv_done(lua_State *L, int status, lua_KContext k);

/* sock:receive([pattern [, prefix]]) */
static int m_receive(lua_State *L) {
  lsock *ud = luaL_checkudata(L, 1, SOCK_TYPE);
  int pat;
  size_t want = 0;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_argcheck(L, n >= 0, 2, "negative size");
    pat = PAT_COUNT;
    want = (size_t)n;
  } else {
    const char *p = luaL_optstring(L, 2, "*l");
    if (*p == '*') p++; /* luasocket's "*l"; Lua 5.4's io style "l" */
    if (*p == 'l') pat = PAT_LINE;
    else if (*p == 'a') pat = PAT_ALL;
    else return luaL_argerror(L, 2, "invalid receive pattern");
  }
  luaL_optstring(L, 3, "");
  lua_settop(L, 3);
  int nret;
  sock *s = usable(L, ud, &nret);
  if (!s) return nret;
  s->pat = pat;
  s->want = want;
  s->scan = 0;
  s->timed_out = false;
  read_now(s);
  if (recv_ready(s)) return recv_result(L, s);
  if (ud->timeout == 0) {
    s->timed_out = true;
    return recv_result(L, s);
  }
  call *c = parkable(L);
  int rc = uv_read_start(&s->u.s, sock_on_alloc, sock_on_read);
  if (rc != 0) {
    s->err = errstr(rc);
    return recv_result(L, s);
  }
  return park(L, ud, c, OP_RECV, recv_done);
}

/* }====================================================== */

/* {====================================================== send */

static void sock_on_written(uv_write_t *req, int status) {
  sock *s = req->data;
  if (s->closing || !s->c || s->op != OP_SEND) return; /* closed meanwhile */
  s->status = status;
  if (status == 0) s->sent += s->wlen;
  finish(s);
}

/* luasocket's i, j of send(data, i, j): 1-based, negative from the end. */
static void send_range(lua_State *L, size_t len, lua_Integer *i, lua_Integer *j) {
  *i = luaL_optinteger(L, 3, 1);
  *j = luaL_optinteger(L, 4, -1);
  if (*i < 0) *i = (lua_Integer)len + *i + 1;
  if (*j < 0) *j = (lua_Integer)len + *j + 1;
  if (*i < 1) *i = 1;
  if (*j > (lua_Integer)len) *j = (lua_Integer)len;
}

static int send_failed(lua_State *L, const char *msg, lua_Integer last) {
  lua_pushnil(L);
  lua_pushstring(L, msg);
  lua_pushinteger(L, last);
  return 3;
}

static int send_done(lua_State *L, int status, lua_KContext k);

/* sock:send(data [, i [, j]]) -> index of the last byte sent | nil, err, last */
static int m_send(lua_State *L) {
  lsock *ud = luaL_checkudata(L, 1, SOCK_TYPE);
  size_t len;
  const char *data = luaL_checklstring(L, 2, &len);
  lua_Integer i, j;
  send_range(L, len, &i, &j);
  lua_settop(L, 4);
  int nret;
  sock *s = usable(L, ud, &nret);
  if (!s) return nret;
  if (i > j) {
    lua_pushinteger(L, i - 1);
    return 1;
  }
  uv_buf_t b = uv_buf_init((char *)data + i - 1, (unsigned)(j - i + 1));
  int w = uv_try_write(&s->u.s, &b, 1);
  if (w < 0 && w != UV_EAGAIN) return send_failed(L, errstr(w), i - 1);
  if (w < 0) w = 0;
  if ((lua_Integer)w == j - i + 1) {
    lua_pushinteger(L, j);
    return 1;
  }
  if (ud->timeout == 0) return send_failed(L, "timeout", i - 1 + w);
  call *c = parkable(L);
  /* the data stays on the parked coroutine's stack (arg 2) until the write
     ends, or until uv_close cancels it: uv_write needs no copy */
  b = uv_buf_init(b.base + w, b.len - (unsigned)w);
  s->sent = (size_t)w;
  s->wlen = b.len;
  s->status = 0;
  int rc = uv_write(&s->wreq, &s->u.s, &b, 1, sock_on_written);
  if (rc != 0) return send_failed(L, errstr(rc), i - 1 + w);
  return park(L, ud, c, OP_SEND, send_done);
}

/* }====================================================== */

/* {====================================================== continuations */

/* The sock the operation ran on: its memory lasts until close callbacks run,
   which cannot happen before its continuation (call_wake runs it, with one
   value; a call that ends first is never resumed). */
static sock *op_sock(lua_State *L, lua_KContext k) {
  int base = (int)(k >> 2);
  lua_settop(L, base);
  return ((lsock *)lua_touserdata(L, 1))->s;
}

static int connect_done(lua_State *L, int status, lua_KContext k) {
  (void)status;
  sock *s = op_sock(L, k);
  end_span(s, s->status != 0 ? errstr(s->status) : NULL);
  if (s->status != 0) return fail(L, errstr(s->status));
  if ((k & 3) == OP_CONNECT_RET) lua_pushvalue(L, 1);
  else lua_pushinteger(L, 1);
  return 1;
}

static int send_done(lua_State *L, int status, lua_KContext k) {
  (void)status;
  sock *s = op_sock(L, k);
  size_t len;
  lua_tolstring(L, 2, &len);
  lua_Integer i, j;
  send_range(L, len, &i, &j);
  if (s->status != 0) return send_failed(L, errstr(s->status), i - 1 + (lua_Integer)s->sent);
  lua_pushinteger(L, j);
  return 1;
}

static int recv_done(lua_State *L, int status, lua_KContext k) {
  (void)status;
  sock *s = op_sock(L, k);
  return recv_result(L, s);
}

/* }====================================================== */

/* {====================================================== the rest of the object */

static int m_settimeout(lua_State *L) {
  lsock *ud = luaL_checkudata(L, 1, SOCK_TYPE);
  double t = luaL_optnumber(L, 2, -1); /* mode ('b' or 't'): one operation's bound either way */
  ud->timeout = (isnan(t) || t < 0) ? -1 : t;
  lua_pushinteger(L, 1);
  return 1;
}

static int m_close(lua_State *L) {
  lsock *ud = luaL_checkudata(L, 1, SOCK_TYPE);
  sock *s = ud->s;
  if (s && s->c) return fail(L, "socket busy"); /* another call waits on it */
  ud->used = true;
  if (s) sock_close(s);
  lua_pushinteger(L, 1);
  return 1;
}

/* __close of a to-be-closed variable: close, unless another call waits on
   the socket (a __close cannot report that). */
static int m_tbc(lua_State *L) {
  lsock *ud = luaL_checkudata(L, 1, SOCK_TYPE);
  ud->used = true;
  if (ud->s && !ud->s->c) sock_close(ud->s);
  return 0;
}

/* __gc: the handle goes with the object. It may run without a call, in a
   state a reload replaced: the loop outlives every state, and the sock frees
   itself on it. (A socket some call waits on is on that call's stack: not
   garbage; should it be, the call's abort closes it.) */
static int m_gc(lua_State *L) {
  lsock *ud = luaL_checkudata(L, 1, SOCK_TYPE);
  sock *s = ud->s;
  ud->s = NULL;
  if (!s) return 0;
  s->ud = NULL;
  if (!s->c) sock_close(s);
  return 0;
}

static int m_setoption(lua_State *L) {
  lsock *ud = luaL_checkudata(L, 1, SOCK_TYPE);
  const char *name = luaL_checkstring(L, 2);
  bool on = lua_isnone(L, 3) || lua_toboolean(L, 3);
  sock *s = ud->s && !ud->s->closing ? ud->s : NULL;
  if (ud->kind == K_TCP && strcmp(name, "tcp-nodelay") == 0) {
    ud->nodelay = on;
    if (s) uv_tcp_nodelay(&s->u.tcp, on);
  } else if (ud->kind == K_TCP && strcmp(name, "keepalive") == 0) {
    ud->keepalive = on;
    if (s) uv_tcp_keepalive(&s->u.tcp, on, 60);
  } /* others (reuseaddr, linger, ...) mean nothing for a client here */
  lua_pushinteger(L, 1);
  return 1;
}

static int push_name(lua_State *L, int rc, const struct sockaddr_storage *ss) {
  if (rc != 0) return fail(L, errstr(rc));
  char ip[64];
  int port;
  if (ss->ss_family == AF_INET) {
    uv_ip4_name((const struct sockaddr_in *)ss, ip, sizeof ip);
    port = ntohs(((const struct sockaddr_in *)ss)->sin_port);
  } else if (ss->ss_family == AF_INET6) {
    uv_ip6_name((const struct sockaddr_in6 *)ss, ip, sizeof ip);
    port = ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
  } else return fail(L, "not an internet socket");
  lua_pushstring(L, ip);
  lua_pushinteger(L, port);
  lua_pushstring(L, ss->ss_family == AF_INET ? "inet" : "inet6");
  return 3;
}

static int sock_name(lua_State *L, bool peer) {
  lsock *ud = luaL_checkudata(L, 1, SOCK_TYPE);
  sock *s = ud->s;
  if (!s || s->closing || !s->connected) return fail(L, "closed");
  if (ud->kind != K_TCP) return fail(L, "not an internet socket");
  struct sockaddr_storage ss;
  int len = sizeof ss;
  int rc = peer ? uv_tcp_getpeername(&s->u.tcp, (struct sockaddr *)&ss, &len)
                : uv_tcp_getsockname(&s->u.tcp, (struct sockaddr *)&ss, &len);
  return push_name(L, rc, &ss);
}

static int m_getpeername(lua_State *L) { return sock_name(L, true); }
static int m_getsockname(lua_State *L) { return sock_name(L, false); }

/* sock:shutdown(["both"|"send"|"receive"]) */
static int m_shutdown(lua_State *L) {
  lsock *ud = luaL_checkudata(L, 1, SOCK_TYPE);
  static const char *const hows[] = {"both", "send", "receive", NULL};
  static const int how[] = {SHUT_RDWR, SHUT_WR, SHUT_RD};
  int h = luaL_checkoption(L, 2, "both", hows);
  sock *s = ud->s;
  uv_os_fd_t fd;
  if (!s || s->closing || !s->connected || uv_fileno(&s->u.h, &fd) != 0) return fail(L, "closed");
  shutdown(fd, how[h]);
  lua_pushinteger(L, 1);
  return 1;
}

/* sock:dirty(): is received data waiting in the object's buffer? */
static int m_dirty(lua_State *L) {
  lsock *ud = luaL_checkudata(L, 1, SOCK_TYPE);
  lua_pushboolean(L, ud->s && ud->s->rlen > ud->s->rpos);
  return 1;
}

static int m_tostring(lua_State *L) {
  lsock *ud = luaL_checkudata(L, 1, SOCK_TYPE);
  const char *kind = ud->kind == K_TCP ? "tcp" : "unix";
  const char *st = ud->s && !ud->s->closing ? "client" : ud->used ? "closed" : "master";
  lua_pushfstring(L, "%s{%s}: %p", kind, st, (void *)ud);
  return 1;
}

/* }====================================================== */

/* {====================================================== the module */

static lsock *new_sock(lua_State *L, int kind, int family) {
  lsock *ud = lua_newuserdatauv(L, sizeof *ud, 0);
  memset(ud, 0, sizeof *ud);
  ud->kind = kind;
  ud->family = family;
  ud->timeout = -1;
  luaL_setmetatable(L, SOCK_TYPE);
  return ud;
}

static int l_tcp(lua_State *L) {
  new_sock(L, K_TCP, AF_UNSPEC);
  return 1;
}
static int l_tcp4(lua_State *L) {
  new_sock(L, K_TCP, AF_INET);
  return 1;
}
static int l_tcp6(lua_State *L) {
  new_sock(L, K_TCP, AF_INET6);
  return 1;
}
/* unix.stream(), and unix() itself (its __call) */
static int l_unix(lua_State *L) {
  new_sock(L, K_UNIX, AF_UNIX);
  return 1;
}

/* mcp.socket.connect(host, port): a new tcp object, connected, or nil, err. */
static int l_connect(lua_State *L) {
  luaL_checkstring(L, 1);
  luaL_checkinteger(L, 2);
  lua_settop(L, 2);
  new_sock(L, K_TCP, AF_UNSPEC);
  lua_insert(L, 1);
  return do_connect(L, OP_CONNECT_RET);
}

/* mcp.socket.gettime(): seconds since the epoch, with a fraction */
static int l_gettime(lua_State *L) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  lua_pushnumber(L, (double)tv.tv_sec + tv.tv_usec / 1e6);
  return 1;
}

void io_socket_push(lua_State *L) {
  static const luaL_Reg methods[] = {
      {"connect", m_connect},         {"send", m_send},
      {"receive", m_receive},         {"settimeout", m_settimeout},
      {"close", m_close},             {"setoption", m_setoption},
      {"getpeername", m_getpeername}, {"getsockname", m_getsockname},
      {"shutdown", m_shutdown},       {"dirty", m_dirty},
      {NULL, NULL}};
  if (luaL_newmetatable(L, SOCK_TYPE)) {
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, m_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, m_tbc);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, m_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, "mcp.socket");
    lua_setfield(L, -2, "__name");
  }
  lua_pop(L, 1);
  static const luaL_Reg funcs[] = {{"tcp", l_tcp},         {"tcp4", l_tcp4},
                                   {"tcp6", l_tcp6},       {"connect", l_connect},
                                   {"gettime", l_gettime}, {NULL, NULL}};
  luaL_newlib(L, funcs);
  /* socket.unix: callable, with .stream() (luasocket's socket.unix module) */
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, l_unix);
  lua_setfield(L, -2, "stream");
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, l_unix);
  lua_setfield(L, -2, "__call");
  lua_setmetatable(L, -2);
  lua_setfield(L, -2, "unix");
  lua_pushliteral(L, "mcp.socket 1.0");
  lua_setfield(L, -2, "_VERSION");
}

/* }====================================================== */
