/* log.c — stderr diagnostics (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const names[LOG_NLEVELS] = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

/* Written once by main before any thread starts; read-only afterwards. */
static int threshold = LOG_INFO;

int log_level_from_name(const char *name, unsigned long len) {
  for (int i = 0; i < LOG_NLEVELS; i++)
    if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0) return i;
  return -1;
}

const char *log_level_name(int level) {
  return level >= 0 && level < LOG_NLEVELS ? names[level] : "info";
}

void log_set_threshold(int level) { threshold = level; }
int log_threshold(void) { return threshold; }

void log_msg(int level, const char *fmt, ...) {
  if (level < threshold) return;
  char line[2048];
  int n = snprintf(line, sizeof line, "luamcp: %s: ", names[level]);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  /* one fputs per line so lines from two threads don't interleave */
  size_t len = strlen(line);
  if (len + 1 < sizeof line) line[len++] = '\n', line[len] = '\0';
  fputs(line, stderr);
}
