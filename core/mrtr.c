/* mrtr.c — multi round-trip requests by replay (see mrtr.h).
 *
 * The sealed payload: {"v":1,"b":BIND,"e":EXPIRY,"a":{"0":ANSWER,...},
 * "q":{"0":DIGEST,...},"p":DIGEST} — BIND the SHA-256 of the method, the
 * name and the canonical arguments; EXPIRY in Unix seconds (wall clock:
 * another instance may check it); the answers so far and the digests of
 * their questions; p the digest of the question the client now answers
 * under the key "q<n>". */
#include "mrtr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "json.h"
#include "log.h"
#include "request_state.h"

/* SHA-256 of what the state is bound to, with the arguments in a form a
   client's key order cannot change (decoded on L, encoded sorted). */
static bool bind_digest(lua_State *L, const char *what, const char *name, size_t name_len,
                        const char *args, size_t args_len, char out[65]) {
  buf b;
  buf_init(&b);
  buf_puts(&b, what);
  buf_putc(&b, '\n');
  buf_put(&b, name, name_len);
  buf_putc(&b, '\n');
  bool ok = true;
  if (args_len) {
    char err[64];
    int top = lua_gettop(L);
    ok = json_decode(L, args, args_len, NULL) && json_encode_sorted(L, -1, &b, err, sizeof err);
    lua_settop(L, top);
  }
  if (ok) sha256_hex(b.p, b.len, out);
  buf_free(&b);
  return ok;
}

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec;
}

/* The members of a JSON object, without its braces (to append to). */
static void object_body(json_span obj, buf *out) {
  if (json_kind(obj) != '{' || obj.n < 2) return;
  const char *p = obj.p + 1, *e = obj.p + obj.n - 1;
  while (p < e && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p++;
  buf_put(out, p, (size_t)(e - p));
}

static void bad_state(server *srv, inmsg *im, const char *why) {
  log_msg(LOG_INFO, "requestState refused: %s", why);
  reply_error(srv, im->reply, im->m.id, JSONRPC_INVALID_PARAMS,
              "Invalid or expired requestState (%s)", why);
}

bool mrtr_open(server *srv, inmsg *im, const char *what, const char *name, size_t name_len,
               json_span args, request *r) {
  const jsonrpc_msg *m = &im->m;
  memset(r, 0, sizeof *r);
  buf_init(&r->answers), buf_init(&r->digests);
  r->what = what;
  r->name = malloc(name_len + 1);
  memcpy(r->name, name, name_len);
  r->name[name_len] = '\0';
  r->name_len = name_len;
  if (args.n && json_kind(args) == '{') {
    r->args = malloc(args.n + 1);
    memcpy(r->args, args.p, args.n);
    r->args[args.n] = '\0';
    r->args_len = args.n;
  }
  json_span resp, state;
  if (json_object_get(m->params, "inputResponses", &resp) && json_kind(resp) != 'n') {
    if (json_kind(resp) != '{') {
      reply_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS,
                  "Invalid params: \"inputResponses\" must be an object");
      goto fail;
    }
    r->responses = strndup(resp.p, resp.n);
    r->responses_len = resp.n;
  }
  if (!json_object_get(m->params, "requestState", &state) || json_kind(state) == 'n') return true;
  if (json_kind(state) != '"') {
    bad_state(srv, im, "not a string");
    goto fail;
  }
  buf tok, payload;
  buf_init(&tok), buf_init(&payload);
  json_string_unescape(state, &tok);
  bool ok = request_state_open(tok.p ? tok.p : "", tok.len, &payload);
  buf_free(&tok);
  if (!ok) {
    buf_free(&payload);
    bad_state(srv, im, "it does not carry this server's signature");
    goto fail;
  }
  json_span pl = {payload.p, payload.len}, b, e, a, q, p;
  char bind[65];
  const char *why = NULL;
  if (!json_object_get(pl, "b", &b) || !json_object_get(pl, "e", &e) ||
      !json_object_get(pl, "a", &a) || !json_object_get(pl, "q", &q))
    why = "malformed";
  else if (strtod(e.p, NULL) < wall_now())
    why = "expired";
  else if (!bind_digest(engine_app(srv->e)->L, what, name, name_len, r->args, r->args_len, bind) ||
           b.n != 66 || memcmp(b.p + 1, bind, 64) != 0)
    why = "made for another request";
  if (why) {
    buf_free(&payload);
    bad_state(srv, im, why);
    goto fail;
  }
  object_body(a, &r->answers);
  object_body(q, &r->digests);
  size_t pos = 0;
  json_span k, v;
  while (json_object_next(a, &pos, &k, &v)) r->nanswers++;
  if (json_object_get(pl, "p", &p) && json_kind(p) == '"') r->pending = strndup(p.p + 1, p.n - 2);
  buf_free(&payload);
  return true;
fail:
  mrtr_free(r);
  return false;
}

void mrtr_take(request *r, request *t) {
  r->answers = t->answers, r->digests = t->digests;
  r->nanswers = t->nanswers;
  r->responses = t->responses, r->responses_len = t->responses_len;
  r->pending = t->pending;
  r->what = t->what;
  r->name = t->name, r->name_len = t->name_len;
  r->args = t->args, r->args_len = t->args_len;
  memset(t, 0, sizeof *t);
}

void mrtr_free(request *r) {
  buf_free(&r->answers), buf_free(&r->digests);
  free(r->responses), free(r->pending), free(r->name), free(r->args);
  r->responses = r->pending = r->name = r->args = NULL;
}

/* Member key of an object body held in b (as "{...}"). */
static bool member(const buf *body, const char *key, json_span *v) {
  buf o;
  buf_init(&o);
  buf_putc(&o, '{');
  buf_put(&o, body->p ? body->p : "", body->len);
  buf_putc(&o, '}');
  json_span found;
  bool ok = json_object_get((json_span){o.p, o.len}, key, &found);
  /* the span points into o: hand back a stable copy through *v's owner */
  if (ok) {
    size_t off = (size_t)(found.p - o.p);
    v->p = body->p + off - 1;
    v->n = found.n;
  }
  buf_free(&o);
  return ok;
}

static void append_member(buf *body, size_t i, const char *json, size_t n) {
  if (body->len) buf_putc(body, ',');
  buf_printf(body, "\"%zu\":", i);
  buf_put(body, json, n);
}

static const char *capability_of(const char *method) {
  return strcmp(method, "elicitation/create") == 0    ? "elicitation"
         : strcmp(method, "sampling/createMessage") == 0 ? "sampling"
                                                       : "roots";
}

int mrtr_ask(call *c, const char *method, lua_State *L, int params_idx, char *err, size_t errlen) {
  request *r = request_of(c);
  server *srv = r->srv;
  if (!r->what) {
    snprintf(err, errlen, "only tools, prompts and resources can ask the client (not %s)",
             r->kind == CALL_COMPLETE ? "completion" : "this request");
    return ASK_FAILED;
  }
  /* the question: its method and params, and their digest */
  buf q;
  buf_init(&q);
  buf_puts(&q, "{\"method\":\"");
  buf_puts(&q, method);
  buf_puts(&q, "\",\"params\":");
  if (params_idx) {
    if (!json_encode_sorted(L, params_idx, &q, err, errlen)) {
      buf_free(&q);
      return ASK_FAILED;
    }
  } else {
    buf_puts(&q, "{}");
  }
  buf_putc(&q, '}');
  char digest[65];
  sha256_hex(q.p, q.len, digest);
  size_t i = r->nasked++;
  char key[32];
  snprintf(key, sizeof key, "%zu", i);
  json_span v, d;
  int how = ASK_FAILED;
  if (i < r->nanswers) { /* asked in an earlier round: its answer is in the state */
    if (!member(&r->digests, key, &d) || d.n != 66 || memcmp(d.p + 1, digest, 64) != 0 ||
        !member(&r->answers, key, &v)) {
      snprintf(err, errlen, "this question differs from the one asked in an earlier round (a handler "
                            "must ask the same questions in the same order on every round)");
      goto done;
    }
    json_decode(L, v.p, v.n, NULL);
    how = ASK_ANSWERED;
    goto done;
  }
  char rkey[32];
  snprintf(rkey, sizeof rkey, "q%zu", i);
  if (i == r->nanswers && r->responses && r->pending &&
      json_object_get((json_span){r->responses, r->responses_len}, rkey, &v)) {
    if (strcmp(r->pending, digest) != 0) {
      snprintf(err, errlen, "this question differs from the one the client answered (a handler "
                            "must ask the same questions in the same order on every round)");
      goto done;
    }
    append_member(&r->answers, i, v.p, v.n);
    append_member(&r->digests, i, "\"", 1);
    buf_puts(&r->digests, digest);
    buf_putc(&r->digests, '"');
    r->nanswers++;
    json_decode(L, v.p, v.n, NULL);
    how = ASK_ANSWERED;
    goto done;
  }
  /* a new question: the call ends here, with it */
  const client_view *cv = &r->cv;
  const char *cap = capability_of(method);
  bool declared = cap[0] == 'e' ? cv->elicitation : cap[0] == 's' ? cv->sampling : cv->roots;
  const registry *reg = call_app(c)->reg;
  size_t idn;
  const char *id = call_id(c, &idn);
  buf *out = out_of(srv, r->out);
  if (!declared) {
    char msg[160], data[96];
    snprintf(msg, sizeof msg, "Missing required client capability: %s (the handler asks %s)", cap,
             method);
    snprintf(data, sizeof data, "{\"requiredCapabilities\":{\"%s\":{}}}", cap);
    jsonrpc_write_error(out, (json_span){id, idn}, MCP_MISSING_CAPABILITY, msg, data);
  } else {
    buf pl;
    buf_init(&pl);
    char bind[65];
    if (!bind_digest(L, r->what, r->name, r->name_len, r->args, r->args_len, bind)) {
      snprintf(err, errlen, "the request's arguments cannot be sealed");
      buf_free(&pl);
      goto done;
    }
    buf_printf(&pl, "{\"v\":1,\"b\":\"%s\",\"e\":%.0f,\"a\":{", bind,
               wall_now() + srv->opt.state_ttl);
    buf_put(&pl, r->answers.p ? r->answers.p : "", r->answers.len);
    buf_puts(&pl, "},\"q\":{");
    buf_put(&pl, r->digests.p ? r->digests.p : "", r->digests.len);
    buf_printf(&pl, "},\"p\":\"%s\"}", digest);
    buf sealed;
    buf_init(&sealed);
    request_state_seal(&sealed, pl.p, pl.len);
    jsonrpc_begin_result(out, (json_span){id, idn});
    buf_printf(out, "{\"resultType\":\"input_required\",\"inputRequests\":{\"%s\":", rkey);
    buf_put(out, q.p, q.len);
    buf_puts(out, "},\"requestState\":");
    json_encode_string(out, sealed.p, sealed.len);
    buf_putc(out, ',');
    buf_put(out, reg->server_meta, reg->server_meta_len);
    buf_putc(out, '}');
    jsonrpc_end_reply(out);
    buf_free(&sealed);
    buf_free(&pl);
  }
  engine_call_end_at_yield(c); /* answered: the handler goes no further */
  how = ASK_WAIT;
done:
  buf_free(&q);
  return how;
}
