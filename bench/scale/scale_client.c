/*
** scale_client: the latency drivers of the scale curves (bench/scale/README.md).
** Three modes, each printing one JSON object line on stdout (and a human line
** on stderr); the exit status is 1 unless every answer was right.
**
**   list     spawn a stdio MCP server, time start-up (fork until the initialize
**            reply) and read its RSS, then page through tools/list, following
**            nextCursor to the end, again and again: the round trip of every
**            page, the total of every listing, the tools seen (--expect N).
**   call     spawn a stdio MCP server and call its echo tool one at a time with
**            a text of each --sizes byte count (--calls times, after a tenth as
**            many untimed): latency per size, and the server's VmHWM after each.
**   sessions connect to a Streamable HTTP server (127.0.0.1:--port, stateful),
**            and open sessions one after another (initialize, initialized, one
**            tools/call each, never DELETEd) up to each of --counts; at each
**            count read VmRSS of --pid, then make one timed tools/call in every
**            open session (in rounds, until there are 200 samples); after the last count, --more K rounds of one call
**            per session, VmRSS after each (what used sessions hold). One
**            keep-alive connection: sessions are live at the same time,
**            requests are not.
**
** Everything runs one request at a time (a round trip is an upper bound of the
** server's time) and is bounded by -s SECONDS. One thread; the stdio modes poll
** both pipes, so a 5 MB request and its 5 MB echo cannot deadlock.
**
** Build: cc -O2 -std=c11 -Wall -Wextra -Werror -o scale_client scale_client.c
*/
#define _GNU_SOURCE /* pipe2, O_CLOEXEC, memmem, strcasestr */
#define DRIVER_NAME "scale_client"
#include "../driver_util.h" /* clock, /proc, buffer, JSON scan, spawn and reap */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_MORE 64
#define MIN_SAMPLES 200 /* timed calls at each session count, at least */

static void usage(void) {
  fprintf(stderr,
    "usage: scale_client list [--expect N] [--lists MAX] [--budget-ms MS] [-s SECONDS] [--label T] -- CMD...\n"
    "       scale_client call --sizes B,B,... --calls N,N,... [-s SECONDS] [--label T] -- CMD...\n"
    "       scale_client sessions --port P --pid PID --counts N,N,... [--more K] [-s SECONDS] [--label T]\n"
    "  list:     page through tools/list (following nextCursor) until MAX listings (default 1000)\n"
    "            or MS of listing (default 1000) have passed, at least 5 listings;\n"
    "            --expect N: every listing must hold N tools\n"
    "  call:     echo calls with a text of each size, N timed calls per size\n"
    "  sessions: open stateful HTTP sessions up to each count; RSS of PID and\n"
    "            one tools/call per open session at each count (rounds of them up to\n"
    "            200 samples); after the last,\n"
    "            K more calls per session (at most 64), RSS after each round\n"
    "  -s SECONDS  hard bound on the whole run (default 60)\n");
  exit(2);
}

/* {====================================================== option lists, latencies */

/* "1,100,1000" -> up to max longs >= min; returns the count. */
static int parse_list(const char *s, long *out, int max, long min) {
  int n = 0;
  char *copy = strdup(s), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == max) usage();
    out[n++] = parse_long(t, min, usage);
  }
  free(copy);
  if (n == 0) usage();
  return n;
}

/* "key":{"n","p50_us","p99_us","max_us","min_us"} of n latencies (sorted). */
static void print_lat(const char *key, const int64_t *v, long n) {
  printf("\"%s\":{\"n\":%ld,\"p50_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,\"min_us\":%.1f}",
         key, n, percentile_us(v, n, 0.50), percentile_us(v, n, 0.99),
         percentile_us(v, n, 1.0), percentile_us(v, n, 0.0));
}

/* }====================================================== */

/* {====================================================== the messages
** What a reply says, read with driver_util's minimal JSON scan: its id, and
** of its result the few keys the modes look at. */

/* The facts we read of a reply; result_* point into the line. */
struct message {
  bool has_id, has_method, has_error, is_error;
  long long id;
  const char *result, *result_end;
  const char *cursor, *cursor_end;  /* result.nextCursor, with its quotes */
  const char *proto, *proto_end;    /* result.protocolVersion, with its quotes */
  long tools;                       /* elements of result.tools; -1 if absent */
};

static void result_key(void *ud, const char *key, size_t klen,
                       const char *val, const char *vend) {
  struct message *m = ud;
  if (key_is(key, klen, "isError") && vend - val == 4 && !memcmp(val, "true", 4)) m->is_error = true;
  else if (key_is(key, klen, "nextCursor") && *val == '"') m->cursor = val, m->cursor_end = vend;
  else if (key_is(key, klen, "protocolVersion") && *val == '"') m->proto = val, m->proto_end = vend;
  else if (key_is(key, klen, "tools")) m->tools = count_array(val, vend);
}

static void message_key(void *ud, const char *key, size_t klen,
                        const char *val, const char *vend) {
  struct message *m = ud;
  if (key_is(key, klen, "id")) {
    char *num_end;
    long long id = strtoll(val, &num_end, 10);
    if (num_end == vend) m->has_id = true, m->id = id;
  } else if (key_is(key, klen, "method")) m->has_method = true;
  else if (key_is(key, klen, "error")) m->has_error = true;
  else if (key_is(key, klen, "result")) {
    m->result = val, m->result_end = vend;
    if (*val == '{') scan_object(val, vend, result_key, m);
  }
}

/* Parses a reply; false (and a message on stderr) unless it is a result for id. */
static bool parse_reply(const char *line, size_t len, long long id, struct message *m) {
  *m = (struct message){ .tools = -1 };
  if (!scan_object(line, line + len, message_key, m) || !m->has_id || m->id != id ||
      !m->result || m->has_error || m->is_error) {
    fprintf(stderr, "scale_client: unexpected reply to id %lld: %.*s\n", id,
            (int)(len > 300 ? 300 : len), line);
    return false;
  }
  return true;
}

/* }====================================================== */

/* {====================================================== a stdio server */

struct child {
  struct server srv;     /* its pid, pipes (srv.to, srv.from) and fork time */
  struct buf in;         /* bytes read, not yet handed out */
  size_t line_len;       /* the line last returned by child_rpc, consumed next time */
  int64_t deadline;
};

/* The server's logs are not ours to show: its stderr goes to /dev/null. */
static void child_spawn(struct child *c, char **cmd, int64_t deadline) {
  *c = (struct child){ .deadline = deadline };
  server_spawn(&c->srv, cmd, true);
}

/* Writes req (req_len bytes) while reading, until a line that is not a
** notification or request arrives (one call in flight: it is the reply).
** Returns it (valid until the next call) or NULL on EOF, error or deadline,
** and in *t_end when its last byte was read (before we look at it, so a 5 MB
** answer is not timed with our own scan of it); notify: a message with no
** reply expected, returns "" once written. */
static const char *child_rpc(struct child *c, const char *req, size_t req_len, size_t *len, bool notify,
                             int64_t *t_end) {
  buf_consume(&c->in, c->line_len);
  c->line_len = 0;
  size_t off = 0, scanned = 0;
  int64_t t_read = now_ns();
  for (;;) {
    while (off < req_len) {
      ssize_t k = write(c->srv.to, req + off, req_len - off);
      if (k > 0) off += (size_t)k;
      else if (k < 0 && errno == EINTR) continue;
      else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      else return NULL;
    }
    if (notify && off == req_len) { *len = 0; return ""; }
    for (;;) { /* hand out a complete reply line if there is one */
      char *nl = memchr(c->in.p + scanned, '\n', c->in.len - scanned);
      if (!nl) { scanned = c->in.len; break; }
      size_t n = (size_t)(nl - c->in.p) + 1;
      const char *line = c->in.p;
      struct message m = { .tools = -1 };
      if (scan_object(line, line + n - 1, message_key, &m) && m.has_method) {
        buf_consume(&c->in, n); /* a notification: skip it */
        scanned = 0;
        continue;
      }
      c->line_len = n;
      *len = n - 1;
      if (t_end) *t_end = t_read;
      return line;
    }
    int64_t left_ms = (c->deadline - now_ns()) / 1000000;
    if (left_ms <= 0) { fprintf(stderr, "scale_client: time limit (-s) reached\n"); return NULL; }
    struct pollfd fds[2] = {
      { .fd = c->srv.from, .events = POLLIN },
      { .fd = c->srv.to, .events = off < req_len ? POLLOUT : 0 },
    };
    if (poll(fds, 2, left_ms > 1000 ? 1000 : (int)left_ms) < 0 && errno != EINTR) return NULL;
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      for (;;) {
        buf_reserve(&c->in, 1 << 16);
        ssize_t k = read(c->srv.from, c->in.p + c->in.len, c->in.cap - c->in.len);
        if (k > 0) { c->in.len += (size_t)k; t_read = now_ns(); continue; }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        fprintf(stderr, "scale_client: the server closed its stdout\n");
        return NULL;
      }
    }
  }
}

/* Sends initialize, times it from fork, sends initialized, lets the server
** settle; *startup_ms, *rss_kb. false on failure. */
static bool child_init(struct child *c, double *startup_ms, long *rss_kb) {
  struct buf b = {0};
  buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                 "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                 "\"clientInfo\":{\"name\":\"scale_client\",\"version\":\"1.0.0\"}}}\n");
  size_t len;
  int64_t t;
  const char *line = child_rpc(c, b.p, b.len, &len, false, &t);
  struct message m;
  bool ok = line && parse_reply(line, len, 0, &m);
  if (ok) {
    *startup_ms = (double)(t - c->srv.t_spawn) / 1e6;
    b.len = 0;
    buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    ok = child_rpc(c, b.p, b.len, &len, true, NULL) != NULL;
    sleep_ms(IDLE_SETTLE_MS);
    *rss_kb = proc_status_kb(c->srv.pid, "VmRSS");
  }
  free(b.p);
  return ok;
}

/* Closes stdin, gives the server EXIT_GRACE_MS to exit, then kills it.
** Returns true if it exited by itself with status 0. */
static bool child_close(struct child *c) {
  bool killed;
  int status = server_reap(&c->srv, &killed);
  free(c->in.p);
  return !killed && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* }====================================================== */

/* {====================================================== list mode */

struct opts {
  const char *label;
  double seconds;
  char **cmd;
  long expect, lists_max, budget_ms;                  /* list */
  long sizes[8], calls[8]; int nsizes, ncalls;        /* call */
  long port, pid, counts[16], more; int ncounts;      /* sessions */
};

static int mode_list(const struct opts *o) {
  struct child c;
  int64_t t0 = now_ns();
  child_spawn(&c, o->cmd, t0 + (int64_t)(o->seconds * 1e9));
  double startup_ms = -1;
  long rss_init = -1;
  const char *why = "ok";
  if (!child_init(&c, &startup_ms, &rss_init)) why = "initialize failed";

  size_t cap_pages = 1 << 16, npages = 0;
  int64_t *page_ns = malloc(cap_pages * sizeof *page_ns);
  int64_t *list_ns = malloc((size_t)o->lists_max * sizeof *list_ns);
  long lists = 0, pages_per_list = -1, tools_per_list = -1, slow_pages = 0;
  long slow[32][3];                  /* the first pages over 1 ms: listing, page, us */
  size_t page_bytes_max = 0, list_bytes = 0;
  struct buf req = {0};
  long long id = 0;
  int64_t listing_started = now_ns();
  while (!strcmp(why, "ok") && lists < o->lists_max &&
         (lists < 5 || now_ns() - listing_started < o->budget_ms * 1000000LL)) {
    long pages = 0, tools = 0;
    size_t bytes = 0;
    char cursor[256] = "";
    int64_t t_list = now_ns();
    for (;;) {
      req.len = 0;
      buf_printf(&req, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"tools/list\",\"params\":{%s%s}}\n",
                 ++id, *cursor ? "\"cursor\":" : "", cursor);
      size_t len;
      int64_t t = now_ns(), t_end;
      const char *line = child_rpc(&c, req.p, req.len, &len, false, &t_end);
      int64_t dt = t_end - t;
      struct message m;
      if (!line || !parse_reply(line, len, id, &m) || m.tools < 0) { why = "bad tools/list reply"; break; }
      if (npages == cap_pages) {
        page_ns = realloc(page_ns, (cap_pages *= 2) * sizeof *page_ns);
        if (!page_ns) driver_die("out of memory");
      }
      page_ns[npages++] = dt;
      if (dt > 1000000 && slow_pages < 32)
        slow[slow_pages][0] = lists, slow[slow_pages][1] = pages, slow[slow_pages][2] = (long)(dt / 1000);
      if (dt > 1000000) slow_pages++;
      if (len > page_bytes_max) page_bytes_max = len;
      bytes += len;
      pages++;
      tools += m.tools;
      if (!m.cursor) break;
      size_t clen = (size_t)(m.cursor_end - m.cursor);
      if (clen >= sizeof cursor) { why = "nextCursor too long"; break; }
      memcpy(cursor, m.cursor, clen);
      cursor[clen] = 0;
    }
    if (strcmp(why, "ok")) break;
    list_ns[lists++] = now_ns() - t_list;
    if (o->expect >= 0 && tools != o->expect) {
      fprintf(stderr, "scale_client: a listing held %ld tools, not %ld\n", tools, o->expect);
      why = "wrong number of tools";
    }
    if (pages_per_list >= 0 && (pages != pages_per_list || tools != tools_per_list)) why = "listings differ";
    pages_per_list = pages, tools_per_list = tools, list_bytes = bytes;
  }
  long rss_after = proc_status_kb(c.srv.pid, "VmRSS"), hwm = proc_status_kb(c.srv.pid, "VmHWM");
  double first_list_ms = lists ? (double)list_ns[0] / 1e6 : -1;
  sort_i64(page_ns, (long)npages);
  sort_i64(list_ns, lists);
  if (!child_close(&c) && !strcmp(why, "ok")) why = "server did not exit cleanly on stdin EOF";

  fprintf(stderr, "%s: list %ld tools, %ld pages, %ld listings: page p50=%.0fus p99=%.0fus "
          "max=%.0fus, listing p50=%.2fms, start-up %.1fms, RSS %ld kB [%s]\n",
          o->label, tools_per_list, pages_per_list, lists, percentile_us(page_ns, (long)npages, 0.5),
          percentile_us(page_ns, (long)npages, 0.99), percentile_us(page_ns, (long)npages, 1),
          percentile_us(list_ns, lists, 0.5) / 1000, startup_ms, rss_init, why);
  printf("{\"mode\":\"list\",\"label\":");
  json_string(stdout, o->label);
  printf(",\"startup_ms\":%.2f,\"rss_init_kb\":%ld,\"rss_after_kb\":%ld,\"hwm_kb\":%ld,"
         "\"lists\":%ld,\"pages_per_list\":%ld,\"tools_per_list\":%ld,\"bytes_per_list\":%zu,"
         "\"page_bytes_max\":%zu,\"pages_over_1ms\":%ld,\"first_list_ms\":%.3f,",
         startup_ms, rss_init, rss_after, hwm, lists, pages_per_list, tools_per_list, list_bytes,
         page_bytes_max, slow_pages, first_list_ms);
  print_lat("page", page_ns, (long)npages);
  printf(",");
  print_lat("list", list_ns, lists);
  printf(",\"slow_pages\":[");
  for (long k = 0; k < slow_pages && k < 32; k++)
    printf("%s{\"listing\":%ld,\"page\":%ld,\"us\":%ld}", k ? "," : "", slow[k][0], slow[k][1], slow[k][2]);
  printf("],\"status\":");
  json_string(stdout, why);
  printf("}\n");
  free(page_ns);
  free(list_ns);
  free(req.p);
  return strcmp(why, "ok") ? 1 : 0;
}

/* }====================================================== */

/* {====================================================== call mode */

static int mode_call(const struct opts *o) {
  if (o->nsizes != o->ncalls) usage();
  struct child c;
  child_spawn(&c, o->cmd, now_ns() + (int64_t)(o->seconds * 1e9));
  double startup_ms = -1;
  long rss_init = -1;
  const char *why = "ok";
  if (!child_init(&c, &startup_ms, &rss_init)) why = "initialize failed";

  struct buf req = {0}, text = {0};
  long long id = 0;
  printf("{\"mode\":\"call\",\"label\":");
  json_string(stdout, o->label);
  printf(",\"startup_ms\":%.2f,\"rss_init_kb\":%ld,\"sizes\":[", startup_ms, rss_init);
  for (int s = 0; s < o->nsizes; s++) {
    size_t size = (size_t)o->sizes[s];
    text.len = 0;
    buf_reserve(&text, size);
    for (size_t i = 0; i < size; i++) text.p[i] = (char)('a' + (i * 7 + i / 26) % 26);
    text.len = size;
    long warm = o->calls[s] / 10 > 0 ? o->calls[s] / 10 : 1, n = 0;
    int64_t *lat = calloc((size_t)o->calls[s], sizeof *lat);
    for (long k = 0; k < warm + o->calls[s] && !strcmp(why, "ok"); k++) {
      req.len = 0;
      buf_printf(&req, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"tools/call\","
                       "\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"", ++id);
      buf_add(&req, text.p, text.len);
      buf_add(&req, "\"}}}\n", 5);
      size_t len;
      int64_t t = now_ns(), t_end;
      const char *line = child_rpc(&c, req.p, req.len, &len, false, &t_end);
      int64_t dt = t_end - t;
      struct message m;
      if (!line || !parse_reply(line, len, id, &m)) { why = "bad tools/call reply"; break; }
      if (!memmem(m.result, (size_t)(m.result_end - m.result), text.p, text.len)) {
        why = "the reply does not hold the text";
        break;
      }
      if (k >= warm) lat[n++] = dt;
    }
    long hwm = proc_status_kb(c.srv.pid, "VmHWM"), rss = proc_status_kb(c.srv.pid, "VmRSS");
    sort_i64(lat, n);
    double p50 = percentile_us(lat, n, 0.5);
    fprintf(stderr, "%s: echo %zu B x %ld: p50=%.0fus p99=%.0fus %.1f MB/s, VmHWM %ld kB [%s]\n",
            o->label, size, n, p50, percentile_us(lat, n, 0.99),
            p50 > 0 ? (double)size / p50 : 0, hwm, why);
    printf("%s{\"bytes\":%zu,\"warmup\":%ld,", s ? "," : "", size, warm);
    print_lat("call", lat, n);
    printf(",\"mb_per_s\":%.2f,\"rss_kb\":%ld,\"hwm_kb\":%ld}", p50 > 0 ? (double)size / p50 : 0, rss, hwm);
    free(lat);
  }
  if (!child_close(&c) && !strcmp(why, "ok")) why = "server did not exit cleanly on stdin EOF";
  printf("],\"status\":");
  json_string(stdout, why);
  printf("}\n");
  free(req.p);
  free(text.p);
  return strcmp(why, "ok") ? 1 : 0;
}

/* }====================================================== */

/* {====================================================== sessions mode: a small HTTP/1.1 client */

struct http {
  int fd;
  long port;
  struct buf in;
  int64_t deadline;
};

struct response {
  int status;
  char sid[128];
  struct buf body;
};

static bool http_connect(struct http *h) {
  if (h->fd >= 0) close(h->fd);
  h->in.len = 0;
  h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (h->fd < 0) driver_die("socket: %s", strerror(errno));
  int one = 1;
  setsockopt(h->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct timeval tv = { .tv_sec = 10 };
  setsockopt(h->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(h->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)h->port) };
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return connect(h->fd, (struct sockaddr *)&a, sizeof a) == 0;
}

/* Reads more into h->in; false on EOF, error or timeout. */
static bool http_fill(struct http *h) {
  buf_reserve(&h->in, 1 << 16);
  for (;;) {
    ssize_t k = read(h->fd, h->in.p + h->in.len, h->in.cap - h->in.len);
    if (k > 0) { h->in.len += (size_t)k; return true; }
    if (k < 0 && errno == EINTR) continue;
    return false;
  }
}

/* The value of header name in the head (ending at end), copied into out. */
static bool header(const char *head, const char *end, const char *name, char *out, size_t cap) {
  size_t nlen = strlen(name);
  for (const char *p = head; p < end;) {
    const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
    if (!eol) eol = end;
    if ((size_t)(eol - p) > nlen && !strncasecmp(p, name, nlen) && p[nlen] == ':') {
      const char *v = p + nlen + 1;
      while (v < eol && *v == ' ') v++;
      size_t n = (size_t)(eol - v);
      if (n >= cap) n = cap - 1;
      memcpy(out, v, n);
      out[n] = 0;
      return true;
    }
    p = eol + 2;
  }
  return false;
}

/* Reads one response: Content-Length, chunked, or (for 202/204) no body. */
static bool http_read(struct http *h, struct response *r) {
  char *eoh;
  while (!(eoh = h->in.len ? memmem(h->in.p, h->in.len, "\r\n\r\n", 4) : NULL))
    if (!http_fill(h)) return false;
  size_t head_len = (size_t)(eoh - h->in.p) + 4;
  if (sscanf(h->in.p, "HTTP/1.%*d %d", &r->status) != 1) return false;
  char v[128];
  r->sid[0] = 0;
  header(h->in.p, eoh, "Mcp-Session-Id", r->sid, sizeof r->sid);
  bool close_after = header(h->in.p, eoh, "Connection", v, sizeof v) && !strcasecmp(v, "close");
  long clen = header(h->in.p, eoh, "Content-Length", v, sizeof v) ? atol(v) : -1;
  bool chunked = header(h->in.p, eoh, "Transfer-Encoding", v, sizeof v) && strcasestr(v, "chunked");
  buf_consume(&h->in, head_len);
  r->body.len = 0;
  if (clen >= 0) {
    while (h->in.len < (size_t)clen)
      if (!http_fill(h)) return false;
    buf_add(&r->body, h->in.p, (size_t)clen);
    buf_consume(&h->in, (size_t)clen);
  } else if (chunked) {
    for (;;) {
      char *eol;
      while (!(eol = h->in.len ? memmem(h->in.p, h->in.len, "\r\n", 2) : NULL))
        if (!http_fill(h)) return false;
      size_t n = strtoul(h->in.p, NULL, 16), skip = (size_t)(eol - h->in.p) + 2;
      while (h->in.len < skip + n + 2)
        if (!http_fill(h)) return false;
      buf_add(&r->body, h->in.p + skip, n);
      buf_consume(&h->in, skip + n + 2);
      if (n == 0) break; /* (no trailers are sent by these servers) */
    }
  } else if (r->status != 202 && r->status != 204) {
    while (http_fill(h)) {}
    buf_add(&r->body, h->in.p, h->in.len);
    h->in.len = 0;
    close_after = true;
  }
  if (close_after) http_connect(h);
  return true;
}

/* POSTs body (with the session's headers if sid); reconnects once if the
** kept-alive connection was closed under us. */
static bool http_post(struct http *h, const char *sid, const char *proto, const char *body,
                      struct response *r) {
  struct buf req = {0};
  buf_printf(&req, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%ld\r\nContent-Type: application/json\r\n"
                   "Accept: application/json, text/event-stream\r\nContent-Length: %zu\r\n",
             h->port, strlen(body));
  if (sid) buf_printf(&req, "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n", sid, proto);
  buf_printf(&req, "\r\n%s", body);
  bool ok = false;
  for (int attempt = 0; attempt < 2 && !ok; attempt++) {
    if (attempt && !http_connect(h)) break;
    ok = send(h->fd, req.p, req.len, MSG_NOSIGNAL) == (ssize_t)req.len && http_read(h, r);
  }
  free(req.p);
  return ok;
}

/* One JSON-RPC request in a session: status 200 and a result for id. */
static bool session_rpc(struct http *h, const char *sid, const char *proto, long long id,
                        const char *method, const char *params, struct response *r, struct message *m) {
  char body[512];
  snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"%s\",\"params\":%s}",
           id, method, params);
  if (!http_post(h, sid, proto, body, r)) { fprintf(stderr, "scale_client: %s: no answer\n", method); return false; }
  if (r->status != 200) {
    fprintf(stderr, "scale_client: %s: HTTP %d %.*s\n", method, r->status,
            (int)(r->body.len > 200 ? 200 : r->body.len), r->body.p ? r->body.p : "");
    return false;
  }
  /* An SSE answer would put the message after "data: "; these are JSON answers. */
  const char *p = r->body.p, *end = r->body.p + r->body.len;
  const char *data = memmem(p, r->body.len, "data: ", 6);
  if (data && *skip_ws(p, end) != '{') p = data + 6;
  return parse_reply(p, (size_t)(end - p), id, m);
}

static int mode_sessions(const struct opts *o) {
  struct http h = { .fd = -1, .port = o->port };
  int64_t t0 = now_ns();
  h.deadline = t0 + (int64_t)(o->seconds * 1e9);
  const char *why = "ok";
  while (!http_connect(&h)) { /* the server may still be starting */
    if (now_ns() > t0 + 10000000000LL) { why = "cannot connect"; break; }
    sleep_ms(20);
  }
  long max = o->counts[o->ncounts - 1];
  char (*sids)[128] = calloc((size_t)max, sizeof *sids);
  char proto[64] = "2025-11-25";
  int64_t *open_ns = calloc((size_t)max, sizeof *open_ns), *call_ns = calloc((size_t)max, sizeof *call_ns);
  int64_t *sweep_ns = calloc((size_t)max + MIN_SAMPLES, sizeof *sweep_ns);
  struct response r = {0};
  struct message m;
  long long id = 0;
  long open = 0;
  const char *call_params = "{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}}";
  long rss0 = proc_status_kb((pid_t)o->pid, "VmRSS");
  printf("{\"mode\":\"sessions\",\"label\":");
  json_string(stdout, o->label);
  printf(",\"rss0_kb\":%ld,\"points\":[", rss0);
  for (int ci = 0; ci < o->ncounts && !strcmp(why, "ok"); ci++) {
    long target = o->counts[ci], opened_from = open;
    while (open < target && !strcmp(why, "ok")) {
      if (now_ns() > h.deadline) { why = "time limit (-s) reached"; break; }
      int64_t t = now_ns();
      if (!session_rpc(&h, NULL, proto, ++id, "initialize",
                       "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                       "\"clientInfo\":{\"name\":\"scale_client\",\"version\":\"1.0.0\"}}", &r, &m) ||
          !r.sid[0] || !m.proto) {
        why = "initialize failed";
        break;
      }
      open_ns[open] = now_ns() - t;
      snprintf(proto, sizeof proto, "%.*s", (int)(m.proto_end - m.proto - 2), m.proto + 1);
      memcpy(sids[open], r.sid, sizeof r.sid);
      if (!http_post(&h, sids[open], proto, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &r) ||
          r.status != 202) {
        fprintf(stderr, "scale_client: notifications/initialized: HTTP %d\n", r.status);
        why = "initialized failed";
        break;
      }
      t = now_ns();
      if (!session_rpc(&h, sids[open], proto, ++id, "tools/call", call_params, &r, &m)) { why = "tools/call failed"; break; }
      call_ns[open] = now_ns() - t;
      open++;
    }
    if (strcmp(why, "ok")) break;
    sleep_ms(100);
    long rss_opened = proc_status_kb((pid_t)o->pid, "VmRSS");
    /* Timed: one call in every open session, in as many rounds as it takes
       to have MIN_SAMPLES calls (1 session: 200 calls; 1,000: one each).
       After the last count, --more untimed rounds of one call per session
       (RSS after each): what sessions hold once they are used. */
    long timed = (MIN_SAMPLES + open - 1) / open, nsweep = 0;
    for (long k = 0; k < timed; k++)
      for (long s = 0; s < open && !strcmp(why, "ok"); s++) {
        int64_t t = now_ns();
        if (!session_rpc(&h, sids[s], proto, ++id, "tools/call", call_params, &r, &m)) why = "tools/call failed";
        sweep_ns[nsweep++] = now_ns() - t;
      }
    long more = ci == o->ncounts - 1 ? o->more : 0, more_rss[MAX_MORE];
    for (long k = 0; k < more && !strcmp(why, "ok"); k++) {
      for (long s = 0; s < open && !strcmp(why, "ok"); s++)
        if (!session_rpc(&h, sids[s], proto, ++id, "tools/call", call_params, &r, &m)) why = "tools/call failed";
      sleep_ms(50);
      more_rss[k] = proc_status_kb((pid_t)o->pid, "VmRSS");
    }
    sleep_ms(100);
    long rss = proc_status_kb((pid_t)o->pid, "VmRSS"), hwm = proc_status_kb((pid_t)o->pid, "VmHWM");
    sort_i64(open_ns + opened_from, open - opened_from);
    sort_i64(call_ns + opened_from, open - opened_from);
    sort_i64(sweep_ns, nsweep);
    fprintf(stderr, "%s: %ld sessions: RSS %ld kB, initialize p50 %.0fus, call p50 %.0fus p99 %.0fus [%s]\n",
            o->label, open, rss_opened, percentile_us(open_ns + opened_from, open - opened_from, 0.5),
            percentile_us(sweep_ns, nsweep, 0.5), percentile_us(sweep_ns, nsweep, 0.99), why);
    printf("%s{\"sessions\":%ld,\"rss_opened_kb\":%ld,\"rss_kb\":%ld,\"hwm_kb\":%ld,", ci ? "," : "",
           open, rss_opened, rss, hwm);
    if (more) {
      printf("\"more_calls_rss_kb\":[");
      for (long k = 0; k < more; k++) printf("%s%ld", k ? "," : "", more_rss[k]);
      printf("],");
    }
    print_lat("initialize", open_ns + opened_from, open - opened_from);
    printf(",");
    print_lat("first_call", call_ns + opened_from, open - opened_from);
    printf(",");
    print_lat("call", sweep_ns, nsweep);
    printf("}");
  }
  printf("],\"protocol\":");
  json_string(stdout, proto);
  printf(",\"status\":");
  json_string(stdout, why);
  printf("}\n");
  if (h.fd >= 0) close(h.fd);
  free(sids);
  free(open_ns);
  free(call_ns);
  free(sweep_ns);
  free(r.body.p);
  free(h.in.p);
  return strcmp(why, "ok") ? 1 : 0;
}

/* }====================================================== */

int main(int argc, char **argv) {
  if (argc < 2) usage();
  const char *mode = argv[1];
  struct opts o = { .seconds = 60, .expect = -1, .lists_max = 1000, .budget_ms = 1000 };
  char sizes[256] = "", calls[256] = "", counts[256] = "";
  int i = 2;
  for (; i < argc; i++) {
    const char *a = argv[i];
    bool v = i + 1 < argc;
    if (!strcmp(a, "--")) { i++; break; }
    else if (!strcmp(a, "-s") && v) o.seconds = (double)parse_long(argv[++i], 1, usage);
    else if (!strcmp(a, "--label") && v) o.label = argv[++i];
    else if (!strcmp(a, "--expect") && v) o.expect = parse_long(argv[++i], 0, usage);
    else if (!strcmp(a, "--lists") && v) o.lists_max = parse_long(argv[++i], 1, usage);
    else if (!strcmp(a, "--budget-ms") && v) o.budget_ms = parse_long(argv[++i], 0, usage);
    else if (!strcmp(a, "--sizes") && v) snprintf(sizes, sizeof sizes, "%s", argv[++i]);
    else if (!strcmp(a, "--calls") && v) snprintf(calls, sizeof calls, "%s", argv[++i]);
    else if (!strcmp(a, "--counts") && v) snprintf(counts, sizeof counts, "%s", argv[++i]);
    else if (!strcmp(a, "--port") && v) o.port = parse_long(argv[++i], 1, usage);
    else if (!strcmp(a, "--pid") && v) o.pid = parse_long(argv[++i], 1, usage);
    else if (!strcmp(a, "--more") && v) o.more = parse_long(argv[++i], 0, usage);
    else usage();
  }
  o.cmd = argv + i;
  if (!o.label) o.label = i < argc ? argv[i] : mode;
  signal(SIGPIPE, SIG_IGN);
  if (!strcmp(mode, "list") && i < argc) return mode_list(&o);
  if (!strcmp(mode, "call") && i < argc && *sizes && *calls) {
    o.nsizes = parse_list(sizes, o.sizes, 8, 1);
    o.ncalls = parse_list(calls, o.calls, 8, 1);
    return mode_call(&o);
  }
  if (!strcmp(mode, "sessions") && o.port && o.pid && *counts && o.more <= MAX_MORE) {
    o.ncounts = parse_list(counts, o.counts, 16, 1);
    for (int k = 1; k < o.ncounts; k++)
      if (o.counts[k] <= o.counts[k - 1]) usage();
    return mode_sessions(&o);
  }
  usage();
}
