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
** I/O is lua_floor.c's, from ndjson_loop.h (big reads split in place, one
** write per batch once no more input is waiting), so the two differ only in
** the work done per line.
**
** Build:  cc -O2 -std=c11 -Wall -Wextra -Werror -o build/bench/c_floor bench/floor/c_floor.c
** Run:    build/bench/c_floor [-s SPIN_US]   (exits 0 at EOF on stdin)
*/
#define _GNU_SOURCE /* memmem */
#define FLOOR_NAME "c_floor"
#include "ndjson_loop.h"

#include <string.h>

static const char init_result[] =
  "\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},"
  "\"serverInfo\":{\"name\":\"c-floor\",\"version\":\"1.0.0\"}}}\n";
static const char echo_result[] =
  "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}\n";
static const char not_found[] =
  "\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}\n";

static void buf_put(struct buf *b, const char *s, size_t n) {
  buf_reserve(b, n);
  memcpy(b->p + b->len, s, n);
  b->len += n;
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

static void handle_line(void *ud, struct buf *out, const char *line, size_t n) {
  (void)ud;
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

int main(int argc, char **argv) {
  return ndjson_loop(parse_spin(argc, argv), handle_line, NULL);
}
