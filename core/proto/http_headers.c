/* http_headers.c — header checks and error statuses of 2026-07-28 HTTP
 * (see http_headers.h; streamable-http.mdx "Server Validation"). */
#include "http_headers.h"

#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "envelope.h"
#include "json.h"

/* A header value without its surrounding blanks (HTTP allows optional
   whitespace around field values). */
static size_t trimmed(const char *v, const char **start) {
  while (*v == ' ' || *v == '\t') v++;
  size_t n = strlen(v);
  while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  *start = v;
  return n;
}

/* Printable ASCII only, as header values must be (anything else goes in
   the base64 form). */
static bool plain(const char *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e) return false;
  return true;
}

/* `=?base64?...?=` decoded strictly (standard alphabet, padding right), or
   the value itself. False when the sentinel is there but its content is
   not base64. */
static bool decoded(const char *v, size_t n, buf *out) {
  if (n < 11 || memcmp(v, "=?base64?", 9) != 0 || memcmp(v + n - 2, "?=", 2) != 0) {
    buf_put(out, v, n);
    return true;
  }
  const char *b = v + 9;
  size_t bn = n - 11;
  if (bn % 4) return false;
  for (size_t i = 0; i < bn; i++) {
    char ch = b[i];
    bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
              ch == '+' || ch == '/' || (ch == '=' && i >= bn - 2 && (i == bn - 1 || b[bn - 1] == '='));
    if (!ok) return false;
  }
  return base64_decode(out, b, bn);
}

bool http_header_decode(const char *v, buf *out) {
  const char *t;
  size_t n = trimmed(v, &t);
  return plain(t, n) && decoded(t, n, out);
}

int http_headers_check(const jsonrpc_msg *m, int revision, const char *version, const char *method,
                       const char *name, buf *msg) {
  const char *v;
  size_t n;
  if (!version) {
    buf_puts(msg, "Header mismatch: MCP-Protocol-Version header is required");
    return MCP_HEADER_MISMATCH;
  }
  n = trimmed(version, &v);
  const char *body_version = proto_name(revision);
  if (!body_version || n != strlen(body_version) || memcmp(v, body_version, n) != 0) {
    buf_printf(msg, "Header mismatch: MCP-Protocol-Version header '%.*s' does not match the body's "
               "%s", (int)(n > 40 ? 40 : n), v, body_version ? body_version : "(none)");
    return MCP_HEADER_MISMATCH;
  }
  buf body;
  buf_init(&body);
  int code = 0;
  json_string_unescape(m->method, &body);
  if (!method) {
    buf_puts(msg, "Header mismatch: Mcp-Method header is required");
    code = MCP_HEADER_MISMATCH;
    goto done;
  }
  n = trimmed(method, &v);
  if (!plain(v, n) || n != body.len || memcmp(v, body.p, n) != 0) {
    buf_printf(msg, "Header mismatch: Mcp-Method header value '%.*s' does not match body value '%s'",
               (int)(n > 80 ? 80 : n), v, body.p);
    code = MCP_HEADER_MISMATCH;
    goto done;
  }
  /* Mcp-Name: params.name (tools/call, prompts/get), params.uri
     (resources/read), params.taskId (the tasks methods there are: a removed
     one, tasks/result or tasks/list, is -32601 whatever its headers) */
  const char *field = strcmp(body.p, "tools/call") == 0 || strcmp(body.p, "prompts/get") == 0 ? "name"
                      : strcmp(body.p, "resources/read") == 0                                  ? "uri"
                      : strcmp(body.p, "tasks/get") == 0 || strcmp(body.p, "tasks/update") == 0 ||
                              strcmp(body.p, "tasks/cancel") == 0
                          ? "taskId"
                          : NULL;
  if (!field) goto done;
  json_span val;
  buf want, got;
  buf_init(&want), buf_init(&got);
  if (m->params.n && jsonrpc_param(m, field, &val) && json_kind(val) == '"')
    json_string_unescape(val, &want);
  if (!name) {
    buf_printf(msg, "Header mismatch: Mcp-Name header is required for %s", body.p);
    code = MCP_HEADER_MISMATCH;
  } else {
    n = trimmed(name, &v);
    if (!plain(v, n) || !decoded(v, n, &got)) {
      buf_puts(msg, "Header mismatch: Mcp-Name header value is malformed");
      code = MCP_HEADER_MISMATCH;
    } else if (got.len != want.len || (got.len && memcmp(got.p, want.p, got.len) != 0)) {
      buf_printf(msg, "Header mismatch: Mcp-Name header value '%.*s' does not match body value '%.*s'",
                 (int)(got.len > 80 ? 80 : got.len), got.p ? got.p : "",
                 (int)(want.len > 80 ? 80 : want.len), want.p ? want.p : "");
      code = MCP_HEADER_MISMATCH;
    }
  }
  buf_free(&want), buf_free(&got);
done:
  buf_free(&body);
  return code;
}

int http_headers_status(int code) {
  switch (code) {
    case JSONRPC_METHOD_NOT_FOUND: return 404;
    case MCP_HEADER_MISMATCH:
    case MCP_MISSING_CAPABILITY:
    case MCP_UNSUPPORTED_VERSION: return 400;
    default: return 200;
  }
}
