/* fuzz_jsonrpc.c — the JSON-RPC framing (core/proto/jsonrpc.c) and the span
 * helpers it rests on (json_scan, json_object_next/get/fields,
 * json_string_eq/unescape). On any bytes:
 *   - jsonrpc_parse agrees with json_validate on what is JSON (invalid JSON
 *     is always -32700, JSON is never -32700);
 *   - every span it returns lies inside the input; a request's or
 *     notification's method is a string token, params an object; an id is
 *     a string or an integer token;
 *   - the replies built from it (result, error) are valid JSON that echo
 *     the id byte for byte;
 *   - each member of params, found by json_object_next, is found again by
 *     json_object_get under its unescaped name (the last one of duplicates
 *     aside), and json_string_eq says its raw key equals that name. */
#include "fuzz.h"
#include "json.h"
#include "jsonrpc.h"

static bool inside(json_span sp, const uint8_t *data, size_t size) {
  return sp.n == 0 || ((const uint8_t *)sp.p >= data && (const uint8_t *)sp.p + sp.n <= data + size);
}

static void check_reply(buf *b, json_span id) {
  FUZZ_CHECK(b->len && b->p[b->len - 1] == '\n');
  FUZZ_CHECK(json_validate(b->p, b->len - 1, NULL, NULL));
  json_span obj = {b->p, b->len - 1}, got;
  FUZZ_CHECK(json_object_get(obj, "id", &got));
  if (id.n)
    FUZZ_CHECK(got.n == id.n && memcmp(got.p, id.p, id.n) == 0);
  else
    FUZZ_CHECK(got.n == 4 && memcmp(got.p, "null", 4) == 0);
}

static void check_members(json_span obj) {
  size_t pos = 0, count = 0;
  json_span key, value;
  buf name;
  buf_init(&name);
  while (json_object_next(obj, &pos, &key, &value)) {
    FUZZ_CHECK(key.n >= 2 && key.p[0] == '"' && key.p[key.n - 1] == '"');
    FUZZ_CHECK(json_validate(value.p, value.n, NULL, NULL));
    name.len = 0;
    json_string_unescape(key, &name);
    buf_putc(&name, '\0'); /* a NUL-terminated name even when empty */
    size_t len = strlen(name.p);
    if (len == name.len - 1) { /* no NUL inside (\u0000) */
      FUZZ_CHECK(json_string_eq(key, name.p));
      json_span found;
      FUZZ_CHECK(json_object_get(obj, name.p, &found));
      const char *keys[1] = {name.p};
      json_span vals[1];
      FUZZ_CHECK(json_object_fields(obj, keys, vals, 1) == 1);
    }
    if (++count > 4096) break;
  }
  buf_free(&name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  jsonrpc_msg m;
  jsonrpc_parse(s, size, &m);
  bool valid = json_validate(s, size, NULL, NULL);
  FUZZ_CHECK(valid == (m.kind != JSONRPC_INVALID || m.error_code != JSONRPC_PARSE_ERROR));
  FUZZ_CHECK(inside(m.id, data, size) && inside(m.method, data, size) &&
             inside(m.params, data, size) && inside(m.result, data, size) &&
             inside(m.error, data, size));
  if (m.kind == JSONRPC_INVALID) {
    FUZZ_CHECK(m.error_code == JSONRPC_PARSE_ERROR || m.error_code == JSONRPC_INVALID_REQUEST);
    FUZZ_CHECK(m.error_msg && *m.error_msg);
  }
  if (m.id.n) {
    char c = json_kind(m.id);
    FUZZ_CHECK(c == '"' || c == '-' || (c >= '0' && c <= '9'));
    FUZZ_CHECK(json_validate(m.id.p, m.id.n, NULL, NULL));
  }
  if (m.kind == JSONRPC_REQUEST || m.kind == JSONRPC_NOTIFICATION) {
    FUZZ_CHECK(json_kind(m.method) == '"');
    FUZZ_CHECK(m.params.n == 0 || json_kind(m.params) == '{');
    FUZZ_CHECK((m.kind == JSONRPC_REQUEST) == (m.id.n != 0));
    buf name;
    buf_init(&name);
    json_string_unescape(m.method, &name);
    buf_putc(&name, '\0');
    if (strlen(name.p) == name.len - 1) FUZZ_CHECK(jsonrpc_method_is(&m, name.p));
    buf_free(&name);
    if (m.params.n) check_members(m.params);
  }
  if (m.kind == JSONRPC_RESPONSE) FUZZ_CHECK(m.id.n && (m.result.n || m.error.n));
  if (m.kind != JSONRPC_NOTIFICATION) {
    buf b;
    buf_init(&b);
    jsonrpc_write_result(&b, m.id, "{}", 2);
    check_reply(&b, m.id);
    b.len = 0;
    jsonrpc_write_error(&b, m.id, m.kind == JSONRPC_INVALID ? m.error_code : -32601,
                        m.error_msg ? m.error_msg : "Method not found", NULL);
    check_reply(&b, m.id);
    buf_free(&b);
  }
  return 0;
}
