/* metrics.h — what the server counts for Prometheus (--metrics): every
 * family in one table (metrics.c), their series made on first use and kept
 * for the process's life (a counter never goes back), read by the scrape
 * thread without a lock while any floor records. Nothing is recorded
 * unless metrics_on: without --metrics a record is one branch.
 *
 * Label values must be bounded by the caller: a tool's name only once the
 * app registered it, never a string a client chose. A family holds at most
 * METRIC_SERIES_MAX series; past it, values fold into "_other". */
#ifndef LUAMCP_METRICS_H
#define LUAMCP_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"

#define METRIC_SERIES_MAX 16384
#define METRIC_LABELS_MAX 3

typedef enum metric_id {
  M_REQUESTS,          /* mcp_server_requests_total{mcp_method_name,mcp_protocol_version,outcome} */
  M_OPERATION,         /* mcp_server_operation_duration_seconds{mcp_method_name,name,outcome} */
  M_SESSION_DURATION,  /* mcp_server_session_duration_seconds (histogram) */
  M_CALLS,             /* mcp_server_calls_in_flight */
  M_WAITING,           /* mcp_server_calls_waiting{on} */
  M_SESSIONS,          /* mcp_server_http_sessions */
  M_STREAMS,           /* mcp_server_http_streams{kind} */
  M_HTTP_RESPONSES,    /* mcp_server_http_responses_total{code_class} */
  M_RELOADS,           /* mcp_server_reloads_total{result} */
  M_APP_INFO,          /* mcp_server_app_info{name,version} */
  M_LUA_HEAP,          /* mcp_server_lua_heap_bytes */
  M_RUN_LOCK_WAIT,     /* mcp_server_run_lock_wait_seconds_total */
  M_OUT_HTTP,          /* mcp_http_client_requests_total{status_class} */
  M_REDIS,             /* mcp_redis_commands_total{result} */
  M_DB,                /* mcp_db_statements_total{result} */
  M_BUS,               /* mcp_bus_messages_total{direction} */
  M_AUTH_REFUSALS,     /* mcp_server_auth_refusals_total{reason} */
  M_OTLP_SPANS,        /* mcp_otlp_spans_total{result} */
  M_CLIENT,            /* mcp_client_requests_total{upstream,mcp_method_name,outcome} */
  M_CLIENT_DURATION,   /* mcp_client_request_duration_seconds{upstream,mcp_method_name} */
  M_NFAMILIES
} metric_id;

typedef struct metric_series metric_series;

/* Recording is on (--metrics): set once, before any thread starts. */
extern bool metrics_on;

/* The series of family id with these label values (as many as the family
   has, in its order; NULL for none). Made on first use; never NULL when
   metrics_on (an overflowing family gives its "_other" series). */
metric_series *metric_at(metric_id id, const char *const *values);
/* The one series of a family without labels. */
metric_series *metric_only(metric_id id);

void metric_add(metric_series *s, uint64_t n);          /* counter */
void metric_gauge_add(metric_series *s, int64_t n);     /* gauge */
void metric_gauge_set(metric_series *s, int64_t v);     /* gauge */
void metric_observe(metric_series *s, double seconds);  /* histogram */
void metric_add_seconds(metric_series *s, double seconds); /* a counter of seconds */

/* The text exposition format (version 0.0.4) of every family, then the
   process_* metrics. */
void metrics_render(buf *out);

#endif
