/* skills_rpc.c — skills/list, skills/get, resources/directory/read and the
 * reads of skill:// URIs (see skills_rpc.h). */
#include "skills_rpc.h"

#include <string.h>

#include "app.h"
#include "base64.h"
#include "cursor.h"
#include "json.h"
#include "skills.h"

/* the cursors of skills/list name this list (registry.h's are 0..4) */
#define SKILLS_CURSOR_LIST 16

static const skills_catalog *catalog_of(server *srv) { return engine_app(srv->e)->skills; }

/* An app without skills does not have the extension: -32601, as for any
   method the server lacks. */
static bool absent(server *srv, inmsg *im, const char *method) {
  const skills_catalog *c = catalog_of(srv);
  if (c && c->n) return false;
  output_error(srv, im->reply, im->m.id, JSONRPC_METHOD_NOT_FOUND,
               "Method not found: %s (this server has no skills)", method);
  return true;
}

/* params.key as a string into out; false (and -32602 answered) if it is not one */
static bool uri_param(server *srv, inmsg *im, buf *out) {
  json_span v;
  out->len = 0;
  if (im->m.params.n && jsonrpc_param(&im->m, "uri", &v) && json_kind(v) == '"') {
    json_string_unescape(v, out);
    buf_putc(out, '\0');
    out->len--;
    return true;
  }
  output_error(srv, im->reply, im->m.id, JSONRPC_INVALID_PARAMS, "Invalid params: \"uri\" (string) is required");
  return false;
}

/* The result's end: 2026-07-28's cache hints (the lists' own: the skills
   change with the app), resultType and serverInfo. */
static void end_result(server *srv, inmsg *im, buf *out) {
  if (proto_per_request(im->cv.version)) {
    const registry *r = engine_app(srv->e)->reg;
    buf_put(out, r->list_cache, r->list_cache_len);
    buf_put(out, r->complete_tail, r->complete_tail_len);
  }
  buf_putc(out, '}');
  jsonrpc_end_reply(out);
}

void skills_rpc_list(server *srv, inmsg *im) {
  if (absent(srv, im, "skills/list")) return;
  const skills_catalog *c = catalog_of(srv);
  const registry *r = engine_app(srv->e)->reg;
  size_t first = 0;
  json_span cur;
  if (im->m.params.n && jsonrpc_param(&im->m, "cursor", &cur) && json_kind(cur) != 'n') {
    buf s;
    buf_init(&s);
    bool ok = json_kind(cur) == '"';
    if (ok) {
      json_string_unescape(cur, &s);
      ok = cursor_parse(r->cursor_key, SKILLS_CURSOR_LIST, s.p, s.len, &first) && first < c->n;
    }
    buf_free(&s);
    if (!ok) {
      output_error(srv, im->reply, im->m.id, JSONRPC_INVALID_PARAMS,
                   "Invalid params: unknown cursor (lists restart from the beginning)");
      return;
    }
  }
  size_t last = first + r->page_size < c->n ? first + r->page_size : c->n;
  buf *out = output_reply(srv, im->reply);
  jsonrpc_begin_result(out, im->m.id);
  buf_puts(out, "{\"skills\":[");
  for (size_t i = first; i < last; i++) {
    if (i > first) buf_putc(out, ',');
    buf_put(out, c->v[i].entry, c->v[i].entry_len);
  }
  buf_putc(out, ']');
  if (last < c->n) { /* a skill is never cut across pages: an entry is one item */
    char next[CURSOR_MAX];
    cursor_make(r->cursor_key, SKILLS_CURSOR_LIST, last, next);
    buf_printf(out, ",\"nextCursor\":\"%s\"", next);
  }
  end_result(srv, im, out);
}

/* {"<key>": <json>, ...the result's end}: what was found, or -32602 naming uri */
static void answer_found(server *srv, inmsg *im, const char *key, const char *json, size_t len,
                         const buf *uri, const char *missing) {
  if (!json) {
    output_error(srv, im->reply, im->m.id, JSONRPC_INVALID_PARAMS, missing, uri->p);
    return;
  }
  buf *out = output_reply(srv, im->reply);
  jsonrpc_begin_result(out, im->m.id);
  buf_printf(out, "{\"%s\":", key);
  buf_put(out, json, len);
  end_result(srv, im, out);
}

void skills_rpc_get(server *srv, inmsg *im) {
  if (absent(srv, im, "skills/get")) return;
  buf uri;
  buf_init(&uri);
  if (uri_param(srv, im, &uri)) {
    const skill *sk = skills_find(catalog_of(srv), uri.p, uri.len);
    answer_found(srv, im, "skill", sk ? sk->entry : NULL, sk ? sk->entry_len : 0, &uri,
                 "Invalid params: no skill is served at %.200s");
  }
  buf_free(&uri);
}

void skills_rpc_directory(server *srv, inmsg *im) {
  if (absent(srv, im, "resources/directory/read")) return;
  buf uri;
  buf_init(&uri);
  json_span cur;
  if (!uri_param(srv, im, &uri)) {
    /* answered */
  } else if (im->m.params.n && jsonrpc_param(&im->m, "cursor", &cur) && json_kind(cur) != 'n') {
    /* a folder's children fit one page (a skill has at most 512 files) */
    output_error(srv, im->reply, im->m.id, JSONRPC_INVALID_PARAMS,
                 "Invalid params: unknown cursor (lists restart from the beginning)");
  } else {
    const skill_dir *d = skills_find_dir(catalog_of(srv), uri.p, uri.len);
    answer_found(srv, im, "resources", d ? d->listing : NULL, d ? d->listing_len : 0, &uri,
                 "Invalid params: %.200s is not a directory resource");
  }
  buf_free(&uri);
}

bool skills_rpc_read(server *srv, inmsg *im, const char *uri, size_t n) {
  const skills_catalog *c = catalog_of(srv);
  if (!c || !c->n || n < 8 || memcmp(uri, "skill://", 8) != 0) return false;
  const skill_file *f = skills_find_file(c, uri, n);
  if (!f) {
    if (!skills_find_dir(c, uri, n)) return false; /* maybe the app's own */
    /* 2026-07-28 has no -32002: not found is invalid params */
    output_error(srv, im->reply, im->m.id,
                 proto_per_request(im->cv.version) ? JSONRPC_INVALID_PARAMS : MCP_RESOURCE_NOT_FOUND,
                 "Resource not found: %.200s is a directory; use resources/directory/read", uri);
    return true;
  }
  buf bytes, why;
  buf_init(&bytes), buf_init(&why);
  if (!skills_read_file(f, &bytes, &why)) {
    output_error(srv, im->reply, im->m.id, JSONRPC_INTERNAL_ERROR, "%.200s %.*s", f->uri,
                 (int)why.len, why.p);
  } else {
    buf *out = output_reply(srv, im->reply);
    jsonrpc_begin_result(out, im->m.id);
    buf_puts(out, "{\"contents\":[{\"uri\":");
    json_encode_string(out, f->uri, strlen(f->uri));
    buf_puts(out, ",\"mimeType\":");
    json_encode_string(out, f->mime, strlen(f->mime));
    /* text when it is UTF-8 throughout, else the bytes as base64 (what the
       digest covers either way) */
    if (json_utf8_valid(bytes.p ? bytes.p : "", bytes.len)) {
      buf_puts(out, ",\"text\":");
      json_encode_string(out, bytes.p ? bytes.p : "", bytes.len);
    } else {
      buf_puts(out, ",\"blob\":\"");
      base64_encode(out, (const unsigned char *)bytes.p, bytes.len);
      buf_putc(out, '"');
    }
    buf_puts(out, "}]");
    end_result(srv, im, out);
  }
  buf_free(&bytes), buf_free(&why);
  return true;
}
