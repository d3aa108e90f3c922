/* access_log.c — the access log (access_log.h). */
#include "access_log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "json.h"
#include "log.h"

static struct {
  atomic_int fd; /* -1: off; written under fd_mu (read without: is there a log?) */
  char path[4096];
  bool is_stderr;
  buf pending; /* the round's lines */
} A = {.fd = -1};
/* over writing to and reopening fd: the engine's round and the transport's
   threads (access_log_write_now) both write */
static pthread_mutex_t fd_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int reopen_asked; /* set by the signal thread, read by the engine's */

bool access_log_open(const char *path, char *why, size_t cap) {
  A.is_stderr = strcmp(path, "-") == 0;
  if (A.is_stderr) {
    A.fd = STDERR_FILENO;
    return true;
  }
  snprintf(A.path, sizeof A.path, "%s", path);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) {
    snprintf(why, cap, "--access-log %s: %s", path, strerror(errno));
    return false;
  }
  A.fd = fd;
  return true;
}

bool access_log_on(void) { return A.fd >= 0; }

void access_log_reopen(void) { atomic_store(&reopen_asked, 1); }

static void write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return; /* a full disk: the lines go, the server goes on */
    p += w, n -= (size_t)w;
  }
}

void access_log_flush(void) {
  if (A.fd < 0) return;
  pthread_mutex_lock(&fd_mu);
  if (A.pending.len) write_all(A.fd, A.pending.p, A.pending.len);
  A.pending.len = 0;
  if (!A.is_stderr && atomic_exchange(&reopen_asked, 0)) {
    /* after the lines so far: they are in the old file, the next in the new */
    int fd = open(A.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
      pthread_mutex_unlock(&fd_mu);
      log_msg(LOG_ERROR, "access log: cannot reopen %s: %s (still writing the old one)", A.path,
              strerror(errno));
      return;
    }
    close(A.fd);
    A.fd = fd;
    pthread_mutex_unlock(&fd_mu);
    log_msg(LOG_INFO, "access log: reopened %s", A.path);
    return;
  }
  pthread_mutex_unlock(&fd_mu);
}

void access_log_close(void) {
  access_log_flush();
  pthread_mutex_lock(&fd_mu);
  if (A.fd >= 0 && !A.is_stderr) close(A.fd);
  A.fd = -1;
  pthread_mutex_unlock(&fd_mu);
  buf_free(&A.pending);
}

static void field(buf *b, const char *key, const char *v) {
  if (!v || !*v) return;
  buf_printf(b, ",\"%s\":", key);
  json_encode_string(b, v, strlen(v));
}

static void format(buf *b, const access_entry *e) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  buf_printf(b, "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\"", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)(tv.tv_usec / 1000));
  field(b, "instance", e->instance);
  field(b, "peer", e->peer);
  field(b, "session", e->session);
  field(b, "subject", e->subject);
  field(b, "revision", e->revision);
  field(b, "method", e->method);
  field(b, "name", e->name);
  if (e->id_len) {
    buf_puts(b, ",\"id\":");
    buf_put(b, e->id, e->id_len); /* a JSON string or number, as the client sent it */
  }
  field(b, "outcome", e->outcome);
  buf_printf(b, ",\"duration_ms\":%.3f,\"bytes\":%zu", e->duration * 1000.0, e->bytes);
  if (e->trace_id) { /* the id a trace backend finds the request's spans by */
    buf_puts(b, ",\"trace\":\"");
    for (int i = 0; i < 16; i++) buf_printf(b, "%02x", e->trace_id[i]);
    buf_putc(b, '"');
  }
  if (e->status) buf_printf(b, ",\"status\":%d", e->status);
  field(b, "refused", e->refused);
  buf_puts(b, "}\n");
}

void access_log_write(const access_entry *e) {
  if (A.fd < 0) return;
  format(&A.pending, e);
  if (A.pending.len > 1 << 20) access_log_flush(); /* a huge round: do not hold it all */
}

void access_log_write_now(const access_entry *e) {
  if (A.fd < 0) return;
  buf b;
  buf_init(&b);
  format(&b, e);
  pthread_mutex_lock(&fd_mu);
  if (A.fd >= 0) write_all(A.fd, b.p, b.len); /* one line, one write: never inside another */
  pthread_mutex_unlock(&fd_mu);
  buf_free(&b);
}
