/* cli.c — what the command files share (cli.h): usage errors, loading an
 * app for a command, keeping stdout for results. */
#include "cli.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

_Noreturn void cli_die_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "luamcp: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry 'luamcp --help'.\n");
  exit(2);
}

app *cli_load(const char *dir, const app_config *cfg) {
  buf errors;
  buf_init(&errors);
  app *a = app_load(dir, cfg, NULL, &errors);
  if (!a) fprintf(stderr, "%.*s", (int)errors.len, errors.p ? errors.p : "");
  buf_free(&errors);
  return a;
}

/* Keep the real stdout for protocol (or results) and point fd 1 at stderr,
   so no print() or library output can corrupt what we write. */
int cli_protect_stdout(void) {
  int fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (fd < 0 || dup2(2, 1) < 0) {
    perror("luamcp: stdout");
    exit(1);
  }
  return fd;
}
