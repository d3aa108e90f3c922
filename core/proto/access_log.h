/* access_log.h — --access-log FILE (or - for stderr): one JSON object a
 * line per request answered (time, instance, peer, session, subject,
 * revision, method, name, id, outcome, duration, bytes, trace). Written by the
 * engine's run-lock holder into a buffer, handed to the file at the end of
 * each round (a refusal by the transport: at once, from its thread); SIGUSR1 has it reopened there (logrotate's convention), so a
 * rotation loses no line. */
#ifndef LUAMCP_ACCESS_LOG_H
#define LUAMCP_ACCESS_LOG_H

#include <stdbool.h>
#include <stddef.h>

/* Open path for appending ("-": stderr). False with why. */
bool access_log_open(const char *path, char *why, size_t cap);
void access_log_close(void);
/* Is there a log (a line costs nothing without one)? */
bool access_log_on(void);
/* Any thread: reopen the file at the next flush. */
void access_log_reopen(void);

typedef struct access_entry {
  const char *instance, *peer, *session, *subject, *revision, *method, *name, *outcome;
  const char *id; /* the request id as sent (raw JSON) */
  size_t id_len;
  double duration; /* seconds */
  size_t bytes;    /* of the answer */
  const unsigned char *trace_id; /* 16 bytes: the request's trace (--otlp); NULL: not traced */
  int status;          /* a request the transport refused: its HTTP status (else 0) */
  const char *refused; /* ... and why, a fixed word (no_token, expired, ...) */
} access_entry;

/* One line (the run-lock holder). */
void access_log_write(const access_entry *e);
/* One line written at once, from any thread: a request the transport
   refused before it reached the engine (a bad token), so a flood of them
   shows here, one line each, and not in the server's own log. */
void access_log_write_now(const access_entry *e);
/* The round's lines to the file (the run-lock holder; output_flush_all). */
void access_log_flush(void);

#endif
