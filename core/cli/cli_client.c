/* cli_client.c — luamcp call, read, prompt and list: the command line as an
 * MCP client of its own app, in process. Each request goes through the same
 * server and engine a real client reaches (server_submit), into an outlet
 * that captures the reply; nothing is special-cased, so what these commands
 * print is what a client would get.
 *
 * Questions a handler asks the client (ctx:elicit, ctx:sample): a 2025
 * session would have to answer a server→client request while the call
 * waits, inside the one engine pass the command runs. With an --answer
 * option the request speaks 2026-07-28 instead, where a question ends the
 * round with an input_required result: the command answers it and retries,
 * as a stateless client does (mrtr.h). Each round loads the app afresh
 * (a few milliseconds), so the engine only ever runs to completion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "cli.h"
#include "embedded.h"
#include "envelope.h"
#include "json.h"
#include "jsonrpc.h"
#include "server.h"
#include "store.h"
#include "db.h"

/* seconds --store gives Redis to accept the connection */
#define STORE_CONNECT_WAIT 3.0

typedef struct capture {
  outlet out; /* first: the outlet is the capture */
  buf lines;
} capture;

static bool client_capture_write(outlet *o, const char *p, size_t n) {
  buf_put(&((capture *)o)->lines, p, n);
  return true;
}

/* One request to a freshly loaded app: its response line into *response.
   Notifications are shown on stderr (log messages are there already).
   False when the app did not load (its problems printed). */
static bool roundtrip(options *o, const char *req, size_t len, buf *response) {
  app *a = cli_load(o->args[0], &o->server.app);
  if (!a) return false;
  capture cap = {.out = {.write = client_capture_write}};
  buf_init(&cap.lines);
  session *s = session_new();
  s->initialized = s->ready = true;
  s->version = PROTO_LATEST_SESSION;
  s->client_ui = o->as_app;
  s->standalone = &cap.out;
  /* --as/--scopes: the caller a token would have named */
  if (o->as_subject || o->as_scopes) o->server.as = principal_made_up(o->as_subject, o->as_scopes);
  cli_use_data(o, a, o->args[0], false);
  if (!cli_migrate(a)) {
    app_free(a);
    principal_unref(o->server.as);
    o->server.as = NULL;
    session_unref(s);
    buf_free(&cap.lines);
    return false;
  }
  server *srv = server_new(a, &o->server);
  engine *e = server_engine(srv);
  if (o->store && strcmp(o->store, "memory") == 0) store_use_memory();
  else if (o->store) { /* the service's shared data: up before the handler's first op */
    store_use_redis(e, o->store);
    if (!store_wait_connected(e, STORE_CONNECT_WAIT)) {
      fprintf(stderr, "luamcp: --store %s: no connection to Redis (waited at most %g s)\n", o->store,
              STORE_CONNECT_WAIT);
      store_drop_redis();
      db_close();
      server_free(srv);
      principal_unref(o->server.as);
      o->server.as = NULL;
      session_unref(s);
      buf_free(&cap.lines);
      return false;
    }
  }
  char *msg = malloc(len + 1);
  memcpy(msg, req, len);
  msg[len] = '\0';
  server_submit(srv, s, &cap.out, msg, len, NULL);
  engine_finish(e);
  engine_run(e);
  store_drop_redis();
  db_close();
  server_free(srv);
  principal_unref(o->server.as);
  o->server.as = NULL;
  for (const char *p = cap.lines.p, *end = p + cap.lines.len; p && p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    jsonrpc_msg m;
    jsonrpc_parse(p, n, &m);
    if (m.kind == JSONRPC_RESPONSE) {
      response->len = 0;
      buf_put(response, p, n);
    } else if (m.kind == JSONRPC_NOTIFICATION && !jsonrpc_method_is(&m, "notifications/message")) {
      fprintf(stderr, "%.*s\n", (int)n, p);
    }
    p += n + 1;
  }
  session_unref(s);
  buf_free(&cap.lines);
  buf_free(&cap.out.out);
  return true;
}

/* The answer to one question of an input_required round (a JSON value), or
   false when the command was given none for its method. */
static bool answer(const options *o, json_span question, buf *out) {
  json_span method = {0};
  json_object_get(question, "method", &method);
  if (json_string_eq(method, "elicitation/create") && o->answer_elicit) {
    buf_printf(out, "{\"action\":\"accept\",\"content\":%s}", o->answer_elicit);
    return true;
  }
  if (json_string_eq(method, "sampling/createMessage") && o->answer_sample) {
    buf_puts(out, "{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":");
    json_encode_string(out, o->answer_sample, strlen(o->answer_sample));
    buf_puts(out, "},\"model\":\"luamcp-cli\",\"stopReason\":\"endTurn\"}");
    return true;
  }
  buf msg;
  buf_init(&msg);
  if (method.n) json_string_unescape(method, &msg);
  fprintf(stderr, "luamcp: the handler asks %s, and no --answer option answers it\n",
          msg.p ? msg.p : "something");
  buf_free(&msg);
  return false;
}

/* The request: method with params (members, without braces), in the 2025
   era, or in 2026-07-28 with the capabilities the --answer options give,
   the state and answers of the previous round. */
static void build_request(const options *o, int id, const char *method, const char *params,
                          json_span state, const buf *answers, buf *req) {
  buf_printf(req, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":{%s", id, method,
             params);
  if (o->answer_elicit || o->answer_sample) {
    buf_printf(req, ",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"%s", proto_name(PROTO_LATEST));
    buf_puts(req, "\",\"io.modelcontextprotocol/clientInfo\":{\"name\":\"luamcp-cli\",\"version\":\""
                  LUAMCP_VERSION "\"},\"io.modelcontextprotocol/clientCapabilities\":{");
    const char *sep = "";
    if (o->answer_elicit) buf_puts(req, "\"elicitation\":{}"), sep = ",";
    if (o->answer_sample) buf_printf(req, "%s\"sampling\":{}", sep), sep = ",";
    if (o->as_app)
      buf_printf(req, "%s\"extensions\":{\"io.modelcontextprotocol/ui\":{\"mimeTypes\":"
                      "[\"text/html;profile=mcp-app\"]}}", sep);
    buf_puts(req, "}}");
    if (state.n) {
      buf_puts(req, ",\"requestState\":");
      buf_put(req, state.p, state.n);
    }
    if (answers && answers->len) {
      buf_puts(req, ",\"inputResponses\":");
      buf_put(req, answers->p, answers->len);
    }
  }
  buf_puts(req, "}}");
}

/* Run method until it has a result; print it. Returns the exit status:
   is_error_counts: an isError result is 1 (tools/call). */
static int request(options *o, const char *method, const char *params, bool is_error_counts) {
  int out = cli_protect_stdout();
  buf req, resp, answers, state;
  buf_init(&req), buf_init(&resp), buf_init(&answers), buf_init(&state);
  int status = 1;
  for (int round = 1; round <= 32; round++) {
    req.len = 0;
    build_request(o, round, method, params, (json_span){state.p, state.len}, &answers, &req);
    resp.len = 0;
    if (!roundtrip(o, req.p, req.len, &resp)) goto done;
    jsonrpc_msg m;
    jsonrpc_parse(resp.p, resp.len, &m);
    if (m.kind != JSONRPC_RESPONSE) {
      fprintf(stderr, "luamcp: no answer to %s\n", method);
      goto done;
    }
    if (!m.result.n) {
      json_span msg = {0}, code = {0};
      json_object_get(m.error, "message", &msg);
      json_object_get(m.error, "code", &code);
      buf b;
      buf_init(&b);
      if (msg.n) json_string_unescape(msg, &b);
      fprintf(stderr, "luamcp: %s (%.*s)\n", b.p ? b.p : "error", (int)code.n, code.p);
      buf_free(&b);
      goto done;
    }
    json_span kind = {0}, questions = {0}, st = {0};
    json_object_get(m.result, "resultType", &kind);
    if (json_string_eq(kind, "input_required")) {
      if (!json_object_get(m.result, "inputRequests", &questions) || json_kind(questions) != '{') {
        fprintf(stderr, "luamcp: an input_required result without inputRequests\n");
        goto done;
      }
      answers.len = 0;
      buf_putc(&answers, '{');
      size_t pos = 0;
      json_span key, q;
      for (bool first = true; json_object_next(questions, &pos, &key, &q); first = false) {
        if (!first) buf_putc(&answers, ',');
        buf_put(&answers, key.p, key.n);
        buf_putc(&answers, ':');
        if (!answer(o, q, &answers)) goto done;
      }
      buf_putc(&answers, '}');
      state.len = 0;
      if (json_object_get(m.result, "requestState", &st)) buf_put(&state, st.p, st.n);
      continue;
    }
    json_span is_error;
    bool failed = json_object_get(m.result, "isError", &is_error) && json_kind(is_error) == 't';
    buf line;
    buf_init(&line);
    buf_put(&line, m.result.p, m.result.n);
    buf_putc(&line, '\n');
    ssize_t w = write(out, line.p, line.len);
    buf_free(&line);
    status = (failed && is_error_counts) || w < 0 ? 1 : 0;
    goto done;
  }
  fprintf(stderr, "luamcp: %s still asks after 32 rounds\n", method);
done:
  buf_free(&req), buf_free(&resp), buf_free(&answers), buf_free(&state);
  close(out);
  return status;
}

/* JSON-ARGS: a JSON object, or exit 2. */
static const char *json_args(const char *what, const char *v) {
  const char *err;
  size_t at;
  if (!json_validate(v, strlen(v), &err, &at)) {
    fprintf(stderr, "luamcp: %s is not valid JSON: %s at byte %zu\n", what, err, at);
    exit(2);
  }
  if (v[strspn(v, " \t\r\n")] != '{') cli_die_usage("%s must be a JSON object", what);
  return v;
}

static void string_member(buf *b, const char *key, const char *v) {
  buf_printf(b, "\"%s\":", key);
  json_encode_string(b, v, strlen(v));
}

/* call and prompt: {"name":NAME,"arguments":JSON-ARGS} */
static int named_request(options *o, const char *usage, const char *method, bool tool) {
  if (o->nargs < 2 || o->nargs > 3) cli_die_usage("%s", usage);
  const char *args = o->nargs == 3 ? json_args("JSON-ARGS", o->args[2]) : "{}";
  buf p;
  buf_init(&p);
  string_member(&p, "name", o->args[1]);
  buf_printf(&p, ",\"arguments\":%s", args);
  int status = request(o, method, p.p, tool);
  buf_free(&p);
  return status;
}

int cmd_call(options *o) {
  return named_request(o, "call needs DIR TOOL [JSON-ARGS]", "tools/call", true);
}

int cmd_read(options *o) {
  if (o->nargs != 2) cli_die_usage("%s", "read needs DIR URI");
  buf p;
  buf_init(&p);
  string_member(&p, "uri", o->args[1]);
  int status = request(o, "resources/read", p.p, false);
  buf_free(&p);
  return status;
}

int cmd_prompt(options *o) {
  return named_request(o, "prompt needs DIR NAME [JSON-ARGS]", "prompts/get", false);
}

/* {====== luamcp list: read off the loaded app by lua/ship.lua */

bool cli_ship_call(app *a, const char *fn, int nargs, buf *err) {
  lua_State *L = a->vm.L;
  size_t len = 0;
  const char *src = embedded_source("ship", &len);
  if (!src || luaL_loadbufferx(L, src, len, "=ship.lua", "t") != LUA_OK) {
    buf_printf(err, "internal: %s", src ? lua_tostring(L, -1) : "ship.lua is not embedded");
    lua_pop(L, src ? nargs + 1 : nargs);
    return false;
  }
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "mcp");
  lua_remove(L, -2);
  if (vm_pcall(L, 1, 1, NULL) != LUA_OK) {
    buf_printf(err, "%s", lua_tostring(L, -1));
    lua_pop(L, nargs + 1);
    return false;
  }
  lua_getfield(L, -1, fn);
  lua_remove(L, -2);                     /* args..., fn */
  lua_insert(L, -(nargs + 1));           /* fn, args... */
  if (vm_pcall(L, nargs, 1, NULL) != LUA_OK) {
    buf_printf(err, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    return false;
  }
  return true;
}

/* Push what app.lua said and the registration table (APP_INFO_KEY, APP_REG_KEY). */
void cli_push_app(app *a) {
  lua_getfield(a->vm.L, LUA_REGISTRYINDEX, APP_REG_KEY);
  lua_getfield(a->vm.L, LUA_REGISTRYINDEX, APP_INFO_KEY);
}

int cmd_list(options *o) {
  if (o->nargs != 1) cli_die_usage("%s", "list needs DIR");
  int out = cli_protect_stdout();
  app *a = cli_load(o->args[0], &o->server.app);
  if (!a) return 1;
  buf err;
  buf_init(&err);
  cli_push_app(a);
  lua_getfield(a->vm.L, LUA_REGISTRYINDEX, APP_SKILLS_KEY); /* nil without skills */
  int status = 1;
  if (cli_ship_call(a, "list", 3, &err)) {
    size_t n;
    const char *text = lua_tolstring(a->vm.L, -1, &n);
    status = text && write(out, text, n) == (ssize_t)n ? 0 : 1;
    lua_pop(a->vm.L, 1);
  } else {
    fprintf(stderr, "luamcp: %.*s\n", (int)err.len, err.p);
  }
  buf_free(&err);
  app_free(a);
  close(out);
  return status;
}

/* }====== */
