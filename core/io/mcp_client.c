/* mcp_client.c — the C half of mcp.client (see mcp_client.h; the protocol,
 * the handshake and the checks of answers are lua/client.lua's).
 *
 * A stdio upstream is a link: its declaration (argv, env, cwd) and its
 * current child, if any. Links live as long as the process: an app reload
 * that declares the same upstream (the same key) finds the same link and
 * the same child, so the upstream's session survives the reload. A changed
 * declaration ends the child; the next request starts the new one.
 *
 * The child is started with mcp.exec's spawn (io_exec_spawn: its own
 * session and process group, killed as a group) and read on the engine's
 * loop whoever waits: each line of its stdout is one JSON-RPC message
 * (bounded by max_message; a longer one ends the child). A response goes to
 * the request with its id (ids are the link's, so the app versions sharing
 * a child never collide), a progress notification to the request whose id
 * is its token; a request of the upstream is refused (ping answered), other
 * lines are dropped. A request's answer waits in its `pending` until its
 * call asks (link:wait), or wakes the call parked on it.
 *
 * When the child dies, every request in flight gets an error naming the
 * upstream, and the next request starts a new child: at once after a child
 * that had answered, else after a backoff that doubles (RETRY_FIRST up to
 * RETRY_MAX) while children keep dying before any answer.
 *
 * A call that ends while it waits (deadline, cancel) tells the upstream
 * with notifications/cancelled, as does link:forget with a reason. */
/* _GNU_SOURCE (the build defines it) */
#include "mcp_client.h"

#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <uv.h>

#include "buf.h"
#include "call.h"
#include "clock.h"
#include "io_exec.h"
#include "io_http.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "sandbox.h"
#include "trace.h"

extern char **environ;

#define LINK_TYPE "mcp.client.link"
#define SPAN_TYPE "mcp.client.span"
#define DEFAULT_MAX_MESSAGE ((size_t)16 << 20)
#define PROGRESS_KEPT 64   /* progress notifications kept for a call not waiting */
#define ERR_LINE_MAX 1024  /* a stderr line logged, at most */
#define WRITE_QUEUE_MAX ((size_t)64 << 20) /* bytes queued to a child that does not read */
#define RETRY_FIRST 0.25
#define RETRY_MAX 30.0
#define READ_CHUNK 65536

typedef struct item {
  struct item *next;
  char kind; /* 'r' response, 'p' progress, 'e' error (a message) */
  size_t n;
  char p[]; /* n bytes */
} item;

typedef struct uplink uplink;

typedef struct pending {
  call_wait wait; /* first: the abort gets the pending */
  struct pending *next;
  uplink *l;
  long long id;
  call *c; /* parked on it, or NULL */
  item *head, *tail;
  int progress; /* progress items queued */
  bool answered;
} pending;

typedef struct proc {
  uplink *l; /* NULL once retired */
  pid_t pid;
  int pidfd;
  uv_poll_t watch;
  uv_pipe_t in, out, err;
  int handles; /* open: freed at 0 */
  buf line, errline;
  bool exited;
} proc;

struct uplink {
  uplink *next;
  char *name, *key, *cwd;
  char **argv, **envp; /* malloc'd, NULL-terminated; envp NULL: the server's */
  size_t max_message;
  proc *p;
  pending *pending;
  long long next_id;
  unsigned gen; /* children started */
  char *state;  /* lua/client.lua's: the handshake of child gen */
  size_t state_len;
  unsigned state_gen;
  struct claim_wait *claim_waiters; /* calls waiting for another's handshake */
  double claimed_at; /* a call does the handshake since then (0: none) */
  int fails;       /* children in a row that died before any answer */
  double retry_at; /* clock_now() before which no child is started */
  bool answered;   /* the current child answered something */
  char why[256];   /* how the last child ended */
};

static uplink *links;

/* A call waiting while another does the child's handshake. */
typedef struct claim_wait {
  call_wait wait; /* first */
  struct claim_wait *next;
  uplink *l;
  call *c;
} claim_wait;

/* A handshake claimed this long ago is taken as abandoned (its call ended
   without releasing it). */
#define CLAIM_STALE 30.0

/* Wakes are deferred to a timer of the loop: release_claim runs inside Lua
   too (set_state), where call_wake may not be called. */
static uv_timer_t *wake_timer;

static void wake_waiters(uv_timer_t *t) {
  (void)t;
  for (uplink *l = links; l; l = l->next) {
    if (l->claimed_at) continue; /* claimed again meanwhile: they wait on */
    while (l->claim_waiters) {
      claim_wait *w = l->claim_waiters;
      l->claim_waiters = w->next;
      call *c = w->c;
      free(w);
      call_wake(c, 0); /* runs Lua: it may claim (then the others wait on) */
      if (l->claimed_at) break;
    }
  }
}

/* The handshake is over (done, failed, or the child died): the calls that
   waited for it go on (each opens again, and one may claim it). */
static void release_claim(uplink *l) {
  l->claimed_at = 0;
  if (!l->claim_waiters) return;
  if (!wake_timer) {
    if (!(wake_timer = malloc(sizeof *wake_timer))) return;
    uv_timer_init(call_loop(l->claim_waiters->c), wake_timer);
    uv_unref((uv_handle_t *)wake_timer);
  }
  uv_timer_start(wake_timer, wake_waiters, 0, 0);
}

static void claim_abort(call_wait *cw) {
  claim_wait *w = (claim_wait *)cw;
  claim_wait **pp = &w->l->claim_waiters;
  while (*pp && *pp != w) pp = &(*pp)->next;
  if (*pp) *pp = w->next;
  free(w);
}

/* Kept across app versions: what an HTTP upstream's handshake found (its
   revision, its session), by the declaration's key. */
typedef struct kept {
  struct kept *next;
  char *key, *value;
  size_t value_len;
} kept;
static kept *kepts;
/* keep() runs on the engine (handlers) and on a reload's loading thread (mcp.mount) */
static pthread_mutex_t keep_mu = PTHREAD_MUTEX_INITIALIZER;

/* {====== pending requests */

static pending *find_pending(uplink *l, long long id) {
  for (pending *p = l->pending; p; p = p->next)
    if (p->id == id) return p;
  return NULL;
}

static void free_pending(pending *p) {
  pending **pp = &p->l->pending;
  while (*pp && *pp != p) pp = &(*pp)->next;
  if (*pp) *pp = p->next;
  for (item *i = p->head, *n; i; i = n) n = i->next, free(i);
  free(p);
}

static void write_line(uplink *l, const char *s, size_t n);

static void send_cancelled(uplink *l, long long id, const char *reason) {
  if (!l->p) return;
  buf b;
  buf_init(&b);
  buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":%lld,\"reason\":", id);
  json_encode_string(&b, reason, strlen(reason));
  buf_lit(&b, "}}");
  write_line(l, b.p, b.len);
  buf_free(&b);
}

/* The call ended while it waited: the upstream is told, the answer dropped. */
static void pending_abort(call_wait *w) {
  pending *p = (pending *)w;
  p->c = NULL;
  if (!p->answered) send_cancelled(p->l, p->id, "the call ended (timeout or cancel)");
  free_pending(p);
}

/* Queue an item on p; wake its call if it waits. After this, p may be gone. */
static void deliver(pending *p, char kind, const char *s, size_t n) {
  if (kind == 'p' && p->progress >= PROGRESS_KEPT) { /* the oldest progress goes */
    item **pp = &p->head;
    while (*pp && (*pp)->kind != 'p') pp = &(*pp)->next;
    if (*pp) {
      item *old = *pp;
      *pp = old->next;
      if (p->tail == old) {
        p->tail = NULL;
        for (item *i = p->head; i; i = i->next) p->tail = i;
      }
      free(old);
      p->progress--;
    }
  }
  item *it = malloc(sizeof *it + n + 1);
  if (!it) return;
  it->next = NULL;
  it->kind = kind;
  it->n = n;
  memcpy(it->p, s, n);
  it->p[n] = 0;
  if (p->tail) p->tail->next = it;
  else p->head = it;
  p->tail = it;
  if (kind == 'p') p->progress++;
  else p->answered = true;
  call *c = p->c;
  if (c) {
    p->c = NULL;
    call_wake(c, 0); /* wait_done takes the item */
  }
}

/* }====== */

/* {====== the child */

static void proc_on_closed(uv_handle_t *h) {
  proc *pr = h->data;
  if (--pr->handles > 0) return;
  if (pr->pid > 0) {
    while (waitpid(pr->pid, NULL, 0) < 0 && errno == EINTR) {}
    close(pr->pidfd);
  }
  buf_free(&pr->line);
  buf_free(&pr->errline);
  free(pr);
}

static void proc_close(void *h) {
  if (!uv_is_closing(h)) uv_close(h, proc_on_closed);
}

/* The child is over for its link (it died, or its declaration changed):
   killed with its group, its handles closed (it is reaped at the last),
   every request in flight answered with why. */
static void retire(proc *pr, const char *why) {
  uplink *l = pr->l;
  if (!l) return;
  pr->l = NULL;
  l->p = NULL;
  snprintf(l->why, sizeof l->why, "upstream %s: %s", l->name, why);
  if (l->answered) l->fails = 0, l->retry_at = 0;
  else {
    l->fails++;
    double d = RETRY_FIRST * pow(2, l->fails - 1);
    l->retry_at = clock_now() + (d > RETRY_MAX ? RETRY_MAX : d);
  }
  free(l->state);
  l->state = NULL;
  release_claim(l);
  kill(-pr->pid, SIGKILL);
  if (!pr->exited) kill(pr->pid, SIGKILL);
  proc_close(&pr->watch);
  proc_close(&pr->in);
  proc_close(&pr->out);
  proc_close(&pr->err);
  log_msg(LOG_WARNING, "%s", l->why);
  /* deliver may run Lua that starts requests (on a new child): walk a
     snapshot of the ids in flight now */
  size_t n = 0;
  for (pending *p = l->pending; p; p = p->next) n++;
  long long *ids = n ? malloc(n * sizeof *ids) : NULL;
  size_t k = 0;
  for (pending *p = l->pending; p && ids; p = p->next)
    if (!p->answered) ids[k++] = p->id;
  for (size_t i = 0; i < k; i++) {
    pending *p = find_pending(l, ids[i]);
    if (p && !p->answered) deliver(p, 'e', l->why, strlen(l->why));
  }
  free(ids);
}

static void on_exit_fd(uv_poll_t *w, int status, int events) {
  (void)status, (void)events;
  proc *pr = w->data;
  siginfo_t info;
  memset(&info, 0, sizeof info);
  if (waitid(P_PID, (id_t)pr->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == EINTR) return;
    info.si_pid = pr->pid, info.si_code = CLD_EXITED, info.si_status = -1;
  }
  if (info.si_pid == 0) return;
  pr->exited = true;
  uv_poll_stop(w);
  char why[96];
  if (info.si_code == CLD_EXITED) snprintf(why, sizeof why, "the process ended (exit code %d)", info.si_status);
  else snprintf(why, sizeof why, "the process ended (signal %d)", info.si_status);
  retire(pr, why);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
  (void)suggested;
  proc *pr = h->data;
  buf *into = h == (uv_handle_t *)&pr->out ? &pr->line : &pr->errline;
  buf_reserve(into, READ_CHUNK);
  *b = uv_buf_init(into->p + into->len, READ_CHUNK);
}

/* What the child asked of us: ping is answered, anything else refused. */
static void answer_request(uplink *l, json_span id, json_span method) {
  buf b;
  buf_init(&b);
  buf_lit(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
  buf_put(&b, id.p, id.n);
  if (json_string_eq(method, "ping")) {
    buf_lit(&b, ",\"result\":{}}");
  } else {
    buf_lit(&b, ",\"error\":{\"code\":-32601,\"message\":\"luamcp's client does not take ");
    buf_put(&b, method.p + 1, method.n > 2 && method.n < 80 ? method.n - 2 : 0);
    buf_lit(&b, " requests\"}}");
  }
  write_line(l, b.p, b.len);
  buf_free(&b);
}

static bool span_id(json_span v, long long *id) {
  if (!v.n || v.n > 18) return false;
  char tmp[20];
  memcpy(tmp, v.p, v.n);
  tmp[v.n] = 0;
  char *end;
  *id = strtoll(tmp, &end, 10);
  return *end == 0;
}

/* One line of the child's stdout. */
static void on_line(uplink *l, const char *s, size_t n) {
  const char *err;
  size_t pos;
  while (n && (s[n - 1] == '\r' || s[n - 1] == ' ')) n--;
  if (!n) return;
  if (s[0] != '{' || !json_validate(s, n, &err, &pos)) {
    log_msg(LOG_DEBUG, "upstream %s: a line that is not a JSON object dropped", l->name);
    return;
  }
  json_span msg = {s, n}, id = {0}, method = {0}, params = {0}, token = {0};
  bool has_id = json_object_get(msg, "id", &id) && json_kind(id) != 'n';
  bool has_method = json_object_get(msg, "method", &method) && json_kind(method) == '"';
  if (has_method && has_id) {
    answer_request(l, id, method);
    return;
  }
  long long n_id;
  if (has_method) {
    if (json_string_eq(method, "notifications/progress") && json_object_get(msg, "params", &params) &&
        json_object_get(params, "progressToken", &token) && span_id(token, &n_id)) {
      pending *p = find_pending(l, n_id);
      if (p && !p->answered) deliver(p, 'p', s, n);
    }
    return;
  }
  if (!has_id || !span_id(id, &n_id)) return;
  l->answered = true;
  pending *p = find_pending(l, n_id);
  if (p && !p->answered) deliver(p, 'r', s, n);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b) {
  (void)b;
  proc *pr = st->data;
  bool is_out = st == (uv_stream_t *)&pr->out;
  buf *in = is_out ? &pr->line : &pr->errline;
  if (nread < 0) {
    uv_read_stop(st);
    if (is_out && pr->l) retire(pr, "the process ended (its output closed)");
    return;
  }
  if (nread == 0) return;
  size_t start = in->len;
  in->len += (size_t)nread;
  if (!is_out) { /* stderr: logged a line at a time, long lines cut */
    char *nl;
    while ((nl = memchr(in->p, '\n', in->len))) {
      size_t len = (size_t)(nl - in->p);
      int shown = (int)(len > ERR_LINE_MAX ? ERR_LINE_MAX : len);
      if (pr->l) log_msg(LOG_DEBUG, "upstream %s: %.*s", pr->l->name, shown, in->p);
      memmove(in->p, nl + 1, in->len - len - 1);
      in->len -= len + 1;
    }
    if (in->len > ERR_LINE_MAX) in->len = 0;
    return;
  }
  /* stdout: every complete line, in order; the loop stops if a line's
     delivery retired this child (the rest is not its link's any more) */
  size_t done = 0;
  const char *nl = memchr(in->p + start, '\n', in->len - start);
  while (nl && pr->l) {
    size_t len = (size_t)(nl - (in->p + done));
    on_line(pr->l, in->p + done, len);
    done += len + 1;
    nl = memchr(in->p + done, '\n', in->len - done);
  }
  if (!pr->l) return;
  memmove(in->p, in->p + done, in->len - done);
  in->len -= done;
  if (in->len > pr->l->max_message) {
    char why[96];
    snprintf(why, sizeof why, "the process wrote a message over %zu bytes", pr->l->max_message);
    retire(pr, why);
  }
}

static void on_written(uv_write_t *req, int status) {
  (void)status; /* EPIPE: the child is gone; its exit tells the rest */
  free(req);
}

static void write_line(uplink *l, const char *s, size_t n) {
  proc *pr = l->p;
  if (!pr) return;
  uv_write_t *req = malloc(sizeof *req + n + 1);
  if (!req) return;
  char *copy = (char *)(req + 1);
  memcpy(copy, s, n);
  copy[n] = '\n';
  uv_buf_t b = uv_buf_init(copy, (unsigned)n + 1);
  if (uv_write(req, (uv_stream_t *)&pr->in, &b, 1, on_written) != 0) free(req);
}

static bool open_pipe(proc *pr, uv_loop_t *loop, uv_pipe_t *p, int fd) {
  uv_pipe_init(loop, p, 0);
  uv_unref((uv_handle_t *)p); /* an idle upstream must not keep the engine's loop alive */
  p->data = pr;
  pr->handles++;
  if (uv_pipe_open(p, fd) == 0) return true;
  close(fd);
  return false;
}

/* At exit, the children go with the server (they lead sessions of their
   own: no terminal's signal reaches them). */
static void kill_children(void) {
  for (uplink *l = links; l; l = l->next)
    if (l->p) kill(-l->p->pid, SIGKILL);
}

/* Start l's child (Lua errors: the caller is a Lua function). */
static void start_child(lua_State *L, uplink *l, uv_loop_t *loop) {
  const sandbox *sb = sandbox_of(L);
  if (sb) sandbox_check_exec(L, sb, l->argv[0], l->cwd);
  double now = clock_now();
  if (now < l->retry_at) {
    char msg[400]; /* lua_pushfstring has no %.1f */
    snprintf(msg, sizeof msg, "%s; %d failed starts in a row, the next try in %.1f s", l->why, l->fails,
             l->retry_at - now);
    luaL_error(L, "%s", msg);
  }
  static bool hooked;
  if (!hooked) hooked = atexit(kill_children) == 0;
  pid_t pid;
  int mine[3];
  int err = io_exec_spawn((const char *const *)l->argv, l->envp, l->cwd, true, &pid, mine);
  if (err) {
    l->fails++;
    double d = RETRY_FIRST * pow(2, l->fails - 1);
    l->retry_at = now + (d > RETRY_MAX ? RETRY_MAX : d);
    snprintf(l->why, sizeof l->why, "upstream %s: cannot run '%s': %s", l->name, l->argv[0],
             uv_strerror(uv_translate_sys_error(err)));
    luaL_error(L, "%s", l->why);
  }
  proc *pr = calloc(1, sizeof *pr);
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (!pr || pidfd < 0) {
    kill(-pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    for (int i = 0; i < 3; i++) close(mine[i]);
    if (pidfd >= 0) close(pidfd);
    free(pr);
    luaL_error(L, "upstream %s: cannot watch the process", l->name);
  }
  buf_init(&pr->line);
  buf_init(&pr->errline);
  pr->pid = pid;
  pr->pidfd = pidfd;
  pr->l = l;
  uv_poll_init(loop, &pr->watch, pidfd);
  uv_unref((uv_handle_t *)&pr->watch);
  pr->watch.data = pr;
  pr->handles++;
  uv_poll_start(&pr->watch, UV_READABLE, on_exit_fd);
  open_pipe(pr, loop, &pr->in, mine[0]);
  if (open_pipe(pr, loop, &pr->out, mine[1])) uv_read_start((uv_stream_t *)&pr->out, on_alloc, on_read);
  if (open_pipe(pr, loop, &pr->err, mine[2])) uv_read_start((uv_stream_t *)&pr->err, on_alloc, on_read);
  l->p = pr;
  l->gen++;
  l->answered = false;
  free(l->state);
  l->state = NULL;
}

/* }====== */

static void free_timer(uv_handle_t *h) { free(h); }

void mcp_client_close_all(void) {
  if (wake_timer) uv_close((uv_handle_t *)wake_timer, free_timer);
  wake_timer = NULL;
  for (uplink *l = links; l; l = l->next) {
    proc *pr = l->p;
    if (!pr) continue;
    pr->l = NULL;
    l->p = NULL;
    kill(-pr->pid, SIGKILL);
    if (!pr->exited) kill(pr->pid, SIGKILL);
    proc_close(&pr->watch);
    proc_close(&pr->in);
    proc_close(&pr->out);
    proc_close(&pr->err);
    for (pending **pp = &l->pending; *pp;) { /* no call waits by now; one that did keeps its own */
      pending *p = *pp;
      if (p->c) {
        pp = &p->next;
        continue;
      }
      *pp = p->next;
      for (item *i = p->head, *n; i; i = n) n = i->next, free(i);
      free(p);
    }
  }
}

/* {====== the Lua side: links */

static uplink *check_link(lua_State *L) { return *(uplink **)luaL_checkudata(L, 1, LINK_TYPE); }

static void free_strv(char **v) {
  for (char **p = v; p && *p; p++) free(*p);
  free(v);
}

/* The strings of list t (1..n), malloc'd; NULL-terminated. */
static char **strv_of(lua_State *L, int t, size_t extra) {
  size_t n = lua_rawlen(L, t);
  char **v = calloc(n + extra + 1, sizeof *v);
  for (size_t i = 0; v && i < n; i++) {
    lua_rawgeti(L, t, (lua_Integer)i + 1);
    v[i] = strdup(lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  return v;
}

/* The environment: the server's, with the names of table t set (a string)
   or removed (false). */
static char **env_of(lua_State *L, int t) {
  if (lua_isnoneornil(L, t)) return NULL;
  size_t n = 0, k = 0;
  for (char **e = environ; *e; e++) n++;
  lua_pushnil(L);
  while (lua_next(L, t)) lua_pop(L, 1), n++;
  char **v = calloc(n + 1, sizeof *v);
  if (!v) return NULL;
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (eq) {
      lua_pushlstring(L, *e, (size_t)(eq - *e));
      bool named = lua_rawget(L, t) != LUA_TNIL;
      lua_pop(L, 1);
      if (named) continue;
    }
    v[k++] = strdup(*e);
  }
  lua_pushnil(L);
  while (lua_next(L, t)) {
    if (lua_type(L, -1) == LUA_TSTRING) {
      v[k++] = strdup(lua_pushfstring(L, "%s=%s", lua_tostring(L, -2), lua_tostring(L, -1)));
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  return v;
}

/* stdio(name, key, argv, env, cwd, max_message) -> link: the link of that
   name, made or found (a different key: the old child ends). lua/client.lua
   has checked the values. On the loop's thread (from a call). */
static int client_stdio(lua_State *L) {
  const char *name = luaL_checkstring(L, 1), *key = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  const char *cwd = luaL_optstring(L, 5, NULL);
  lua_Integer max = luaL_optinteger(L, 6, 0);
  uplink *l = links;
  while (l && strcmp(l->name, name) != 0) l = l->next;
  if (l && strcmp(l->key, key) != 0) { /* redeclared: its child ends, its requests fail */
    if (l->p) retire(l->p, "its declaration changed");
    l->fails = 0, l->retry_at = 0;
    free(l->key), free(l->cwd), free_strv(l->argv), free_strv(l->envp);
    l->key = NULL, l->cwd = NULL, l->argv = l->envp = NULL;
  }
  if (!l) {
    if (!(l = calloc(1, sizeof *l)) || !(l->name = strdup(name))) return luaL_error(L, "out of memory");
    l->next = links;
    links = l;
  }
  if (!l->key) {
    l->key = strdup(key);
    l->cwd = cwd ? strdup(cwd) : NULL;
    l->argv = strv_of(L, 3, 0);
    l->envp = env_of(L, 4);
    if (!l->key || !l->argv || !l->argv[0]) return luaL_error(L, "out of memory");
  }
  l->max_message = max > 0 ? (size_t)max : DEFAULT_MAX_MESSAGE;
  uplink **box = lua_newuserdatauv(L, sizeof *box, 0);
  *box = l;
  luaL_setmetatable(L, LINK_TYPE);
  return 1;
}

/* link:open() -> id, gen, state|nil: a request id, its child started if
   none runs (raises when it cannot be); state: what set_state kept for
   this child (nil: it needs its handshake). */
static int link_open(lua_State *L) {
  uplink *l = check_link(L);
  call *c = call_current(L);
  if (!c) return luaL_error(L, "upstream %s: only inside a call", l->name);
  if (!l->p) start_child(L, l, call_loop(c));
  pending *p = calloc(1, sizeof *p);
  if (!p) return luaL_error(L, "out of memory");
  p->l = l;
  p->id = ++l->next_id;
  p->wait.abort = pending_abort;
  p->wait.what = "mcp.client";
  p->next = l->pending;
  l->pending = p;
  lua_pushinteger(L, p->id);
  lua_pushinteger(L, l->gen);
  if (l->state && l->state_gen == l->gen) lua_pushlstring(L, l->state, l->state_len);
  else lua_pushnil(L);
  return 3;
}

/* link:write(json): one message to the child (a line). */
static int link_write(lua_State *L) {
  uplink *l = check_link(L);
  size_t n;
  const char *s = luaL_checklstring(L, 2, &n);
  if (!l->p) return luaL_error(L, "%s", l->why[0] ? l->why : "upstream: no process");
  if (uv_stream_get_write_queue_size((uv_stream_t *)&l->p->in) > WRITE_QUEUE_MAX)
    return luaL_error(L, "upstream %s: the process does not read its input", l->name);
  write_line(l, s, n);
  return 0;
}

/* Push the first item of p (under lua_pcall: memory errors are caught) */
static int push_item(lua_State *L) {
  pending *p = lua_touserdata(L, 1);
  item *it = p->head;
  lua_pushstring(L, it->kind == 'r' ? "response" : it->kind == 'p' ? "progress" : "error");
  lua_pushlstring(L, it->p, it->n);
  return 2;
}

static int take_item(lua_State *L, pending *p) {
  item *it = p->head;
  call *c = call_current(L);
  if (it->kind != 'e' && c && it->n > call_memory_room(c)) {
    lua_pushstring(L, "error");
    lua_pushfstring(L, "upstream %s: its answer (%I bytes) is over what the call may still hold (--memory-limit)",
                    p->l->name, (lua_Integer)it->n);
  } else {
    lua_pushcfunction(L, push_item);
    lua_pushlightuserdata(L, p);
    if (lua_pcall(L, 1, 2, 0) != LUA_OK) return lua_error(L);
  }
  p->head = it->next;
  if (!p->head) p->tail = NULL;
  if (it->kind == 'p') p->progress--;
  free(it);
  return 2;
}

static int wait_done(lua_State *L, int status, lua_KContext k) {
  (void)status;
  return take_item(L, (pending *)(intptr_t)k);
}

/* link:wait(id) -> "response", json | "progress", json | "error", message;
   parks the call until one comes. */
static int link_wait(lua_State *L) {
  uplink *l = check_link(L);
  pending *p = find_pending(l, luaL_checkinteger(L, 2));
  if (!p) return luaL_error(L, "upstream %s: no request %d in flight", l->name, (int)lua_tointeger(L, 2));
  if (p->head) return take_item(L, p);
  call *c = call_current(L);
  const char *why = call_cannot_park(L, c);
  if (why) return luaL_error(L, "mcp.client: %s", why);
  if (!lua_isyieldable(L)) return luaL_error(L, "mcp.client: cannot wait here (inside a C function)");
  p->c = c;
  call_park(c, &p->wait);
  return lua_yieldk(L, 0, (lua_KContext)(intptr_t)p, wait_done);
}

/* link:forget(id [, reason]): the request is over for its call; with a
   reason, and no answer yet, the upstream is told (notifications/cancelled). */
static int link_forget(lua_State *L) {
  uplink *l = check_link(L);
  pending *p = find_pending(l, luaL_checkinteger(L, 2));
  if (!p || p->c) return 0; /* gone, or a call parked on it (its abort does it) */
  const char *reason = luaL_optstring(L, 3, NULL);
  if (reason && !p->answered) send_cancelled(l, p->id, reason);
  free_pending(p);
  return 0;
}

/* link:set_state(gen, s): the handshake's result, for child gen only. */
static int link_set_state(lua_State *L) {
  uplink *l = check_link(L);
  lua_Integer gen = luaL_checkinteger(L, 2);
  size_t n;
  const char *s = luaL_checklstring(L, 3, &n);
  if ((unsigned)gen != l->gen || !l->p) return 0;
  char *copy = malloc(n + 1);
  if (!copy) return luaL_error(L, "out of memory");
  memcpy(copy, s, n + 1);
  free(l->state);
  l->state = copy;
  l->state_len = n;
  l->state_gen = l->gen;
  release_claim(l);
  return 0;
}

static int claim_done(lua_State *L, int status, lua_KContext k) {
  (void)status, (void)k;
  lua_pushboolean(L, 0);
  return 1;
}

/* link:claim() -> true: this call does the child's handshake (then
   set_state, or release on failure); false once another call's is over
   (parks meanwhile): open again. */
static int link_claim(lua_State *L) {
  uplink *l = check_link(L);
  double now = clock_now();
  if (!l->claimed_at || now - l->claimed_at > CLAIM_STALE) {
    l->claimed_at = now;
    lua_pushboolean(L, 1);
    return 1;
  }
  call *c = call_current(L);
  const char *why = call_cannot_park(L, c);
  if (why) return luaL_error(L, "mcp.client: %s", why);
  claim_wait *w = calloc(1, sizeof *w);
  if (!w) return luaL_error(L, "out of memory");
  w->wait.abort = claim_abort;
  w->wait.what = "mcp.client";
  w->l = l;
  w->c = c;
  w->next = l->claim_waiters;
  l->claim_waiters = w;
  call_park(c, &w->wait);
  return lua_yieldk(L, 0, 0, claim_done);
}

/* link:release(): the handshake this call claimed failed */
static int link_release(lua_State *L) {
  release_claim(check_link(L));
  return 0;
}

/* notify(url, headers, body): an HTTP POST nobody waits for (a
   notification to an HTTP upstream; runs in a <close> handler too) */
static int client_notify(lua_State *L) {
  const char *url = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  size_t len;
  const char *body = luaL_checklstring(L, 3, &len);
  call *c = call_current(L);
  if (!c) return 0;
  lua_settop(L, 3);
  lua_newtable(L); /* 4: the "Name: value" lines, anchored */
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    if (n < 32 && lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING) {
      lua_pushfstring(L, "%s: %s", lua_tostring(L, -2), lua_tostring(L, -1));
      lua_rawseti(L, 4, ++n);
    }
    lua_pop(L, 1);
  }
  const char *hdrs[33];
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 4, i + 1);
    hdrs[i] = lua_tostring(L, -1); /* kept alive by table 4 */
    lua_pop(L, 1);
  }
  hdrs[n] = NULL;
  lua_pushboolean(L, io_http_send(call_loop(c), url, hdrs, body, len, 5000));
  return 1;
}

/* Under keep_mu: set key's value when set (v NULL: forget it), then a
   malloc'd copy of its value in *out (NULL: none). False: out of memory. */
static bool keep_locked(const char *key, bool set, const char *v, size_t n, char **out, size_t *outn) {
  kept **pp = &kepts;
  while (*pp && strcmp((*pp)->key, key) != 0) pp = &(*pp)->next;
  kept *k = *pp;
  *out = NULL;
  if (set) {
    char *copy = v ? malloc(n + 1) : NULL;
    if (v && !copy) return false;
    if (v) memcpy(copy, v, n + 1);
    if (!k && v) {
      if (!(k = calloc(1, sizeof *k)) || !(k->key = strdup(key))) {
        free(k), free(copy);
        return false;
      }
      k->next = kepts;
      kepts = k;
    }
    if (k) free(k->value), k->value = copy, k->value_len = n;
  }
  if (!(k && k->value)) return true;
  if (!(*out = malloc(k->value_len + 1))) return false;
  memcpy(*out, k->value, k->value_len);
  *outn = k->value_len;
  return true;
}

/* keep(key [, value]) -> the value kept under key (nil: none), after
   setting it when given (false forgets it). Process-wide: it runs on the
   engine (handlers) and on a reload's loading thread (mcp.mount). */
static int client_keep(lua_State *L) {
  const char *key = luaL_checkstring(L, 1);
  bool set = lua_gettop(L) >= 2;
  size_t n = 0;
  const char *v = set && lua_toboolean(L, 2) ? luaL_checklstring(L, 2, &n) : NULL;
  char *out = NULL;
  size_t outn = 0;
  pthread_mutex_lock(&keep_mu);
  bool ok = keep_locked(key, set, v, n, &out, &outn);
  pthread_mutex_unlock(&keep_mu);
  if (!ok) return luaL_error(L, "out of memory");
  if (!out) return lua_pushnil(L), 1;
  lua_pushlstring(L, out, outn); /* may raise (memory): out then leaks, once */
  free(out);
  return 1;
}

/* reload(): ask the server to load the app again (as SIGHUP does: main.c's
   signal thread hears it), for mcp.mount's refresh, which found the
   upstream's lists changed */
static int client_reload(lua_State *L) {
  (void)L;
  kill(getpid(), SIGHUP);
  return 0;
}

/* link:pid() -> the child's process id, or nil (for tests and logs) */
static int link_pid(lua_State *L) {
  uplink *l = check_link(L);
  if (l->p) lua_pushinteger(L, l->p->pid);
  else lua_pushnil(L);
  return 1;
}

/* }====== */

/* {====== spans and metrics of upstream requests */

typedef struct client_span {
  trace_span *span;
  double t0;
  bool done;
  char upstream[64], method[48];
} client_span;

static void span_record(client_span *s, const char *outcome, const char *error) {
  if (s->done) return;
  s->done = true;
  if (metrics_on) {
    metric_add(metric_at(M_CLIENT, (const char *const[]){s->upstream, s->method, outcome}), 1);
    metric_observe(metric_at(M_CLIENT_DURATION, (const char *const[]){s->upstream, s->method}),
                   clock_now() - s->t0);
  }
  if (s->span) {
    if (error) {
      trace_attr_str(s->span, "error.type", outcome);
      trace_error(s->span, error);
    }
    trace_end(s->span);
    s->span = NULL;
  }
}

/* span(upstream, method, target) -> span: a CLIENT span under the call's
   (when traced) named "METHOD UPSTREAM", and the request's metric when it
   finishes (or "ended" if the call ends first). */
static int client_span_new(lua_State *L) {
  const char *up = luaL_checkstring(L, 1), *method = luaL_checkstring(L, 2);
  const char *target = luaL_optstring(L, 3, NULL);
  client_span *s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, SPAN_TYPE);
  snprintf(s->upstream, sizeof s->upstream, "%s", up);
  snprintf(s->method, sizeof s->method, "%s", method);
  s->t0 = clock_now();
  call *c = call_current(L);
  trace_span *parent = trace_on && c ? call_span(c) : NULL;
  char name[128];
  snprintf(name, sizeof name, "%s %s", method, up);
  if (parent && (s->span = trace_start(trace_context(parent), name, TRACE_CLIENT))) {
    trace_attr_str(s->span, "mcp.method.name", method);
    trace_attr_str(s->span, "luamcp.upstream", up);
    if (target) trace_attr_str(s->span, "server.address", target);
  }
  return 1;
}

/* span:finish(outcome [, error]) */
static int client_span_finish(lua_State *L) {
  client_span *s = luaL_checkudata(L, 1, SPAN_TYPE);
  span_record(s, luaL_checkstring(L, 2), luaL_optstring(L, 3, NULL));
  return 0;
}

/* span:traceparent() -> the W3C header value naming this span, or nil */
static int client_span_traceparent(lua_State *L) {
  client_span *s = luaL_checkudata(L, 1, SPAN_TYPE);
  if (!s->span) return 0;
  char tp[56];
  trace_format(trace_context(s->span), tp);
  lua_pushstring(L, tp);
  return 1;
}

static int client_span_gc(lua_State *L) {
  client_span *s = luaL_checkudata(L, 1, SPAN_TYPE);
  span_record(s, "ended", "the call ended before the answer");
  return 0;
}

/* }====== */

void mcp_client_push(lua_State *L) {
  if (luaL_newmetatable(L, LINK_TYPE)) {
    static const luaL_Reg m[] = {{"open", link_open},           {"write", link_write},
                                 {"wait", link_wait},           {"forget", link_forget},
                                 {"set_state", link_set_state}, {"pid", link_pid},
                                 {"claim", link_claim},         {"release", link_release},
                                 {NULL, NULL}};
    luaL_newlib(L, m);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, SPAN_TYPE)) {
    static const luaL_Reg m[] = {{"finish", client_span_finish}, {"traceparent", client_span_traceparent}, {NULL, NULL}};
    luaL_newlib(L, m);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, client_span_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, client_span_gc);
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);
  static const luaL_Reg funcs[] = {{"stdio", client_stdio}, {"span", client_span_new}, {"keep", client_keep}, {"reload", client_reload}, {"notify", client_notify}, {NULL, NULL}};
  luaL_newlib(L, funcs);
}
