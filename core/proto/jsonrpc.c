/* jsonrpc.c — JSON-RPC 2.0 framing (see jsonrpc.h). */
#include "jsonrpc.h"

#include <string.h>

static void invalid(jsonrpc_msg *m, int code, const char *msg) {
  m->kind = JSONRPC_INVALID;
  m->error_code = code;
  m->error_msg = msg;
}

/* An id we can echo: a string, or a number without fraction or exponent
   (MCP: "string or integer"; null is not allowed). */
static bool usable_id(json_span id) {
  char c = json_kind(id);
  if (c == '"') return true;
  if (c != '-' && !(c >= '0' && c <= '9')) return false;
  for (size_t i = 0; i < id.n; i++)
    if (id.p[i] == '.' || id.p[i] == 'e' || id.p[i] == 'E') return false;
  return true;
}

/* Where jsonrpc_parse collects the top-level members. */
typedef struct members {
  jsonrpc_msg *m;
  json_span version;
  bool has_id;
} members;

/* A raw key token equal to key[0..n): the token is "key" unless it has
   escapes, which take the slow path. */
static bool key_is(json_span k, const char *key, size_t n) {
  return k.n == n + 2 ? memcmp(k.p + 1, key, n) == 0
                      : k.n > n + 2 && memchr(k.p, '\\', k.n) && json_string_eq(k, key);
}
/* (a macro for the literals of jsonrpc_parse: their compares stay inline) */
#define KEY_IS(k, lit) \
  ((k).n == sizeof(lit) + 1 ? memcmp((k).p + 1, lit, sizeof(lit) - 1) == 0 \
                            : (memchr((k).p, '\\', (k).n) && json_string_eq((k), lit)))

static void on_member(void *ctx, json_span key, json_span value) {
  members *mb = ctx;
  jsonrpc_msg *m = mb->m;
  if (KEY_IS(key, "id")) m->id = value, mb->has_id = true;
  else if (KEY_IS(key, "method")) m->method = value;
  else if (KEY_IS(key, "params")) m->params = value;
  else if (KEY_IS(key, "jsonrpc")) mb->version = value;
  else if (KEY_IS(key, "result")) m->result = value;
  else if (KEY_IS(key, "error")) m->error = value;
}

static void index_params(jsonrpc_msg *m) {
  if (!m->params.n) return;
  size_t pos = 0;
  json_span k, v;
  while (json_object_next(m->params, &pos, &k, &v)) {
    if (m->npm == JSONRPC_PARAM_SLOTS) return; /* more: pm_all stays false */
    m->pm[m->npm].key = k, m->pm[m->npm].value = v;
    m->npm++;
  }
  m->pm_all = true;
}

bool jsonrpc_param(const jsonrpc_msg *m, const char *key, json_span *v) {
  if (!m->params.n) return false;
  if (!m->pm_all) return json_object_get(m->params, key, v);
  size_t n = strlen(key);
  for (size_t i = m->npm; i-- > 0;) /* the last one wins, as in json_object_get */
    if (key_is(m->pm[i].key, key, n)) {
      *v = m->pm[i].value;
      return true;
    }
  return false;
}

void jsonrpc_parse(const char *s, size_t n, jsonrpc_msg *m) {
  memset(m, 0, sizeof *m);
  members mb = {.m = m};
  if (!json_scan(s, n, on_member, &mb, NULL, NULL)) {
    memset(m, 0, sizeof *m);
    invalid(m, JSONRPC_PARSE_ERROR, "Parse error: not valid JSON");
    return;
  }
  size_t i = 0;
  while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) i++;
  if (s[i] == '[') {
    invalid(m, JSONRPC_INVALID_REQUEST,
            "Invalid Request: batches are not supported (removed in 2025-06-18)");
    return;
  }
  if (s[i] != '{') {
    invalid(m, JSONRPC_INVALID_REQUEST, "Invalid Request: expected a JSON object");
    return;
  }
  json_span id = m->id;
  bool has_id = mb.has_id;
  if (has_id && !usable_id(id)) m->id = (json_span){0};
  if (!json_string_eq(mb.version, "2.0")) {
    invalid(m, JSONRPC_INVALID_REQUEST, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
    return;
  }
  if (has_id && !usable_id(id)) {
    invalid(m, JSONRPC_INVALID_REQUEST,
            "Invalid Request: \"id\" must be a string or an integer");
    return;
  }
  if (m->method.n) {
    if (json_kind(m->method) != '"') {
      invalid(m, JSONRPC_INVALID_REQUEST, "Invalid Request: \"method\" must be a string");
      return;
    }
    if (m->params.n && json_kind(m->params) != '{') {
      invalid(m, JSONRPC_INVALID_REQUEST, "Invalid Request: \"params\" must be an object");
      return;
    }
    m->kind = has_id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
    index_params(m);
    return;
  }
  if (has_id && (m->result.n || m->error.n)) {
    m->kind = JSONRPC_RESPONSE;
    return;
  }
  invalid(m, JSONRPC_INVALID_REQUEST, "Invalid Request: no \"method\"");
}

bool jsonrpc_method_is(const jsonrpc_msg *m, const char *name) {
  size_t n = strlen(name);
  if (m->method.n == n + 2 && memcmp(m->method.p + 1, name, n) == 0) return true;
  return m->method.n > n + 2 && json_string_eq(m->method, name);
}

static void put_id(buf *b, json_span id) {
  if (id.n) buf_put(b, id.p, id.n);
  else buf_put(b, "null", 4);
}

void jsonrpc_begin_result(buf *b, json_span id) {
  buf_puts(b, "{\"jsonrpc\":\"2.0\",\"id\":");
  put_id(b, id);
  buf_puts(b, ",\"result\":");
}

void jsonrpc_end_reply(buf *b) { buf_put(b, "}\n", 2); }

void jsonrpc_write_result(buf *b, json_span id, const char *result_json,
                          size_t result_len) {
  jsonrpc_begin_result(b, id);
  buf_put(b, result_json, result_len);
  jsonrpc_end_reply(b);
}

void jsonrpc_write_error(buf *b, json_span id, int code, const char *msg,
                         const char *data_json) {
  buf_puts(b, "{\"jsonrpc\":\"2.0\",\"id\":");
  put_id(b, id);
  buf_printf(b, ",\"error\":{\"code\":%d,\"message\":", code);
  json_encode_string(b, msg, strlen(msg));
  if (data_json) {
    buf_puts(b, ",\"data\":");
    buf_puts(b, data_json);
  }
  buf_put(b, "}}\n", 3);
}

void jsonrpc_write_notification(buf *b, const char *method,
                                const char *params_json, size_t params_len) {
  buf_puts(b, "{\"jsonrpc\":\"2.0\",\"method\":");
  json_encode_string(b, method, strlen(method));
  if (params_json) {
    buf_puts(b, ",\"params\":");
    buf_put(b, params_json, params_len);
  }
  buf_put(b, "}\n", 2);
}
