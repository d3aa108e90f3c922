/* session.c — per-client state and output channel (see session.h). */
#include "session.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"

void session_init(session *s, session_write_fn write, void *write_ctx) {
  memset(s, 0, sizeof *s);
  buf_init(&s->out);
  pthread_mutex_init(&s->write_lock, NULL);
  s->write = write;
  s->write_ctx = write_ctx;
  s->log_level = LOG_DEBUG; /* until logging/setLevel the server chooses: all */
}

void session_destroy(session *s) {
  buf_free(&s->out);
  for (size_t i = 0; i < s->nsubscriptions; i++) free(s->subscriptions[i]);
  free(s->subscriptions);
  pthread_mutex_destroy(&s->write_lock);
}

void session_write_now(session *s, const char *p, size_t n) {
  pthread_mutex_lock(&s->write_lock);
  if (!s->dead && !s->write(s->write_ctx, p, n)) s->dead = true;
  pthread_mutex_unlock(&s->write_lock);
}

void session_flush(session *s) {
  if (s->out.len) session_write_now(s, s->out.p, s->out.len);
  s->out.len = 0;
  s->dirty = false;
}

static long find_sub(const session *s, const char *uri, size_t n) {
  for (size_t i = 0; i < s->nsubscriptions; i++)
    if (strlen(s->subscriptions[i]) == n && memcmp(s->subscriptions[i], uri, n) == 0)
      return (long)i;
  return -1;
}

bool session_subscribe(session *s, const char *uri, size_t n) {
  if (find_sub(s, uri, n) >= 0) return true;
  char **grown = realloc(s->subscriptions, (s->nsubscriptions + 1) * sizeof *grown);
  if (!grown) return false;
  s->subscriptions = grown;
  s->subscriptions[s->nsubscriptions++] = strndup(uri, n);
  return true;
}

void session_unsubscribe(session *s, const char *uri, size_t n) {
  long i = find_sub(s, uri, n);
  if (i < 0) return;
  free(s->subscriptions[i]);
  s->subscriptions[i] = s->subscriptions[--s->nsubscriptions];
}

bool session_is_subscribed(const session *s, const char *uri, size_t n) {
  return find_sub(s, uri, n) >= 0;
}
