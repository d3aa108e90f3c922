/* outlet.h — where the engine writes: stdout for a stdio client, one SSE or
 * JSON response per HTTP request, a session's standalone GET stream. The
 * server batches a round's output per outlet (out, dirty: output.c) and
 * hands it over in one write; the transport that owns the outlet frames it. */
#ifndef LUAMCP_OUTLET_H
#define LUAMCP_OUTLET_H

#include <stdbool.h>

#include "buf.h"

typedef struct outlet outlet;
struct outlet {
  /* Deliver whole JSON-RPC lines (the engine's run-lock holder). False when the peer is
     gone; the engine then stops writing to this outlet. */
  bool (*write)(outlet *o, const char *p, size_t n);
  /* The request this outlet answers is complete: nothing more will be
     written (HTTP ends the response). NULL for long-lived outlets. */
  void (*finish)(outlet *o);
  /* Optional: write these last bytes and finish, as one hand-off (the
     waiting worker wakes once per answer instead of twice). */
  void (*finish_with)(outlet *o, const char *p, size_t n);
  /* End the HTTP response now but keep the stream: the client resumes it
     with GET + Last-Event-ID (SEP-1699 polling). NULL where that means
     nothing (stdio). */
  void (*detach)(outlet *o);
  /* the engine's run-lock holder only */
  buf out;
  bool dirty, dead;
  /* the answer to the request this outlet serves is among the lines
     written so far (output_reply): what the transport's write may read to
     tell the final line from a notification without parsing it */
  bool answered;
  size_t answer_at; /* where in out the answer began (the access log's bytes) */
  /* the answer's JSON-RPC error code, 0 for a result: recorded when the
     answer is written (output_rpc_error), so neither the server's
     accounting nor the transport (its HTTP status) reads the answer again */
  int error_code;
  char error_message[200]; /* its message, cut short (a span's status description) */
};

#endif
