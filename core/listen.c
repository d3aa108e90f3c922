/* listen.c — subscriptions/listen (see listen.h). */
#include "listen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"

/* Open subscriptions at most (the TypeScript SDK's bound too): each holds
   an outlet, over HTTP a worker. */
#define MAX_LISTENERS 1024

enum { WANT_TOOLS = 1, WANT_PROMPTS = 2, WANT_RESOURCES = 4 };

struct listener {
  session *s; /* holds a reference */
  outlet *out;
  char *id; /* raw JSON token: the subscription id, same type as sent */
  size_t id_len;
  unsigned want;
  char **uris;
  size_t nuris;
  listener *next;
};

size_t listen_count(const server *srv) {
  size_t n = 0;
  for (const listener *l = srv->listeners; l; l = l->next) n++;
  return n;
}

static void listener_free(server *srv, listener *l, bool graceful) {
  if (graceful && !l->out->dead) {
    buf *out = out_of(srv, l->out);
    jsonrpc_begin_result(out, (json_span){l->id, l->id_len});
    buf_puts(out, "{\"resultType\":\"complete\",\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":");
    buf_put(out, l->id, l->id_len);
    buf_puts(out, "}}");
    jsonrpc_end_reply(out);
  }
  if (l->out != l->s->standalone) request_done(srv, l->out); /* HTTP: the stream ends */
  session_unref(l->s);
  for (size_t i = 0; i < l->nuris; i++) free(l->uris[i]);
  free(l->uris);
  free(l->id);
  free(l);
}

/* Unlink and free every listener for which drop(l, ud) holds. */
static size_t drop_if(server *srv, bool (*drop)(const listener *, const void *), const void *ud,
                      bool graceful) {
  size_t n = 0;
  for (listener **p = &srv->listeners; *p;) {
    listener *l = *p;
    if (!drop(l, ud)) {
      p = &l->next;
      continue;
    }
    *p = l->next;
    listener_free(srv, l, graceful);
    n++;
  }
  return n;
}

static bool is_dead(const listener *l, const void *ud) {
  (void)ud;
  return l->out->dead;
}

/* One notification to one listener, stamped with its id. */
static void send_to(server *srv, listener *l, const char *method, const char *params_body) {
  buf *out = out_of(srv, l->out);
  buf_printf(out, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":{", method);
  if (params_body && *params_body) {
    buf_puts(out, params_body);
    buf_putc(out, ',');
  }
  buf_puts(out, "\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":");
  buf_put(out, l->id, l->id_len);
  buf_puts(out, "}}}\n");
}

void listen_open(server *srv, inmsg *im) {
  const jsonrpc_msg *m = &im->m;
  json_span filter;
  if (!m->params.n || !jsonrpc_param(m, "notifications", &filter) ||
      json_kind(filter) != '{') {
    reply_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS,
                "Invalid params: \"notifications\" (an object) is required");
    return;
  }
  if (!m->id.n) return;
  if (listen_count(srv) >= MAX_LISTENERS) {
    drop_if(srv, is_dead, NULL, false);
    if (listen_count(srv) >= MAX_LISTENERS) {
      reply_error(srv, im->reply, m->id, JSONRPC_INTERNAL_ERROR,
                  "Too many open subscriptions (at most %d)", MAX_LISTENERS);
      return;
    }
  }
  json_span v;
  listener *l = calloc(1, sizeof *l);
  /* honoured: what was asked and what this server declares (under
     --no-watch an app without prompts declares no prompts.listChanged) */
  const registry *reg = engine_app(srv->e)->reg;
  if (json_object_get(filter, "toolsListChanged", &v) && json_kind(v) == 't') l->want |= WANT_TOOLS;
  if (reg->declares_prompts && json_object_get(filter, "promptsListChanged", &v) &&
      json_kind(v) == 't')
    l->want |= WANT_PROMPTS;
  if (reg->declares_resources && json_object_get(filter, "resourcesListChanged", &v) &&
      json_kind(v) == 't')
    l->want |= WANT_RESOURCES;
  if (reg->declares_resources && json_object_get(filter, "resourceSubscriptions", &v) &&
      json_kind(v) == '[') {
    /* the array's strings: walk it as the object scanner cannot */
    buf tmp;
    buf_init(&tmp);
    const char *p = v.p + 1, *end = v.p + v.n - 1;
    while (p < end) {
      while (p < end && (*p == ' ' || *p == ',' || *p == '\n' || *p == '\t' || *p == '\r')) p++;
      if (p >= end) break;
      json_span item = {p, 0};
      if (*p != '"') break; /* only strings are URIs */
      const char *q = p + 1;
      while (q < end && *q != '"') q += *q == '\\' ? 2 : 1;
      item.n = (size_t)(q + 1 - p);
      tmp.len = 0;
      json_string_unescape(item, &tmp);
      l->uris = realloc(l->uris, (l->nuris + 1) * sizeof *l->uris);
      l->uris[l->nuris++] = strndup(tmp.p ? tmp.p : "", tmp.len);
      p = q + 1;
    }
    buf_free(&tmp);
  }
  l->s = im->s;
  session_ref(l->s);
  l->out = im->reply;
  l->id = strndup(m->id.p, m->id.n);
  l->id_len = m->id.n;
  im->taken = true; /* the stream stays open: the listener finishes it */
  l->next = srv->listeners;
  srv->listeners = l;
  /* the acknowledgement, first on the subscription */
  buf body;
  buf_init(&body);
  buf_puts(&body, "\"notifications\":{");
  const char *sep = "";
  if (l->want & WANT_TOOLS) buf_printf(&body, "%s\"toolsListChanged\":true", sep), sep = ",";
  if (l->want & WANT_PROMPTS) buf_printf(&body, "%s\"promptsListChanged\":true", sep), sep = ",";
  if (l->want & WANT_RESOURCES) buf_printf(&body, "%s\"resourcesListChanged\":true", sep), sep = ",";
  if (l->nuris) {
    buf_printf(&body, "%s\"resourceSubscriptions\":[", sep);
    for (size_t i = 0; i < l->nuris; i++) {
      if (i) buf_putc(&body, ',');
      json_encode_string(&body, l->uris[i], strlen(l->uris[i]));
    }
    buf_putc(&body, ']');
  }
  buf_putc(&body, '}');
  buf_putc(&body, '\0');
  send_to(srv, l, "notifications/subscriptions/acknowledged", body.p);
  buf_free(&body);
}

void listen_list_changed(server *srv, const char *method) {
  unsigned kind = strstr(method, "/tools/")     ? WANT_TOOLS
                  : strstr(method, "/prompts/") ? WANT_PROMPTS
                                                : WANT_RESOURCES;
  drop_if(srv, is_dead, NULL, false);
  for (listener *l = srv->listeners; l; l = l->next)
    if (l->want & kind) send_to(srv, l, method, NULL);
}

void listen_resource_updated(server *srv, const char *uri, size_t n) {
  drop_if(srv, is_dead, NULL, false);
  buf body;
  buf_init(&body);
  buf_puts(&body, "\"uri\":");
  json_encode_string(&body, uri, n);
  buf_putc(&body, '\0');
  for (listener *l = srv->listeners; l; l = l->next)
    for (size_t i = 0; i < l->nuris; i++)
      if (strlen(l->uris[i]) == n && memcmp(l->uris[i], uri, n) == 0) {
        send_to(srv, l, "notifications/resources/updated", body.p);
        break;
      }
  buf_free(&body);
}

typedef struct cancel_key {
  const session *s;
  json_span id;
} cancel_key;

static bool is_cancelled(const listener *l, const void *ud) {
  const cancel_key *k = ud;
  return l->s == k->s && l->id_len == k->id.n && memcmp(l->id, k->id.p, k->id.n) == 0;
}

bool listen_cancel(server *srv, const session *s, json_span id) {
  cancel_key k = {s, id};
  return drop_if(srv, is_cancelled, &k, false) > 0;
}

static bool of_session(const listener *l, const void *ud) { return l->s == ud; }

void listen_end_session(server *srv, const session *s) { drop_if(srv, of_session, s, false); }

static bool every(const listener *l, const void *ud) {
  (void)l, (void)ud;
  return true;
}

void listen_close_all(server *srv) { drop_if(srv, every, NULL, true); }
