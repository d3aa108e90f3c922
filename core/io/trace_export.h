/* trace_export.h — the OTLP/HTTP exporter of trace.h's spans: a thread of
 * its own (a call never waits for a collector) that sends what ended each
 * second, or sooner when many have, as one protobuf ExportTraceServiceRequest
 * to URL/v1/traces; a collector that is slow or down costs dropped spans,
 * counted (mcp_otlp_spans_total{result="dropped"}), never a call's time. */
#ifndef LUAMCP_TRACE_EXPORT_H
#define LUAMCP_TRACE_EXPORT_H

#include <stdbool.h>
#include <stddef.h>

/* Start exporting to url (the full traces endpoint) as service; tracing on.
   False with why. */
bool trace_export_start(const char *url, const char *service, const char *instance, char *why,
                        size_t cap);
/* Send what is left (within grace seconds) and stop. */
void trace_export_stop(double grace);

#endif
