/* notify.c — who hears of a change: the 2025-11-25 sessions the server
 * tracks (through their standalone stream: list_changed, and
 * resources/updated where subscribed), the subscriptions/listen streams
 * (listen.c) and, with a bus, the other instances (server_peers). */
#include "server_internal.h"

#include <stdlib.h>

#include "json.h"
#include "listen.h"

void notify_track(server *srv, session *s) {
  if (srv->nsessions == srv->sessions_cap) {
    srv->sessions_cap = srv->sessions_cap ? srv->sessions_cap * 2 : 8;
    srv->sessions = realloc(srv->sessions, srv->sessions_cap * sizeof *srv->sessions);
  }
  session_ref(s);
  srv->sessions[srv->nsessions++] = s;
}

void notify_untrack(server *srv, session *s) {
  for (size_t i = 0; i < srv->nsessions; i++)
    if (srv->sessions[i] == s) {
      srv->sessions[i] = srv->sessions[--srv->nsessions];
      session_unref(s);
      return;
    }
}

void notify_list_changed_here(server *srv, const char *method) {
  for (size_t i = 0; i < srv->nsessions; i++) {
    outlet *o = srv->sessions[i]->standalone;
    if (o && !o->dead) jsonrpc_write_notification(output_of(srv, o), method, NULL, 0);
  }
  listen_list_changed(srv, method); /* and every subscription that asked for it */
}

/* Would who see a change in the lists of ls between a and b? Without an
   identity everything is seen. */
static bool sees_change(const principal *who, const notify_change *ch) {
  for (size_t i = 0; i < ch->n; i++)
    if (!who || !registry_list_scoped(ch->old, ch->fresh, ch->lists[i]) ||
        registry_visible_differs(ch->old, ch->fresh, ch->lists[i], who))
      return true;
  return false;
}

static bool listener_sees(const principal *who, void *ud) { return sees_change(who, ud); }

void notify_lists_changed(server *srv, const char *method, const notify_change *ch) {
  for (size_t i = 0; i < srv->nsessions; i++) {
    outlet *o = srv->sessions[i]->standalone;
    if (o && !o->dead && sees_change(srv->sessions[i]->who, ch))
      jsonrpc_write_notification(output_of(srv, o), method, NULL, 0);
  }
  listen_list_changed_if(srv, method, listener_sees, (void *)ch);
  /* the other instances judge nothing: their clients are all told */
  if (srv->peers.list_changed) srv->peers.list_changed(srv->peers.ud, method);
}

void notify_list_changed(server *srv, const char *method) {
  notify_list_changed_here(srv, method);
  if (srv->peers.list_changed) srv->peers.list_changed(srv->peers.ud, method);
}

void notify_updated_here(server *srv, const char *uri, size_t n) {
  buf p;
  buf_init(&p);
  buf_puts(&p, "{\"uri\":");
  json_encode_string(&p, uri, n);
  buf_putc(&p, '}');
  for (size_t i = 0; i < srv->nsessions; i++) {
    session *s = srv->sessions[i];
    if (s->standalone && !s->standalone->dead && session_is_subscribed(s, uri, n))
      jsonrpc_write_notification(output_of(srv, s->standalone), "notifications/resources/updated",
                                 p.p, p.len);
  }
  buf_free(&p);
  listen_resource_updated(srv, uri, n);
}

void notify_updated(server *srv, const char *uri, size_t n) {
  notify_updated_here(srv, uri, n);
  if (srv->peers.updated) srv->peers.updated(srv->peers.ud, uri, n);
}
