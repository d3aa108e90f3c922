/* http_stop.c — stopping a civetweb listener at once (http_stop.h). */
#include "http_stop.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <civetweb.h>

typedef struct nudge {
  struct sockaddr_in addr;
  atomic_bool stopped; /* mg_stop is over */
} nudge;

static void *nudge_main(void *arg) {
  nudge *n = arg;
  for (int i = 0; i < 250 && !atomic_load(&n->stopped); i++) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
      connect(fd, (struct sockaddr *)&n->addr, sizeof n->addr);
      close(fd);
    }
    struct timespec pause = {0, 20000000};
    nanosleep(&pause, NULL);
  }
  return NULL;
}

/* civetweb has each worker wait for a keep-alive connection's next request
   in polls of 2 s, looking at the stop between them, and gives no access to
   the socket: find the connections accepted on port among this process's
   descriptors (a TCP socket bound to it, with a peer) and shut them down,
   which ends that wait at once. Called when every answer has been written. */
static void shut_connections(uint16_t port) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d))) {
    char *end;
    long fd = strtol(de->d_name, &end, 10);
    if (*end || fd < 0 || fd == dirfd(d)) continue;
    struct sockaddr_in self, peer;
    socklen_t n = sizeof self, m = sizeof peer;
    if (getsockname((int)fd, (struct sockaddr *)&self, &n) != 0 || self.sin_family != AF_INET ||
        self.sin_port != port || getpeername((int)fd, (struct sockaddr *)&peer, &m) != 0)
      continue;
    int type = 0;
    socklen_t tn = sizeof type;
    if (getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &tn) == 0 && type == SOCK_STREAM)
      shutdown((int)fd, SHUT_RDWR);
  }
  closedir(d);
}

void http_stop_listener(struct mg_context *ctx, const char *host) {
  if (!ctx) return;
  nudge n = {.addr = {.sin_family = AF_INET}};
  atomic_init(&n.stopped, false);
  struct mg_server_port sp[1];
  bool nudging = false;
  pthread_t nudger;
  if (!host || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "localhost") == 0) host = "127.0.0.1";
  if (mg_get_server_ports(ctx, 1, sp) == 1 && sp[0].protocol == 1 && /* IPv4 */
      inet_pton(AF_INET, host, &n.addr.sin_addr) == 1) {
    n.addr.sin_port = htons((uint16_t)sp[0].port);
    shut_connections(n.addr.sin_port);
    nudging = pthread_create(&nudger, NULL, nudge_main, &n) == 0;
  }
  mg_stop(ctx);
  atomic_store(&n.stopped, true);
  if (nudging) pthread_join(nudger, NULL);
}
