/* jsonrpc.h — JSON-RPC 2.0 framing: classify one incoming message and build
 * replies. Ids are kept as the raw bytes received and written back
 * unchanged, so any string or integer (even past 2^53) echoes exactly. */
#ifndef LUAMCP_JSONRPC_H
#define LUAMCP_JSONRPC_H

#include "buf.h"
#include "json.h"

enum {
  JSONRPC_PARSE_ERROR = -32700,
  JSONRPC_INVALID_REQUEST = -32600,
  JSONRPC_METHOD_NOT_FOUND = -32601,
  JSONRPC_INVALID_PARAMS = -32602,
  JSONRPC_INTERNAL_ERROR = -32603,
  MCP_RESOURCE_NOT_FOUND = -32002,
};

typedef enum jsonrpc_kind {
  JSONRPC_REQUEST,
  JSONRPC_NOTIFICATION,
  JSONRPC_RESPONSE,
  JSONRPC_INVALID, /* answer with error_code/error_msg (and id if known) */
} jsonrpc_kind;

/* The first members of params, found in one pass by jsonrpc_parse: a
   tools/call is looked at for name, arguments, _meta, inputResponses,
   requestState, task... and each json_object_get walked all of params
   again (docs/PERFORMANCE.md). */
#define JSONRPC_PARAM_SLOTS 12

typedef struct jsonrpc_msg {
  jsonrpc_kind kind;
  json_span id;     /* raw id token; n == 0 when absent or unusable */
  json_span method; /* raw string token, quotes included */
  json_span params; /* raw object; n == 0 when absent */
  json_span result, error; /* for responses */
  int error_code;
  const char *error_msg;
  /* params' members, when indexed (else jsonrpc_param walks params) */
  struct {
    json_span key, value;
  } pm[JSONRPC_PARAM_SLOTS];
  unsigned char npm;
  bool pm_all; /* pm holds every member of params */
} jsonrpc_msg;

/* Classify the JSON text s[0..n). Never fails: bad input comes back as
   JSONRPC_INVALID with the error to send. */
void jsonrpc_parse(const char *s, size_t n, jsonrpc_msg *m);

/* The member key of params (the last one when repeated), as
   json_object_get(m->params, key, v). */
bool jsonrpc_param(const jsonrpc_msg *m, const char *key, json_span *v);

/* Is the message's method exactly this name? */
bool jsonrpc_method_is(const jsonrpc_msg *m, const char *name);

/* Append a whole reply line (with its trailing newline). A missing id
   (n == 0) is written as null. result_json is a complete JSON value. */
void jsonrpc_write_result(buf *b, json_span id, const char *result_json,
                          size_t result_len);
/* Start a result reply; the caller appends the result value and then calls
   jsonrpc_end_reply. Saves copying large results. */
void jsonrpc_begin_result(buf *b, json_span id);
void jsonrpc_end_reply(buf *b);
/* data_json may be NULL. */
void jsonrpc_write_error(buf *b, json_span id, int code, const char *msg,
                         const char *data_json);
/* A notification line; params_json may be NULL. */
void jsonrpc_write_notification(buf *b, const char *method,
                                const char *params_json, size_t params_len);

#endif
