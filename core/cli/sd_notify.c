/* sd_notify.c — systemd's notify protocol (sd_notify.h). */
#include "sd_notify.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

bool sd_notify_send(const char *state) {
  const char *path = getenv("NOTIFY_SOCKET");
  if (!path || !*path || (path[0] != '/' && path[0] != '@')) return false;
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  size_t n = strlen(path);
  if (n >= sizeof sa.sun_path) return false;
  memcpy(sa.sun_path, path, n);
  if (sa.sun_path[0] == '@') sa.sun_path[0] = '\0'; /* the abstract namespace */
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
  bool ok = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len) >= 0;
  close(fd);
  return ok;
}

static struct {
  pthread_t thread;
  bool running;
  atomic_bool stop;
  server *srv;
  double every, unhealthy_after;
} W;

static void *watchdog_main(void *arg) {
  (void)arg;
  while (!atomic_load(&W.stop)) {
    /* no ping while wedged: systemd's WatchdogSec then ends and restarts it */
    if (engine_stalled_for(server_engine(W.srv)) < W.unhealthy_after) sd_notify_send("WATCHDOG=1");
    double left = W.every;
    while (left > 0 && !atomic_load(&W.stop)) { /* wakes often enough to stop at once */
      double step = left < 0.05 ? left : 0.05;
      struct timespec ts = {(time_t)step, (long)((step - (double)(time_t)step) * 1e9)};
      nanosleep(&ts, NULL);
      left -= step;
    }
  }
  return NULL;
}

void sd_notify_watchdog(server *srv, double unhealthy_after) {
  const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
  if (!usec || !getenv("NOTIFY_SOCKET")) return;
  if (pid && *pid && atoll(pid) != (long long)getpid()) return; /* meant for another process */
  double every = (double)atoll(usec) / 1e6 / 2;
  if (every <= 0) return;
  W.srv = srv;
  W.every = every;
  W.unhealthy_after = unhealthy_after > 0 ? unhealthy_after : 10;
  atomic_store(&W.stop, false);
  W.running = pthread_create(&W.thread, NULL, watchdog_main, NULL) == 0;
}

void sd_notify_watchdog_stop(void) {
  if (!W.running) return;
  atomic_store(&W.stop, true);
  pthread_join(W.thread, NULL);
  W.running = false;
}
