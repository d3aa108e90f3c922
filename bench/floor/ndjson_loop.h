/*
** ndjson_loop.h — the stdio loop of both floors of the stdio benchmark
** (c_floor.c, lua_floor.c), so that they differ only in the work done per
** line. It has luamcp's I/O habits: stdin is read in 64 KiB chunks split in
** place into lines; each line goes to the floor's handler, which appends its
** reply, if any, to an output buffer; the replies gathered are written with
** one write() once no more input is waiting (so W requests in flight cost
** about one read and one write per batch, not per message); and before it
** blocks, the loop polls stdin for a moment (-s SPIN_US).
**
** Header-only, so each floor stays a single cc command: define FLOOR_NAME
** (e.g. "c_floor", the prefix of its error messages and usage line) and the
** feature-test macro the floor needs, then include it.
*/
#ifndef NDJSON_LOOP_H
#define NDJSON_LOOP_H

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef FLOOR_NAME
#error "define FLOOR_NAME before including ndjson_loop.h"
#endif

#define READ_CHUNK 65536
#define FLUSH_AT 65536 /* flush early past this, so a client that only writes still gets answers */

struct buf { char *p; size_t len, cap; };

static void buf_reserve(struct buf *b, size_t extra) {
  if (b->len + extra <= b->cap) return;
  size_t cap = b->cap ? b->cap : READ_CHUNK;
  while (cap < b->len + extra) cap *= 2;
  b->p = realloc(b->p, cap);
  if (!b->p) { perror(FLOOR_NAME ": realloc"); exit(1); }
  b->cap = cap;
}

static void write_all(struct buf *out) {
  const char *p = out->p;
  size_t n = out->len;
  while (n) {
    ssize_t w = write(1, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) { perror(FLOOR_NAME ": write"); exit(1); } /* the client is gone */
    p += w;
    n -= (size_t)w;
  }
  out->len = 0;
}

/* True when stdin has bytes (or EOF) waiting: then read on before flushing. */
static int input_waiting(void) {
  struct pollfd p = { .fd = 0, .events = POLLIN };
  return poll(&p, 1, 0) > 0;
}

/* A pipelining client usually sends its next request within microseconds of
   our reply: polling for it briefly before the blocking read saves a sleep
   and a wake-up, most of a request's latency at one in flight. luamcp does
   the same (core/reactor/engine.c, spin_for_input, 50 us); a floor without it would
   measure the wake-up, not the work. */
static void spin_for_input(long spin_us) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    if (input_waiting()) return;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < spin_us);
}

/* -s SPIN_US: how long to poll for more input before blocking (0: never). */
static long parse_spin(int argc, char **argv) {
  long spin_us = 50;
  int opt;
  while ((opt = getopt(argc, argv, "s:h")) != -1) {
    char *end = NULL;
    if (opt == 's') spin_us = strtol(optarg, &end, 10);
    if (opt != 's' || *end || spin_us < 0) {
      fprintf(stderr, "usage: " FLOOR_NAME " [-s SPIN_US]   (default 50; 0: no spinning)\n");
      exit(opt == 'h' ? 0 : 2);
    }
  }
  if (optind != argc) {
    fprintf(stderr, "usage: " FLOOR_NAME " [-s SPIN_US]\n");
    exit(2);
  }
  return spin_us;
}

/* A floor's work: the reply to line[0..n) (no '\n'), if any, appended to out. */
typedef void (*line_fn)(void *ud, struct buf *out, const char *line, size_t n);

/* Serves stdin until EOF, every line through handle (ud passed along), and a
** last line without '\n' too; returns the exit status (1 if a read failed). */
static int ndjson_loop(long spin_us, line_fn handle, void *ud) {
  struct buf in = {0}, out = {0};
  for (;;) {
    buf_reserve(&in, READ_CHUNK);
    ssize_t r = read(0, in.p + in.len, in.cap - in.len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) { perror(FLOOR_NAME ": read"); return 1; }
    if (r == 0) break;
    in.len += (size_t)r;
    /* Every complete line now; the partial tail moves to the front. */
    size_t start = 0;
    const char *nl;
    while ((nl = memchr(in.p + start, '\n', in.len - start))) {
      handle(ud, &out, in.p + start, (size_t)(nl - (in.p + start)));
      start = (size_t)(nl - in.p) + 1;
    }
    memmove(in.p, in.p + start, in.len - start);
    in.len -= start;
    if (out.len && (out.len >= FLUSH_AT || !input_waiting())) write_all(&out);
    if (!out.len && spin_us > 0) spin_for_input(spin_us);
  }
  if (in.len) handle(ud, &out, in.p, in.len); /* a last line without '\n' */
  write_all(&out);
  free(in.p);
  free(out.p);
  return 0;
}

#endif
