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

/* The bytes of a UTF-8 sequence starting at p (at most n), or 0 when it is
   not one. */
static size_t utf8_seq(const unsigned char *p, size_t n) {
  size_t len = p[0] < 0xC2 ? 0 : p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : p[0] < 0xF5 ? 4 : 0;
  if (!len || len > n) return 0;
  for (size_t i = 1; i < len; i++)
    if ((p[i] & 0xC0) != 0x80) return 0;
  if ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] > 0x8F) ||
      (p[0] == 0xED && p[1] > 0x9F))
    return 0; /* overlong, past U+10FFFF, a surrogate */
  return len;
}

void log_msg(int level, const char *fmt, ...) {
  if (level < threshold) return;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  int got = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t mn = got < 0 ? 0 : (size_t)got < sizeof msg ? (size_t)got : sizeof msg - 1;
  /* What a client or an app chose reaches messages (a protocolVersion, a
     script's error): nothing in it may pass for a line of its own. A line
     break goes on as "  | " (never ours, never JSON: no forged log or
     access-log line), other control bytes and what is not UTF-8 as \xHH. */
  char line[4 * sizeof msg + 64];
  size_t len = (size_t)snprintf(line, sizeof line, "luamcp: %s: ", names[level]);
  const unsigned char *p = (const unsigned char *)msg;
  for (size_t i = 0; i < mn && len + 8 < sizeof line;) {
    size_t seq = p[i] >= 0x80 ? utf8_seq(p + i, mn - i) : 0;
    if (seq) {
      memcpy(line + len, p + i, seq);
      len += seq, i += seq;
    } else if (p[i] == '\n') {
      memcpy(line + len, "\n  | ", 5);
      len += 5, i++;
    } else if (p[i] < 0x20 && p[i] != '\t') {
      len += (size_t)snprintf(line + len, 5, "\\x%02x", p[i]), i++;
    } else if (p[i] == 0x7F || p[i] >= 0x80) {
      len += (size_t)snprintf(line + len, 5, "\\x%02x", p[i]), i++;
    } else {
      line[len++] = (char)p[i++];
    }
  }
  line[len++] = '\n';
  line[len] = '\0';
  /* one fputs per line so lines from two threads don't interleave */
  fputs(line, stderr);
}
