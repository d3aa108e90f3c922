/* fuzz_http.c — the body-and-header checks of 2026-07-28 Streamable HTTP:
 * envelope_read (core/proto/envelope.c) on the request's params, then
 * http_headers_check (core/proto/http_headers.c) on its MCP-Protocol-Version,
 * Mcp-Method and Mcp-Name headers, and http_headers_status on the code the
 * check answered. Input: a flags byte (bit i: header i present), the body, then
 * the three header values, separated by newlines (a value ends at a NUL,
 * as a C string does). Checked, besides never crashing or reading past
 * the body:
 *   - envelope_read answers 0, -32602 or -32022, with a message when not 0,
 *     and env.present exactly when envelope_claimed says so; a valid
 *     envelope has an object for capabilities and a known log level;
 *   - http_headers_check answers 0 or -32020 (with a message), and 0 only
 *     when the three headers are there and Mcp-Method is the body's method;
 *   - http_headers_status is 400 for its error, 200 for none. */
#include "envelope.h"
#include "fuzz.h"
#include "http_headers.h"
#include "jsonrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned flags = data[0];
  const uint8_t *p = data + 1, *end = data + size, *bp, *hp[3];
  size_t bn = fuzz_part(&p, end, '\n', &bp), hn[3];
  for (int i = 0; i < 3; i++) hn[i] = fuzz_part(&p, end, '\n', &hp[i]);
  char *body = malloc(bn ? bn : 1); /* exactly the body's bytes */
  memcpy(body, bp, bn);
  char *h[3];
  for (int i = 0; i < 3; i++) h[i] = flags & (1u << i) ? fuzz_strndup(hp[i], hn[i]) : NULL;

  jsonrpc_msg m;
  jsonrpc_parse(body, bn, &m);
  if (m.kind == JSONRPC_REQUEST || m.kind == JSONRPC_NOTIFICATION) {
    envelope env;
    buf msg, edata;
    buf_init(&msg), buf_init(&edata);
    int code = envelope_read(&m, &env, &msg, &edata);
    FUZZ_CHECK(code == 0 || code == JSONRPC_INVALID_PARAMS || code == MCP_UNSUPPORTED_VERSION);
    FUZZ_CHECK(env.present == envelope_claimed(&m));
    if (code) {
      FUZZ_CHECK(msg.len > 0 && env.present);
      if (edata.len) FUZZ_CHECK(json_validate(edata.p, edata.len, NULL, NULL));
    } else if (env.present) {
      FUZZ_CHECK(json_kind(env.caps) == '{');
      FUZZ_CHECK(proto_per_request(env.revision) &&
                 json_string_eq(env.version, proto_name(env.revision)));
      FUZZ_CHECK(env.log_level >= -1);
    }
    if (env.caps.n) (void)envelope_declares_ui(env.caps);
    msg.len = 0;
    code = http_headers_check(&m, env.present && !code ? env.revision : PROTO_2026_07_28, h[0], h[1],
                              h[2], &msg);
    FUZZ_CHECK(code == 0 || code == MCP_HEADER_MISMATCH);
    FUZZ_CHECK(http_headers_status(code) == (code ? 400 : 200));
    if (code) {
      FUZZ_CHECK(msg.len > 0);
    } else {
      FUZZ_CHECK(h[0] && h[1]);
      buf name;
      buf_init(&name);
      json_string_unescape(m.method, &name);
      const char *v = h[1];
      while (*v == ' ' || *v == '\t') v++;
      FUZZ_CHECK(strncmp(v, name.p ? name.p : "", name.len) == 0);
      buf_free(&name);
    }
    buf_free(&msg), buf_free(&edata);
  }
  for (int i = 0; i < 3; i++) free(h[i]);
  free(body);
  return 0;
}
