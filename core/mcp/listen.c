/* listen.c — subscriptions/listen (see listen.h). */
#include "listen.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"

/* Open subscriptions at most (the TypeScript SDK's bound too): each holds
   an outlet, over HTTP a worker. */
#define MAX_LISTENERS 1024
/* A filter's resourceSubscriptions: at most this many URIs and bytes of
   them (a URI the template matcher takes is at most 8 KiB); duplicates
   count once. More is an invalid-params error, not memory spent. */
#define MAX_FILTER_URIS 1024
#define MAX_FILTER_BYTES (256 * 1024)

enum { WANT_TOOLS = 1, WANT_PROMPTS = 2, WANT_RESOURCES = 4 };

/* One URI of one listener's filter, in the server's index by URI (so a
   resources/updated costs the listeners of that URI, not a walk of every
   filter) and in its listener's list. */
typedef struct watch {
  struct watch *next;    /* in its bucket */
  struct watch *sibling; /* the listener's next URI, in the order asked */
  listener *l;
  uint32_t hash;
  uint32_t len;
  char uri[];
} watch;

struct listen_index {
  watch **buckets;
  size_t nbuckets, nwatches; /* nbuckets: a power of two */
};

struct listener {
  session *s; /* holds a reference */
  outlet *out;
  char *id; /* raw JSON token: the subscription id, same type as sent */
  size_t id_len;
  unsigned want;
  watch *uris, *last; /* its filter's URIs */
  size_t nuris;
  listener *next;
};

size_t listen_count(const server *srv) {
  size_t n = 0;
  for (const listener *l = srv->listeners; l; l = l->next) n++;
  return n;
}

/* {====== the index by URI */

static uint32_t uri_hash(const char *p, size_t n) { /* FNV-1a */
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 16777619u;
  return h;
}

static void index_grow(struct listen_index *ix) {
  size_t n = ix->nbuckets ? ix->nbuckets * 2 : 64;
  watch **b = calloc(n, sizeof *b);
  for (size_t i = 0; i < ix->nbuckets; i++)
    for (watch *w = ix->buckets[i], *next; w; w = next) {
      next = w->next;
      w->next = b[w->hash & (n - 1)];
      b[w->hash & (n - 1)] = w;
    }
  free(ix->buckets);
  ix->buckets = b;
  ix->nbuckets = n;
}

/* Add uri to l's filter unless it is there already. */
static void watch_add(server *srv, listener *l, const char *uri, size_t n) {
  struct listen_index *ix = srv->listen_index;
  if (!ix) ix = srv->listen_index = calloc(1, sizeof *ix);
  uint32_t h = uri_hash(uri, n);
  if (ix->nbuckets)
    for (watch *w = ix->buckets[h & (ix->nbuckets - 1)]; w; w = w->next)
      if (w->l == l && w->hash == h && w->len == n && memcmp(w->uri, uri, n) == 0) return;
  if (ix->nwatches >= ix->nbuckets) index_grow(ix);
  watch *w = malloc(sizeof *w + n + 1);
  memcpy(w->uri, uri, n);
  w->uri[n] = '\0';
  w->len = (uint32_t)n;
  w->hash = h;
  w->l = l;
  w->sibling = NULL;
  w->next = ix->buckets[h & (ix->nbuckets - 1)];
  ix->buckets[h & (ix->nbuckets - 1)] = w;
  ix->nwatches++;
  if (l->last) l->last->sibling = w;
  else l->uris = w;
  l->last = w;
  l->nuris++;
}

/* Take l's URIs out of the index and free them; the index goes with its
   last URI. */
static void watches_free(server *srv, listener *l) {
  struct listen_index *ix = srv->listen_index;
  for (watch *w = l->uris, *next; w; w = next) {
    next = w->sibling;
    for (watch **p = &ix->buckets[w->hash & (ix->nbuckets - 1)]; *p; p = &(*p)->next)
      if (*p == w) {
        *p = w->next;
        break;
      }
    ix->nwatches--;
    free(w);
  }
  l->uris = l->last = NULL;
  l->nuris = 0;
  if (ix && !ix->nwatches) {
    free(ix->buckets);
    free(ix);
    srv->listen_index = NULL;
  }
}

/* }====== */

static void listener_free(server *srv, listener *l, bool graceful) {
  if (graceful && !l->out->dead) {
    buf *out = output_reply(srv, l->out);
    jsonrpc_begin_result(out, (json_span){l->id, l->id_len});
    buf_puts(out, "{\"resultType\":\"complete\",\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":");
    buf_put(out, l->id, l->id_len);
    buf_puts(out, "}}");
    jsonrpc_end_reply(out);
  }
  if (l->out != l->s->standalone) output_done(srv, l->out); /* HTTP: the stream ends */
  session_unref(l->s);
  watches_free(srv, l);
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
  buf *out = output_of(srv, l->out);
  buf_printf(out, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":{", method);
  if (params_body && *params_body) {
    buf_puts(out, params_body);
    buf_putc(out, ',');
  }
  buf_puts(out, "\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":");
  buf_put(out, l->id, l->id_len);
  buf_puts(out, "}}}\n");
}

const char *listen_scan_filter(json_span v, void (*each)(void *, const char *, size_t), void *ud) {
  size_t count = 0, bytes = 0;
  buf tmp;
  buf_init(&tmp);
  const char *p = v.p + 1, *end = v.p + v.n - 1, *bad = NULL;
  while (p < end) {
    while (p < end && (*p == ' ' || *p == ',' || *p == '\n' || *p == '\t' || *p == '\r')) p++;
    if (p >= end || *p != '"') break; /* only strings are URIs */
    const char *q = p + 1;
    while (q < end && *q != '"') q += *q == '\\' ? 2 : 1;
    json_span item = {p, (size_t)(q + 1 - p)};
    p = q + 1;
    if (++count > MAX_FILTER_URIS) {
      bad = "Invalid params: resourceSubscriptions may name at most 1024 URIs";
      break;
    }
    if ((bytes += item.n) > MAX_FILTER_BYTES) {
      bad = "Invalid params: resourceSubscriptions may hold at most 256 KiB of URIs";
      break;
    }
    if (each) {
      tmp.len = 0;
      json_string_unescape(item, &tmp);
      each(ud, tmp.p ? tmp.p : "", tmp.len);
    }
  }
  buf_free(&tmp);
  return bad;
}

typedef struct add_ctx {
  server *srv;
  listener *l;
} add_ctx;

static void add_uri(void *ud, const char *uri, size_t n) {
  add_ctx *a = ud;
  watch_add(a->srv, a->l, uri, n);
}

void listen_open(server *srv, inmsg *im) {
  const jsonrpc_msg *m = &im->m;
  json_span filter;
  if (!m->params.n || !jsonrpc_param(m, "notifications", &filter) ||
      json_kind(filter) != '{') {
    output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS,
                "Invalid params: \"notifications\" (an object) is required");
    return;
  }
  if (!m->id.n) return;
  if (listen_count(srv) >= MAX_LISTENERS) {
    drop_if(srv, is_dead, NULL, false);
    if (listen_count(srv) >= MAX_LISTENERS) {
      output_error(srv, im->reply, m->id, JSONRPC_INTERNAL_ERROR,
                  "Too many open subscriptions (at most %d)", MAX_LISTENERS);
      return;
    }
  }
  json_span v, subs = {0};
  const registry *reg = engine_app(srv->e)->reg;
  if (reg->declares_resources && json_object_get(filter, "resourceSubscriptions", &subs) &&
      json_kind(subs) == '[') {
    const char *bad = listen_scan_filter(subs, NULL, NULL);
    if (bad) {
      output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS, "%s", bad);
      return;
    }
  } else {
    subs.n = 0;
  }
  listener *l = calloc(1, sizeof *l);
  /* honoured: what was asked and what this server declares (under
     --no-watch an app without prompts declares no prompts.listChanged) */
  if (json_object_get(filter, "toolsListChanged", &v) && json_kind(v) == 't') l->want |= WANT_TOOLS;
  if (reg->declares_prompts && json_object_get(filter, "promptsListChanged", &v) &&
      json_kind(v) == 't')
    l->want |= WANT_PROMPTS;
  if (reg->declares_resources && json_object_get(filter, "resourcesListChanged", &v) &&
      json_kind(v) == 't')
    l->want |= WANT_RESOURCES;
  if (subs.n) listen_scan_filter(subs, add_uri, &(add_ctx){srv, l});
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
    for (const watch *w = l->uris; w; w = w->sibling) {
      if (w != l->uris) buf_putc(&body, ',');
      json_encode_string(&body, w->uri, w->len);
    }
    buf_putc(&body, ']');
  }
  buf_putc(&body, '}');
  buf_putc(&body, '\0');
  send_to(srv, l, "notifications/subscriptions/acknowledged", body.p);
  buf_free(&body);
}

void listen_list_changed_if(server *srv, const char *method,
                            bool (*sees)(const principal *who, void *ud), void *ud) {
  unsigned kind = strstr(method, "/tools/")     ? WANT_TOOLS
                  : strstr(method, "/prompts/") ? WANT_PROMPTS
                                                : WANT_RESOURCES;
  drop_if(srv, is_dead, NULL, false);
  for (listener *l = srv->listeners; l; l = l->next)
    if ((l->want & kind) && (!sees || sees(l->s->who, ud))) send_to(srv, l, method, NULL);
}

void listen_list_changed(server *srv, const char *method) {
  listen_list_changed_if(srv, method, NULL, NULL);
}

void listen_resource_updated(server *srv, const char *uri, size_t n) {
  drop_if(srv, is_dead, NULL, false);
  buf body;
  buf_init(&body);
  buf_puts(&body, "\"uri\":");
  json_encode_string(&body, uri, n);
  buf_putc(&body, '\0');
  const struct listen_index *ix = srv->listen_index;
  uint32_t h = uri_hash(uri, n);
  for (const watch *w = ix ? ix->buckets[h & (ix->nbuckets - 1)] : NULL; w; w = w->next)
    if (w->hash == h && w->len == n && memcmp(w->uri, uri, n) == 0)
      send_to(srv, w->l, "notifications/resources/updated", body.p);
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

static bool of_outlet(const listener *l, const void *ud) { return l->out == ud; }

void listen_end_outlet(server *srv, const outlet *out) { drop_if(srv, of_outlet, out, false); }

void listen_end_session(server *srv, const session *s) { drop_if(srv, of_session, s, false); }

static bool every(const listener *l, const void *ud) {
  (void)l, (void)ud;
  return true;
}

void listen_close_all(server *srv) { drop_if(srv, every, NULL, true); }
