/* metrics_http.h — the Prometheus listener (--metrics [HOST:]PORT): GET
 * /metrics answers the text exposition of metrics.h, on a port of its own
 * (never the MCP port: what it shows is the operator's), two threads. */
#ifndef LUAMCP_METRICS_HTTP_H
#define LUAMCP_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>

/* Listen on host:port and turn recording on. False with why when it cannot. */
bool metrics_http_start(const char *host, int port, char *why, size_t cap);
void metrics_http_stop(void);

#endif
