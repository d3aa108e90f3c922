/* trace.h — OpenTelemetry spans (--otlp): W3C Trace Context in and out,
 * the sampling decision, and each span as an OTLP protobuf Span message,
 * queued for the exporter (reactor/trace_export.c) when it ends. Off unless
 * trace_on: then trace_start returns NULL and every other call takes NULL
 * and does nothing, so callers need no branch of their own.
 *
 * A span is made and ended by one thread (the engine's run-lock holder, or
 * the worker of one request); the queue is shared. */
#ifndef LUAMCP_TRACE_H
#define LUAMCP_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

extern bool trace_on;

enum { TRACE_INTERNAL = 1, TRACE_SERVER = 2, TRACE_CLIENT = 3 }; /* OTLP SpanKind */

/* A span's context: what a child or an outgoing request names. */
typedef struct trace_ctx {
  uint8_t trace_id[16], span_id[8];
  bool sampled, valid, remote;
  char state[256]; /* tracestate, as received ("" for none) */
} trace_ctx;

typedef struct trace_span trace_span;

/* Sampling: OTEL_TRACES_SAMPLER's names (parentbased_always_on by
   default), ratio for the *traceidratio ones. */
void trace_configure(const char *sampler, double ratio);

/* traceparent (and tracestate, may be NULL) into ctx: false (ctx invalid)
   when it is not a version-00 W3C traceparent. */
bool trace_parse(const char *traceparent, size_t n, const char *tracestate, size_t sn, trace_ctx *ctx);
/* The traceparent header value of ctx (55 characters and a NUL). */
void trace_format(const trace_ctx *ctx, char out[56]);

/* A span, child of parent (NULL or invalid: a new trace, sampled as the
   sampler says); NULL when tracing is off or the trace is not sampled (its
   children then are not either: trace_context gives the parent's). */
trace_span *trace_start(const trace_ctx *parent, const char *name, int kind);
/* Its context (for children and traceparent); NULL span: parent as given. */
const trace_ctx *trace_context(const trace_span *s);
void trace_set_name(trace_span *s, const char *name);
void trace_attr_str(trace_span *s, const char *key, const char *value);
void trace_attr_strn(trace_span *s, const char *key, const char *value, size_t n);
void trace_attr_int(trace_span *s, const char *key, long long value);
void trace_attr_double(trace_span *s, const char *key, double value);
void trace_attr_bool(trace_span *s, const char *key, bool value);
/* An exception event (exception.message) and status ERROR with message. */
void trace_error(trace_span *s, const char *message);
/* End it now: encoded and queued for export; s is freed. */
void trace_end(trace_span *s);

/* The exporter's side: take up to max queued spans (encoded Span messages,
   each length-prefixed as the repeated field of ScopeSpans wants) into out;
   how many. */
size_t trace_take(buf *out, size_t max);
/* Spans waiting. */
size_t trace_pending(void);

/* {====== protobuf, for trace_export.c too */
void trace_pb_varint(buf *b, uint64_t v);
void trace_pb_tag(buf *b, unsigned field, unsigned wire);
void trace_pb_bytes(buf *b, unsigned field, const void *p, size_t n);
void trace_pb_string(buf *b, unsigned field, const char *s);
void trace_pb_fixed64(buf *b, unsigned field, uint64_t v);
/* A KeyValue with a string value (repeated field `field`). */
void trace_pb_kv_string(buf *b, unsigned field, const char *key, const char *value);
/* }====== */

#endif
