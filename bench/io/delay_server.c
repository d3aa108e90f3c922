/*
** delay_server: the slow upstream of the I/O-bound benchmark
** (bench/io/run.sh). An HTTP/1.1 server on 127.0.0.1 that answers every
** request exactly DELAY_MS (default 50) after it has read it, with a small
** JSON body, keep-alive (and pipelining, answered in order).
**
** One thread on libuv. The delay is the same for every request, so the
** pending answers form one FIFO ordered by due time, and one timerfd armed
** at the head's due time (CLOCK_MONOTONIC, ns: libuv's own timers count in
** whole ms of a loop time cached per iteration, which would answer anywhere
** between 49 and 51 ms) wakes the loop to send every answer that is due.
** So ~1,000 connections and ~20k answers/s cost little CPU, and the server
** is not what the benchmark measures. Its node:http twin,
** bench/io/delay_server.mjs (BENCH_IO_UPSTREAM=node), was the bottleneck:
** under wrk at 1,000 connections it managed 14k req/s with a p99 of 363 ms,
** where this one did 19k req/s with a p99 within a few ms of the 50.
**
** On SIGTERM/SIGINT it prints one line on stdout and exits 0:
**   DELAY_JSON {"requests":..,"connections_opened":..,"p50_us":..,"p99_us":..,"max_us":..}
** with the delays it actually gave (read → answer written), so a run can
** tell upstream lateness from the tool server's own, and how many
** connections the client opened (is it reusing them?). SIGUSR1 prints the
** same line and starts counting afresh (after a warm-up).
**
** Usage: delay_server [-p PORT] [-d DELAY_MS]   (PORT 0, the default, lets
** the system choose; `PORT <n>` is printed on stdout once listening)
** Build: cc -O2 -std=c11 -Wall -Wextra -o delay_server delay_server.c -luv
*/
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#define MAX_REQUEST (64 * 1024) /* a request (headers + body) larger than this closes the connection */

static uv_loop_t *loop;
static int64_t delay_ns;
static char response[256];
static size_t response_len;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what, int err) {
  fprintf(stderr, "delay_server: %s: %s\n", what, err < 0 ? uv_strerror(err) : strerror(errno));
  exit(1);
}

/* {====================================================== connections */

struct conn {
  uv_tcp_t tcp;
  char *buf;        /* bytes read and not yet parsed */
  size_t len, cap;
  long pending;     /* answers queued in the FIFO for this connection */
  int closing, close_after; /* closing: uv_close called; close_after: "Connection: close" seen */
};

static long n_conns;

static void conn_free_if_done(struct conn *c) {
  if (c->closing == 2 && c->pending == 0) {
    free(c->buf);
    free(c);
  }
}

static void on_closed(uv_handle_t *h) {
  struct conn *c = h->data;
  c->closing = 2;
  conn_free_if_done(c);
}

static void conn_close(struct conn *c) {
  if (c->closing) return;
  c->closing = 1;
  uv_close((uv_handle_t *)&c->tcp, on_closed);
}

/* }====================================================== */

/* {====================================================== the FIFO of answers due */

struct due { struct conn *c; int64_t t_read; };
static struct due *fifo;
static size_t fifo_head, fifo_len, fifo_cap; /* a ring */
static int tfd = -1;
static uv_poll_t tfd_poll;

static int64_t *delays; /* every delay given, in ns, for the stats line */
static size_t n_delays, cap_delays;

static void arm_timer(void) {
  struct itimerspec its = {0};
  if (fifo_len) {
    int64_t due = fifo[fifo_head].t_read + delay_ns;
    its.it_value.tv_sec = due / 1000000000;
    its.it_value.tv_nsec = due % 1000000000;
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
  }
  if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) die("timerfd_settime", 0);
}

static void fifo_push(struct conn *c, int64_t t) {
  if (fifo_len == fifo_cap) {
    size_t ncap = fifo_cap ? fifo_cap * 2 : 1024;
    struct due *n = malloc(ncap * sizeof *n);
    if (!n) die("malloc", 0);
    for (size_t i = 0; i < fifo_len; i++) n[i] = fifo[(fifo_head + i) % fifo_cap];
    free(fifo);
    fifo = n, fifo_cap = ncap, fifo_head = 0;
  }
  fifo[(fifo_head + fifo_len++) % fifo_cap] = (struct due){ c, t };
  c->pending++;
  if (fifo_len == 1) arm_timer();
}

struct wreq { uv_write_t w; char data[]; };
static void on_written(uv_write_t *w, int status) {
  (void)status;
  free(w);
}

static void send_answer(struct conn *c) {
  uv_buf_t b = uv_buf_init(response, (unsigned)response_len);
  int k = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
  if (k == (int)response_len) return;
  if (k < 0 && k != UV_EAGAIN) { conn_close(c); return; }
  size_t done = k > 0 ? (size_t)k : 0;
  struct wreq *w = malloc(sizeof *w + response_len - done);
  if (!w) die("malloc", 0);
  memcpy(w->data, response + done, response_len - done);
  b = uv_buf_init(w->data, (unsigned)(response_len - done));
  if (uv_write(&w->w, (uv_stream_t *)&c->tcp, &b, 1, on_written) < 0) { free(w); conn_close(c); }
}

static void on_timer(uv_poll_t *p, int status, int events) {
  (void)p, (void)status, (void)events;
  uint64_t expirations;
  if (read(tfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN) die("read timerfd", 0);
  int64_t t = now_ns();
  while (fifo_len && fifo[fifo_head].t_read + delay_ns <= t) {
    struct due d = fifo[fifo_head];
    fifo_head = (fifo_head + 1) % fifo_cap;
    fifo_len--;
    d.c->pending--;
    if (!d.c->closing) {
      send_answer(d.c);
      if (n_delays == cap_delays) {
        cap_delays = cap_delays ? cap_delays * 2 : 65536;
        delays = realloc(delays, cap_delays * sizeof *delays);
        if (!delays) die("realloc", 0);
      }
      delays[n_delays++] = now_ns() - d.t_read;
      if (d.c->close_after && d.c->pending == 0) conn_close(d.c);
    } else conn_free_if_done(d.c);
  }
  arm_timer();
}

/* }====================================================== */

/* {====================================================== reading requests */

/* The value of header name in [h, end) as a number, or -1 when absent. */
static long header_long(const char *h, const char *end, const char *name) {
  size_t nl = strlen(name);
  for (const char *p = h; p && p < end; ) {
    const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
    if (!eol) break;
    if ((size_t)(eol - p) > nl && p[nl] == ':' && !strncasecmp(p, name, nl)) return strtol(p + nl + 1, NULL, 10);
    p = eol + 2;
  }
  return -1;
}

static int header_has(const char *h, const char *end, const char *name, const char *value) {
  size_t nl = strlen(name);
  for (const char *p = h; p < end; ) {
    const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
    if (!eol) break;
    if ((size_t)(eol - p) > nl && p[nl] == ':' && !strncasecmp(p, name, nl)) {
      const char *v = p + nl + 1;
      while (v < eol && (*v == ' ' || *v == '\t')) v++;
      if ((size_t)(eol - v) >= strlen(value) && !strncasecmp(v, value, strlen(value))) return 1;
    }
    p = eol + 2;
  }
  return 0;
}

/* Queues an answer for every complete request in c->buf. */
static void parse_requests(struct conn *c) {
  size_t start = 0;
  int64_t t = now_ns();
  for (;;) {
    char *p = c->buf + start;
    size_t left = c->len - start;
    char *hend = memmem(p, left, "\r\n\r\n", 4);
    if (!hend) break;
    size_t hlen = (size_t)(hend - p) + 4;
    long body = header_long(p, hend + 2, "Content-Length");
    if (body < 0) body = 0;
    if (hlen + (size_t)body > MAX_REQUEST) { conn_close(c); return; }
    if (left < hlen + (size_t)body) break;
    if (header_has(p, hend + 2, "Connection", "close")) c->close_after = 1;
    fifo_push(c, t);
    start += hlen + (size_t)body;
    if (c->close_after) { start = c->len; break; } /* nothing after a close is answered */
  }
  memmove(c->buf, c->buf + start, c->len - start);
  c->len -= start;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
  (void)suggested;
  struct conn *c = h->data;
  if (c->cap - c->len < 4096) {
    size_t ncap = c->cap ? c->cap * 2 : 8192;
    char *n = realloc(c->buf, ncap);
    if (!n) die("realloc", 0);
    c->buf = n, c->cap = ncap;
  }
  *b = uv_buf_init(c->buf + c->len, (unsigned)(c->cap - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  (void)b;
  struct conn *c = s->data;
  if (n < 0) { conn_close(c); return; }
  c->len += (size_t)n;
  if (c->close_after) { c->len = 0; return; }
  parse_requests(c);
  if (c->len > MAX_REQUEST) conn_close(c);
}

static void on_connection(uv_stream_t *server, int status) {
  if (status < 0) return;
  struct conn *c = calloc(1, sizeof *c);
  if (!c) die("calloc", 0);
  uv_tcp_init(loop, &c->tcp);
  c->tcp.data = c;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) { conn_close(c); return; }
  uv_tcp_nodelay(&c->tcp, 1);
  n_conns++;
  uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* }====================================================== */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static double pct_us(double p) {
  if (!n_delays) return 0;
  size_t i = (size_t)(p * (double)n_delays);
  if (i >= n_delays) i = n_delays - 1;
  return (double)delays[i] / 1e3;
}

static void on_signal(uv_signal_t *s, int sig) {
  (void)s;
  qsort(delays, n_delays, sizeof *delays, cmp_i64);
  printf("DELAY_JSON {\"requests\":%zu,\"connections_opened\":%ld,\"p50_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f}\n",
         n_delays, n_conns, pct_us(0.50), pct_us(0.99), n_delays ? (double)delays[n_delays - 1] / 1e3 : 0.0);
  fflush(stdout);
  if (sig != SIGUSR1) exit(0);
  n_delays = 0, n_conns = 0;
}

int main(int argc, char **argv) {
  long port = 0, delay_ms = 50;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-p") && i + 1 < argc) port = strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "-d") && i + 1 < argc) delay_ms = strtol(argv[++i], NULL, 10);
    else { fprintf(stderr, "usage: delay_server [-p PORT] [-d DELAY_MS]\n"); return 2; }
  }
  if (port < 0 || port > 65535 || delay_ms < 0) { fprintf(stderr, "delay_server: bad port or delay\n"); return 2; }
  delay_ns = delay_ms * 1000000;
  char body[64];
  int blen = snprintf(body, sizeof body, "{\"ok\":true,\"delay_ms\":%ld}", delay_ms);
  response_len = (size_t)snprintf(response, sizeof response,
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", blen, body);

  loop = uv_default_loop();
  tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (tfd < 0) die("timerfd_create", 0);
  uv_poll_init(loop, &tfd_poll, tfd);
  uv_poll_start(&tfd_poll, UV_READABLE, on_timer);

  uv_tcp_t server;
  uv_tcp_init(loop, &server);
  struct sockaddr_in addr;
  uv_ip4_addr("127.0.0.1", (int)port, &addr);
  int err = uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0);
  if (err) die("bind", err);
  if ((err = uv_listen((uv_stream_t *)&server, 4096, on_connection))) die("listen", err);
  struct sockaddr_storage got;
  int glen = sizeof got;
  uv_tcp_getsockname(&server, (struct sockaddr *)&got, &glen);
  printf("PORT %d\n", ntohs(((struct sockaddr_in *)&got)->sin_port));
  fflush(stdout);

  uv_signal_t sterm, sint, susr1;
  uv_signal_init(loop, &susr1);
  uv_signal_start(&susr1, on_signal, SIGUSR1);
  uv_signal_init(loop, &sterm);
  uv_signal_start(&sterm, on_signal, SIGTERM);
  uv_signal_init(loop, &sint);
  uv_signal_start(&sint, on_signal, SIGINT);
  return uv_run(loop, UV_RUN_DEFAULT);
}
