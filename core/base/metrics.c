/* metrics.c — the families, their series, the exposition (metrics.h).
 * A family's series are found through a small hash table under the
 * family's mutex (held for a lookup only: the engine's run-lock holder
 * records most of them, so it is rarely contended); the values are
 * atomics, so recording and scraping never wait on each other. */
#include "metrics.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

bool metrics_on;

/* seconds: from 100 µs (a call that only computes) to 5 min (a task) */
static const double bucket_le[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                   0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10,
                                   30,     60,      120,    300};
#define NBUCKETS (sizeof bucket_le / sizeof *bucket_le)

/* T_SECONDS: a counter of seconds, kept in ns */
typedef enum { T_COUNTER, T_GAUGE, T_HISTOGRAM, T_SECONDS } metric_type;

struct metric_series {
  char *labels;  /* rendered: a="x",b="y" ("" for none) */
  char *made_for[METRIC_LABELS_MAX]; /* the label values it was made for (NULL: the "_other" fold) */
  atomic_int_fast64_t value;  /* counter, gauge; ns for T_SECONDS; a histogram's count */
  atomic_uint_fast64_t sum_ns;
  atomic_uint_fast64_t bucket[NBUCKETS]; /* per bucket, not cumulative */
};

static struct family {
  const char *name, *help;
  metric_type type;
  const char *label[METRIC_LABELS_MAX];
  pthread_mutex_t lock;
  metric_series **slot; /* open addressing, nslots a power of two */
  size_t nslots, n;
  metric_series **order; /* in creation order, for the exposition */
  metric_series *other;  /* the fold of values past METRIC_SERIES_MAX */
  _Atomic(metric_series *) only; /* a family without labels: its one series, once made */
} fam[M_NFAMILIES] = {
    [M_REQUESTS] = {.name = "mcp_server_requests_total",
        .help = "MCP requests answered, by method, revision and outcome", .type = T_COUNTER,
        .label = {"mcp_method_name", "mcp_protocol_version", "outcome"}},
    [M_OPERATION] = {.name = "mcp_server_operation_duration_seconds",
        .help = "Duration of tool calls, resource reads, prompt gets and completions "
                     "(mcp.server.operation.duration), by method, name and outcome",
                         .type = T_HISTOGRAM, .label = {"mcp_method_name", "name", "outcome"}},
    [M_SESSION_DURATION] = {.name = "mcp_server_session_duration_seconds",
        .help = "Duration of MCP sessions (mcp.server.session.duration)", .type = T_HISTOGRAM},
    [M_CALLS] = {.name = "mcp_server_calls_in_flight", .help = "Handler calls running or parked",
        .type = T_GAUGE},
    [M_WAITING] = {.name = "mcp_server_calls_waiting",
        .help = "Handler calls parked, by what they wait on", .type = T_GAUGE, .label = {"on"}},
    [M_SESSIONS] = {.name = "mcp_server_http_sessions",
        .help = "Open Streamable HTTP sessions (2025-11-25)", .type = T_GAUGE},
    [M_STREAMS] = {.name = "mcp_server_http_streams",
        .help = "Open SSE streams: GET streams and subscriptions/listen", .type = T_GAUGE,
        .label = {"kind"}},
    [M_HTTP_RESPONSES] = {.name = "mcp_server_http_responses_total",
        .help = "HTTP responses of the MCP listener", .type = T_COUNTER, .label = {"code_class"}},
    [M_RELOADS] = {.name = "mcp_server_reloads_total", .help = "App reloads, by result",
        .type = T_COUNTER, .label = {"result"}},
    [M_APP_INFO] = {.name = "mcp_server_app_info", .help = "The app version serving (value 1)",
        .type = T_GAUGE, .label = {"name", "version"}},
    [M_LUA_HEAP] = {.name = "mcp_server_lua_heap_bytes",
        .help = "Bytes the serving app's Lua state holds", .type = T_GAUGE},
    [M_RUN_LOCK_WAIT] = {.name = "mcp_server_run_lock_wait_seconds_total",
        .help = "Time threads waited for the engine's run lock", .type = T_SECONDS},
    [M_OUT_HTTP] = {.name = "mcp_http_client_requests_total",
        .help = "mcp.http requests, by status class", .type = T_COUNTER, .label = {"status_class"}},
    [M_REDIS] = {.name = "mcp_redis_commands_total",
        .help = "Redis commands (mcp.store, the bus), by result", .type = T_COUNTER,
        .label = {"result"}},
    [M_DB] = {.name = "mcp_db_statements_total",
        .help = "mcp.db statements, by result", .type = T_COUNTER, .label = {"result"}},
    [M_BUS] = {.name = "mcp_bus_messages_total",
               .help = "Messages over the Redis bus, by direction",
        .type = T_COUNTER, .label = {"direction"}},
    [M_AUTH_REFUSALS] = {.name = "mcp_server_auth_refusals_total",
        .help = "Requests refused by authorization, by reason", .type = T_COUNTER,
        .label = {"reason"}},
    [M_OTLP_SPANS] = {.name = "mcp_otlp_spans_total",
        .help = "Spans sent to the OTLP collector, or dropped (it was slow, "
                      "down, or refused them)", .type = T_COUNTER, .label = {"result"}},
    [M_CLIENT] = {.name = "mcp_client_requests_total",
        .help = "Requests to upstream MCP servers (mcp.client), by upstream, method and outcome "
                "(ok, error: a JSON-RPC error, failed: no valid answer, ended: the call ended first)",
        .type = T_COUNTER, .label = {"upstream", "mcp_method_name", "outcome"}},
    [M_CLIENT_DURATION] = {.name = "mcp_client_request_duration_seconds",
        .help = "Duration of requests to upstream MCP servers (mcp.client)", .type = T_HISTOGRAM,
        .label = {"upstream", "mcp_method_name"}},
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init_locks(void) {
  for (int i = 0; i < M_NFAMILIES; i++) pthread_mutex_init(&fam[i].lock, NULL);
}

static size_t nlabels(const struct family *f) {
  size_t n = 0;
  while (n < METRIC_LABELS_MAX && f->label[n]) n++;
  return n;
}

/* One character of a label value at v into out (at most 6 bytes), escaped
   as the format says (\\, \", \n); a value an app or a client chose may
   hold what the format has no escape for, and promtool refuses: another
   control byte, or bytes that are not UTF-8, become U+FFFD. *used: the
   bytes of v taken. */
static size_t label_char(const unsigned char *v, char *out, size_t *used) {
  *used = 1;
  if (*v == '\\' || *v == '"') return out[0] = '\\', out[1] = (char)*v, 2;
  if (*v == '\n') return out[0] = '\\', out[1] = 'n', 2;
  if (*v < 0x20 || *v == 0x7F) return memcpy(out, "\xEF\xBF\xBD", 3), 3;
  if (*v < 0x80) return out[0] = (char)*v, 1;
  size_t len = *v < 0xC2 ? 0 : *v < 0xE0 ? 2 : *v < 0xF0 ? 3 : *v < 0xF5 ? 4 : 0;
  for (size_t i = 1; i < len; i++)
    if ((v[i] & 0xC0) != 0x80) len = 0;
  if (len && ((v[0] == 0xE0 && v[1] < 0xA0) || (v[0] == 0xF0 && v[1] < 0x90) ||
              (v[0] == 0xF4 && v[1] > 0x8F) || (v[0] == 0xED && v[1] > 0x9F)))
    len = 0;
  if (!len) return memcpy(out, "\xEF\xBF\xBD", 3), 3;
  memcpy(out, v, len);
  *used = len;
  return len;
}

/* label="value" */
static void render_labels(buf *b, const struct family *f, const char *const *values) {
  for (size_t i = 0; i < nlabels(f); i++) {
    if (i) buf_putc(b, ',');
    buf_printf(b, "%s=\"", f->label[i]);
    for (const char *v = values && values[i] ? values[i] : ""; *v;) {
      char c[6];
      size_t used, n = label_char((const unsigned char *)v, c, &used);
      buf_put(b, c, n);
      v += used;
    }
    buf_putc(b, '"');
  }
}

static uint64_t hash(const char *s) { /* FNV-1a */
  uint64_t h = 14695981039346656037ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static metric_series *new_series(buf *labels) {
  metric_series *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->labels = buf_take(labels, NULL);
  if (!s->labels) s->labels = strdup("");
  return s;
}

/* Under f->lock: put s at its slot (the table has room). */
static void place(struct family *f, metric_series *s) {
  for (size_t i = hash(s->labels) & (f->nslots - 1);; i = (i + 1) & (f->nslots - 1))
    if (!f->slot[i]) {
      f->slot[i] = s;
      return;
    }
}

static bool grow(struct family *f) {
  size_t n = f->nslots ? f->nslots * 2 : 16;
  metric_series **slot = calloc(n, sizeof *slot);
  metric_series **order = realloc(f->order, n / 2 * sizeof *order);
  if (!slot || !order) {
    free(slot);
    if (order) f->order = order;
    return false;
  }
  free(f->slot);
  f->slot = slot, f->nslots = n, f->order = order;
  for (size_t i = 0; i < f->n; i++) place(f, f->order[i]);
  return true;
}

/* The labels of values into out (cap bytes, NUL-terminated): their length,
   or cap when they do not fit. Byte by byte, no printf: it runs for every
   request answered. */
static size_t render_fixed(char *out, size_t cap, const struct family *f,
                           const char *const *values) {
  size_t n = 0;
  for (size_t i = 0; i < METRIC_LABELS_MAX && f->label[i]; i++) {
    const char *name = f->label[i], *v = values && values[i] ? values[i] : "";
    if (i) {
      if (n + 1 >= cap) return cap;
      out[n++] = ',';
    }
    for (; *name; name++) {
      if (n + 1 >= cap) return cap;
      out[n++] = *name;
    }
    if (n + 2 >= cap) return cap;
    out[n++] = '=', out[n++] = '"';
    for (; *v;) {
      if (n + 7 >= cap) return cap;
      size_t used;
      n += label_char((const unsigned char *)v, out + n, &used);
      v += used;
    }
    if (n + 2 >= cap) return cap;
    out[n++] = '"';
  }
  out[n] = '\0';
  return n;
}

/* Is s the series of these values? Compared value by value: no rendering. */
static bool same_values(const struct family *f, const metric_series *s, const char *const *values) {
  for (size_t i = 0; i < METRIC_LABELS_MAX && f->label[i]; i++) {
    const char *v = values && values[i] ? values[i] : "";
    if (!s->made_for[i] || strcmp(s->made_for[i], v) != 0) return false;
  }
  return true;
}

/* The series a thread found last in each family (two, for a request's ok and
   its error): a request mostly asks for what the one before it asked, and
   series live as long as the process. */
static _Thread_local metric_series *recent[M_NFAMILIES][2];

metric_series *metric_at(metric_id id, const char *const *values) {
  struct family *f = &fam[id];
  metric_series **mine = recent[id];
  if (mine[0] && same_values(f, mine[0], values)) return mine[0];
  if (mine[1] && same_values(f, mine[1], values)) {
    metric_series *s = mine[1];
    mine[1] = mine[0], mine[0] = s;
    return s;
  }
  pthread_once(&once, init_locks);
  /* rendered on the stack: a lookup on every request allocates nothing */
  char stack[512];
  buf heap;
  buf_init(&heap);
  const char *key = stack;
  if (render_fixed(stack, sizeof stack, f, values) == sizeof stack) {
    render_labels(&heap, f, values);
    buf_putc(&heap, '\0');
    key = heap.p;
  }
  pthread_mutex_lock(&f->lock);
  metric_series *found = NULL;
  for (size_t i = f->nslots ? hash(key) & (f->nslots - 1) : 0; f->nslots && f->slot[i];
       i = (i + 1) & (f->nslots - 1))
    if (strcmp(f->slot[i]->labels, key) == 0) {
      found = f->slot[i];
      break;
    }
  if (!found && f->n < METRIC_SERIES_MAX && (f->n + 1 <= f->nslots / 2 || grow(f))) {
    buf copy;
    buf_init(&copy);
    buf_puts(&copy, key);
    if ((found = new_series(&copy))) {
      for (size_t i = 0; i < METRIC_LABELS_MAX && f->label[i]; i++)
        found->made_for[i] = strdup(values && values[i] ? values[i] : "");
      place(f, found);
      f->order[f->n++] = found;
    }
  }
  if (!found) { /* past the cap (or out of memory): every label "_other" */
    if (!f->other) {
      const char *other[METRIC_LABELS_MAX] = {"_other", "_other", "_other"};
      buf o;
      buf_init(&o);
      render_labels(&o, f, other);
      f->other = new_series(&o);
    }
    found = f->other;
  }
  pthread_mutex_unlock(&f->lock);
  buf_free(&heap);
  if (found != f->other) mine[1] = mine[0], mine[0] = found;
  return found;
}

metric_series *metric_only(metric_id id) {
  metric_series *s = atomic_load_explicit(&fam[id].only, memory_order_acquire);
  if (!s) atomic_store_explicit(&fam[id].only, s = metric_at(id, NULL), memory_order_release);
  return s;
}

void metric_add(metric_series *s, uint64_t n) {
  if (s) atomic_fetch_add_explicit(&s->value, (int_fast64_t)n, memory_order_relaxed);
}

void metric_gauge_add(metric_series *s, int64_t n) {
  if (s) atomic_fetch_add_explicit(&s->value, n, memory_order_relaxed);
}

void metric_gauge_set(metric_series *s, int64_t v) {
  if (s) atomic_store_explicit(&s->value, v, memory_order_relaxed);
}

void metric_add_seconds(metric_series *s, double seconds) {
  if (s && seconds > 0)
    atomic_fetch_add_explicit(&s->value, (int_fast64_t)(seconds * 1e9), memory_order_relaxed);
}

void metric_observe(metric_series *s, double seconds) {
  if (!s) return;
  if (seconds < 0) seconds = 0;
  size_t b = 0;
  while (b < NBUCKETS && seconds > bucket_le[b]) b++;
  if (b < NBUCKETS) atomic_fetch_add_explicit(&s->bucket[b], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->sum_ns, (uint_fast64_t)(seconds * 1e9), memory_order_relaxed);
  atomic_fetch_add_explicit(&s->value, 1, memory_order_relaxed);
}

/* {====== the exposition */

static void sample(buf *b, const char *name, const char *suffix, const char *labels,
                   const char *extra) {
  buf_puts(b, name);
  buf_puts(b, suffix);
  if (*labels || extra) {
    buf_putc(b, '{');
    buf_puts(b, labels);
    if (extra) buf_printf(b, "%s%s", *labels ? "," : "", extra);
    buf_putc(b, '}');
  }
  buf_putc(b, ' ');
}

static void render_series(buf *b, const struct family *f, const metric_series *s) {
  int64_t v = atomic_load_explicit(&s->value, memory_order_relaxed);
  if (f->type == T_SECONDS) {
    sample(b, f->name, "", s->labels, NULL);
    buf_printf(b, "%.9f\n", (double)v / 1e9);
  } else if (f->type != T_HISTOGRAM) {
    sample(b, f->name, "", s->labels, NULL);
    buf_printf(b, "%lld\n", (long long)v);
  } else {
    /* _bucket, _sum, _count: the family's name less _seconds is not how
       Prometheus spells them: the suffixes follow the whole name */
    uint64_t cum = 0;
    char le[48];
    for (size_t i = 0; i < NBUCKETS; i++) {
      cum += atomic_load_explicit(&s->bucket[i], memory_order_relaxed);
      snprintf(le, sizeof le, "le=\"%g\"", bucket_le[i]);
      sample(b, f->name, "_bucket", s->labels, le);
      buf_printf(b, "%llu\n", (unsigned long long)cum);
    }
    /* +Inf is the count (read after the buckets: never below them) */
    uint64_t count = (uint64_t)v;
    if (count < cum) count = cum;
    sample(b, f->name, "_bucket", s->labels, "le=\"+Inf\"");
    buf_printf(b, "%llu\n", (unsigned long long)count);
    sample(b, f->name, "_sum", s->labels, NULL);
    buf_printf(b, "%.9f\n",
               (double)atomic_load_explicit(&s->sum_ns, memory_order_relaxed) / 1e9);
    sample(b, f->name, "_count", s->labels, NULL);
    buf_printf(b, "%llu\n", (unsigned long long)count);
  }
}

/* The process_* metrics (Prometheus' client libraries' names), from /proc. */
static void render_process(buf *b) {
  long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  FILE *f = fopen("/proc/self/stat", "r");
  char stat[1024] = "";
  if (f) {
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    stat[n] = '\0';
    fclose(f);
  }
  /* the fields after the command (which may hold spaces): from the last ')' */
  char *p = strrchr(stat, ')');
  unsigned long utime = 0, stime = 0, vsize = 0;
  unsigned long long start = 0;
  long rss = 0;
  if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d "
                         "%*d %llu %lu %ld",
                  &utime, &stime, &start, &vsize, &rss) == 5) {
    buf_puts(b, "# HELP process_cpu_seconds_total Total user and system CPU time spent in "
                "seconds.\n"
                "# TYPE process_cpu_seconds_total counter\n");
    buf_printf(b, "process_cpu_seconds_total %.2f\n", (double)(utime + stime) / (double)tick);
    buf_puts(b, "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                "# TYPE process_virtual_memory_bytes gauge\n");
    buf_printf(b, "process_virtual_memory_bytes %lu\n", vsize);
    buf_puts(b, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                "# TYPE process_resident_memory_bytes gauge\n");
    buf_printf(b, "process_resident_memory_bytes %ld\n", rss * page);
    /* the start: the boot time (/proc/stat btime) plus start ticks */
    FILE *s = fopen("/proc/stat", "r");
    char line[256];
    unsigned long long btime = 0;
    while (s && fgets(line, sizeof line, s))
      if (sscanf(line, "btime %llu", &btime) == 1) break;
    if (s) fclose(s);
    if (btime) {
      buf_puts(b, "# HELP process_start_time_seconds Start time of the process since unix epoch in "
                  "seconds.\n# TYPE process_start_time_seconds gauge\n");
      buf_printf(b, "process_start_time_seconds %.2f\n",
                 (double)btime + (double)start / (double)tick);
    }
  }
  size_t fds = 0;
  DIR *d = opendir("/proc/self/fd");
  for (struct dirent *e; d && (e = readdir(d));) fds += e->d_name[0] != '.';
  if (d) closedir(d), fds--; /* the directory's own */
  struct rlimit rl;
  buf_puts(b, "# HELP process_open_fds Number of open file descriptors.\n"
              "# TYPE process_open_fds gauge\n");
  buf_printf(b, "process_open_fds %zu\n", fds);
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    buf_puts(b, "# HELP process_max_fds Maximum number of open file descriptors.\n"
                "# TYPE process_max_fds gauge\n");
    buf_printf(b, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
  }
}

void metrics_render(buf *out) {
  pthread_once(&once, init_locks);
  static const char *const types[] = {"counter", "gauge", "histogram", "counter"};
  for (int id = 0; id < M_NFAMILIES; id++) {
    struct family *f = &fam[id];
    pthread_mutex_lock(&f->lock);
    size_t n = f->n;
    metric_series **list = n ? malloc(n * sizeof *list) : NULL;
    if (list) memcpy(list, f->order, n * sizeof *list);
    metric_series *other = f->other;
    pthread_mutex_unlock(&f->lock);
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, types[f->type]);
    /* a family without labels shows its 0 before its first record */
    if (!n && !nlabels(f)) render_series(out, f, metric_only((metric_id)id));
    for (size_t i = 0; list && i < n; i++) render_series(out, f, list[i]);
    if (other) render_series(out, f, other);
    free(list);
  }
  render_process(out);
}

/* }====== */
