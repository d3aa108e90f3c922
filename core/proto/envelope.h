/* envelope.h — the per-request metadata of MCP 2026-07-28: a request whose
 * params._meta carries "io.modelcontextprotocol/protocolVersion" is of a
 * per-request revision (protocol.h), stateless; its client capabilities, client info and log
 * level come with it (never from earlier requests). A request without it
 * is of the 2025 era (initialize, then a session). The era is decided
 * from the body alone; transports only cross-check their headers. */
#ifndef LUAMCP_ENVELOPE_H
#define LUAMCP_ENVELOPE_H

#include <stdbool.h>

#include "buf.h"
#include "json.h"
#include "jsonrpc.h"
#include "protocol.h"


/* the tasks extension (SEP-2663): tasks.h */
#define TASKS_EXTENSION "io.modelcontextprotocol/tasks"
/* JSON-RPC error codes of 2026-07-28 */
#define MCP_HEADER_MISMATCH -32020
#define MCP_MISSING_CAPABILITY -32021
#define MCP_UNSUPPORTED_VERSION -32022

typedef struct envelope {
  bool present;          /* the request carries an envelope: a per-request revision */
  int revision;          /* PROTO_*: the one it names (proto_per_request) */
  json_span meta;        /* params._meta, or n == 0 */
  json_span version;     /* its protocolVersion token */
  json_span caps;        /* clientCapabilities (an object) */
  json_span client_info; /* optional */
  int log_level;         /* from ".../logLevel"; -1 when absent: no log messages */
  bool sampling, elicitation, roots; /* declared in this request's capabilities */
  bool ui;               /* the MCP Apps extension, with its mime type */
  bool tasks;            /* the tasks extension (TASKS_EXTENSION) */
} envelope;

/* Read m's envelope. Returns 0 when it is absent or valid; otherwise the
   JSON-RPC error to answer (-32602 malformed, -32022 unsupported version)
   with its message and, in data (a JSON value, or empty), the error data. */
int envelope_read(const jsonrpc_msg *m, envelope *env, buf *msg, buf *data);

/* Does m carry an envelope (its _meta names a protocol version)? */
bool envelope_claimed(const jsonrpc_msg *m);

/* Does this client-capabilities object declare the MCP Apps extension
   (io.modelcontextprotocol/ui listing text/html;profile=mcp-app)? */
bool envelope_declares_ui(json_span caps);

#endif
