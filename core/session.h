/* session.h — one connected client: what was negotiated at initialize, its
 * log level and subscriptions, and its output channel. The transport owns
 * the session's lifetime and supplies the write function; the engine thread
 * owns every other field. */
#ifndef LUAMCP_SESSION_H
#define LUAMCP_SESSION_H

#include <pthread.h>
#include <stdbool.h>

#include "buf.h"
#include "protocol.h"

/* Returns false when the peer is gone (the session is then dead). */
typedef bool (*session_write_fn)(void *ctx, const char *p, size_t n);

typedef struct session {
  bool initialized; /* initialize answered */
  bool ready;       /* notifications/initialized received */
  int version;
  int log_level;    /* notifications/message at or above this level */
  bool client_sampling, client_elicitation, client_roots;
  char **subscriptions;
  size_t nsubscriptions;

  buf out;    /* engine thread: replies waiting for the end of the batch */
  bool dirty; /* engine thread: has output to flush */
  bool dead;
  pthread_mutex_t write_lock; /* one writer at a time on the channel */
  session_write_fn write;
  void *write_ctx;
} session;

void session_init(session *s, session_write_fn write, void *write_ctx);
void session_destroy(session *s);
/* Write the pending output now (any thread holding no other lock). */
void session_flush(session *s);
/* Write bytes straight to the channel (reader threads: ping, parse errors). */
void session_write_now(session *s, const char *p, size_t n);

bool session_subscribe(session *s, const char *uri, size_t n);
void session_unsubscribe(session *s, const char *uri, size_t n);
bool session_is_subscribed(const session *s, const char *uri, size_t n);

#endif
