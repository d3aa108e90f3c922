/* transport_stdio.c — NDJSON over file descriptors (see transport_stdio.h).
 * The only code that writes the protocol stream in stdio mode. */
#include "transport_stdio.h"

#include <errno.h>
#include <pthread.h>
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

static void submit_line(stdio_transport *t, const char *p, size_t n) {
  if (n && p[n - 1] == '\r') n--;
  size_t i = 0;
  while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
  if (i == n) return; /* blank lines are not messages */
  char *copy = malloc(n + 1);
  memcpy(copy, p, n);
  copy[n] = '\0';
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  engine_submit(t->e, &t->s, copy, n);
  pthread_setcancelstate(old, NULL);
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

static void free_input(void *b) { buf_free(b); }

/* Read lines until EOF; then tell the engine no more input will come. */
static void *reader_main(void *arg) {
  stdio_transport *t = arg;
  buf in;
  buf_init(&in);
  pthread_cleanup_push(free_input, &in);
  size_t scanned = 0;   /* bytes of `in` known to hold no newline */
  bool skipping = false; /* inside an oversized line: drop to its end */
  for (;;) {
    buf_reserve(&in, 65536);
    ssize_t r = read(t->in_fd, in.p + in.len, in.cap - in.len - 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r < 0) log_msg(LOG_WARNING, "stdin: %s", strerror(errno));
      break;
    }
    in.len += (size_t)r;
    size_t start = 0;
    char *nl;
    while ((nl = memchr(in.p + scanned, '\n', in.len - scanned))) {
      size_t end = (size_t)(nl - in.p);
      if (!skipping) submit_line(t, in.p + start, end - start);
      skipping = false;
      start = scanned = end + 1;
    }
    scanned = in.len;
    if (in.len - start > t->max_message && !skipping) {
      reject_oversized(t);
      skipping = true;
    }
    if (skipping) start = in.len;
    memmove(in.p, in.p + start, in.len - start);
    in.len -= start;
    scanned -= start;
  }
  if (in.len && !skipping) submit_line(t, in.p, in.len); /* last line without '\n' */
  pthread_cleanup_pop(1);
  engine_finish(t->e);
  return NULL;
}

void transport_stdio_serve(engine *e, int in_fd, int out_fd, size_t max_message) {
  stdio_transport t = {.e = e, .in_fd = in_fd, .out_fd = out_fd, .max_message = max_message};
  session_init(&t.s, write_all, &t);
  pthread_t reader;
  pthread_create(&reader, NULL, reader_main, &t);
  engine_run(e);
  /* the engine ends on EOF (reader already done) or on a signal (reader
     may sit in read(): cancel it there) */
  pthread_cancel(reader);
  pthread_join(reader, NULL);
  session_destroy(&t.s);
}
