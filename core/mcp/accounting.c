/* accounting.c — what a request leaves behind once answered: its count and
 * duration (metrics), the end of its SERVER span, its access-log line. One
 * place for the requests answered at once (methods.c) and for those a call
 * answers (request.c), so both report an outcome alike. */
#include "server_internal.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "json.h"

#include "access_log.h"
#include "metrics.h"

const char *const accounting_outcomes[] = {"ok", "tool_error", "error", "timeout", "cancelled"};

/* The SERVER span's end (OpenTelemetry's MCP conventions): a JSON-RPC
   error names its code (error.type, rpc.response.status_code) and its
   message; a handler's failure its FILE:LINE message in the exception event. */
static void end_span(const account *a) {
  if (a->error_code) {
    char code[16];
    snprintf(code, sizeof code, "%d", a->error_code);
    trace_attr_str(a->span, "error.type", code);
    trace_attr_str(a->span, "rpc.response.status_code", code);
    trace_error(a->span, a->error_message && *a->error_message ? a->error_message : code);
  } else if (a->outcome != OUTCOME_OK) {
    trace_attr_str(a->span, "error.type", accounting_outcomes[a->outcome]);
    trace_error(a->span, a->error_message && *a->error_message ? a->error_message
                                                                 : accounting_outcomes[a->outcome]);
  }
  trace_end(a->span);
}

void accounting_record(server *srv, const account *a) {
  unsigned char trace_id[16];
  if (a->span) {
    memcpy(trace_id, trace_context(a->span)->trace_id, sizeof trace_id);
    end_span(a);
  }
  bool logged = access_log_on();
  if (!metrics_on && !logged) return; /* the common case: nothing more to learn, not even the clock */
  const char *outcome = accounting_outcomes[a->outcome];
  double took = a->started > 0 ? clock_now() - a->started : 0;
  if (metrics_on) {
    metric_add(metric_at(M_REQUESTS, (const char *const[]){a->method, a->version ? proto_name(a->version) : "unsupported", outcome}), 1);
    if (a->operation)
      metric_observe(metric_at(M_OPERATION, (const char *const[]){a->method, a->item ? a->item : "", outcome}),
                     took);
  }
  if (logged)
    access_log_write(&(access_entry){srv->opt.instance, a->s->peer, a->s->id,
                                     a->who ? a->who->subject : NULL,
                                     a->version ? proto_name(a->version) : "unsupported", a->method,
                                     a->item, outcome, a->id.p, a->id.n, took, a->bytes,
                                     a->span ? trace_id : NULL, 0, NULL});
}

/* The request's server span (OpenTelemetry's MCP conventions): a child of
   the trace context in its _meta (where MCP clients put it), else of the
   HTTP request's traceparent. */
trace_span *accounting_start(const inmsg *im, const char *method) {
  trace_ctx meta_parent;
  const trace_ctx *parent = &im->parent;
  json_span meta, tp, ts = {0};
  /* a search of the raw text first: most requests carry no trace context */
  if (im->m.params.n && memmem(im->m.params.p, im->m.params.n, "traceparent", 11) &&
      jsonrpc_param(&im->m, "_meta", &meta) && json_kind(meta) == '{' &&
      json_object_get(meta, "traceparent", &tp) && json_kind(tp) == '"') {
    if (json_object_get(meta, "tracestate", &ts) && json_kind(ts) != '"') ts.n = 0;
    if (trace_parse(tp.p + 1, tp.n - 2, ts.n ? ts.p + 1 : NULL, ts.n ? ts.n - 2 : 0, &meta_parent))
      parent = &meta_parent;
  }
  trace_span *s = trace_start(parent, method, TRACE_SERVER);
  if (!s) return NULL;
  trace_attr_str(s, "mcp.method.name", method);
  trace_attr_str(s, "mcp.protocol.version", proto_name(im->cv.version));
  if (im->s->id[0]) trace_attr_str(s, "mcp.session.id", im->s->id);
  if (im->m.id.n) { /* a string id without its quotes */
    bool str = im->m.id.p[0] == '"';
    trace_attr_strn(s, "jsonrpc.request.id", im->m.id.p + str, im->m.id.n - 2 * str);
  }
  trace_attr_str(s, "network.transport", im->http ? "tcp" : "pipe");
  if (im->s->peer[0]) trace_attr_str(s, "client.address", im->s->peer);
  return s;
}

/* A request answered without a call (a call's own is accounted when it
   ends: request.c). */
bool accounting_is_operation(const char *method) {
  return strcmp(method, "tools/call") == 0 || strcmp(method, "resources/read") == 0 ||
         strcmp(method, "prompts/get") == 0 || strcmp(method, "completion/complete") == 0;
}

void accounting_answered(server *srv, inmsg *im, const char *method, double t0) {
  if (im->taken) return;
  const outlet *o = im->reply;
  int code = o && o->answered ? o->error_code : 0;
  accounting_record(srv, &(account){.method = method, .version = im->cv.version, .item = im->item,
                                    .outcome = code ? OUTCOME_ERROR
                                               : im->tool_error ? OUTCOME_TOOL_ERROR : OUTCOME_OK,
                                    .operation = accounting_is_operation(method),
                                    .error_code = code, .error_message = code ? o->error_message : NULL,
                                    .s = im->s, .who = server_caller(srv, im), .id = im->m.id,
                                    .started = t0, .bytes = output_answer_bytes(im->reply),
                                    .span = im->span});
  im->span = NULL;
}
