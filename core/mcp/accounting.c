/* accounting.c — what a request leaves behind once answered: its count and
 * duration (metrics), the end of its SERVER span, its access-log line. One
 * place for the requests answered at once (methods.c) and for those a call
 * answers (request.c), so both report an outcome alike. */
#include "server_internal.h"

#include <string.h>

#include "access_log.h"
#include "metrics.h"

const char *const outcome_names[] = {"ok", "tool_error", "error", "timeout", "cancelled"};

void accounting_record(server *srv, const account *a) {
  const char *outcome = outcome_names[a->outcome];
  double took = a->started > 0 ? engine_now() - a->started : 0;
  unsigned char trace_id[16];
  if (a->span) {
    memcpy(trace_id, trace_context(a->span)->trace_id, sizeof trace_id);
    if (a->outcome != OUTCOME_OK) {
      trace_attr_str(a->span, "error.type", a->call ? outcome : "error");
      trace_error(a->span, a->call ? outcome : "the request was answered with an error");
    }
    trace_end(a->span);
  }
  if (metrics_on) {
    metric_add(metric_at(M_REQUESTS, (const char *const[]){a->method, proto_name(a->version), outcome}), 1);
    if (a->call)
      metric_observe(metric_at(M_OPERATION, (const char *const[]){a->method, a->item ? a->item : "", outcome}),
                     took);
  }
  if (access_log_on())
    access_log_write(&(access_entry){srv->opt.instance, a->s->peer, a->s->id,
                                     a->who ? a->who->subject : NULL, proto_name(a->version), a->method,
                                     a->item, outcome, a->id.p, a->id.n, took, a->bytes,
                                     a->span ? trace_id : NULL});
}
