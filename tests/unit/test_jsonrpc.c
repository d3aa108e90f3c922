/* test_jsonrpc.c — framing (classification, error codes, raw ids echoed
 * exactly) and pagination cursors. */
#include "check.h"
#include "cursor.h"
#include "jsonrpc.h"

static jsonrpc_msg parse(const char *s) {
  jsonrpc_msg m;
  jsonrpc_parse(s, strlen(s), &m);
  return m;
}

static const char *id_text(const jsonrpc_msg *m) {
  static char out[256];
  snprintf(out, sizeof out, "%.*s", (int)m->id.n, m->id.p);
  return out;
}

static void test_classify(void) {
  jsonrpc_msg m = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
  CHECK(m.kind == JSONRPC_REQUEST && jsonrpc_method_is(&m, "ping"));
  m = parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
  CHECK(m.kind == JSONRPC_NOTIFICATION && m.id.n == 0);
  m = parse("{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"result\":{}}");
  CHECK(m.kind == JSONRPC_RESPONSE);
  m = parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x\",\"params\":{\"a\":[1,{}]}}");
  CHECK(m.kind == JSONRPC_REQUEST && m.params.n == 12);
  m = parse("{\"method\":\"p\\u0069ng\",\"id\":1,\"jsonrpc\":\"2.0\"}");
  CHECK(m.kind == JSONRPC_REQUEST && jsonrpc_method_is(&m, "ping"));
}

static void test_errors(void) {
  jsonrpc_msg m = parse("nope");
  CHECK(m.kind == JSONRPC_INVALID && m.error_code == JSONRPC_PARSE_ERROR && m.id.n == 0);
  m = parse("{\"jsonrpc\":\"1.0\",\"id\":4,\"method\":\"ping\"}");
  CHECK(m.kind == JSONRPC_INVALID && m.error_code == JSONRPC_INVALID_REQUEST);
  CHECK_STR(id_text(&m), "4"); /* the id is still echoed */
  m = parse("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\",\"params\":[1]}");
  CHECK(m.kind == JSONRPC_INVALID && m.error_code == JSONRPC_INVALID_REQUEST);
  m = parse("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}");
  CHECK(m.kind == JSONRPC_INVALID && m.id.n == 0);
  m = parse("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}");
  CHECK(m.kind == JSONRPC_INVALID);
  m = parse("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
  CHECK(m.kind == JSONRPC_INVALID && m.error_code == JSONRPC_INVALID_REQUEST);
  m = parse("42");
  CHECK(m.kind == JSONRPC_INVALID && m.error_code == JSONRPC_INVALID_REQUEST);
  m = parse("{\"jsonrpc\":\"2.0\",\"id\":7}");
  CHECK(m.kind == JSONRPC_INVALID);
}

static void test_ids(void) {
  const char *ids[] = {"123456789012345678", "-5", "0", "\"a\\\"b\\u00e9\"", "9007199254740993"};
  for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
    char line[256];
    snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}", ids[i]);
    jsonrpc_msg m = parse(line);
    buf b;
    buf_init(&b);
    jsonrpc_write_result(&b, m.id, "{}", 2);
    char want[256];
    snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n", ids[i]);
    buf_putc(&b, 0);
    CHECK_STR(b.p, want);
    buf_free(&b);
  }
  buf b;
  buf_init(&b);
  jsonrpc_write_error(&b, (json_span){0}, -32700, "Parse error", NULL);
  buf_putc(&b, 0);
  CHECK_STR(b.p, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}\n");
  buf_free(&b);
}

static void test_cursor(void) {
  char c[CURSOR_MAX];
  size_t off = 0;
  cursor_make(42, 0, 100, c);
  CHECK(cursor_parse(42, 0, c, strlen(c), &off) && off == 100);
  CHECK(!cursor_parse(43, 0, c, strlen(c), &off)); /* another key (a reload) */
  CHECK(!cursor_parse(42, 1, c, strlen(c), &off)); /* another list */
  c[0] = c[0] == '6' ? '7' : '6';                   /* tampered offset */
  CHECK(!cursor_parse(42, 0, c, strlen(c), &off));
  CHECK(!cursor_parse(42, 0, "", 0, &off));
  CHECK(!cursor_parse(42, 0, "zz", 2, &off));
}

int main(void) {
  test_classify();
  test_errors();
  test_ids();
  test_cursor();
  return check_report("test_jsonrpc");
}
