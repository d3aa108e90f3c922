/* http_stop.h — stopping a civetweb listener at once (the MCP one and the
 * --metrics one). */
#ifndef LUAMCP_HTTP_STOP_H
#define LUAMCP_HTTP_STOP_H

struct mg_context;

/* mg_stop(ctx), which returns only once civetweb's master thread has seen
   the stop, and it sees it only when its poll of the listening socket
   returns (up to half a second, then as much again for each worker): a
   connection of our own to that socket (host: what it listens on) ends
   the poll at once, every 20 ms until mg_stop is over. */
void http_stop_listener(struct mg_context *ctx, const char *host);

#endif
