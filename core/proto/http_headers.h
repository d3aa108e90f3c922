/* http_headers.h — Streamable HTTP's per-request rules (2026-07-28), the part that
 * needs no socket: the standard headers of a request checked against its
 * body (MCP-Protocol-Version, Mcp-Method, Mcp-Name with its base64
 * sentinel), and the HTTP status a JSON-RPC error answer gets. */
#ifndef LUAMCP_HTTP_HEADERS_H
#define LUAMCP_HTTP_HEADERS_H

#include "buf.h"
#include "jsonrpc.h"

/* 0 when the headers hold for request m, whose envelope names `revision`
   (a per-request one), else -32020 (HeaderMismatch) with the message in
   msg. Header values may be NULL (absent). */
int http_headers_check(const jsonrpc_msg *m, int revision, const char *version, const char *method,
                       const char *name, buf *msg);
/* A header value as compared with the body: blanks around it dropped, the
   base64 sentinel decoded. False when it holds characters a header value
   may not (or a broken sentinel). */
bool http_header_decode(const char *v, buf *out);

/* The status of a per-request revision's JSON answer, from its JSON-RPC
   error code (0: a result): 404 for an unknown method, 400 for a missing
   client capability (and version and header errors), else 200 (other
   errors stay in-band, as in the TypeScript SDK; envelope errors get 400
   before dispatch). */
int http_headers_status(int code);

#endif
