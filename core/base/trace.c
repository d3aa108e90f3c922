/* trace.c — spans, W3C Trace Context, sampling, OTLP encoding (trace.h).
 * Each span is encoded as the protobuf Span of opentelemetry/proto/trace/
 * v1/trace.proto when it ends; the exporter only wraps the queue in the
 * request's envelope. */
#include "trace.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "metrics.h"

#define QUEUE_SPANS 4096        /* spans waiting for the exporter at most */
#define QUEUE_BYTES (8u << 20)

bool trace_on;

static struct {
  enum { S_ON, S_OFF, S_RATIO } root; /* the decision for a trace that starts here */
  bool parent_based;
  double ratio;
} sampler = {S_ON, true, 1.0};

void trace_configure(const char *name, double ratio) {
  sampler.parent_based = !name || strncmp(name, "parentbased_", 12) == 0 || !*name;
  const char *root = name && sampler.parent_based && *name ? name + 12 : name;
  sampler.root = !root || !*root || strcmp(root, "always_on") == 0 ? S_ON
                 : strcmp(root, "always_off") == 0                 ? S_OFF
                                                                   : S_RATIO;
  sampler.ratio = ratio < 0 ? 0 : ratio > 1 ? 1 : ratio;
}

struct trace_span {
  trace_ctx ctx;
  uint8_t parent[8];
  bool has_parent, parent_remote;
  int kind;
  char *name;
  uint64_t start;
  buf attrs;  /* encoded KeyValue fields (Span.attributes = 9) */
  buf events; /* encoded Event fields (Span.events = 11) */
  int status; /* 0 unset, 2 error */
  char *status_msg;
};

static struct {
  pthread_mutex_t lock;
  buf q;        /* ScopeSpans.spans (field 2), each a length-delimited Span */
  size_t n;
} Q = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Ids: splitmix64 per thread, seeded from the kernel (unique, not secret) */
static void random_bytes(uint8_t *p, size_t n) {
  static _Thread_local uint64_t state;
  static _Thread_local bool seeded;
  if (!seeded) {
    if (getrandom(&state, sizeof state, 0) != (ssize_t)sizeof state) state = now_ns() ^ (uint64_t)(uintptr_t)&state;
    seeded = true;
  }
  for (size_t i = 0; i < n; i += 8) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    memcpy(p + i, &z, n - i < 8 ? n - i : 8);
  }
}

/* {====== W3C Trace Context */

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool unhex(const char *s, uint8_t *out, size_t n) {
  bool nonzero = false;
  for (size_t i = 0; i < n; i++) {
    int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = (uint8_t)(hi << 4 | lo);
    nonzero |= out[i] != 0;
  }
  return nonzero; /* all zeros is invalid */
}

bool trace_parse(const char *tp, size_t n, const char *ts, size_t sn, trace_ctx *ctx) {
  memset(ctx, 0, sizeof *ctx);
  /* 00-<32 hex>-<16 hex>-<2 hex> (a later version may add fields: read ours) */
  if (!tp || n < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' || (n > 55 && tp[55] != '-'))
    return false;
  if (hexval(tp[0]) < 0 || hexval(tp[1]) < 0 || (tp[0] == 'f' && tp[1] == 'f')) return false;
  if (tp[0] == '0' && tp[1] == '0' && n != 55) return false;
  uint8_t flags;
  if (!unhex(tp + 3, ctx->trace_id, 16) || !unhex(tp + 36, ctx->span_id, 8)) return false;
  int hi = hexval(tp[53]), lo = hexval(tp[54]);
  if (hi < 0 || lo < 0) return false;
  flags = (uint8_t)(hi << 4 | lo);
  ctx->sampled = flags & 1;
  ctx->valid = ctx->remote = true;
  /* W3C tracestate is printable ASCII: anything else (it goes into an OTLP
     string, which must be UTF-8; a strict collector drops the batch) and
     the header is dropped, as the specification lets a vendor do */
  bool printable = ts != NULL;
  for (size_t i = 0; printable && i < sn; i++) printable = ts[i] >= 0x20 && ts[i] <= 0x7E;
  if (printable && sn && sn < sizeof ctx->state) {
    memcpy(ctx->state, ts, sn);
    ctx->state[sn] = '\0';
  }
  return true;
}

void trace_format(const trace_ctx *ctx, char out[56]) {
  static const char hex[] = "0123456789abcdef";
  char *p = out;
  *p++ = '0', *p++ = '0', *p++ = '-';
  for (int i = 0; i < 16; i++) *p++ = hex[ctx->trace_id[i] >> 4], *p++ = hex[ctx->trace_id[i] & 15];
  *p++ = '-';
  for (int i = 0; i < 8; i++) *p++ = hex[ctx->span_id[i] >> 4], *p++ = hex[ctx->span_id[i] & 15];
  *p++ = '-', *p++ = '0', *p++ = ctx->sampled ? '1' : '0';
  *p = '\0';
}

/* }====== */

/* {====== protobuf */

/* Writers into room already reserved: a span is dozens of tiny fields, and
   a buf_put each (reserve, memcpy) was most of what tracing cost a call. */
static char *raw_varint(char *o, uint64_t v) {
  do {
    *o++ = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  return o;
}

static char *raw_put(char *o, const void *p, size_t n) {
  memcpy(o, p, n);
  return o + n;
}

void trace_pb_varint(buf *b, uint64_t v) {
  buf_reserve(b, 10);
  b->len = (size_t)(raw_varint(b->p + b->len, v) - b->p);
}

void trace_pb_tag(buf *b, unsigned field, unsigned wire) { trace_pb_varint(b, (uint64_t)field << 3 | wire); }

void trace_pb_bytes(buf *b, unsigned field, const void *p, size_t n) {
  buf_reserve(b, 20 + n);
  char *o = raw_varint(b->p + b->len, (uint64_t)field << 3 | 2);
  o = raw_varint(o, n);
  b->len = (size_t)(raw_put(o, p, n) - b->p);
}

void trace_pb_string(buf *b, unsigned field, const char *s) { trace_pb_bytes(b, field, s, strlen(s)); }

void trace_pb_fixed64(buf *b, unsigned field, uint64_t v) {
  buf_reserve(b, 18);
  char *o = raw_varint(b->p + b->len, (uint64_t)field << 3 | 1);
  for (int i = 0; i < 8; i++) *o++ = (char)(v >> (8 * i));
  b->len = (size_t)(o - b->p);
}

static void pb_fixed32(buf *b, unsigned field, uint32_t v) {
  buf_reserve(b, 14);
  char *o = raw_varint(b->p + b->len, (uint64_t)field << 3 | 5);
  for (int i = 0; i < 4; i++) *o++ = (char)(v >> (8 * i));
  b->len = (size_t)(o - b->p);
}

static size_t vlen(uint64_t v) {
  size_t n = 1;
  while (v > 0x7f) v >>= 7, n++;
  return n;
}

/* KeyValue{key = 1, value = 2: AnyValue} as field `field`, the AnyValue's
   one field (anyf, wire type) holding n bytes of payload p (a varint's or a
   fixed64's already encoded when not length-delimited). Sizes are counted,
   not found by encoding into a scratch buffer: no allocation per
   attribute (tags of fields below 16 are one byte). */
static void kv(buf *b, unsigned field, const char *key, unsigned anyf, unsigned wire,
               const void *p, size_t n) {
  size_t kn = strlen(key);
  size_t any = 1 + (wire == 2 ? vlen(n) : 0) + n;
  size_t body = 1 + vlen(kn) + kn + 1 + vlen(any) + any;
  buf_reserve(b, 2 + vlen(body) + body);
  char *o = raw_varint(b->p + b->len, (uint64_t)field << 3 | 2);
  o = raw_varint(o, body);
  *o++ = 1 << 3 | 2; /* key */
  o = raw_varint(o, kn);
  o = raw_put(o, key, kn);
  *o++ = 2 << 3 | 2; /* value: AnyValue */
  o = raw_varint(o, any);
  *o++ = (char)(anyf << 3 | wire);
  if (wire == 2) o = raw_varint(o, n);
  b->len = (size_t)(raw_put(o, p, n) - b->p);
}

void trace_pb_kv_string(buf *b, unsigned field, const char *key, const char *value) {
  kv(b, field, key, 1, 2, value, strlen(value)); /* AnyValue.string_value */
}

/* }====== */

static bool sample_root(const uint8_t trace_id[16]) {
  if (sampler.root == S_ON) return true;
  if (sampler.root == S_OFF) return false;
  uint64_t x = 0; /* the trace id's last 8 bytes, as the spec's ratio sampler reads them */
  for (int i = 8; i < 16; i++) x = x << 8 | trace_id[i];
  return (double)(x >> 11) < sampler.ratio * 9007199254740992.0; /* 2^53 */
}

trace_span *trace_start(const trace_ctx *parent, const char *name, int kind) {
  if (!trace_on) return NULL;
  bool has_parent = parent && parent->valid;
  bool sampled = has_parent && sampler.parent_based ? parent->sampled : false;
  uint8_t trace_id[16];
  if (has_parent) memcpy(trace_id, parent->trace_id, 16);
  else random_bytes(trace_id, 16);
  if (!has_parent || !sampler.parent_based) sampled = sample_root(trace_id);
  if (!sampled) return NULL;
  trace_span *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  memcpy(s->ctx.trace_id, trace_id, 16);
  random_bytes(s->ctx.span_id, 8);
  s->ctx.sampled = s->ctx.valid = true;
  if (has_parent) {
    memcpy(s->parent, parent->span_id, 8);
    s->has_parent = true;
    s->parent_remote = parent->remote;
    memcpy(s->ctx.state, parent->state, sizeof s->ctx.state);
  }
  s->kind = kind;
  s->name = strdup(name ? name : "");
  s->start = now_ns();
  buf_reserve(&s->attrs, 384); /* a server span's attributes, without regrowing */
  return s;
}

const trace_ctx *trace_context(const trace_span *s) { return s ? &s->ctx : NULL; }

void trace_set_name(trace_span *s, const char *name) {
  if (!s) return;
  free(s->name);
  s->name = strdup(name);
}

/* A string attribute is cut to this many bytes (at a UTF-8 boundary): a
   client's 3 MiB request id made spans the exporter had to drop. */
#define TRACE_ATTR_MAX 1024

void trace_attr_strn(trace_span *s, const char *key, const char *value, size_t n) {
  if (!s || !value) return;
  if (n > TRACE_ATTR_MAX) {
    n = TRACE_ATTR_MAX;
    while (n > 0 && ((unsigned char)value[n] & 0xC0) == 0x80) n--;
  }
  kv(&s->attrs, 9, key, 1, 2, value, n);
}

void trace_attr_str(trace_span *s, const char *key, const char *value) {
  if (value) trace_attr_strn(s, key, value, strlen(value));
}

void trace_attr_int(trace_span *s, const char *key, long long value) {
  if (!s) return;
  char v[10];
  size_t n = 0;
  uint64_t x = (uint64_t)value;
  do {
    v[n++] = (char)((x & 0x7f) | (x > 0x7f ? 0x80 : 0));
    x >>= 7;
  } while (x);
  kv(&s->attrs, 9, key, 3, 0, v, n); /* int_value */
}

void trace_attr_double(trace_span *s, const char *key, double value) {
  if (!s) return;
  uint64_t bits;
  memcpy(&bits, &value, 8);
  char le[8];
  for (int i = 0; i < 8; i++) le[i] = (char)(bits >> (8 * i));
  kv(&s->attrs, 9, key, 4, 1, le, 8); /* double_value */
}

void trace_attr_bool(trace_span *s, const char *key, bool value) {
  if (!s) return;
  char v = value ? 1 : 0;
  kv(&s->attrs, 9, key, 2, 0, &v, 1); /* bool_value */
}

void trace_error(trace_span *s, const char *message) {
  if (!s) return;
  s->status = 2;
  free(s->status_msg);
  s->status_msg = strdup(message ? message : "");
  /* Event{time = 1, name = 2, attributes = 3}: the semantic conventions' exception */
  buf ev;
  buf_init(&ev);
  trace_pb_fixed64(&ev, 1, now_ns());
  trace_pb_string(&ev, 2, "exception");
  trace_pb_kv_string(&ev, 3, "exception.message", message ? message : "");
  trace_pb_bytes(&s->events, 11, ev.p, ev.len);
  buf_free(&ev);
}

void trace_end(trace_span *s) {
  if (!s) return;
  buf m;
  buf_init(&m);
  buf_reserve(&m, s->attrs.len + s->events.len + 128);
  trace_pb_bytes(&m, 1, s->ctx.trace_id, 16);
  trace_pb_bytes(&m, 2, s->ctx.span_id, 8);
  if (s->ctx.state[0]) trace_pb_string(&m, 3, s->ctx.state);
  if (s->has_parent) trace_pb_bytes(&m, 4, s->parent, 8);
  trace_pb_string(&m, 5, s->name);
  trace_pb_tag(&m, 6, 0);
  trace_pb_varint(&m, (uint64_t)s->kind);
  trace_pb_fixed64(&m, 7, s->start);
  trace_pb_fixed64(&m, 8, now_ns());
  if (s->attrs.len) buf_put(&m, s->attrs.p, s->attrs.len);
  if (s->events.len) buf_put(&m, s->events.p, s->events.len);
  if (s->status) { /* Status{message = 2, code = 3} */
    buf st;
    buf_init(&st);
    if (s->status_msg) trace_pb_string(&st, 2, s->status_msg);
    trace_pb_tag(&st, 3, 0);
    trace_pb_varint(&st, (uint64_t)s->status);
    trace_pb_bytes(&m, 15, st.p, st.len);
    buf_free(&st);
  }
  /* flags: the trace flags, and whether the parent is remote */
  pb_fixed32(&m, 16, 0x01 | 0x100 | (s->has_parent && s->parent_remote ? 0x200 : 0));
  pthread_mutex_lock(&Q.lock);
  bool full = Q.n >= QUEUE_SPANS || Q.q.len + m.len > QUEUE_BYTES;
  if (!full) {
    trace_pb_bytes(&Q.q, 2, m.p, m.len);
    Q.n++;
  }
  pthread_mutex_unlock(&Q.lock);
  /* counted when it happens, not when the stuck export that filled the
     queue gives up seconds later */
  if (full && metrics_on) metric_add(metric_at(M_OTLP_SPANS, (const char *const[]){"dropped"}), 1);
  buf_free(&m);
  buf_free(&s->attrs);
  buf_free(&s->events);
  free(s->name);
  free(s->status_msg);
  free(s);
}

size_t trace_take(buf *out, size_t max) {
  (void)max; /* the queue's bound is the batch's */
  pthread_mutex_lock(&Q.lock);
  size_t n = Q.n;
  if (n) buf_put(out, Q.q.p, Q.q.len);
  Q.q.len = 0;
  Q.n = 0;
  pthread_mutex_unlock(&Q.lock);
  return n;
}

size_t trace_pending(void) {
  pthread_mutex_lock(&Q.lock);
  size_t n = Q.n;
  pthread_mutex_unlock(&Q.lock);
  return n;
}
