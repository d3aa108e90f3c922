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
  engine *e;
  session s;
  int in_fd, out_fd;
  size_t max_message;
  buf in;          /* bytes read, not yet a whole line */
  size_t scanned;  /* prefix of `in` known to hold no newline */
  bool skipping;   /* inside an oversized line: drop it to its end */
} stdio_transport;

static bool write_all(void *ctx, const char *p, size_t n) {
  stdio_transport *t = ctx;
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
  engine_accept(t->e, &t->s, p, n);
}

static void reject_oversized(stdio_transport *t) {
  buf b;
  buf_init(&b);
  char msg[128];
  snprintf(msg, sizeof msg, "Invalid Request: message larger than %zu bytes", t->max_message);
  jsonrpc_write_error(&b, (json_span){0}, JSONRPC_INVALID_REQUEST, msg, NULL);
  session_write_now(&t->s, b.p, b.len);
  buf_free(&b);
}

/* The input is readable: read once, hand over every complete line. */
static void on_readable(void *ctx) {
  stdio_transport *t = ctx;
  buf *in = &t->in;
  buf_reserve(in, 65536);
  ssize_t r = read(t->in_fd, in->p + in->len, in->cap - in->len - 1);
  if (r < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (r <= 0) {
    if (r < 0) log_msg(LOG_WARNING, "stdin: %s", strerror(errno));
    if (in->len && !t->skipping) accept_line(t, in->p, in->len); /* no final '\n' */
    in->len = 0;
    engine_remove_input(t->e, t->in_fd);
    engine_finish(t->e);
    return;
  }
  in->len += (size_t)r;
  size_t start = 0;
  char *nl;
  while ((nl = memchr(in->p + t->scanned, '\n', in->len - t->scanned))) {
    size_t end = (size_t)(nl - in->p);
    if (!t->skipping) accept_line(t, in->p + start, end - start);
    t->skipping = false;
    start = t->scanned = end + 1;
  }
  t->scanned = in->len;
  if (in->len - start > t->max_message && !t->skipping) {
    reject_oversized(t);
    t->skipping = true;
  }
  if (t->skipping) start = in->len;
  memmove(in->p, in->p + start, in->len - start);
  in->len -= start;
  t->scanned -= start;
}

void transport_stdio_serve(engine *e, int in_fd, int out_fd, size_t max_message) {
  stdio_transport t = {.e = e, .in_fd = in_fd, .out_fd = out_fd, .max_message = max_message};
  buf_init(&t.in);
  session_init(&t.s, write_all, &t);
  engine_add_input(e, in_fd, on_readable, &t);
  engine_run(e);
  session_destroy(&t.s);
  buf_free(&t.in);
}
