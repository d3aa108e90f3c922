/* mrtr.c — multi round-trip requests by replay (see mrtr.h).
 *
 * The sealed payload: {"v":2,"b":BIND,"e":EXPIRY,"a":{"0":ANSWER,...},
 * "q":{"0":DIGEST,...},"p":DIGEST} — BIND the SHA-256 of the method, the
 * name, the canonical arguments and who asked (the token's issuer, subject
 * and client: another user's retry does not fit); EXPIRY in Unix seconds (wall clock:
 * another instance may check it); the answers so far and the digests of
 * their questions; p the digest of the question the client now answers
 * under the key "q<n>". */
#include "mrtr.h"

#include <stdint.h>
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
static bool bind_digest(lua_State *L, const principal *who, const char *what, const char *name,
                        size_t name_len, const char *args, size_t args_len, char out[65]) {
  buf b;
  buf_init(&b);
  if (who) /* lengths first: no two identities run together alike; a client's own not a user's */
    buf_printf(&b, "%zu:%s %zu:%s %zu:%s%s\n", who->issuer ? strlen(who->issuer) : 0,
               who->issuer ? who->issuer : "", who->subject ? strlen(who->subject) : 0,
               who->subject ? who->subject : "", who->client_id ? strlen(who->client_id) : 0,
               who->client_id ? who->client_id : "", who->subject_is_client ? " client" : "");
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
  if (ok) request_state_sha256(b.p, b.len, out);
  buf_free(&b);
  return ok;
}

/* A question's digest: it tells a retry's question from the one answered.
   The state is sealed and the questions are the server's own, so no one
   can choose a collision: 64 bits of FNV-1a, not SHA-256 (which was a
   third of a round's instructions, with the MAC over its longer state). */
#define QDIGEST_LEN 16
static void question_digest(const char *p, size_t n, char out[QDIGEST_LEN + 1]) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < QDIGEST_LEN; i++) out[i] = hex[(h >> (60 - 4 * i)) & 15];
  out[QDIGEST_LEN] = '\0';
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
  output_error(srv, im->reply, im->m.id, JSONRPC_INVALID_PARAMS,
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
  if (jsonrpc_param(m, "inputResponses", &resp) && json_kind(resp) != 'n') {
    if (json_kind(resp) != '{') {
      output_error(srv, im->reply, m->id, JSONRPC_INVALID_PARAMS,
                  "Invalid params: \"inputResponses\" must be an object");
      goto fail;
    }
    r->responses = strndup(resp.p, resp.n);
    r->responses_len = resp.n;
  }
  if (!jsonrpc_param(m, "requestState", &state) || json_kind(state) == 'n') return true;
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
  json_span pl = {payload.p, payload.len}, f[6];
  static const char *const keys[] = {"b", "e", "a", "q", "p", "v"};
  json_object_fields(pl, keys, f, 6);
  json_span b = f[0], e = f[1], a = f[2], q = f[3], p = f[4], ver = f[5];
  char bind[65];
  const char *why = NULL;
  if (!b.n || !e.n || !a.n || !q.n)
    why = "malformed";
  else if (ver.n != 1 || ver.p[0] != '2') /* sealed by an older luamcp: its digests differ */
    why = "made by another version of luamcp";
  else if (strtod(e.p, NULL) < wall_now())
    why = "expired";
  else if (!bind_digest(engine_app(srv->e)->vm.L, server_caller(srv, im), what, name,
                        name_len, r->args, r->args_len, bind) ||
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
  if (json_kind(p) == '"') r->pending = strndup(p.p + 1, p.n - 2);
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
static bool mrtr_member(const buf *body, const char *key, json_span *v) {
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
  buf_putc(body, '"');
  buf_put_int(body, (long long)i);
  buf_lit(body, "\":");
  buf_put(body, json, n);
}

static const char *capability_of(const char *method) {
  return strcmp(method, "elicitation/create") == 0    ? "elicitation"
         : strcmp(method, "sampling/createMessage") == 0 ? "sampling"
         : strcmp(method, "roots/list") == 0             ? "roots"
                                                       : NULL;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The round's questions as the inputRequests object, keys sorted and params
   canonical (so its digest does not depend on Lua's table order); the
   capabilities they need are or-ed into *need. False with err. */
static bool encode_round(lua_State *L, int reqs, buf *q, unsigned *need, char *err,
                         size_t errlen) {
  size_t n = 0, cap = 8;
  const char **keys = malloc(cap * sizeof *keys);
  lua_pushnil(L);
  while (lua_next(L, reqs)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      snprintf(err, errlen, "ctx:ask: every key must be a string");
      lua_pop(L, 1);
      free(keys);
      return false;
    }
    if (n == cap) keys = realloc(keys, (cap *= 2) * sizeof *keys);
    keys[n++] = lua_tostring(L, -1); /* the table keeps the string alive */
  }
  if (n == 0) {
    snprintf(err, errlen, "ctx:ask: no questions");
    free(keys);
    return false;
  }
  qsort(keys, n, sizeof *keys, cmp_str);
  buf_putc(q, '{');
  bool ok = true;
  for (size_t i = 0; i < n && ok; i++) {
    lua_getfield(L, reqs, keys[i]);
    if (lua_istable(L, -1)) lua_getfield(L, -1, "method");
    else lua_pushnil(L);
    const char *method = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    const char *capname = method ? capability_of(method) : NULL;
    if (!capname) {
      snprintf(err, errlen, "ctx:ask: question '%s' needs method = \"elicitation/create\", "
                            "\"sampling/createMessage\" or \"roots/list\"", keys[i]);
      ok = false;
    } else {
      *need |= capname[0] == 'e' ? 1u : capname[0] == 's' ? 2u : 4u;
      if (i) buf_putc(q, ',');
      json_encode_string(q, keys[i], strlen(keys[i]));
      buf_lit(q, ":{\"method\":\"");
      buf_puts(q, method);
      buf_lit(q, "\",\"params\":");
      lua_getfield(L, -2, "params");
      if (lua_isnil(L, -1)) buf_puts(q, "{}");
      else if (!lua_istable(L, -1) || !json_encode_sorted(L, -1, q, err, errlen)) {
        if (!lua_istable(L, -1)) snprintf(err, errlen, "ctx:ask: params of '%s' must be a table", keys[i]);
        ok = false;
      }
      if (ok) buf_putc(q, '}');
      lua_pop(L, 1);
    }
    lua_pop(L, 2);
  }
  buf_putc(q, '}');
  free(keys);
  return ok;
}

bool mrtr_encode_round(lua_State *L, int reqs, buf *q, unsigned *need, char *err, size_t errlen) {
  return encode_round(L, lua_absindex(L, reqs), q, need, err, errlen);
}

/* Every question of the round answered in this retry's inputResponses
   (each an object, as every kind of answer is)? Then its answers, keys as
   in q, appended to out as an object. */
static bool answered(const request *r, json_span q, buf *out) {
  json_span rs = {r->responses, r->responses_len};
  size_t pos = 0, mark = out->len;
  json_span k, v, a;
  buf key;
  buf_init(&key);
  buf_putc(out, '{');
  bool all = true;
  for (int first = 1; all && json_object_next(q, &pos, &k, &v); first = 0) {
    key.len = 0;
    json_string_unescape(k, &key);
    buf_putc(&key, '\0');
    all = json_object_get(rs, key.p, &a) && json_kind(a) == '{';
    if (!all) break;
    if (!first) buf_putc(out, ',');
    buf_put(out, k.p, k.n);
    buf_putc(out, ':');
    buf_put(out, a.p, a.n);
  }
  buf_putc(out, '}');
  buf_free(&key);
  if (!all) out->len = mark;
  return all;
}

/* Push the answer of a round: the answers by key, or for one question of
   ctx:elicit/sample/roots, its answer. */
static void push_answers(lua_State *L, json_span obj, bool single) {
  if (single) {
    size_t pos = 0;
    json_span k, v;
    if (json_object_next(obj, &pos, &k, &v)) {
      json_decode(L, v.p, v.n, NULL);
      return;
    }
  }
  json_decode(L, obj.p, obj.n, NULL);
}

static int round_trip(call *c, lua_State *L, int reqs, bool single, char *err, size_t errlen) {
  request *r = request_of(c);
  server *srv = r->srv;
  if (!r->what) {
    snprintf(err, errlen, "only tools, prompts and resources can ask the client (not %s)",
             r->kind == CALL_COMPLETE ? "completion" : "this request");
    return ASK_FAILED;
  }
  buf q;
  buf_init(&q);
  unsigned need = 0;
  if (!encode_round(L, reqs, &q, &need, err, errlen)) {
    buf_free(&q);
    return ASK_FAILED;
  }
  json_span qs = {q.p, q.len};
  char digest[QDIGEST_LEN + 1];
  question_digest(q.p, q.len, digest);
  size_t i = r->nasked++;
  char idx[32];
  snprintf(idx, sizeof idx, "%zu", i);
  json_span v, d;
  int how = ASK_FAILED;
  if (i < r->nanswers) { /* asked in an earlier round: its answers are in the state */
    if (!mrtr_member(&r->digests, idx, &d) || d.n != QDIGEST_LEN + 2 ||
        memcmp(d.p + 1, digest, QDIGEST_LEN) != 0 ||
        !mrtr_member(&r->answers, idx, &v)) {
      snprintf(err, errlen, "this question differs from the one asked in an earlier round (a handler "
                            "must ask the same questions in the same order on every round)");
      goto done;
    }
    push_answers(L, v, single);
    how = ASK_ANSWERED;
    goto done;
  }
  if (i == r->nanswers && r->responses) {
    /* the client answers the round the state names (or, without a state,
       the first: answers it could have given anyway) */
    if (r->pending && strcmp(r->pending, digest) != 0) {
      snprintf(err, errlen, "this question differs from the one the client answered (a handler "
                            "must ask the same questions in the same order on every round)");
      goto done;
    }
    buf got;
    buf_init(&got);
    if ((r->pending || r->nanswers == 0) && answered(r, qs, &got)) {
      append_member(&r->answers, i, got.p, got.len);
      append_member(&r->digests, i, "\"", 1);
      buf_puts(&r->digests, digest);
      buf_putc(&r->digests, '"');
      r->nanswers++;
      push_answers(L, (json_span){got.p, got.len}, single);
      buf_free(&got);
      /* this retry's answers are spent: later questions are new */
      free(r->responses), free(r->pending);
      r->responses = r->pending = NULL;
      how = ASK_ANSWERED;
      goto done;
    }
    buf_free(&got); /* missing or malformed answers: ask again (spec: not an error) */
  }
  /* a new round: the call ends here, with its questions */
  const client_view *cv = &r->cv;
  unsigned have = (cv->elicitation ? 1u : 0) | (cv->sampling ? 2u : 0) | (cv->roots ? 4u : 0);
  const registry *reg = call_app(c)->reg;
  size_t idn;
  const char *id = call_id(c, &idn);
  buf *out = output_reply(srv, r->out);
  if (need & ~have) {
    unsigned miss = need & ~have;
    char msg[200], data[128];
    snprintf(msg, sizeof msg, "Missing required client capability:%s%s%s", miss & 1 ? " elicitation" : "",
             miss & 2 ? " sampling" : "", miss & 4 ? " roots" : "");
    snprintf(data, sizeof data, "{\"requiredCapabilities\":{%s%s%s%s%s}}",
             miss & 1 ? "\"elicitation\":{}" : "", (miss & 1) && (miss & 6) ? "," : "",
             miss & 2 ? "\"sampling\":{}" : "", (miss & 2) && (miss & 4) ? "," : "",
             miss & 4 ? "\"roots\":{}" : "");
    output_rpc_error(srv, r->out, (json_span){id, idn}, MCP_MISSING_CAPABILITY, msg, data);
  } else {
    char bind[65];
    if (!bind_digest(L, r->who, r->what, r->name, r->name_len, r->args, r->args_len, bind)) {
      snprintf(err, errlen, "the request's arguments cannot be sealed");
      goto done;
    }
    buf pl;
    buf_init(&pl);
    buf_lit(&pl, "{\"v\":2,\"b\":\"");
    buf_put(&pl, bind, 64);
    buf_lit(&pl, "\",\"e\":");
    buf_put_int(&pl, (long long)(wall_now() + srv->opt.state_ttl));
    buf_lit(&pl, ",\"a\":{");
    buf_put(&pl, r->answers.p ? r->answers.p : "", r->answers.len);
    buf_puts(&pl, "},\"q\":{");
    buf_put(&pl, r->digests.p ? r->digests.p : "", r->digests.len);
    buf_lit(&pl, "},\"p\":\"");
    buf_put(&pl, digest, QDIGEST_LEN);
    buf_lit(&pl, "\"}");
    buf sealed;
    buf_init(&sealed);
    request_state_seal(&sealed, pl.p, pl.len);
    jsonrpc_begin_result(out, (json_span){id, idn});
    buf_puts(out, "{\"resultType\":\"input_required\",\"inputRequests\":");
    buf_put(out, q.p, q.len);
    buf_puts(out, ",\"requestState\":");
    json_encode_string(out, sealed.p, sealed.len);
    buf_putc(out, ',');
    buf_put(out, reg->server_meta, reg->server_meta_len);
    buf_putc(out, '}');
    jsonrpc_end_reply(out);
    buf_free(&sealed);
    buf_free(&pl);
  }
  call_end_at_yield(c); /* answered: the handler goes no further */
  how = ASK_WAIT;
done:
  buf_free(&q);
  return how;
}

void mrtr_push_question(lua_State *L, const char *method, int params_idx, const char *key) {
  params_idx = params_idx ? lua_absindex(L, params_idx) : 0;
  lua_createtable(L, 0, 1);
  lua_createtable(L, 0, 2);
  lua_pushstring(L, method);
  lua_setfield(L, -2, "method");
  if (params_idx) lua_pushvalue(L, params_idx);
  else lua_newtable(L);
  lua_setfield(L, -2, "params");
  lua_setfield(L, -2, key);
}

int mrtr_ask(call *c, const char *method, lua_State *L, int params_idx, const char *key, char *err,
             size_t errlen) {
  request *r = request_of(c);
  char dflt[32];
  if (!key) { /* the question's place in the handler: the same on every round */
    snprintf(dflt, sizeof dflt, "q%zu", r->nasked);
    key = dflt;
  }
  mrtr_push_question(L, method, params_idx, key);
  int how = round_trip(c, L, lua_gettop(L), true, err, errlen);
  if (how == ASK_ANSWERED) lua_remove(L, -2); /* the table of one question */
  else lua_pop(L, 1);
  return how;
}

int mrtr_ask_round(call *c, lua_State *L, int reqs_idx, char *err, size_t errlen) {
  return round_trip(c, L, lua_absindex(L, reqs_idx), false, err, errlen);
}
