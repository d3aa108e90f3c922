/*
** driver_util.h — what the two load drivers, bench/stdio_load.c and
** bench/scale/scale_client.c, share: a monotonic clock, /proc/PID/status,
** option numbers, nearest-rank percentiles, JSON strings on output, a
** growable byte buffer, a minimal JSON scan, and a stdio server on
** non-blocking pipes (spawn and reap).
**
** Header-only, so each driver stays a single cc command and the scan and
** buffer helpers inline into its hot loop as they did when each driver had
** its own copy: define DRIVER_NAME (e.g. "stdio_load", the prefix of its
** error messages) and _GNU_SOURCE, then include it.
*/
#ifndef DRIVER_UTIL_H
#define DRIVER_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef DRIVER_NAME
#error "define DRIVER_NAME before including driver_util.h"
#endif

#define IDLE_SETTLE_MS 200   /* after initialized, before idle RSS is read */
#define EXIT_GRACE_MS 5000   /* after stdin is closed, before the server is killed */

/* "DRIVER_NAME: <message>" on stderr, then exit(1). */
__attribute__((format(printf, 1, 2)))
_Noreturn static inline void driver_die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs(DRIVER_NAME ": ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

/* {====================================================== clock, /proc, numbers */

static inline int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void sleep_ms(long ms) {
  nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 }, NULL);
}

/* One "Vm...: N kB" field of /proc/PID/status, in kB; -1 if unreadable. */
static inline long proc_status_kb(pid_t pid, const char *field) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long kb = -1;
  size_t flen = strlen(field);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, field, flen) && line[flen] == ':') {
      kb = strtol(line + flen + 1, NULL, 10);
      break;
    }
  fclose(f);
  return kb;
}

/* s, a whole decimal number >= min; if it is not one, usage() (which exits). */
static inline long parse_long(const char *s, long min, void (*usage)(void)) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < min) { usage(); exit(2); }
  return v;
}

static inline int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static inline void sort_i64(int64_t *v, long n) { qsort(v, (size_t)n, sizeof *v, cmp_i64); }

/* Nearest-rank percentile p (0..1) of sorted v, in microseconds; -1 if n is 0. */
static inline double percentile_us(const int64_t *sorted, long n, double p) {
  if (n == 0) return -1;
  long rank = (long)(p * (double)n + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return (double)sorted[rank - 1] / 1000.0;
}

/* s as a JSON string, quotes included. */
static inline void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

/* }====================================================== */

/* {====================================================== growable byte buffer */

struct buf { char *p; size_t len, cap; };

/* Room for extra more bytes. */
static inline void buf_reserve(struct buf *b, size_t extra) {
  if (b->len + extra <= b->cap) return;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + extra) cap *= 2;
  b->p = realloc(b->p, cap);
  if (!b->p) driver_die("out of memory");
  b->cap = cap;
}

static inline void buf_add(struct buf *b, const void *p, size_t n) {
  buf_reserve(b, n);
  memcpy(b->p + b->len, p, n);
  b->len += n;
}

/* Format into the free space; if it did not fit, grow to the size reported and redo. */
__attribute__((format(printf, 2, 3)))
static inline void buf_printf(struct buf *b, const char *fmt, ...) {
  buf_reserve(b, 256);
  for (;;) {
    size_t room = b->cap - b->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, room, fmt, ap);
    va_end(ap);
    if (n < 0) driver_die("vsnprintf: %s", strerror(errno));
    if ((size_t)n < room) { b->len += (size_t)n; return; }
    buf_reserve(b, (size_t)n + 1);
  }
}

/* Drops the first n bytes. */
static inline void buf_consume(struct buf *b, size_t n) {
  memmove(b->p, b->p + n, b->len - n);
  b->len -= n;
}

/* }====================================================== */

/* {====================================================== minimal JSON scan
** The drivers only need a few facts about each message (id, method,
** result/error, a few keys of the result), not a full parser: walk an
** object's keys and skip every value structurally. p..end is the text. */

static inline const char *skip_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
  return p;
}

/* p at the opening quote; returns past the closing one, NULL if unterminated. */
static inline const char *skip_string(const char *p, const char *end) {
  for (p++; p < end; p++) {
    if (*p == '\\') p++;
    else if (*p == '"') return p + 1;
  }
  return NULL;
}

/* Returns past the value starting at p, NULL if malformed. */
static inline const char *skip_value(const char *p, const char *end) {
  if (p >= end) return NULL;
  if (*p == '"') return skip_string(p, end);
  if (*p == '{' || *p == '[') {
    int depth = 0;
    while (p < end) {
      if (*p == '"') { p = skip_string(p, end); if (!p) return NULL; continue; }
      if (*p == '{' || *p == '[') depth++;
      else if (*p == '}' || *p == ']') { if (--depth == 0) return p + 1; }
      p++;
    }
    return NULL;
  }
  while (p < end && *p != ',' && *p != '}' && *p != ']' &&
         *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') p++;
  return p;
}

typedef void (*key_fn)(void *ud, const char *key, size_t klen,
                       const char *val, const char *vend);

/* Calls fn for each key of the object at p; false if it is not a well-formed object. */
static inline bool scan_object(const char *p, const char *end, key_fn fn, void *ud) {
  p = skip_ws(p, end);
  if (p >= end || *p != '{') return false;
  p = skip_ws(p + 1, end);
  if (p < end && *p == '}') return true;
  for (;;) {
    if (p >= end || *p != '"') return false;
    const char *k = p + 1, *kend = skip_string(p, end);
    if (!kend) return false;
    p = skip_ws(kend, end);
    if (p >= end || *p != ':') return false;
    const char *v = skip_ws(p + 1, end), *vend = skip_value(v, end);
    if (!vend || vend == v) return false;
    fn(ud, k, (size_t)(kend - 1 - k), v, vend);
    p = skip_ws(vend, end);
    if (p < end && *p == ',') { p = skip_ws(p + 1, end); continue; }
    return p < end && *p == '}';
  }
}

/* Elements of the array at p..end; -1 if it is not one. */
static inline long count_array(const char *p, const char *end) {
  if (p >= end || *p != '[') return -1;
  p = skip_ws(p + 1, end);
  if (p < end && *p == ']') return 0;
  for (long n = 1;; n++) {
    p = skip_value(p, end);
    if (!p) return -1;
    p = skip_ws(p, end);
    if (p < end && *p == ',') { p = skip_ws(p + 1, end); continue; }
    return p < end && *p == ']' ? n : -1;
  }
}

/* key[0..klen) (as scan_object hands it, without quotes) is name. */
static inline bool key_is(const char *key, size_t klen, const char *name) {
  return klen == strlen(name) && !memcmp(key, name, klen);
}

/* }====================================================== */

/* {====================================================== a stdio server on pipes */

struct server {
  pid_t pid;
  int to, from;     /* our ends of its stdin and stdout, non-blocking */
  int64_t t_spawn;  /* just before the fork: start-up is timed from here */
};

/* Starts cmd (execvp) with its stdin and stdout on pipes; its stderr is ours,
** or /dev/null if quiet_stderr. The child restores SIGPIPE; exits 127 if
** cmd cannot be run. */
static inline void server_spawn(struct server *s, char **cmd, bool quiet_stderr) {
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC)) driver_die("pipe: %s", strerror(errno));
  s->t_spawn = now_ns();
  s->pid = fork();
  if (s->pid < 0) driver_die("fork: %s", strerror(errno));
  if (s->pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    if (quiet_stderr) {
      int devnull = open("/dev/null", O_WRONLY);
      if (devnull >= 0) dup2(devnull, 2);
    }
    signal(SIGPIPE, SIG_DFL);
    execvp(cmd[0], cmd);
    fprintf(stderr, DRIVER_NAME ": exec %s: %s\n", cmd[0], strerror(errno));
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  s->to = in_pipe[1];
  s->from = out_pipe[0];
  fcntl(s->to, F_SETFL, O_NONBLOCK);
  fcntl(s->from, F_SETFL, O_NONBLOCK);
}

/* Reads fd until it would block, dropping the bytes; false at EOF or on an error. */
static inline bool server_drain(int fd) {
  char sink[65536];
  for (;;) {
    ssize_t k = read(fd, sink, sizeof sink);
    if (k > 0) continue;
    if (k < 0 && errno == EINTR) continue;
    return k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

/* Closes its stdin and gives it EXIT_GRACE_MS to exit by itself, reading
** (and dropping) what it still writes so it never blocks on a full pipe;
** then kills it (*killed). Closes its stdout; returns the wait status. */
static inline int server_reap(struct server *s, bool *killed) {
  close(s->to);
  int64_t give_up = now_ns() + (int64_t)EXIT_GRACE_MS * 1000000;
  int status = 0;
  bool eof = false;
  *killed = false;
  for (;;) {
    if (waitpid(s->pid, &status, WNOHANG) == s->pid) break;
    if (now_ns() >= give_up) {
      kill(s->pid, SIGKILL);
      waitpid(s->pid, &status, 0);
      *killed = true;
      break;
    }
    struct pollfd p = { .fd = s->from, .events = POLLIN };
    if (!eof && poll(&p, 1, 10) > 0) eof = !server_drain(s->from);
    else if (eof) sleep_ms(10);
  }
  close(s->from);
  return status;
}

/* }====================================================== */

#endif
