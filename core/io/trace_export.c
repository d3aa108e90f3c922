/* trace_export.c — the OTLP/HTTP exporter (trace_export.h). */
#include "trace_export.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_client.h"
#include "log.h"
#include "metrics.h"
#include "trace.h"

#define EXPORT_EVERY 1.0   /* s between batches */
#define EXPORT_TIMEOUT 5.0 /* s one batch may take */

static struct {
  char *url;
  buf resource;      /* Resource{attributes}, encoded once */
  buf envelope_head; /* ScopeSpans.scope (field 1), encoded once */
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cv;
  bool stop, started;
  double grace;
  atomic_bool cancel; /* stop: the batch in flight gives up at once */
} X = {.lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void count(const char *result, uint64_t n) {
  if (metrics_on && n) metric_add(metric_at(M_OTLP_SPANS, (const char *const[]){result}), n);
}

/* One request with the queued spans; false when the collector refused or
   was not reached (the batch is dropped: spans are not kept for later). */
static bool send_batch(double timeout) {
  buf spans;
  buf_init(&spans);
  size_t n = trace_take(&spans, 0); /* those the full queue refused are counted there (trace.c) */
  if (!n) {
    buf_free(&spans);
    return true;
  }
  /* ExportTraceServiceRequest{resource_spans = 1: ResourceSpans{resource = 1,
     scope_spans = 2: ScopeSpans{scope = 1, spans = 2...}}} */
  buf scope_spans, resource_spans, request;
  buf_init(&scope_spans), buf_init(&resource_spans), buf_init(&request);
  buf_put(&scope_spans, X.envelope_head.p, X.envelope_head.len); /* scope = 1 */
  buf_put(&scope_spans, spans.p, spans.len);
  trace_pb_bytes(&resource_spans, 1, X.resource.p, X.resource.len);
  trace_pb_bytes(&resource_spans, 2, scope_spans.p, scope_spans.len);
  trace_pb_bytes(&request, 1, resource_spans.p, resource_spans.len);
  buf answer;
  buf_init(&answer);
  long max_age;
  char err[256];
  http_client_request r = {.url = X.url, .timeout = timeout, .max = 65536, .cancel = &X.cancel,
                       .body = request.p, .body_len = request.len,
                       .content_type = "application/x-protobuf"};
  bool ok = http_client_fetch(&r, &answer, &max_age, err, sizeof err);
  if (!ok) log_msg(LOG_DEBUG, "otlp: %zu span(s) not exported: %s", n, err);
  count(ok ? "exported" : "dropped", n);
  buf_free(&answer), buf_free(&request), buf_free(&resource_spans), buf_free(&scope_spans);
  buf_free(&spans);
  return ok;
}

static void *exporter_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&X.lock);
  while (!X.stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)EXPORT_EVERY;
    pthread_cond_timedwait(&X.cv, &X.lock, &until);
    if (X.stop) break;
    pthread_mutex_unlock(&X.lock);
    send_batch(EXPORT_TIMEOUT);
    pthread_mutex_lock(&X.lock);
  }
  double grace = X.grace;
  pthread_mutex_unlock(&X.lock);
  atomic_store(&X.cancel, false);
  if (trace_pending()) send_batch(grace < EXPORT_TIMEOUT ? grace : EXPORT_TIMEOUT); /* the last spans */
  return NULL;
}

bool trace_export_start(const char *url, const char *service, const char *instance, char *why,
                        size_t cap) {
  if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
    snprintf(why, cap, "--otlp %s: an http(s) URL of an OTLP/HTTP collector", url);
    return false;
  }
  X.url = strdup(url);
  /* the Resource and ScopeSpans.scope, encoded once */
  buf res, scope;
  buf_init(&res), buf_init(&scope);
  trace_pb_kv_string(&res, 1, "service.name", service && *service ? service : "luamcp");
  if (instance && *instance) trace_pb_kv_string(&res, 1, "service.instance.id", instance);
  trace_pb_kv_string(&res, 1, "telemetry.sdk.name", "luamcp");
  trace_pb_kv_string(&res, 1, "telemetry.sdk.version", LUAMCP_VERSION);
  trace_pb_string(&scope, 1, "luamcp");
  trace_pb_string(&scope, 2, LUAMCP_VERSION);
  buf_init(&X.envelope_head);
  trace_pb_bytes(&X.envelope_head, 1, scope.p, scope.len);
  X.resource = res;
  buf_free(&scope);
  trace_on = true;
  if (pthread_create(&X.thread, NULL, exporter_main, NULL) != 0) {
    trace_on = false;
    snprintf(why, cap, "--otlp: cannot start the exporter's thread");
    return false;
  }
  X.started = true;
  log_msg(LOG_INFO, "traces exported to %s as %s", url, service && *service ? service : "luamcp");
  return true;
}

void trace_export_stop(double grace) {
  if (!X.started) return;
  pthread_mutex_lock(&X.lock);
  X.stop = true;
  X.grace = grace > 0 ? grace : 1;
  atomic_store(&X.cancel, true); /* a batch waiting on a silent collector */
  pthread_cond_signal(&X.cv);
  pthread_mutex_unlock(&X.lock);
  pthread_join(X.thread, NULL);
  X.started = false;
  trace_on = false;
}
