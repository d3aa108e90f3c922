/* log.h — the server's own diagnostics, on stderr (never stdout: in stdio
 * mode stdout carries only protocol). Levels are RFC 5424's, as MCP uses. */
#ifndef LUAMCP_LOG_H
#define LUAMCP_LOG_H

enum {
  LOG_DEBUG, LOG_INFO, LOG_NOTICE, LOG_WARNING, LOG_ERROR, LOG_CRITICAL,
  LOG_ALERT, LOG_EMERGENCY, LOG_NLEVELS
};

/* Level index for an MCP level name, or -1. */
int log_level_from_name(const char *name, unsigned long len);
const char *log_level_name(int level);
/* The stderr threshold; set once at start-up by main (log.c owns it). */
void log_set_threshold(int level);
int log_threshold(void);
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
