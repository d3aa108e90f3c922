/* transport_stdio.c — NDJSON over file descriptors (see
 * transport_stdio.h). The only code that writes the protocol stream in
 * stdio mode. */
#include "transport_stdio.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonrpc.h"
#include "log.h"

typedef struct stdio_transport {
  outlet out; /* first: the outlet is the transport */
  server *srv;
  engine *e;
  session *s;
  int in_fd, out_fd;
  size_t max_message;
  buf in;          /* bytes read, not yet handed over */
  size_t scanned;  /* prefix of `in` known to hold no newline */
  bool skipping;   /* inside an oversized line: drop it to its end */
} stdio_transport;

static bool write_all(outlet *o, const char *p, size_t n) {
  stdio_transport *t = (stdio_transport *)o;
  while (n) {
    ssize_t w = write(t->out_fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      log_msg(LOG_WARNING, "stdout: %s (client gone?)", strerror(errno));
      return false;
    }
    p += w;
    n -= (size_t)w;
  }
  return true;
}

static void accept_line(stdio_transport *t, const char *p, size_t n) {
  if (n && p[n - 1] == '\r') n--;
  size_t i = 0;
  while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
  if (i == n) return; /* blank lines are not messages */
  server_accept(t->srv, t->s, p, n);
}

static void reject_oversized(stdio_transport *t) {
  buf b;
  buf_init(&b);
  char msg[128];
  snprintf(msg, sizeof msg, "Invalid Request: message larger than %zu bytes", t->max_message);
  jsonrpc_write_error(&b, (json_span){0}, JSONRPC_INVALID_REQUEST, msg, NULL);
  write_all(&t->out, b.p, b.len);
  buf_free(&b);
}

/* Hand over the lines of work[0..n) (every one ends with '\n'); the first
   is the tail of an oversized line when skip_first is set. */
static void accept_lines(stdio_transport *t, const char *p, size_t n, bool skip_first) {
  const char *end = p + n, *nl;
  while (p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
    /* a line read in one go may still be too long: the limit holds for every line */
    if (!skip_first && (size_t)(nl - p) > t->max_message) reject_oversized(t);
    else if (!skip_first) accept_line(t, p, (size_t)(nl - p));
    skip_first = false;
    p = nl + 1;
  }
}

/* The input is readable: read once, hand over every complete line.
   Re-entrant: a handler dispatched from here may run long enough for the
   engine's hook to call us again, so the complete lines are first moved
   out of t->in into a buffer of this invocation's own. */
static void on_readable(void *ctx) {
  stdio_transport *t = ctx;
  buf_reserve(&t->in, 65536);
  ssize_t r = read(t->in_fd, t->in.p + t->in.len, t->in.cap - t->in.len - 1);
  if (r < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (r <= 0) {
    if (r < 0) log_msg(LOG_WARNING, "stdin: %s", strerror(errno));
    engine_remove_input(t->e, t->in_fd);
    engine_finish(t->e);
    buf work = t->in; /* a last line without '\n' */
    bool skip = t->skipping;
    buf_init(&t->in);
    if (work.len && !skip) accept_line(t, work.p, work.len);
    buf_free(&work);
    return;
  }
  t->in.len += (size_t)r;
  char *last = memrchr(t->in.p + t->scanned, '\n', t->in.len - t->scanned);
  if (!last) {
    t->scanned = t->in.len;
    if (t->in.len > t->max_message && !t->skipping) {
      reject_oversized(t);
      t->skipping = true;
    }
    if (t->skipping) t->in.len = t->scanned = 0;
    return;
  }
  buf work = t->in;
  size_t whole = (size_t)(last - work.p) + 1;
  buf_init(&t->in);
  buf_put(&t->in, work.p + whole, work.len - whole);
  t->scanned = 0;
  bool skip = t->skipping;
  t->skipping = false;
  accept_lines(t, work.p, whole, skip);
  buf_free(&work);
}

void transport_stdio_serve(server *srv, int in_fd, int out_fd, size_t max_message) {
  engine *e = server_engine(srv);
  stdio_transport t = {.out = {.write = write_all}, .srv = srv, .e = e, .in_fd = in_fd,
                       .out_fd = out_fd, .max_message = max_message};
  buf_init(&t.in);
  t.s = session_new();
  t.s->standalone = &t.out;
  engine_add_input(e, in_fd, on_readable, &t);
  engine_run(e);
  t.s->standalone = NULL; /* the outlet lives in this frame; the engine may hold t.s longer */
  session_unref(t.s);
  buf_free(&t.in);
  buf_free(&t.out.out);
}
