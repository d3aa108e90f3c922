/* io_exec.c — mcp.exec: a child process on the engine's loop, while other
 * calls go on.
 *
 *   mcp.exec{ "prog", "arg", ..., stdin=, env=, env_clear=, cwd=, timeout=,
 *             grace=, max_output= }      (or argv = {"prog", "arg", ...})
 *   -> { code=, signal=, stdout=, stderr=, timed_out=,
 *        stdout_truncated=, stderr_truncated= }
 *
 * The argv runs as given (posix_spawnp: a name without a slash is looked up
 * on the server's PATH); a shell only when the script names one
 * ({"/bin/sh", "-c", ...}). The child leads its own session and process
 * group, so a kill reaches what it started too (sh -c "a; b"). The call
 * waits for the child's exit and for its stdout and stderr to close.
 *
 * Ending early: the script's timeout= sends SIGTERM to the group, SIGKILL
 * after grace=, and the call returns normally with timed_out = true. The
 * call's own end (deadline, cancel, session gone, shutdown) kills the same
 * way, with a grace of ABORT_GRACE at most; the op then stays on the loop until the child is reaped (no
 * zombies) and every handle is closed (no fd leaks).
 *
 * posix_spawn, not uv_spawn: libuv forks, which copies the page tables of
 * the whole server while the engine waits, longer the larger the server;
 * posix_spawn's vfork-style clone costs the same at any size
 * (docs/PERFORMANCE.md).
 * The exit is watched on a pidfd, not with SIGCHLD, and the child is reaped
 * only when the op ends: until then its pid and group id cannot be reused,
 * so every kill below reaches the right processes. */
/* _GNU_SOURCE (the build defines it): POSIX_SPAWN_SETSID, addchdir_np */
#include "io_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <uv.h>

#include "call.h"
#include "sandbox.h"
#include "trace.h"

extern char **environ;

#define DEFAULT_MAX_OUTPUT ((size_t)16 << 20)
#define DEFAULT_GRACE 2.0
/* grace= at most: a child that ignores SIGTERM must not outlive its call
   for long (and once the call has ended, ABORT_GRACE at most) */
#define MAX_GRACE 60.0
#define ABORT_GRACE 2.0
/* After SIGKILL, how long pipes still held open (by a process that left the
   group) are waited for before the output is taken as it is. */
#define KILL_WAIT 1.0
#define READ_CHUNK 65536

enum phase { RUNNING, TERM_SENT, KILL_SENT };

typedef struct output {
  uv_pipe_t pipe; /* first: a read callback's stream is its output */
  char *p;
  size_t len, cap;
  bool open;      /* reading until EOF */
  bool truncated; /* bytes past max_output were read and dropped */
} output;

typedef struct exec_op {
  call_wait wait; /* first: the abort gets the op */
  call *c;        /* the parked call; NULL once it is gone, or before it parks */
  pid_t pid;      /* 0: none was started */
  int pidfd;      /* readable once the child has exited */
  uv_poll_t watch;
  uv_pipe_t in;
  output out[2]; /* stdout, stderr */
  uv_timer_t timer; /* the script's timeout, then the kill's steps */
  uv_write_t write_req;
  char *input;
  size_t input_len, max_output;
  double timeout, grace; /* timeout <= 0: none of its own */
  int handles;           /* initialized and not closed yet: the op ends at 0 */
  bool has_in, exited, timed_out;
  enum phase phase;
  int code, term_signal;
  trace_span *span; /* the child as a span of the call's, when traced */
} exec_op;

/* Bytes past max_output are read into this and dropped (a chatty child is
   drained, never stopped on a full pipe). Only the run-lock holder reads. */
static char scratch[READ_CHUNK];

static void free_op(exec_op *op) {
  if (op->span) { /* the child's end: its status, or the call gone first */
    if (op->exited) trace_attr_int(op->span, "process.exit.code", op->code);
    if (op->timed_out) trace_error(op->span, "timed out");
    else if (!op->exited) trace_error(op->span, "the call ended before the child");
    else if (op->code != 0 || op->term_signal) trace_error(op->span, "the child failed");
    trace_end(op->span);
  }
  free(op->out[0].p);
  free(op->out[1].p);
  free(op->input);
  free(op);
}

/* {====== ending: every handle closed, then the call resumed or the op freed */

static void exec_on_closed(uv_handle_t *h) {
  exec_op *op = h->data;
  if (--op->handles > 0) return;
  if (op->pid > 0) { /* a zombie by now (exited is set): reap it */
    while (waitpid(op->pid, NULL, 0) < 0 && errno == EINTR) {}
    close(op->pidfd);
  }
  if (op->c) call_wake_wait(&op->wait, 0); /* exec_done takes the op */
  else free_op(op);
}

static void close_handle(void *h) {
  if (!uv_is_closing(h)) uv_close(h, exec_on_closed);
}

static void stop_output(exec_op *op, int i) {
  output *o = &op->out[i];
  if (o->open) uv_read_stop((uv_stream_t *)&o->pipe);
  o->open = false;
  close_handle(&o->pipe);
}

/* The child has exited and its output is closed: close what is left. */
static void check_done(exec_op *op) {
  if (!op->exited || op->out[0].open || op->out[1].open) return;
  close_handle(&op->timer);
  if (op->has_in) close_handle(&op->in);
}

/* The child's process group (it called setsid), and the child itself (it
   may have left the group). Not reaped yet: both ids are still its own. */
static void signal_group(exec_op *op, int sig) {
  if (op->pid <= 0) return;
  kill(-op->pid, sig);
  if (!op->exited) kill(op->pid, sig);
}

static uint64_t ms_of(double seconds) { return (uint64_t)ceil(seconds * 1000.0); }

static void exec_on_timer(uv_timer_t *t);

/* SIGTERM now, SIGKILL after the grace (at once without one). */
static void start_kill(exec_op *op) {
  if (op->phase != RUNNING) return;
  if (op->grace > 0) {
    signal_group(op, SIGTERM);
    op->phase = TERM_SENT;
    uv_timer_start(&op->timer, exec_on_timer, ms_of(op->grace), 0);
  } else {
    signal_group(op, SIGKILL);
    op->phase = KILL_SENT;
    uv_timer_start(&op->timer, exec_on_timer, ms_of(KILL_WAIT), 0);
  }
}

static void exec_on_timer(uv_timer_t *t) {
  exec_op *op = t->data;
  switch (op->phase) {
    case RUNNING: /* the script's timeout= */
      op->timed_out = true;
      start_kill(op);
      break;
    case TERM_SENT:
      signal_group(op, SIGKILL);
      op->phase = KILL_SENT;
      uv_timer_start(&op->timer, exec_on_timer, ms_of(KILL_WAIT), 0);
      break;
    case KILL_SENT: /* someone outside the group holds the pipes: keep what came */
      stop_output(op, 0);
      stop_output(op, 1);
      check_done(op); /* a child that survives SIGKILL is waited for */
      break;
  }
}

/* The pidfd is readable: the child has exited. Its status is read but it
   stays a zombie (WNOWAIT) until the op ends. */
static void on_child_exit(uv_poll_t *w, int status, int events) {
  (void)status, (void)events;
  exec_op *op = w->data;
  siginfo_t info;
  memset(&info, 0, sizeof info);
  if (waitid(P_PID, (id_t)op->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == EINTR) return; /* the poll fires again */
    info.si_pid = op->pid;      /* ECHILD: reaped by someone else; status unknown */
    info.si_code = CLD_EXITED;
    info.si_status = -1;
  }
  if (info.si_pid == 0) return; /* not yet */
  op->exited = true;
  if (info.si_code == CLD_EXITED) op->code = info.si_status;
  else op->term_signal = info.si_status;
  close_handle(w);
  /* killed: what the child started and left behind goes too */
  if (op->phase != RUNNING) signal_group(op, SIGKILL);
  check_done(op);
}

/* The call ends first (or the start failed): nobody wants the output; the
   child is killed and reaped on the loop, then the op frees itself. */
static void exec_abort(call_wait *w) {
  exec_op *op = (exec_op *)w;
  op->c = NULL;
  stop_output(op, 0);
  stop_output(op, 1);
  if (op->has_in) close_handle(&op->in);
  /* the call is over: its child gets a short grace, whatever it asked */
  if (op->grace > ABORT_GRACE) op->grace = ABORT_GRACE;
  if (!op->exited) start_kill(op);
  else signal_group(op, SIGKILL); /* whatever it left holding the pipes */
  check_done(op);
}

/* }====== */

/* {====== reading and writing the pipes */

static void exec_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
  (void)suggested;
  exec_op *op = h->data;
  output *o = (output *)h;
  size_t room = op->max_output - o->len;
  if (room && o->cap - o->len < READ_CHUNK && o->cap < op->max_output) {
    size_t cap = o->cap ? o->cap * 2 : READ_CHUNK;
    if (cap < o->len + READ_CHUNK) cap = o->len + READ_CHUNK;
    if (cap > op->max_output) cap = op->max_output;
    char *p = realloc(o->p, cap);
    if (p) o->p = p, o->cap = cap;
  }
  size_t n = o->cap - o->len;
  if (n > room) n = room;
  if (n == 0) *b = uv_buf_init(scratch, sizeof scratch);
  else *b = uv_buf_init(o->p + o->len, (unsigned)(n > READ_CHUNK ? READ_CHUNK : n));
}

static void exec_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b) {
  exec_op *op = s->data;
  output *o = (output *)s;
  if (nread > 0) {
    if (b->base == scratch) o->truncated = true;
    else o->len += (size_t)nread;
    return;
  }
  if (nread == 0) return; /* nothing this time */
  stop_output(op, (int)(o - op->out)); /* EOF or an error: this stream is over */
  check_done(op);
}

static void exec_on_written(uv_write_t *req, int status) {
  (void)status; /* EPIPE: the child did not read it all; its exit tells the rest */
  exec_op *op = req->handle->data;
  close_handle(&op->in); /* EOF for the child */
}

/* }====== */

/* {====== the result, built inside the call (its memory limit applies) */

static const struct {
  int sig;
  const char *name;
} signal_names[] = {
    {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},     {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
    {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},   {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
    {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},   {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
    {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"},   {SIGTERM, "SIGTERM"}, {SIGCHLD, "SIGCHLD"},
    {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"},   {SIGTSTP, "SIGTSTP"}, {SIGTTIN, "SIGTTIN"},
    {SIGTTOU, "SIGTTOU"}, {SIGURG, "SIGURG"},     {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
    {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"}, {SIGIO, "SIGIO"},
    {SIGSYS, "SIGSYS"},
};

static int push_result(lua_State *L) {
  exec_op *op = lua_touserdata(L, 1);
  lua_createtable(L, 0, 7);
  if (op->term_signal) {
    const char *name = NULL;
    for (size_t i = 0; i < sizeof signal_names / sizeof *signal_names && !name; i++)
      if (signal_names[i].sig == op->term_signal) name = signal_names[i].name;
    if (name) lua_pushstring(L, name);
    else lua_pushfstring(L, "SIG%d", op->term_signal);
    lua_setfield(L, -2, "signal");
  } else {
    lua_pushinteger(L, op->code);
    lua_setfield(L, -2, "code");
  }
  static const char *const names[2] = {"stdout", "stderr"};
  static const char *const truncated[2] = {"stdout_truncated", "stderr_truncated"};
  for (int i = 0; i < 2; i++) {
    lua_pushlstring(L, op->out[i].p ? op->out[i].p : "", op->out[i].len);
    lua_setfield(L, -2, names[i]);
    lua_pushboolean(L, op->out[i].truncated);
    lua_setfield(L, -2, truncated[i]);
  }
  lua_pushboolean(L, op->timed_out);
  lua_setfield(L, -2, "timed_out");
  return 1;
}

/* Resumed by on_closed with the op done (k). A call that ends first (its
   deadline, a cancel) is never resumed: the op then belongs to exec_abort. */
static int exec_done(lua_State *L, int status, lua_KContext k) {
  (void)status;
  exec_op *op = (exec_op *)(intptr_t)k;
  lua_pushcfunction(L, push_result);
  lua_pushlightuserdata(L, op);
  int st = lua_pcall(L, 1, 1, 0); /* out of memory: the op is freed all the same */
  free_op(op);
  if (st != LUA_OK) return lua_error(L);
  return 1;
}

/* }====== */

/* {====== reading the script's table (Lua errors are fine here) */

typedef struct exec_args {
  const char **argv;
  char **envp; /* NULL: the server's environment as it is */
  const char *cwd, *input;
  size_t input_len, max_output;
  double timeout, grace;
} exec_args;

static const char *const option_names[] = {"argv",    "stdin", "env",        "env_clear", "cwd",
                                           "timeout", "grace", "max_output", NULL};

/* Push t[name] (raw: the table is the script's). */
static int option(lua_State *L, const char *name) {
  lua_pushstring(L, name);
  return lua_rawget(L, 1);
}

/* The string at the top of the stack (a number is turned into one), kept
   alive in the anchor table (index 2) and popped; NULL if it is neither. */
static const char *anchored(lua_State *L, size_t *len) {
  int t = lua_type(L, -1);
  if (t != LUA_TSTRING && t != LUA_TNUMBER) return NULL;
  const char *s = lua_tolstring(L, -1, len);
  lua_rawseti(L, 2, (lua_Integer)lua_rawlen(L, 2) + 1);
  return s;
}

/* The keys of the table at t: a sequence 1..n, and (options) known names. */
static void check_keys(lua_State *L, int t, size_t n, bool options) {
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    if (options && lua_type(L, -1) == LUA_TSTRING) {
      const char *k = lua_tostring(L, -1);
      size_t i = 0;
      while (option_names[i] && strcmp(option_names[i], k) != 0) i++;
      if (!option_names[i]) luaL_error(L, "mcp.exec: unknown option '%s'", k);
    } else if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 ||
               (lua_Unsigned)lua_tointeger(L, -1) > n) {
      luaL_error(L, "mcp.exec: the argv must be a list {\"prog\", \"arg\", ...} (key %s)",
                 luaL_tolstring(L, -1, NULL));
    }
  }
}

/* The argv: argv = {"prog", "arg", ...}, or the table's own list. */
static void read_argv(lua_State *L, exec_args *a) {
  int src = 1, t = option(L, "argv");
  if (t == LUA_TTABLE) {
    if (lua_rawlen(L, 1) > 0) luaL_error(L, "mcp.exec: argv given twice (argv= and the list)");
    src = lua_gettop(L); /* stays on the stack */
  } else if (t != LUA_TNIL) {
    luaL_error(L, "mcp.exec: argv must be a list of strings (got %s)", lua_typename(L, t));
  } else {
    lua_pop(L, 1);
  }
  size_t n = lua_rawlen(L, src);
  if (n == 0) luaL_error(L, "mcp.exec: no program given: mcp.exec{\"prog\", \"arg\", ...}");
  check_keys(L, 1, src == 1 ? n : 0, true);
  if (src != 1) check_keys(L, src, n, false);
  a->argv = lua_newuserdatauv(L, (n + 1) * sizeof *a->argv, 0); /* freed with the frame */
  for (size_t i = 0; i < n; i++) {
    t = lua_rawgeti(L, src, (lua_Integer)i + 1);
    size_t len;
    const char *s = anchored(L, &len);
    if (!s) luaL_error(L, "mcp.exec: argv[%d] must be a string (got %s)", (int)i + 1, lua_typename(L, t));
    if (strlen(s) != len) luaL_error(L, "mcp.exec: argv[%d] contains a NUL byte", (int)i + 1);
    a->argv[i] = s;
  }
  a->argv[n] = NULL;
  if (!a->argv[0][0]) luaL_error(L, "mcp.exec: the program name is empty");
}

/* env = {NAME = "value" | false}: over the server's environment (false
   removes a name), or over nothing with env_clear = true. */
static void read_env(lua_State *L, exec_args *a) {
  /* under --sandbox a child starts from PATH and the declared names only */
  const sandbox *sb = sandbox_of(L);
  char **base = sb ? sandbox_environ(sb) : environ;
  if (!base) luaL_error(L, "mcp.exec: out of memory");
  int t = option(L, "env");
  if (t != LUA_TNIL && t != LUA_TTABLE)
    luaL_error(L, "mcp.exec: env must be a table {NAME = \"value\"} (got %s)", lua_typename(L, t));
  int env = t == LUA_TTABLE ? lua_gettop(L) : 0;
  t = option(L, "env_clear");
  if (t != LUA_TNIL && t != LUA_TBOOLEAN)
    luaL_error(L, "mcp.exec: env_clear must be a boolean (got %s)", lua_typename(L, t));
  bool clear = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!env && !clear && base == environ) return;
  size_t count = 0;
  if (!clear)
    for (char **e = base; *e; e++) count++;
  if (env) {
    lua_pushnil(L);
    while (lua_next(L, env)) lua_pop(L, 1), count++;
  }
  a->envp = lua_newuserdatauv(L, (count + 1) * sizeof *a->envp, 0);
  size_t k = 0;
  if (env) {
    lua_pushnil(L);
    while (lua_next(L, env)) {
      size_t klen;
      const char *name = lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &klen) : NULL;
      if (!name || !klen || strlen(name) != klen || strchr(name, '='))
        luaL_error(L, "mcp.exec: env names must be non-empty strings without '=' or NUL");
      if (lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1)) {
        lua_pop(L, 1); /* removed */
        continue;
      }
      if (sb) sandbox_check_child_env(L, sb, name);
      size_t vlen = 0; /* luaL_error does not return, but clang cannot tell */
      int vt = lua_type(L, -1);
      const char *v = vt == LUA_TSTRING || vt == LUA_TNUMBER ? lua_tolstring(L, -1, &vlen) : NULL;
      if (!v) luaL_error(L, "mcp.exec: env.%s must be a string or false (got %s)", name, lua_typename(L, vt));
      if (strlen(v) != vlen) luaL_error(L, "mcp.exec: env.%s contains a NUL byte", name);
      lua_pushfstring(L, "%s=%s", name, v);
      a->envp[k++] = (char *)anchored(L, &vlen);
      lua_pop(L, 1);
    }
  }
  if (!clear)
    for (char **e = base; *e; e++) {
      const char *eq = strchr(*e, '=');
      if (env && eq) { /* named by the script: set or removed above */
        lua_pushlstring(L, *e, (size_t)(eq - *e));
        bool named = lua_rawget(L, env) != LUA_TNIL;
        lua_pop(L, 1);
        if (named) continue;
      }
      a->envp[k++] = *e;
    }
  a->envp[k] = NULL;
}

static void read_options(lua_State *L, exec_args *a) {
  int t = option(L, "stdin");
  if (t == LUA_TSTRING) a->input = lua_tolstring(L, -1, &a->input_len); /* t[stdin] keeps it */
  else if (t != LUA_TNIL) luaL_error(L, "mcp.exec: stdin must be a string (got %s)", lua_typename(L, t));
  lua_pop(L, 1);

  t = option(L, "cwd");
  if (t == LUA_TSTRING) {
    size_t len;
    a->cwd = lua_tolstring(L, -1, &len);
    struct stat st;
    if (strlen(a->cwd) != len) luaL_error(L, "mcp.exec: cwd contains a NUL byte");
    if (stat(a->cwd, &st) != 0)
      luaL_error(L, "mcp.exec: cwd '%s': %s", a->cwd, uv_strerror(uv_translate_sys_error(errno)));
    if (!S_ISDIR(st.st_mode)) luaL_error(L, "mcp.exec: cwd '%s' is not a directory", a->cwd);
  } else if (t != LUA_TNIL) {
    luaL_error(L, "mcp.exec: cwd must be a string (got %s)", lua_typename(L, t));
  }
  lua_pop(L, 1);

  a->timeout = 0;
  t = option(L, "timeout");
  if (t != LUA_TNIL) {
    if (t != LUA_TNUMBER || !(lua_tonumber(L, -1) > 0))
      luaL_error(L, "mcp.exec: timeout must be a number of seconds > 0");
    a->timeout = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);

  a->grace = DEFAULT_GRACE;
  t = option(L, "grace");
  if (t != LUA_TNIL) {
    double g = lua_tonumber(L, -1);
    if (t != LUA_TNUMBER || !(g >= 0) || g > MAX_GRACE)
      luaL_error(L, "mcp.exec: grace must be a number of seconds from 0 to %d", (int)MAX_GRACE);
    a->grace = g;
  }
  lua_pop(L, 1);

  a->max_output = DEFAULT_MAX_OUTPUT;
  t = option(L, "max_output");
  if (t != LUA_TNIL) {
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0)
      luaL_error(L, "mcp.exec: max_output must be a whole number of bytes >= 0");
    a->max_output = (size_t)lua_tointeger(L, -1);
  }
  lua_pop(L, 1);
  read_env(L, a);
}

/* }====== */

/* {====== starting the child */

/* A pipe with both ends close-on-exec and above the standard three (so a
   dup2 onto 0-2 always makes a fresh descriptor for the child). 0 or errno. */
static int make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) return errno;
  for (int i = 0; i < 2; i++) {
    if (fds[i] >= 3) continue;
    int fd = fcntl(fds[i], F_DUPFD_CLOEXEC, 3), e = errno;
    close(fds[i]);
    fds[i] = fd;
    if (fd < 0) {
      if (fds[1 - i] >= 0) close(fds[1 - i]);
      fds[0] = fds[1] = -1;
      return e;
    }
  }
  return 0;
}

/* (io_exec.h) Start the child in its own session, signals as after a fresh exec (the
   server blocks some and ignores SIGPIPE), stdin a pipe or /dev/null
   (never the server's: that is the protocol), stdout and stderr pipes. The
   server's ends go to mine[0..2] (-1: none). 0 or an errno. */
int io_exec_spawn(const char *const *argv, char *const *envp, const char *cwd, bool with_stdin,
                  pid_t *pid, int mine[3]) {
  int pipes[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
  const int theirs[3] = {0, 1, 1}; /* the child reads stdin's end 0, writes the others' end 1 */
  int err = 0;
  for (int i = 0; i < 3 && !err; i++)
    if (i > 0 || with_stdin) err = make_pipe(pipes[i]);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  bool have_fa = false, have_attr = false;
  if (!err) have_fa = (err = posix_spawn_file_actions_init(&fa)) == 0;
  if (!err) have_attr = (err = posix_spawnattr_init(&attr)) == 0;
  if (!err)
    err = with_stdin ? posix_spawn_file_actions_adddup2(&fa, pipes[0][0], 0)
                   : posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (!err) err = posix_spawn_file_actions_adddup2(&fa, pipes[1][1], 1);
  if (!err) err = posix_spawn_file_actions_adddup2(&fa, pipes[2][1], 2);
  if (!err && cwd) err = posix_spawn_file_actions_addchdir_np(&fa, cwd);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  if (!err) err = posix_spawnattr_setsigmask(&attr, &none);
  if (!err) err = posix_spawnattr_setsigdefault(&attr, &all);
  if (!err)
    err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                              POSIX_SPAWN_SETSIGDEF);
  if (!err)
    err = posix_spawnp(pid, argv[0], &fa, &attr, (char *const *)argv, envp ? envp : environ);
  if (have_fa) posix_spawn_file_actions_destroy(&fa);
  if (have_attr) posix_spawnattr_destroy(&attr);
  for (int i = 0; i < 3; i++) {
    if (pipes[i][theirs[i]] >= 0) close(pipes[i][theirs[i]]); /* the child has its copy */
    mine[i] = pipes[i][1 - theirs[i]];
    if (err && mine[i] >= 0) close(mine[i]), mine[i] = -1;
  }
  return err;
}

/* A child the loop cannot watch: killed and reaped at once. */
static void kill_now(pid_t pid, int mine[3]) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
  for (int i = 0; i < 3; i++)
    if (mine[i] >= 0) close(mine[i]);
}

/* A handle of the op on the server's end fd of a pipe (which it then owns);
   false (fd closed) if libuv refuses it. */
static bool open_pipe(exec_op *op, uv_loop_t *loop, uv_pipe_t *p, int fd) {
  uv_pipe_init(loop, p, 0);
  p->data = op;
  op->handles++;
  if (uv_pipe_open(p, fd) == 0) return true;
  close(fd);
  close_handle(p);
  return false;
}

/* }====== */

static int exec_fn(lua_State *L) {
  call *c = call_current(L);
  const char *why = call_cannot_park(L, c);
  if (why) return luaL_error(L, "mcp.exec: %s", why);
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  lua_newtable(L); /* 2: anchors the strings argv and envp point into */
  exec_args a = {0};
  read_argv(L, &a);
  const sandbox *sb = sandbox_of(L); /* the program first: the permission matters most */
  if (sb) sandbox_check_exec(L, sb, a.argv[0], NULL);
  read_options(L, &a);
  if (sb && a.cwd) sandbox_check_exec(L, sb, a.argv[0], a.cwd);

  exec_op *op = calloc(1, sizeof *op);
  char *input = a.input ? malloc(a.input_len ? a.input_len : 1) : NULL;
  if (!op || (a.input && !input)) {
    free(op);
    free(input);
    return luaL_error(L, "mcp.exec: out of memory");
  }
  if (input) memcpy(input, a.input, a.input_len); /* the call may end before it is written */
  op->input = input;
  op->input_len = a.input_len;
  op->has_in = a.input != NULL;
  op->max_output = a.max_output;
  op->timeout = a.timeout;
  op->grace = a.grace;
  op->wait.abort = exec_abort;
  op->wait.what = "mcp.exec";

  pid_t pid;
  int mine[3];
  int err = io_exec_spawn(a.argv, a.envp, a.cwd, a.input != NULL, &pid, mine);
  if (err) {
    free_op(op);
    return luaL_error(L, "mcp.exec: cannot run '%s': %s", a.argv[0],
                      uv_strerror(uv_translate_sys_error(err)));
  }
  trace_span *parent = trace_on ? call_span(c) : NULL;
  if (parent) { /* named by the program, never by its arguments (they may hold secrets) */
    const char *base = strrchr(a.argv[0], '/');
    char name[160];
    snprintf(name, sizeof name, "exec %s", base ? base + 1 : a.argv[0]);
    if ((op->span = trace_start(trace_context(parent), name, TRACE_INTERNAL))) {
      trace_attr_str(op->span, "process.executable.name", base ? base + 1 : a.argv[0]);
      trace_attr_int(op->span, "process.pid", pid);
    }
  }
  uv_loop_t *loop = call_loop(c);
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* close-on-exec */
  err = pidfd < 0 ? uv_translate_sys_error(errno) : uv_poll_init(loop, &op->watch, pidfd);
  if (err) {
    kill_now(pid, mine);
    if (pidfd >= 0) close(pidfd);
    free_op(op);
    return luaL_error(L, "mcp.exec: cannot watch '%s' (a pidfd needs Linux 5.3): %s", a.argv[0],
                      uv_strerror(err));
  }
  op->pid = pid;
  op->pidfd = pidfd;
  op->watch.data = op;
  op->handles++;
  uv_poll_start(&op->watch, UV_READABLE, on_child_exit);
  uv_timer_init(loop, &op->timer);
  op->timer.data = op;
  op->handles++;
  for (int i = 0; i < 2; i++) {
    output *o = &op->out[i];
    if (!open_pipe(op, loop, &o->pipe, mine[i + 1])) continue;
    o->open = true;
    if (uv_read_start((uv_stream_t *)&o->pipe, exec_on_alloc, exec_on_read) != 0) stop_output(op, i);
  }
  if (op->has_in && open_pipe(op, loop, &op->in, mine[0])) {
    uv_buf_t b = {.base = op->input, .len = op->input_len};
    if (!op->input_len || uv_write(&op->write_req, (uv_stream_t *)&op->in, &b, 1, exec_on_written) != 0)
      close_handle(&op->in); /* EOF at once */
  }
  /* a timeout past the call's own deadline is the deadline's business */
  if (op->timeout > 0 && op->timeout < call_time_left(c)) {
    uv_update_time(loop); /* Lua ran since the loop last looked at the clock */
    uv_timer_start(&op->timer, exec_on_timer, ms_of(op->timeout), 0);
  }
  op->c = c;
  call_park(c, &op->wait);
  return lua_yieldk(L, 0, (lua_KContext)(intptr_t)op, exec_done);
}

void io_exec_push(lua_State *L) { lua_pushcfunction(L, exec_fn); }
