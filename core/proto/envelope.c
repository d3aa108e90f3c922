/* envelope.c — reading the per-request metadata of 2026-07-28 (see envelope.h). */
#include "envelope.h"

#include <string.h>

#include "log.h"

#define KEY_VERSION "io.modelcontextprotocol/protocolVersion"
#define KEY_CAPS "io.modelcontextprotocol/clientCapabilities"
#define KEY_INFO "io.modelcontextprotocol/clientInfo"
#define KEY_LEVEL "io.modelcontextprotocol/logLevel"

/* No envelope without its key in the bytes: most 2025-era requests are
   told apart with one memmem instead of a walk of their params ("/" may be
   written escaped, so the search is for the part without it). */
static bool may_claim(const jsonrpc_msg *m) {
  if (!m->params.n) return false; /* (and p may be NULL: no arithmetic on it) */
  /* memchr for the rare 'V', then a look around it: cheaper than glibc's
     memmem for a 15-byte needle (docs/PERFORMANCE.md) */
  const char *p = m->params.p, *end = p + m->params.n;
  for (const char *q = p; q < end && (q = memchr(q, 'V', (size_t)(end - q))); q++)
    if (q - p >= 8 && end - q >= 7 && memcmp(q - 8, "protocol", 8) == 0 &&
        memcmp(q + 1, "ersion", 6) == 0)
      return true;
  return false;
}

/* The UI extension's entry: a host renders views only if it lists their
   MIME type (mimeTypes is required by the extension): {} alone is not an
   Apps host. */
static bool ui_declares_app(json_span ui) {
  json_span types;
  if (!ui.n || json_kind(ui) != '{' || !json_object_get(ui, "mimeTypes", &types) ||
      json_kind(types) != '[')
    return false;
  return memmem(types.p, types.n, "\"text/html;profile=mcp-app\"", 27) != NULL;
}

bool envelope_declares_ui(json_span caps) {
  json_span ext, ui;
  return json_kind(caps) == '{' && json_object_get(caps, "extensions", &ext) &&
         json_kind(ext) == '{' && json_object_get(ext, "io.modelcontextprotocol/ui", &ui) &&
         ui_declares_app(ui);
}

bool envelope_claimed(const jsonrpc_msg *m) {
  json_span meta, v;
  return may_claim(m) && jsonrpc_param(m, "_meta", &meta) && json_kind(meta) == '{' &&
         json_object_get(meta, KEY_VERSION, &v);
}

int envelope_read(const jsonrpc_msg *m, envelope *env, buf *msg, buf *data) {
  memset(env, 0, sizeof *env);
  env->log_level = -1;
  json_span meta;
  if (!may_claim(m) || !jsonrpc_param(m, "_meta", &meta) || json_kind(meta) != '{') return 0;
  env->meta = meta;
  /* one walk of _meta and one of the capabilities, not one per key */
  static const char *const meta_keys[] = {KEY_VERSION, KEY_CAPS, KEY_INFO, KEY_LEVEL};
  json_span f[4];
  json_object_fields(meta, meta_keys, f, 4);
  if (!f[0].n) return 0;
  env->version = f[0];
  env->present = true;
  if (json_kind(env->version) != '"') {
    buf_puts(msg, "Invalid params: _meta[\"" KEY_VERSION "\"] must be a string");
    return JSONRPC_INVALID_PARAMS;
  }
  /* the per-request revisions only: the 2025 ones are reached with
     initialize, not per request (checklist A1) */
  if (!memchr(env->version.p, '\\', env->version.n)) {
    env->revision = proto_from_name(env->version.p + 1, env->version.n - 2);
  } else { /* escaped: compared as the string it stands for */
    buf name;
    buf_init(&name);
    json_string_unescape(env->version, &name);
    env->revision = name.p ? proto_from_name(name.p, name.len) : PROTO_NONE;
    buf_free(&name);
  }
  if (!proto_per_request(env->revision)) {
    env->revision = PROTO_NONE;
    buf_puts(msg, "Unsupported protocol version");
    buf_puts(data, "{\"supported\":");
    proto_per_request_json(data);
    buf_puts(data, ",\"requested\":");
    buf_put(data, env->version.p, env->version.n);
    buf_putc(data, '}');
    return MCP_UNSUPPORTED_VERSION;
  }
  env->caps = f[1];
  if (!env->caps.n || json_kind(env->caps) != '{') {
    buf_puts(msg, "Invalid params: _meta[\"" KEY_CAPS "\"] (an object) is required");
    return JSONRPC_INVALID_PARAMS;
  }
  env->client_info = f[2];
  if (env->client_info.n && json_kind(env->client_info) != '{') {
    buf_puts(msg, "Invalid params: _meta[\"" KEY_INFO "\"] must be an object");
    return JSONRPC_INVALID_PARAMS;
  }
  if (f[3].n) {
    buf name;
    buf_init(&name);
    if (json_kind(f[3]) == '"') json_string_unescape(f[3], &name);
    env->log_level = name.len ? log_level_from_name(name.p, name.len) : -1;
    buf_free(&name);
    if (env->log_level < 0) {
      buf_puts(msg, "Invalid params: _meta[\"" KEY_LEVEL "\"] must be one of debug, info, notice, "
                    "warning, error, critical, alert, emergency");
      return JSONRPC_INVALID_PARAMS;
    }
  }
  static const char *const cap_keys[] = {"sampling", "elicitation", "roots", "extensions"};
  json_span c[4];
  json_object_fields(env->caps, cap_keys, c, 4);
  env->sampling = c[0].n > 0;
  env->elicitation = c[1].n > 0;
  env->roots = c[2].n > 0;
  if (c[3].n && json_kind(c[3]) == '{') {
    static const char *const ext_keys[] = {"io.modelcontextprotocol/ui", TASKS_EXTENSION};
    json_span x[2];
    json_object_fields(c[3], ext_keys, x, 2);
    env->ui = ui_declares_app(x[0]);
    env->tasks = x[1].n && json_kind(x[1]) == '{';
  }
  return 0;
}
