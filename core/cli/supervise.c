/* supervise.c — the supervisor of --restart-on-stall (see supervise.h). */
#include "supervise.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

void supervise_stalled(double seconds, const char *where, const char *why) {
  size_t n = strlen(where); /* "file:line: " */
  if (n >= 2) n -= 2;
  log_msg(LOG_ERROR, "the server has stood still for %.1f s, %s%.*s, %s; exiting (status %d) to be "
          "started again", seconds, n ? "stuck at " : "not in a handler", (int)n, where, why,
          SUPERVISE_EXIT_STALLED);
  fflush(stderr);
  _exit(SUPERVISE_EXIT_STALLED); /* the engine is stuck: no cleanup can run */
}

/* Wait for the child, forwarding the signals the server acts on. Returns
   its wait status; *forwarded says whether it was told to stop. */
static int wait_child(pid_t pid, const sigset_t *set, bool *forwarded) {
  for (;;) {
    int sig = sigwaitinfo(set, NULL);
    if (sig < 0) {
      if (errno == EINTR) continue;
      perror("luamcp: supervisor");
      kill(pid, SIGTERM);
      exit(1);
    }
    if (sig != SIGCHLD) {
      if (sig != SIGHUP && sig != SIGUSR1) *forwarded = true; /* reload, reopen: not a stop */
      kill(pid, sig);
      continue;
    }
    int status;
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) return status;
  }
}

void supervise(void) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  pid_t parent = getpid();
  for (unsigned restarts = 0;; restarts++) {
    double started = clock_now();
    pid_t pid = fork();
    if (pid < 0) {
      perror("luamcp: supervisor: fork");
      exit(1);
    }
    if (pid == 0) {
      /* the server: SIGCHLD as before (libuv reaps mcp.exec's children
         with it), the others stay blocked for main's sigwait thread */
      pthread_sigmask(SIG_SETMASK, &old, NULL);
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(1); /* the supervisor died before prctl */
      return;
    }
    bool told = false;
    int status = wait_child(pid, &set, &told);
    bool stalled = WIFEXITED(status) && WEXITSTATUS(status) == SUPERVISE_EXIT_STALLED;
    bool crashed = WIFSIGNALED(status) && !told;
    if (told || (!stalled && !crashed)) {
      if (WIFSIGNALED(status)) exit(128 + WTERMSIG(status));
      exit(WEXITSTATUS(status));
    }
    if (crashed)
      log_msg(LOG_ERROR, "supervisor: the server (pid %d) died of %s", (int)pid,
              strsignal(WTERMSIG(status)));
    log_msg(LOG_WARNING, "supervisor: starting the server again (restart %u)", restarts + 1);
    if (clock_now() - started < 1) { /* a server that fails at once must not spin */
      struct timespec pause = {1, 0};
      nanosleep(&pause, NULL);
    }
  }
}
