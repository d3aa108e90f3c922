/*
** civetweb_floor.c — the bare civetweb floor of the HTTP benchmark.
**
** A civetweb server with the same settings as luamcp's HTTP transport
** (core/transport/transport_http.c: keep-alive, tcp_nodelay=1, 64 worker threads by
** default) that answers every POST /mcp with one canned JSON-RPC reply:
** the body is read to its end, then headers and body go out in a single
** mg_write with an exact Content-Length. No JSON parsing, no Lua, no MCP:
** whatever luamcp adds on top of civetweb shows as the gap to this floor.
**
** Build:  cc -O2 -std=c11 -Wall -Wextra -o build/bench/civetweb_floor \
**            bench/floor/civetweb_floor.c -lcivetweb
** Run:    build/bench/civetweb_floor [-t THREADS] 127.0.0.1:PORT
** It stops on SIGINT or SIGTERM. It only binds to the address it is given;
** bench/http/run.sh gives it 127.0.0.1.
*/
#define _POSIX_C_SOURCE 200809L
#include <civetweb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What luamcp answers to tools/call echo {"text":"hello"} (id 1). */
static const char reply_body[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":"
    "[{\"type\":\"text\",\"text\":\"hello\"}]}}";

static char reply[512];  /* headers + body, built once */
static size_t reply_len;

static int handle_mcp(struct mg_connection *conn, void *data) {
  (void)data;
  const struct mg_request_info *ri = mg_get_request_info(conn);
  if (strcmp(ri->request_method, "POST") != 0) {
    static const char na[] =
        "HTTP/1.1 405 Method Not Allowed\r\nAllow: POST\r\nContent-Length: 0\r\n\r\n";
    mg_write(conn, na, sizeof na - 1);
    return 405;
  }
  /* Read the body to its end (keep-alive needs it off the socket). */
  char buf[8192];
  while (mg_read(conn, buf, sizeof buf) > 0) {}
  mg_write(conn, reply, reply_len);
  return 200;
}

int main(int argc, char **argv) {
  const char *threads = "64";
  int opt;
  while ((opt = getopt(argc, argv, "t:h")) != -1) {
    switch (opt) {
    case 't': threads = optarg; break;
    default:
      fprintf(stderr, "usage: %s [-t THREADS] 127.0.0.1:PORT\n", argv[0]);
      return opt == 'h' ? 0 : 2;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "usage: %s [-t THREADS] 127.0.0.1:PORT\n", argv[0]);
    return 2;
  }
  int n = snprintf(reply, sizeof reply,
                   "HTTP/1.1 200 OK\r\n"
                   "Cache-Control: no-cache\r\n"
                   "Content-Type: application/json\r\n"
                   "Content-Length: %zu\r\n"
                   "\r\n%s",
                   sizeof reply_body - 1, reply_body);
  if (n < 0 || (size_t)n >= sizeof reply) return 1;
  reply_len = (size_t)n;

  const char *opts[] = {
      "listening_ports", argv[optind],
      "num_threads", threads,
      "tcp_nodelay", "1",
      "enable_keep_alive", "yes",
      "request_timeout_ms", "30000",
      NULL,
  };
  /* Block the stop signals before civetweb's threads start (they inherit
     the mask), then wait for one in main with sigwait. */
  sigset_t stopset;
  sigemptyset(&stopset);
  sigaddset(&stopset, SIGINT);
  sigaddset(&stopset, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stopset, NULL);

  mg_init_library(0);
  struct mg_callbacks cb;
  memset(&cb, 0, sizeof cb);
  struct mg_context *ctx = mg_start(&cb, NULL, opts);
  if (!ctx) {
    fprintf(stderr, "civetweb_floor: cannot listen on %s\n", argv[optind]);
    mg_exit_library();
    return 1;
  }
  mg_set_request_handler(ctx, "/mcp$", handle_mcp, NULL);
  fprintf(stderr, "civetweb_floor: listening on http://%s/mcp\n", argv[optind]);
  int sig;
  sigwait(&stopset, &sig);
  mg_stop(ctx);
  mg_exit_library();
  return 0;
}
