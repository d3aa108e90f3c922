/*
** c_floor.c — the bare C floor of the stdio benchmark: no Lua, no JSON.
**
** For each request line it finds the "id" value with a minimal scan (the
** first "id" key anywhere in the line: good enough for the benchmark driver,
** not for arbitrary JSON) and writes a canned reply carrying that id:
** initialize -> a fixed InitializeResult; tools/call -> the echo result for
** {"text":"hello"}; any other request -> -32601; a line without "id" (a
** notification) -> nothing. This is what the pipe, the syscalls and the
** driver cost by themselves; lua_floor.c adds Lua and lua-cjson to it.
**
** I/O is the same as lua_floor.c (big reads split in place, one write per
** batch once no more input is waiting), so the two differ only in the work
** done per line.
**
** Build:  cc -O2 -std=c11 -Wall -Wextra -Werror -o build/bench/c_floor bench/floor/c_floor.c
** Run:    build/bench/c_floor [-s SPIN_US]   (exits 0 at EOF on stdin)
*/
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK 65536
#define FLUSH_AT 65536 /* flush early past this, so a client that only writes still gets answers */

static const char init_result[] =
  "\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},"
  "\"serverInfo\":{\"name\":\"c-floor\",\"version\":\"1.0.0\"}}}\n";
static const char echo_result[] =
  "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}\n";
static const char not_found[] =
  "\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}\n";

struct buf { char *p; size_t len, cap; };

static void buf_reserve(struct buf *b, size_t extra) {
  if (b->len + extra <= b->cap) return;
  size_t cap = b->cap ? b->cap : READ_CHUNK;
  while (cap < b->len + extra) cap *= 2;
  b->p = realloc(b->p, cap);
  if (!b->p) { perror("c_floor: realloc"); exit(1); }
  b->cap = cap;
}

static void buf_put(struct buf *b, const char *s, size_t n) {
  buf_reserve(b, n);
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static void write_all(struct buf *out) {
  const char *p = out->p;
  size_t n = out->len;
  while (n) {
    ssize_t w = write(1, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) { perror("c_floor: write"); exit(1); } /* the client is gone */
    p += w;
    n -= (size_t)w;
  }
  out->len = 0;
}

static int input_waiting(void) {
  struct pollfd p = { .fd = 0, .events = POLLIN };
  return poll(&p, 1, 0) > 0;
}

/* A pipelining client usually sends its next request within microseconds of
   our reply: polling for it briefly before the blocking read saves a sleep
   and a wake-up, most of a request's latency at one in flight. luamcp does
   the same (core/engine.c, spin_for_input, 50 us); a floor without it would
   measure the wake-up, not the work. */
static void spin_for_input(long spin_us) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    if (input_waiting()) return;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < spin_us);
}

static int has(const char *line, size_t n, const char *needle) {
  return memmem(line, n, needle, strlen(needle)) != NULL;
}

/* The id value of line[0..n) as a span (a number, a string, null), or 0. */
static size_t find_id(const char *line, size_t n, const char **id) {
  const char *end = line + n;
  const char *p = memmem(line, n, "\"id\"", 4);
  if (!p) return 0;
  p += 4;
  while (p < end && (*p == ' ' || *p == ':' || *p == '\t')) p++;
  const char *v = p;
  if (p < end && *p == '"') {
    for (p++; p < end && *p != '"'; p++)
      if (*p == '\\' && p + 1 < end) p++;
    if (p == end) return 0; /* unterminated */
    p++;
  } else {
    while (p < end && *p != ',' && *p != '}' && *p != ' ') p++;
  }
  if (p == v) return 0;
  *id = v;
  return (size_t)(p - v);
}

static void handle_line(struct buf *out, const char *line, size_t n) {
  const char *id;
  size_t idn = find_id(line, n, &id);
  if (!idn) return; /* a notification */
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
  buf_put(out, head, sizeof head - 1);
  buf_put(out, id, idn);
  buf_put(out, ",", 1);
  if (has(line, n, "\"tools/call\"")) buf_put(out, echo_result, sizeof echo_result - 1);
  else if (has(line, n, "\"initialize\"")) buf_put(out, init_result, sizeof init_result - 1);
  else buf_put(out, not_found, sizeof not_found - 1);
}

/* -s SPIN_US: how long to poll for more input before blocking (0: never). */
static long parse_spin(int argc, char **argv) {
  long spin_us = 50;
  int opt;
  while ((opt = getopt(argc, argv, "s:h")) != -1) {
    char *end = NULL;
    if (opt == 's') spin_us = strtol(optarg, &end, 10);
    if (opt != 's' || *end || spin_us < 0) {
      fprintf(stderr, "usage: c_floor [-s SPIN_US]   (default 50; 0: no spinning)\n");
      exit(opt == 'h' ? 0 : 2);
    }
  }
  if (optind != argc) {
    fprintf(stderr, "usage: c_floor [-s SPIN_US]\n");
    exit(2);
  }
  return spin_us;
}

int main(int argc, char **argv) {
  long spin_us = parse_spin(argc, argv);
  struct buf in = {0}, out = {0};
  for (;;) {
    buf_reserve(&in, READ_CHUNK);
    ssize_t r = read(0, in.p + in.len, in.cap - in.len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) { perror("c_floor: read"); return 1; }
    if (r == 0) break;
    in.len += (size_t)r;
    size_t start = 0;
    const char *nl;
    while ((nl = memchr(in.p + start, '\n', in.len - start))) {
      handle_line(&out, in.p + start, (size_t)(nl - (in.p + start)));
      start = (size_t)(nl - in.p) + 1;
    }
    memmove(in.p, in.p + start, in.len - start);
    in.len -= start;
    if (out.len && (out.len >= FLUSH_AT || !input_waiting())) write_all(&out);
    if (!out.len && spin_us > 0) spin_for_input(spin_us);
  }
  if (in.len) handle_line(&out, in.p, in.len); /* a last line without '\n' */
  write_all(&out);
  free(in.p);
  free(out.p);
  return 0;
}
