/* session.c — per-client state and output channel (see session.h). */
#include "session.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"

session *session_new(void) {
  session *s = calloc(1, sizeof *s);
  s->log_level = LOG_DEBUG; /* until logging/setLevel the server chooses: all */
  atomic_init(&s->refs, 1);
  atomic_init(&s->ended, false);
  return s;
}

void session_ref(session *s) { atomic_fetch_add(&s->refs, 1); }

void session_unref(session *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  if (s->on_free) s->on_free(s);
  for (size_t i = 0; i < s->nsubscriptions; i++) free(s->subscriptions[i]);
  free(s->subscriptions);
  principal_unref(s->who);
  free(s);
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
