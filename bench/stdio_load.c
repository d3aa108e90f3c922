/*
** stdio_load: a load driver for MCP servers that speak newline-delimited
** JSON-RPC over stdio. It spawns the server, times start-up (fork until the
** `initialize` reply), reads its idle RSS, then keeps W `tools/call` requests
** in flight until N have been answered, and reports throughput, p50/p99
** latency, idle and peak RSS (and, with --rss-every K, VmRSS every K
** answers: is memory flat over a long run?). One thread, poll(), non-blocking
** pipes: a server that answers while we are still writing can never deadlock us.
**
** Build: cc -O2 -std=c11 -Wall -Wextra -Werror -o stdio_load stdio_load.c
*/
#define _GNU_SOURCE /* pipe2, O_CLOEXEC */
#define DRIVER_NAME "stdio_load"
#include "driver_util.h" /* clock, /proc, buffer, JSON scan, spawn and reap */

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define INIT_ID 0 /* tools/call ids are 1..N, so 0 is free for initialize */

/* {====================================================== options */

struct options {
  long n, w, rss_every, warmup;
  double seconds_max;
  bool json, quiet_stderr;
  const char *tool, *args, *label;
  char **cmd;
};

static void usage(void) {
  fprintf(stderr,
    "usage: stdio_load [-n N] [-w W] [-s SECONDS_MAX] [--json] [-q]\n"
    "                  [--tool NAME] [--args JSON] [--label TEXT] [--rss-every K]\n"
    "                  [--warmup K]\n"
    "                  -- CMD ARGS...\n"
    "  -n N          tools/call requests to send (default 10000)\n"
    "  -w W          requests kept in flight (default 1)\n"
    "  -s SECONDS    hard bound on the whole run (default 60)\n"
    "  --json        print one JSON object line on stdout (human line on stderr)\n"
    "  -q            send the server's stderr to /dev/null\n"
    "  --tool NAME   tool to call (default echo)\n"
    "  --args JSON   its arguments, inserted verbatim (default {\"text\":\"hello\"})\n"
    "  --label TEXT  name echoed in the report (default CMD)\n"
    "  --rss-every K read the server's VmRSS at the start of the load and every K\n"
    "                answers; --json then adds \"rss_samples\":[{\"answers\",\"rss_kb\"}]\n"
    "  --warmup K    leave the first K answers out of req/s and latency (they\n"
    "                are still sent, checked and counted in n; K < N)\n");
  exit(2);
}

/* The tool name goes into a JSON string unescaped, so keep it plain. */
static bool plain_name(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (!(('a' <= *s && *s <= 'z') || ('A' <= *s && *s <= 'Z') ||
          ('0' <= *s && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
      return false;
  return true;
}

static void parse_options(int argc, char **argv, struct options *o) {
  *o = (struct options){ .n = 10000, .w = 1, .seconds_max = 60,
                         .tool = "echo", .args = "{\"text\":\"hello\"}" };
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    bool has_val = i + 1 < argc;
    if (!strcmp(a, "--")) { i++; break; }
    else if (!strcmp(a, "-n") && has_val) o->n = parse_long(argv[++i], 1, usage);
    else if (!strcmp(a, "-w") && has_val) o->w = parse_long(argv[++i], 1, usage);
    else if (!strcmp(a, "-s") && has_val) o->seconds_max = (double)parse_long(argv[++i], 1, usage);
    else if (!strcmp(a, "--json")) o->json = true;
    else if (!strcmp(a, "-q")) o->quiet_stderr = true;
    else if (!strcmp(a, "--tool") && has_val) o->tool = argv[++i];
    else if (!strcmp(a, "--args") && has_val) o->args = argv[++i];
    else if (!strcmp(a, "--label") && has_val) o->label = argv[++i];
    else if (!strcmp(a, "--rss-every") && has_val) o->rss_every = parse_long(argv[++i], 1, usage);
    else if (!strcmp(a, "--warmup") && has_val) o->warmup = parse_long(argv[++i], 0, usage);
    else usage();
  }
  if (i >= argc || !plain_name(o->tool) || o->warmup >= o->n) usage();
  o->cmd = argv + i;
  if (!o->label) o->label = o->cmd[0];
}

/* }====================================================== */

/* {====================================================== the messages
** What a reply says, read with driver_util's minimal JSON scan: we only
** need its id, whether it is a request or notification (method), and
** result/error, result.isError. */

struct message {
  bool has_id, id_is_int, has_method, has_result, has_error, is_error;
  long long id;
};

static void result_key(void *ud, const char *key, size_t klen,
                       const char *val, const char *vend) {
  if (key_is(key, klen, "isError") && vend - val == 4 && !memcmp(val, "true", 4))
    ((struct message *)ud)->is_error = true;
}

static void message_key(void *ud, const char *key, size_t klen,
                        const char *val, const char *vend) {
  struct message *m = ud;
  if (key_is(key, klen, "id")) {
    m->has_id = true;
    char *num_end;
    long long id = strtoll(val, &num_end, 10);
    if (num_end == vend && (*val == '-' || ('0' <= *val && *val <= '9'))) {
      m->id_is_int = true;
      m->id = id;
    }
  } else if (key_is(key, klen, "method")) m->has_method = true;
  else if (key_is(key, klen, "error")) m->has_error = true;
  else if (key_is(key, klen, "result")) {
    m->has_result = true;
    if (*val == '{') scan_object(val, vend, result_key, m);
  }
}

/* }====================================================== */

/* {====================================================== the run */

enum phase { PH_INIT, PH_IDLE, PH_LOAD, PH_DONE };

struct run {
  const struct options *o;
  struct server srv;
  struct buf out, in;         /* pending writes, partial reply lines */
  enum phase phase;
  int64_t t_init_reply, t_idle_until, t_deadline, t_load_start, t_last_reply;
  int64_t t_warm;             /* --warmup: when the K-th answer came (else t_load_start) */
  int64_t *sent_ns;           /* per id: when it was queued, 0 once answered */
  int64_t *lat_ns;            /* latencies of answered requests */
  long sent, answered, ok, errors, skipped;
  bool server_eof, write_failed, deadline_hit;
  long idle_rss_kb, peak_rss_kb;
  long (*rss_samples)[2];     /* --rss-every: {answers, VmRSS kB} */
  long nrss;
};

/* --rss-every: one VmRSS sample, tagged with the answers so far. */
static void sample_rss(struct run *r) {
  if (!r->rss_samples) return;
  r->rss_samples[r->nrss][0] = r->answered;
  r->rss_samples[r->nrss][1] = proc_status_kb(r->srv.pid, "VmRSS");
  r->nrss++;
}

static void queue_call(struct run *r) {
  long id = ++r->sent;
  buf_printf(&r->out,
    "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\","
    "\"params\":{\"name\":\"%s\",\"arguments\":%s}}\n", id, r->o->tool, r->o->args);
  r->sent_ns[id] = now_ns();
}

/* Keep W in flight: top up whenever answers free a slot. */
static void top_up(struct run *r) {
  while (r->phase == PH_LOAD && r->sent < r->o->n && r->sent - r->answered < r->o->w)
    queue_call(r);
}

static void flush_out(struct run *r) {
  while (r->out.len && !r->write_failed) {
    ssize_t k = write(r->srv.to, r->out.p, r->out.len);
    if (k > 0) buf_consume(&r->out, (size_t)k);
    else if (k < 0 && errno == EINTR) continue;
    else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    else r->write_failed = true; /* EPIPE: the server is gone */
  }
}

static void handle_line(struct run *r, const char *line, size_t len) {
  struct message m = {0};
  const char *end = line + len;
  if (skip_ws(line, end) == end) return;
  if (!scan_object(line, end, message_key, &m)) {
    fprintf(stderr, "stdio_load: not a JSON object: %.*s\n", (int)(len > 200 ? 200 : len), line);
    r->errors++;
    return;
  }
  if (m.has_method) { r->skipped++; return; } /* notification or server->client request */
  int64_t t = now_ns();
  if (r->phase == PH_INIT) {
    if (!(m.id_is_int && m.id == INIT_ID && m.has_result)) {
      fprintf(stderr, "stdio_load: bad initialize reply: %.*s\n", (int)(len > 200 ? 200 : len), line);
      r->errors++;
      r->phase = PH_DONE;
      return;
    }
    r->t_init_reply = t;
    buf_printf(&r->out, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    r->t_idle_until = t + (int64_t)IDLE_SETTLE_MS * 1000000;
    r->phase = PH_IDLE;
    return;
  }
  /* Every reply must name exactly one outstanding request. */
  if (!m.id_is_int || m.id < 1 || m.id > r->sent || r->sent_ns[m.id] == 0) {
    fprintf(stderr, "stdio_load: reply with unknown or repeated id: %.*s\n",
            (int)(len > 200 ? 200 : len), line);
    r->errors++;
    return;
  }
  r->lat_ns[r->answered++] = t - r->sent_ns[m.id];
  r->sent_ns[m.id] = 0;
  r->t_last_reply = t;
  if (r->answered == r->o->warmup) r->t_warm = t;
  if (r->o->rss_every && r->answered % r->o->rss_every == 0) sample_rss(r);
  if (m.has_result && !m.has_error && !m.is_error) r->ok++;
  else {
    if (r->errors < 5)
      fprintf(stderr, "stdio_load: error reply: %.*s\n", (int)(len > 200 ? 200 : len), line);
    r->errors++;
  }
  if (r->answered == r->o->n) r->phase = PH_DONE;
}

/* Drain what the server wrote; false on EOF. */
static bool read_in(struct run *r) {
  for (;;) {
    buf_reserve(&r->in, 65536);
    ssize_t k = read(r->srv.from, r->in.p + r->in.len, r->in.cap - r->in.len);
    if (k == 0) return false;
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      return false;
    }
    r->in.len += (size_t)k;
    size_t start = 0;
    for (;;) {
      char *nl = memchr(r->in.p + start, '\n', r->in.len - start);
      if (!nl) break;
      if (r->phase != PH_DONE) handle_line(r, r->in.p + start, (size_t)(nl - (r->in.p + start)));
      start = (size_t)(nl - r->in.p) + 1;
    }
    buf_consume(&r->in, start);
  }
}

static int poll_timeout_ms(int64_t until) {
  int64_t ms = (until - now_ns() + 999999) / 1000000;
  return ms < 0 ? 0 : ms > 1000 ? 1000 : (int)ms;
}

/* The event loop for start-up, idle settle and load phases. */
static void drive(struct run *r) {
  buf_printf(&r->out,
    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"initialize\",\"params\":{"
    "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
    "\"clientInfo\":{\"name\":\"stdio_load\",\"version\":\"1.0.0\"}}}\n", INIT_ID);
  while (r->phase != PH_DONE && !r->server_eof && !r->write_failed) {
    int64_t t = now_ns();
    if (t >= r->t_deadline) { r->deadline_hit = true; break; }
    if (r->phase == PH_IDLE && t >= r->t_idle_until) {
      r->idle_rss_kb = proc_status_kb(r->srv.pid, "VmRSS");
      sample_rss(r);
      r->phase = PH_LOAD;
      r->t_load_start = r->t_warm = now_ns();
    }
    top_up(r);
    flush_out(r);
    struct pollfd fds[2] = {
      { .fd = r->srv.from, .events = POLLIN },
      { .fd = r->srv.to, .events = r->out.len ? POLLOUT : 0 },
    };
    int64_t until = r->phase == PH_IDLE && r->t_idle_until < r->t_deadline
                  ? r->t_idle_until : r->t_deadline;
    if (poll(fds, 2, poll_timeout_ms(until)) < 0 && errno != EINTR) { perror("stdio_load: poll"); break; }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR))
      if (!read_in(r)) r->server_eof = true;
    if (fds[1].revents & (POLLERR | POLLHUP)) r->write_failed = true;
  }
}

int main(int argc, char **argv) {
  struct options o;
  parse_options(argc, argv, &o);
  signal(SIGPIPE, SIG_IGN); /* a dead server must show up as EPIPE, not kill us */

  struct run r = { .o = &o, .phase = PH_INIT, .idle_rss_kb = -1, .peak_rss_kb = -1 };
  r.sent_ns = calloc((size_t)o.n + 1, sizeof *r.sent_ns);
  r.lat_ns = calloc((size_t)o.n, sizeof *r.lat_ns);
  if (o.rss_every) r.rss_samples = calloc((size_t)(o.n / o.rss_every) + 2, sizeof *r.rss_samples);
  if (!r.sent_ns || !r.lat_ns || (o.rss_every && !r.rss_samples)) { perror("stdio_load: calloc"); return 1; }

  server_spawn(&r.srv, o.cmd, o.quiet_stderr);
  r.t_deadline = r.srv.t_spawn + (int64_t)(o.seconds_max * 1e9);
  drive(&r);
  r.peak_rss_kb = proc_status_kb(r.srv.pid, "VmHWM");
  bool killed;
  int status = server_reap(&r.srv, &killed); /* late lines are dropped */

  long timeouts = o.n - r.answered;
  bool started = r.t_init_reply != 0;
  double startup_ms = started ? (double)(r.t_init_reply - r.srv.t_spawn) / 1e6 : -1;
  /* --warmup K: req/s over the answers after the K-th, latency over them. */
  long warm = r.answered > o.warmup ? o.warmup : 0;
  long measured = r.answered - warm;
  double load_s = measured ? (double)(r.t_last_reply - (warm ? r.t_warm : r.t_load_start)) / 1e9 : 0;
  double rps = load_s > 0 ? (double)measured / load_s : 0;
  int64_t *lat = r.lat_ns + warm;
  sort_i64(lat, measured);
  double p50 = measured ? percentile_us(lat, measured, 0.50) : 0; /* 0, not -1, if none */
  double p99 = measured ? percentile_us(lat, measured, 0.99) : 0;
  int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  int exit_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  bool clean_exit = !killed && exit_code == 0;
  const char *why = !started ? "no initialize reply"
                  : r.deadline_hit ? "time limit (-s) reached"
                  : r.server_eof && timeouts ? "server closed stdout early"
                  : r.write_failed && timeouts ? "server closed stdin early"
                  : r.errors ? "error replies"
                  : !clean_exit ? "server did not exit cleanly on stdin EOF"
                  : "ok";

  FILE *human = o.json ? stderr : stdout;
  fprintf(human,
    "%s: n=%ld w=%ld warmup=%ld ok=%ld errors=%ld timeouts=%ld req/s=%.0f p50=%.0fus p99=%.0fus "
    "startup=%.1fms idle_rss=%ldkB peak_rss=%ldkB exit=%d signal=%d%s [%s]\n",
    o.label, o.n, o.w, warm, r.ok, r.errors, timeouts, rps, p50, p99, startup_ms,
    r.idle_rss_kb, r.peak_rss_kb, exit_code, exit_signal, killed ? " (killed)" : "", why);
  if (o.json) {
    printf("{\"label\":");
    json_string(stdout, o.label);
    printf(",\"tool\":");
    json_string(stdout, o.tool);
    printf(",\"n\":%ld,\"w\":%ld,\"warmup\":%ld,\"ok\":%ld,\"errors\":%ld,\"timeouts\":%ld,"
           "\"skipped_messages\":%ld,\"load_s\":%.6f,\"rps\":%.1f,\"p50_us\":%.1f,"
           "\"p99_us\":%.1f,\"startup_ms\":%.2f,\"idle_rss_kb\":%ld,\"peak_rss_kb\":%ld,"
           "\"exit_code\":%d,\"exit_signal\":%d,\"killed\":%s,\"status\":",
           o.n, o.w, warm, r.ok, r.errors, timeouts, r.skipped, load_s, rps, p50, p99,
           startup_ms, r.idle_rss_kb, r.peak_rss_kb, exit_code, exit_signal,
           killed ? "true" : "false");
    json_string(stdout, why);
    if (o.rss_every) {
      printf(",\"rss_every\":%ld,\"rss_samples\":[", o.rss_every);
      for (long i = 0; i < r.nrss; i++)
        printf("%s{\"answers\":%ld,\"rss_kb\":%ld}", i ? "," : "", r.rss_samples[i][0], r.rss_samples[i][1]);
      printf("]");
    }
    printf("}\n");
  }
  free(r.sent_ns);
  free(r.lat_ns);
  free(r.rss_samples);
  free(r.out.p);
  free(r.in.p);
  return strcmp(why, "ok") ? 1 : 0;
}

/* }====================================================== */
