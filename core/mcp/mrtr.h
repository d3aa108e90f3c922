/* mrtr.h — multi round-trip requests (2026-07-28) behind the one-line
 * ctx:elicit / ctx:sample / ctx:roots.
 *
 * The stateless choice: on a per-request revision (2026-07-28) a question the handler asks
 * ends the call with an InputRequiredResult (the question, and a sealed
 * requestState holding the answers of earlier rounds). The client's retry
 * runs the handler again from the start; each question it asks again is
 * answered at once from the state, in order, and the first new one takes
 * the retry's inputResponses. Nothing waits on the server between rounds,
 * so any instance can serve the retry and a client that never retries
 * costs nothing.
 *
 * What that means for a handler: the code before a question runs once per
 * round, so side effects there (writes, messages) repeat; a handler must
 * ask the same questions in the same order each time (a different one is
 * an error naming the line). The state is bound to the method, the tool
 * (or prompt, or resource) and its arguments, expires after
 * --state-ttl seconds, and is signed (request_state.h). */
#ifndef LUAMCP_MRTR_H
#define LUAMCP_MRTR_H

#include <stdbool.h>

#include "server_internal.h"

/* Read a per-request revision's requestState and inputResponses into r (before
   its call starts): false when they are malformed, tampered, stale or for
   another request, after answering the JSON-RPC error. what: "tools/call",
   name: the tool, prompt or URI, args: the raw arguments (or n == 0). */
bool mrtr_open(server *srv, inmsg *im, const char *what, const char *name, size_t name_len,
               json_span args, request *r);
/* Move what mrtr_open read from tmpl into r (the call's request). */
void mrtr_take(request *r, request *tmpl);
void mrtr_free(request *r);

/* A question from the handler of a per-request revision's request (see ctx_client_ask);
   key: its inputRequests key (NULL: by its place, "q<n>"). */
int mrtr_ask(call *c, const char *method, lua_State *L, int params_idx, const char *key, char *err,
             size_t errlen);
/* Push {[key] = {method=, params=<the table at params_idx, or {}>}}: one
   question as a round of one. */
void mrtr_push_question(lua_State *L, const char *method, int params_idx, const char *key);
/* Several at once (ctx:ask): the table at reqs_idx maps keys to
   {method=, params=}; answered: the answers by key (ctx_client_ask_round). */
int mrtr_ask_round(call *c, lua_State *L, int reqs_idx, char *err, size_t errlen);

/* The questions of a round (the table at reqs: keys to {method=, params=})
   as an inputRequests object, keys sorted; the capabilities they need or-ed
   into *need (1 elicitation, 2 sampling, 4 roots). False with err. */
bool mrtr_encode_round(lua_State *L, int reqs, buf *q, unsigned *need, char *err, size_t errlen);

#endif
