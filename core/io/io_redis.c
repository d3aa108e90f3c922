/* io_redis.c — mcp.redis (see io_redis.h): any command, and pipelines, on
 * the Redis connection of --store (store.c's). Runs under the engine's run
 * lock, as store.c does: handlers, and the loop's callbacks. */
#include "io_redis.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <hiredis/hiredis.h>
#include <lauxlib.h>
#include <lua.h>

#include "call.h"
#include "json.h"
#include "metrics.h"
#include "redis_conn.h"
#include "store.h"
#include "trace.h"

/* a reply (or all of a pipeline's) kept in C between the loop's callback and
   the call's resumption: at most this deep, this many elements, this many
   bytes of strings; past them the slot is an error, not the value */
#define DEPTH_MAX 32
#define ELEMENTS_MAX ((size_t)1 << 20)
#define BYTES_MAX ((size_t)64 << 20)
#define PIPELINE_MAX 65536
#define ARGS_MAX (1 << 20)
#define NAME_MAX_LEN 32
/* about what an element costs in Lua besides its bytes (a slot, a string's
   header): a reply the call's --memory-limit cannot hold is refused before
   it is made */
#define LUA_COST 40

enum { R_LOST = -1, R_UNSENT = -2, R_TOOBIG = -3 };

typedef struct rval {
  int type; /* REDIS_REPLY_*, or R_* */
  long long integer;
  char *str; /* NUL-terminated (an error's text goes to %s) */
  size_t len;
  struct rval *el;
  size_t n;
} rval;

typedef struct redis_op {
  call_wait w;
  call *c;                   /* NULL once the call ended first */
  size_t n, sent, got;       /* commands, sent, replies come */
  size_t elements, bytes;    /* kept so far (the bounds above) */
  bool pipeline, failed;
  rval *slots;               /* n */
  trace_span *span;
} redis_op;

/* {====================================================== errors */

/* "FILE:LINE: " of the innermost line of the app's own code (not C, not
   the embedded mcp.lua or test.lua), as call_error.c finds it: so a pcall sees it too. */
static void push_where(lua_State *L) {
  lua_Debug ar;
  for (int level = 0; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0 || strcmp(ar.source, "=mcp.lua") == 0 ||
        strcmp(ar.source, "=test.lua") == 0) /* (luamcp test's fake) */
      continue;
    lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
    return;
  }
  lua_pushliteral(L, "");
}

static int fail(lua_State *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  push_where(L);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 2);
  return lua_error(L);
}

/* }====================================================== */

/* {====================================================== commands */

/* Refused: they would change the one shared connection for every other
   call, or hold it. */
static const char *const refused_state[] = {"SELECT", "AUTH",    "HELLO",  "CLIENT", "QUIT",
                                            "RESET",  "READONLY", "READWRITE", "ASKING", "WATCH",
                                            "UNWATCH", NULL};
static const char *const refused_blocking[] = {
    "BLPOP",     "BRPOP",       "BRPOPLPUSH", "BLMOVE",      "BLMPOP",       "BZPOPMIN",
    "BZPOPMAX",  "BZMPOP",      "WAIT",       "WAITAOF",     "SUBSCRIBE",    "PSUBSCRIBE",
    "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE", "MONITOR",   "SYNC",
    "PSYNC",     NULL};

static bool listed(const char *const *list, const char *name) {
  for (; *list; list++)
    if (strcmp(*list, name) == 0) return true;
  return false;
}

/* One command: its arguments at stack base.. (t == 0) or in the table at t
   (1..argc). */
typedef struct cmdsrc {
  int t, base, argc;
} cmdsrc;

static void push_arg(lua_State *L, const cmdsrc *s, int i) {
  if (s->t) lua_rawgeti(L, s->t, i + 1);
  else lua_pushvalue(L, s->base + i);
}

/* Check a command's arguments (raises with prefix) and write its name,
   upper case, to name (cut to NAME_MAX_LEN). */
static void check_cmd(lua_State *L, const cmdsrc *s, const char *prefix, char name[NAME_MAX_LEN + 1]) {
  if (s->argc < 1) fail(L, "%sa command needs its name (\"GET\", key)", prefix);
  if (s->argc > ARGS_MAX) fail(L, "%smore than %d arguments", prefix, ARGS_MAX);
  luaL_checkstack(L, 2, "mcp.redis");
  for (int i = 0; i < s->argc; i++) {
    push_arg(L, s, i);
    int t = lua_type(L, -1);
    if (i == 0 && t != LUA_TSTRING)
      fail(L, "%sthe command name must be a string, got %s", prefix, luaL_typename(L, -1));
    if (t == LUA_TNUMBER && !lua_isinteger(L, -1) && isnan(lua_tonumber(L, -1)))
      fail(L, "%sargument %d is NaN", prefix, i + 1);
    if (t != LUA_TSTRING && t != LUA_TNUMBER)
      fail(L, "%sargument %d must be a string or a number, got %s", prefix, i + 1, luaL_typename(L, -1));
    if (i == 0) {
      size_t n;
      const char *p = lua_tolstring(L, -1, &n);
      if (n == 0) fail(L, "%sthe command name is empty", prefix);
      size_t k = n < NAME_MAX_LEN ? n : NAME_MAX_LEN;
      for (size_t j = 0; j < k; j++) name[j] = (char)(p[j] >= 'a' && p[j] <= 'z' ? p[j] - 32 : p[j]);
      name[k] = '\0';
    }
    lua_pop(L, 1);
  }
  if (listed(refused_state, name))
    fail(L, "%s%s is refused: it would change the connection every call shares%s", prefix, name,
          strcmp(name, "WATCH") == 0 ? " (EVAL runs a script atomically; mcp.store.cas)" : "");
  if (listed(refused_blocking, name))
    fail(L, "%s%s is refused: it would hold the connection every call shares "
             "(mcp.socket gives a connection of the script's own)", prefix, name);
  if (strcmp(name, "XREAD") == 0 || strcmp(name, "XREADGROUP") == 0)
    for (int i = 1; i < s->argc; i++) {
      push_arg(L, s, i);
      const char *a = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
      bool block = strcasecmp(a, "BLOCK") == 0, streams = strcasecmp(a, "STREAMS") == 0;
      lua_pop(L, 1);
      if (streams) break;
      if (block)
        fail(L, "%s%s BLOCK is refused: it would hold the connection every call shares", prefix, name);
    }
}

/* A number as Redis reads it: an integer as one, a float as the shortest
   text that reads back the same. */
static size_t number_text(lua_State *L, int i, char out[40]) {
  if (lua_isinteger(L, i)) return (size_t)snprintf(out, 40, "%lld", (long long)lua_tointeger(L, i));
  double d = lua_tonumber(L, i);
  if (isinf(d)) return (size_t)snprintf(out, 40, "%s", d > 0 ? "inf" : "-inf");
  int n = 0;
  for (int prec = 15; prec <= 17; prec++) {
    n = snprintf(out, 40, "%.*g", prec, d);
    if (strtod(out, NULL) == d) break;
  }
  return (size_t)n;
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata);

/* Send one checked command (pointers into the Lua strings, which s
   anchors). */
static bool send_cmd(lua_State *L, redisAsyncContext *ac, const cmdsrc *s, redis_op *o) {
  const char **argv = malloc((size_t)s->argc * sizeof *argv);
  size_t *lens = malloc((size_t)s->argc * sizeof *lens);
  int nnum = 0;
  for (int i = 0; i < s->argc; i++) {
    push_arg(L, s, i);
    nnum += lua_type(L, -1) == LUA_TNUMBER;
    lua_pop(L, 1);
  }
  char(*num)[40] = nnum ? malloc((size_t)nnum * sizeof *num) : NULL;
  int k = 0;
  for (int i = 0; i < s->argc; i++) {
    push_arg(L, s, i);
    if (lua_type(L, -1) == LUA_TNUMBER) {
      lens[i] = number_text(L, -1, num[k]);
      argv[i] = num[k++];
    } else {
      argv[i] = lua_tolstring(L, -1, &lens[i]); /* anchored by the table or the stack */
    }
    lua_pop(L, 1);
  }
  bool sent = redisAsyncCommandArgv(ac, on_reply, o, s->argc, argv, lens) == REDIS_OK;
  free(num);
  free(argv);
  free(lens);
  return sent;
}

/* }====================================================== */

/* {====================================================== replies */

static void rval_free(rval *v) {
  for (size_t i = 0; i < v->n; i++) rval_free(&v->el[i]);
  free(v->el);
  free(v->str);
}

static void op_free(redis_op *o) {
  if (o->span) trace_end(o->span);
  for (size_t i = 0; i < o->n; i++) rval_free(&o->slots[i]);
  free(o->slots);
  free(o);
}

/* What keeping r would add (false past DEPTH_MAX). */
static bool measure(const redisReply *r, int depth, size_t *elements, size_t *bytes) {
  if (depth > DEPTH_MAX) return false;
  (*elements)++;
  if (r->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i < r->elements; i++)
      if (!measure(r->element[i], depth + 1, elements, bytes)) return false;
  } else if (r->str) {
    *bytes += r->len;
  }
  return true;
}

static void copy(const redisReply *r, rval *out) {
  out->type = r->type;
  if (r->type == REDIS_REPLY_INTEGER) out->integer = r->integer;
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR) {
    out->str = malloc(r->len + 1);
    memcpy(out->str, r->str, r->len);
    out->str[r->len] = '\0';
    out->len = r->len;
  }
  if (r->type == REDIS_REPLY_ARRAY && r->elements) {
    out->el = calloc(r->elements, sizeof *out->el);
    out->n = r->elements;
    for (size_t i = 0; i < r->elements; i++) copy(r->element[i], &out->el[i]);
  }
}

static void slot_message(rval *v, int type, const char *msg) {
  v->type = type;
  v->str = strdup(msg);
  v->len = strlen(msg);
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata) {
  (void)ac;
  redis_op *o = privdata;
  const redisReply *reply = r;
  rval *slot = &o->slots[o->got++];
  bool bad = !reply || reply->type == REDIS_REPLY_ERROR;
  o->failed |= bad;
  if (metrics_on) metric_add(metric_at(M_REDIS, (const char *const[]){bad ? "error" : "ok"}), 1);
  if (o->c) { /* else the call ended first: nothing to keep */
    size_t el = 0, by = 0;
    if (!reply) slot->type = R_LOST;
    else if (!measure(reply, 1, &el, &by))
      slot_message(slot, R_TOOBIG, "the reply nests arrays deeper than 32");
    else if (o->elements + el > ELEMENTS_MAX || o->bytes + by > BYTES_MAX)
      slot_message(slot, R_TOOBIG, o->pipeline ? "the replies pass 1048576 elements or 64 MiB"
                                               : "the reply passes 1048576 elements or 64 MiB");
    else if ((o->bytes + by) + (o->elements + el) * LUA_COST > call_memory_room(o->c))
      slot_message(slot, R_TOOBIG, "the reply is larger than the call may still grow by (--memory-limit)");
    else {
      o->elements += el, o->bytes += by;
      copy(reply, slot);
    }
  }
  if (o->got < o->sent) return;
  if (o->span) { /* the last reply ends it, the call there or not */
    if (o->failed) trace_error(o->span, "an error reply, or the connection went");
    trace_end(o->span);
    o->span = NULL;
  }
  if (!o->c) {
    op_free(o);
    return;
  }
  o->c = NULL;
  lua_pushboolean(call_wait_thread(&o->w), 1); /* no allocation in a loop callback */
  call_wake_wait(&o->w, 1);
}

static void on_abort(call_wait *w) {
  redis_op *o = (redis_op *)((char *)w - offsetof(redis_op, w));
  o->c = NULL; /* the last reply, when it comes, frees it */
}

/* v as a Lua value; nil only at the top (mcp.null inside an array). The
   array metatable is at index mt. */
static void push_val(lua_State *L, const rval *v, int mt, bool top) {
  luaL_checkstack(L, 4, "mcp.redis: a reply nested too deep");
  switch (v->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS: lua_pushlstring(L, v->str, v->len); return;
    case REDIS_REPLY_INTEGER: lua_pushinteger(L, (lua_Integer)v->integer); return;
    case REDIS_REPLY_ARRAY:
      lua_createtable(L, v->n > INT_MAX ? 0 : (int)v->n, 0);
      for (size_t i = 0; i < v->n; i++) {
        push_val(L, &v->el[i], mt, false);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
      }
      lua_pushvalue(L, mt);
      lua_setmetatable(L, -2);
      return;
    case REDIS_REPLY_ERROR:
    case R_TOOBIG:
    case R_UNSENT:
      lua_createtable(L, 0, 1);
      lua_pushstring(L, v->str ? v->str : "not sent: the connection went");
      lua_setfield(L, -2, "err");
      return;
    default: /* REDIS_REPLY_NIL */
      if (top) lua_pushnil(L);
      else json_pushnull(L);
  }
}

/* The replies as Lua values (under a protected call: out of memory):
   0 and the value, or 1 and the message to raise. */
static int push_result(lua_State *L) {
  redis_op *o = lua_touserdata(L, 1);
  json_push_array_mt(L);
  int mt = lua_gettop(L);
  for (size_t i = 0; i < o->n; i++)
    if (o->slots[i].type == R_LOST) {
      lua_pushinteger(L, 1);
      lua_pushfstring(L, "mcp.redis: the connection to redis %s was lost", redis_conn_name(store_redis()));
      return 2;
    }
  if (!o->pipeline) {
    const rval *v = &o->slots[0];
    if (v->type == REDIS_REPLY_ERROR || v->type == R_TOOBIG) {
      lua_pushinteger(L, 1);
      lua_pushfstring(L, "%s%s", v->type == REDIS_REPLY_ERROR ? "redis: " : "mcp.redis: ", v->str);
      return 2;
    }
    lua_pushinteger(L, 0);
    push_val(L, v, mt, true);
    return 2;
  }
  lua_pushinteger(L, 0);
  lua_createtable(L, (int)o->n, 0);
  for (size_t i = 0; i < o->n; i++) {
    push_val(L, &o->slots[i], mt, false);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_pushvalue(L, mt);
  lua_setmetatable(L, -2);
  return 2;
}

static int op_done(lua_State *L, int status, lua_KContext k) {
  (void)status;
  /* woken with the replies (a call that ends first is never resumed) */
  redis_op *o = (redis_op *)(intptr_t)k;
  lua_settop(L, 0);
  lua_pushcfunction(L, push_result);
  lua_pushlightuserdata(L, o);
  int st = lua_pcall(L, 1, 2, 0);
  op_free(o);
  if (st != LUA_OK) return lua_error(L);
  if (lua_tointeger(L, 1) != 0) return fail(L, "%s", lua_tostring(L, 2));
  return 1;
}

/* }====================================================== */

/* {====================================================== sending */

static call *prelude(lua_State *L, const char *fn) {
  call *c = call_current(L);
  if (!c) fail(L, "%s: only inside a handler", fn);
  if (!store_redis()) fail(L, "mcp.redis needs --store redis://HOST:PORT/N (the Redis it talks to)");
  return c;
}

/* Send n commands — the values at stack base.. (list == 0), or the tables
   list[1..n] — at once and park the call on their replies. */
static int start(lua_State *L, call *c, int list, int base, int argc, size_t n) {
  const char *fn = list ? "mcp.redis.pipeline" : "mcp.redis";
  const char *why = call_cannot_park(L, c);
  if (why) return fail(L, "%s: %s", fn, why);
  redis_conn *rc = store_redis();
  redisAsyncContext *ac = redis_conn_ctx(rc);
  if (!ac) return fail(L, "%s: redis %s is unreachable (reconnecting)", fn, redis_conn_name(rc));
  redis_op *o = calloc(1, sizeof *o);
  o->n = n;
  o->pipeline = list != 0;
  o->slots = calloc(n, sizeof *o->slots);
  o->c = c;
  o->w = (call_wait){.abort = on_abort, .what = "mcp.redis"};
  char ops[256] = "", name[NAME_MAX_LEN + 1] = "";
  size_t used = 0;
  for (size_t i = 0; i < n; i++) {
    cmdsrc s = {.base = base, .argc = argc};
    if (list) {
      lua_rawgeti(L, list, (lua_Integer)i + 1);
      s.t = lua_gettop(L);
      s.argc = (int)lua_rawlen(L, s.t);
    }
    push_arg(L, &s, 0);
    size_t nn;
    const char *p = lua_tolstring(L, -1, &nn);
    size_t kk = nn < NAME_MAX_LEN ? nn : NAME_MAX_LEN;
    for (size_t j = 0; j < kk; j++) name[j] = (char)(p[j] >= 'a' && p[j] <= 'z' ? p[j] - 32 : p[j]);
    name[kk] = '\0';
    lua_pop(L, 1);
    if (used + kk + 2 < sizeof ops)
      used += (size_t)snprintf(ops + used, sizeof ops - used, "%s%s", used ? " " : "", name);
    if (!send_cmd(L, ac, &s, o)) {
      if (list) lua_pop(L, 1);
      for (size_t j = i; j < n; j++) o->slots[j].type = R_UNSENT;
      break;
    }
    o->sent++;
    if (list) lua_pop(L, 1);
  }
  if (!o->sent) {
    op_free(o);
    return fail(L, "%s: redis %s is unreachable (the connection is going; nothing was sent)", fn,
                redis_conn_name(rc));
  }
  trace_span *parent = trace_on ? call_span(c) : NULL;
  if (parent) {
    char sname[64];
    snprintf(sname, sizeof sname, "redis %s", list ? "PIPELINE" : name);
    if ((o->span = trace_start(trace_context(parent), sname, TRACE_CLIENT))) {
      trace_attr_str(o->span, "db.system.name", "redis");
      trace_attr_str(o->span, "db.operation.name", ops); /* the names, never an argument */
      if (list) trace_attr_int(o->span, "db.operation.batch.size", (long long)n);
    }
  }
  lua_settop(L, 0); /* what op_done finds tells a reply from an abort */
  call_park(c, &o->w);
  return lua_yieldk(L, 0, (lua_KContext)(intptr_t)o, op_done);
}

/* The checks of one command of mcp.redis (MULTI and co. refused). */
static void check_one(lua_State *L, const cmdsrc *s) {
  char name[NAME_MAX_LEN + 1];
  check_cmd(L, s, "mcp.redis: ", name);
  if (strcmp(name, "MULTI") == 0 || strcmp(name, "EXEC") == 0 || strcmp(name, "DISCARD") == 0)
    fail(L, "mcp.redis: %s is refused outside a pipeline: MULTI ... EXEC go in one "
            "mcp.redis.pipeline (the connection is shared)", name);
}

/* mcp.redis(cmd, arg...) (the table's __call: the table is argument 1) */
static int redis_call(lua_State *L) {
  call *c = prelude(L, "mcp.redis");
  cmdsrc s = {.base = 2, .argc = lua_gettop(L) - 1};
  check_one(L, &s);
  return start(L, c, 0, 2, s.argc, 1);
}

/* The checks of a pipeline's commands list[1..n] (tables): each command's,
   MULTI ... EXEC paired. */
static void check_list(lua_State *L, int list, size_t n) {
  if (n > PIPELINE_MAX) fail(L, "mcp.redis.pipeline: more than %d commands", PIPELINE_MAX);
  bool multi = false;
  for (size_t i = 1; i <= n; i++) {
    char prefix[64], name[NAME_MAX_LEN + 1];
    snprintf(prefix, sizeof prefix, "mcp.redis.pipeline: command %zu: ", i);
    lua_rawgeti(L, list, (lua_Integer)i);
    if (!lua_istable(L, -1))
      fail(L, "%sa command is a list {name, arg...}, got %s", prefix, luaL_typename(L, -1));
    cmdsrc s = {.t = lua_gettop(L), .argc = (int)lua_rawlen(L, -1)};
    check_cmd(L, &s, prefix, name);
    lua_pop(L, 1);
    if (strcmp(name, "MULTI") == 0) {
      if (multi) fail(L, "%sMULTI inside MULTI", prefix);
      multi = true;
    } else if (strcmp(name, "EXEC") == 0 || strcmp(name, "DISCARD") == 0) {
      if (!multi) fail(L, "%s%s without MULTI", prefix, name);
      multi = false;
    }
  }
  if (multi) fail(L, "mcp.redis.pipeline: MULTI without EXEC or DISCARD (the connection is shared)");
}

/* Check the commands list[1..n] and send them. */
static int send_list(lua_State *L, call *c, int list) {
  size_t n = lua_rawlen(L, list);
  check_list(L, list, n);
  if (n == 0) {
    lua_newtable(L);
    json_mark_array(L, -1);
    return 1;
  }
  return start(L, c, list, 0, 0, n);
}

/* p(cmd, arg...) of the function form: checked at its line, kept */
static int collect(lua_State *L) {
  int argc = lua_gettop(L);
  cmdsrc s = {.base = 1, .argc = argc};
  char name[NAME_MAX_LEN + 1];
  check_cmd(L, &s, "mcp.redis.pipeline: ", name);
  size_t n = lua_rawlen(L, lua_upvalueindex(1));
  if (n >= PIPELINE_MAX) return fail(L, "mcp.redis.pipeline: more than %d commands", PIPELINE_MAX);
  lua_createtable(L, argc, 0);
  for (int i = 1; i <= argc; i++) {
    lua_pushvalue(L, i);
    lua_rawseti(L, -2, i);
  }
  lua_rawseti(L, lua_upvalueindex(1), (lua_Integer)n + 1);
  return 0;
}

static int pipeline_k(lua_State *L, int status, lua_KContext k) {
  (void)status, (void)k;
  call *c = call_current(L);
  if (!c) return fail(L, "mcp.redis.pipeline: only inside a handler");
  return send_list(L, c, 2);
}

/* mcp.redis.pipeline(function(p) ... end) or mcp.redis.pipeline{ {cmd, ...}, ... } */
static int redis_pipeline(lua_State *L) {
  call *c = prelude(L, "mcp.redis.pipeline");
  if (lua_type(L, 1) == LUA_TTABLE) {
    lua_settop(L, 1);
    return send_list(L, c, 1);
  }
  if (lua_type(L, 1) != LUA_TFUNCTION)
    return fail(L, "mcp.redis.pipeline: needs a function(p) or a list of commands, got %s",
                 luaL_typename(L, 1));
  lua_settop(L, 1);
  lua_newtable(L); /* 2: the commands */
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, collect, 1);
  lua_callk(L, 1, 0, 0, pipeline_k);
  return pipeline_k(L, LUA_OK, 0);
}

/* check(what, cmd | list): the checks mcp.redis ("one": cmd), a
   pipeline's p ("p": cmd) and mcp.redis.pipeline ("pipeline": a list of
   commands) make before sending, for luamcp test's fake (lua/test.lua).
   Commands are tables {name, arg...}; n, when set, is their length. */
static int redis_check(lua_State *L) {
  const char *what = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  if (strcmp(what, "pipeline") == 0) {
    check_list(L, 2, lua_rawlen(L, 2));
    return 0;
  }
  lua_getfield(L, 2, "n");
  cmdsrc s = {.t = 2, .argc = lua_isinteger(L, 3) ? (int)lua_tointeger(L, 3) : (int)lua_rawlen(L, 2)};
  if (strcmp(what, "one") == 0) {
    check_one(L, &s);
  } else {
    char name[NAME_MAX_LEN + 1];
    check_cmd(L, &s, "mcp.redis.pipeline: ", name);
  }
  return 0;
}

/* }====================================================== */

void io_redis_push(lua_State *L) {
  lua_newtable(L);
  lua_pushcfunction(L, redis_pipeline);
  lua_setfield(L, -2, "pipeline");
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, redis_call);
  lua_setfield(L, -2, "__call");
  lua_pushcfunction(L, redis_check);
  lua_setfield(L, -2, "check");
  lua_setmetatable(L, -2);
}
