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
  /* memchr for the rare 'V', then a look around it: glibc's memmem for a
     15-byte needle was 260 instructions a request (callgrind) */
  const char *p = m->params.p, *end = p + m->params.n;
  for (const char *q = p; q < end && (q = memchr(q, 'V', (size_t)(end - q))); q++)
    if (q - p >= 8 && end - q >= 7 && memcmp(q - 8, "protocol", 8) == 0 &&
        memcmp(q + 1, "ersion", 6) == 0)
      return true;
  return false;
}

bool caps_declare_ui(json_span caps) {
  json_span ext, ui, types;
  if (json_kind(caps) != '{' || !json_object_get(caps, "extensions", &ext) ||
      json_kind(ext) != '{' || !json_object_get(ext, "io.modelcontextprotocol/ui", &ui))
    return false;
  /* a host renders views only if it lists their MIME type (mimeTypes is
     required by the extension): {} alone is not an Apps host */
  if (json_kind(ui) != '{' || !json_object_get(ui, "mimeTypes", &types) || json_kind(types) != '[')
    return false;
  return memmem(types.p, types.n, "\"text/html;profile=mcp-app\"", 27) != NULL;
}

bool envelope_claimed(const jsonrpc_msg *m) {
  json_span meta, v;
  return may_claim(m) && json_object_get(m->params, "_meta", &meta) && json_kind(meta) == '{' &&
         json_object_get(meta, KEY_VERSION, &v);
}

int envelope_read(const jsonrpc_msg *m, envelope *env, buf *msg, buf *data) {
  memset(env, 0, sizeof *env);
  env->log_level = -1;
  json_span meta;
  if (!may_claim(m) || !json_object_get(m->params, "_meta", &meta) || json_kind(meta) != '{')
    return 0;
  env->meta = meta;
  if (!json_object_get(meta, KEY_VERSION, &env->version)) return 0;
  env->present = true;
  if (json_kind(env->version) != '"') {
    buf_puts(msg, "Invalid params: _meta[\"" KEY_VERSION "\"] must be a string");
    return JSONRPC_INVALID_PARAMS;
  }
  if (!json_string_eq(env->version, MODERN_VERSION)) {
    buf_puts(msg, "Unsupported protocol version");
    buf_puts(data, "{\"supported\":" SUPPORTED_VERSIONS_JSON ",\"requested\":");
    buf_put(data, env->version.p, env->version.n);
    buf_putc(data, '}');
    return MCP_UNSUPPORTED_VERSION;
  }
  if (!json_object_get(meta, KEY_CAPS, &env->caps) || json_kind(env->caps) != '{') {
    buf_puts(msg, "Invalid params: _meta[\"" KEY_CAPS "\"] (an object) is required");
    return JSONRPC_INVALID_PARAMS;
  }
  if (json_object_get(meta, KEY_INFO, &env->client_info) && json_kind(env->client_info) != '{') {
    buf_puts(msg, "Invalid params: _meta[\"" KEY_INFO "\"] must be an object");
    return JSONRPC_INVALID_PARAMS;
  }
  json_span level;
  if (json_object_get(meta, KEY_LEVEL, &level)) {
    buf name;
    buf_init(&name);
    if (json_kind(level) == '"') json_string_unescape(level, &name);
    env->log_level = name.len ? log_level_from_name(name.p, name.len) : -1;
    buf_free(&name);
    if (env->log_level < 0) {
      buf_puts(msg, "Invalid params: _meta[\"" KEY_LEVEL "\"] must be one of debug, info, notice, "
                    "warning, error, critical, alert, emergency");
      return JSONRPC_INVALID_PARAMS;
    }
  }
  json_span x;
  env->sampling = json_object_get(env->caps, "sampling", &x);
  env->elicitation = json_object_get(env->caps, "elicitation", &x);
  env->roots = json_object_get(env->caps, "roots", &x);
  env->ui = caps_declare_ui(env->caps);
  json_span ext;
  env->tasks = json_object_get(env->caps, "extensions", &ext) && json_kind(ext) == '{' &&
               json_object_get(ext, TASKS_EXTENSION, &x) && json_kind(x) == '{';
  return 0;
}
