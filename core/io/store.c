/* store.c — mcp.store (see store.h): a table in this process's memory, or
 * Redis through one reconnecting hiredis connection; the default backend,
 * the app's database, is lua/store_db.lua's over mcp.db. Everything runs
 * under the engine's run lock (handlers, and the loop's callbacks). */
#include "store.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "buf.h"
#include "call.h"
#include "clock.h"
#include "engine.h"
#include "redis_conn.h"
#include "luax.h"
#include "metrics.h"
#include "trace.h"

#define KEY_MAX 1024
#define VALUE_MAX ((size_t)16 << 20)
#define TTL_MAX (10.0 * 365 * 86400)
/* the in-memory store's keys and values together, at most: a script (or a
   client driving one) cannot grow the process without end; Redis has its
   own maxmemory */
#define MEMORY_MAX ((size_t)256 << 20)
#define ENTRY_COST(kn, vn) ((kn) + (vn) + sizeof(entry))
/* the memory table is swept of expired keys every this many writes */
#define SWEEP_EVERY 4096

enum { OP_GET, OP_SET, OP_INCR, OP_DELETE, OP_ADD, OP_CAS, OP_KEYS };
static const char *const op_names[] = {"get", "set", "incr", "delete", "add", "cas", "keys"};
/* keys(): at least this many per page when there are as many (the memory
   table's; Redis's SCAN COUNT, a hint it follows roughly) */
#define KEYS_PAGE 100

/* {====================================================== errors */

/* luaL_error's, at the caller of lua/mcp.lua's mcp.store wrapper (which
   picks the backend at each call) as if it were not there: the script's
   line, or none under a pcall, as before the wrapper. */
static int store_raise(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int store_raise(lua_State *L, const char *fmt, ...) {
  lua_Debug ar;
  int level = 1;
  while (lua_getstack(L, level, &ar) && lua_getinfo(L, "S", &ar) && strcmp(ar.source, "=mcp.lua") == 0)
    level++;
  va_list ap;
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  return luax_error_at(L, level);
}

/* }====================================================== */

/* {====================================================== memory */

typedef struct entry {
  char *key, *val;
  size_t klen, vlen;
  double expires; /* clock_now() seconds; 0: never */
  struct entry *next;
} entry;

static struct {
  entry **b;
  size_t nb, n, writes;
  size_t bytes; /* ENTRY_COST of every entry */
} mem;

static size_t key_hash(const char *k, size_t n) {
  uint64_t h = 1469598103934665603u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * 1099511628211u;
  return (size_t)h;
}

static void entry_free(entry *e) {
  mem.bytes -= ENTRY_COST(e->klen, e->vlen);
  free(e->key);
  free(e->val);
  free(e);
}

static bool expired(const entry *e, double t) { return e->expires && t >= e->expires; }

static void store_sweep(double t) {
  for (size_t i = 0; i < mem.nb; i++)
    for (entry **p = &mem.b[i]; *p;) {
      entry *e = *p;
      if (expired(e, t)) {
        *p = e->next;
        entry_free(e);
        mem.n--;
      } else {
        p = &e->next;
      }
    }
}

/* The live entry of key, or NULL (an expired one is removed). */
static entry **slot(const char *k, size_t n) {
  if (!mem.nb) return NULL;
  double t = clock_now();
  for (entry **p = &mem.b[key_hash(k, n) & (mem.nb - 1)]; *p; p = &(*p)->next) {
    entry *e = *p;
    if (e->klen != n || memcmp(e->key, k, n) != 0) continue;
    if (!expired(e, t)) return p;
    *p = e->next;
    entry_free(e);
    mem.n--;
    return NULL;
  }
  return NULL;
}

static void grow(void) {
  if (mem.n < mem.nb) return;
  size_t nb = mem.nb ? mem.nb * 2 : 64;
  entry **b = calloc(nb, sizeof *b);
  for (size_t i = 0; i < mem.nb; i++)
    for (entry *e = mem.b[i], *next; e; e = next) {
      next = e->next;
      size_t j = key_hash(e->key, e->klen) & (nb - 1);
      e->next = b[j];
      b[j] = e;
    }
  free(mem.b);
  mem.b = b;
  mem.nb = nb;
}

/* Set key to val; ttl > 0 sets its expiry, 0 clears it, < 0 keeps it.
   False when the store would pass MEMORY_MAX (expired keys swept first). */
static bool mem_put(const char *k, size_t kn, const char *v, size_t vn, double ttl) {
  if (++mem.writes % SWEEP_EVERY == 0) store_sweep(clock_now());
  entry **p = slot(k, kn), *e;
  size_t old = p ? ENTRY_COST((*p)->klen, (*p)->vlen) : 0, now = ENTRY_COST(kn, vn);
  static double swept_full; /* at most one sweep a second when full: each is O(keys) */
  if (mem.bytes - old + now > MEMORY_MAX && clock_now() - swept_full >= 1) {
    swept_full = clock_now();
    store_sweep(swept_full);
    p = slot(k, kn);
    old = p ? ENTRY_COST((*p)->klen, (*p)->vlen) : 0;
  }
  if (mem.bytes - old + now > MEMORY_MAX) return false;
  mem.bytes += now - old;
  if (p) {
    e = *p;
    e->vlen = 0; /* (its cost is counted anew below) */
    free(e->val);
  } else {
    grow();
    e = calloc(1, sizeof *e);
    e->key = malloc(kn ? kn : 1);
    memcpy(e->key, k, kn);
    e->klen = kn;
    size_t i = key_hash(k, kn) & (mem.nb - 1);
    e->next = mem.b[i];
    mem.b[i] = e;
    mem.n++;
  }
  e->val = malloc(vn ? vn : 1);
  memcpy(e->val, v, vn);
  e->vlen = vn;
  if (ttl > 0) e->expires = clock_now() + ttl;
  else if (ttl == 0) e->expires = 0;
  return true;
}

static int store_full(lua_State *L, const char *op) {
  return store_raise(L, "mcp.store.%s: the in-memory store is full (%d MiB of keys and values; "
                       "--store redis://... holds more)", op, (int)(MEMORY_MAX >> 20));
}

/* A decimal integer exactly, as Redis reads one for INCRBY. */
static bool parse_int(const char *s, size_t n, long long *out) {
  char tmp[32];
  if (n == 0 || n >= sizeof tmp) return false;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  char *end;
  errno = 0;
  long long v = strtoll(tmp, &end, 10);
  if (errno || *end || tmp[0] == '+' || tmp[0] == ' ' || (tmp[0] == '0' && n > 1) ||
      (tmp[0] == '-' && (n == 1 || tmp[1] == '0')))
    return false;
  *out = v;
  return true;
}

/* }====================================================== */

/* {====================================================== arguments */

static const char *check_key(lua_State *L, const char *op, size_t *n) {
  if (lua_type(L, 1) != LUA_TSTRING)
    store_raise(L, "mcp.store.%s: the key must be a string, got %s", op, luaL_typename(L, 1));
  const char *k = lua_tolstring(L, 1, n);
  if (*n == 0 || *n > KEY_MAX)
    store_raise(L, "mcp.store.%s: the key must have 1 to %d bytes", op, KEY_MAX);
  return k;
}

/* A TTL argument: 0 when nil, else seconds > 0. */
static double check_ttl(lua_State *L, int i, const char *op) {
  if (lua_isnoneornil(L, i)) return 0;
  if (lua_type(L, i) != LUA_TNUMBER)
    store_raise(L, "mcp.store.%s: the ttl must be a number of seconds, got %s", op, luaL_typename(L, i));
  double t = lua_tonumber(L, i);
  if (!(t >= 0.001 && t <= TTL_MAX))
    store_raise(L, "mcp.store.%s: the ttl must be from 0.001 to %d seconds", op, (int)TTL_MAX);
  return t;
}

/* }====================================================== */

/* {====================================================== redis */

static redis_conn *rconn;
static redis_health rhealth = {.what = "store", .note = "; mcp.store raises meanwhile"};

typedef struct store_op {
  call_wait w;
  call *c; /* NULL once the call ended first */
  int op;
  int type; /* the reply's REDIS_REPLY_*, or -1: the connection went */
  long long integer;
  char *str;
  size_t len;
  char **keys; /* keys(): a page of SCAN's, its cursor in str */
  size_t *klens, nkeys;
  trace_span *span; /* the command as a span of the call's, when traced */
} store_op;

static void op_free(store_op *o) {
  if (o->span) trace_end(o->span);
  for (size_t i = 0; i < o->nkeys; i++) free(o->keys[i]);
  free(o->keys), free(o->klens);
  free(o->str);
  free(o);
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata) {
  (void)ac;
  store_op *o = privdata;
  const redisReply *reply = r;
  if (!o->c) { /* the call ended first (abort) */
    op_free(o);
    return;
  }
  o->type = reply ? reply->type : -1;
  if (o->span) { /* the reply ends it, the call there or not */
    if (!reply || reply->type == REDIS_REPLY_ERROR) trace_error(o->span, reply ? "error reply" : "the connection went");
    trace_end(o->span);
    o->span = NULL;
  }
  if (metrics_on)
    metric_add(metric_at(M_REDIS, (const char *const[]){!reply || reply->type == REDIS_REPLY_ERROR
                                                            ? "error" : "ok"}), 1);
  if (reply && (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_ERROR ||
                reply->type == REDIS_REPLY_STATUS)) {
    o->str = malloc(reply->len + 1);
    memcpy(o->str, reply->str, reply->len);
    o->str[reply->len] = '\0'; /* an error's text goes to luaL_error's %s */
    o->len = reply->len;
  }
  if (reply && reply->type == REDIS_REPLY_INTEGER) o->integer = reply->integer;
  if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
      reply->element[0]->type == REDIS_REPLY_STRING && reply->element[1]->type == REDIS_REPLY_ARRAY) {
    const redisReply *cur = reply->element[0], *list = reply->element[1]; /* SCAN's */
    o->str = strndup(cur->str, cur->len);
    o->len = cur->len;
    o->keys = calloc(list->elements ? list->elements : 1, sizeof *o->keys);
    o->klens = calloc(list->elements ? list->elements : 1, sizeof *o->klens);
    for (size_t i = 0; i < list->elements; i++) {
      const redisReply *k = list->element[i];
      if (k->type != REDIS_REPLY_STRING) continue;
      o->keys[o->nkeys] = malloc(k->len ? k->len : 1);
      memcpy(o->keys[o->nkeys], k->str, k->len);
      o->klens[o->nkeys++] = k->len;
    }
  }
  o->c = NULL;
  lua_pushboolean(call_wait_thread(&o->w), 1); /* no allocation in a loop callback */
  call_wake_wait(&o->w, 1);
}

static void store_on_abort(call_wait *w) {
  store_op *o = (store_op *)((char *)w - offsetof(store_op, w));
  o->c = NULL; /* the reply, when it comes, frees it */
}

/* The reply as Lua values (under a protected call: out of memory). */
static int push_reply(lua_State *L) {
  store_op *o = lua_touserdata(L, 1);
  const char *op = op_names[o->op];
  if (o->type == -1)
    return store_raise(L, "mcp.store.%s: the connection to redis %s was lost", op,
                      redis_conn_name(rconn));
  if (o->type == REDIS_REPLY_ERROR)
    return store_raise(L, "mcp.store.%s: redis: %s", op, o->str ? o->str : "error");
  switch (o->op) {
    case OP_GET:
      if (o->type == REDIS_REPLY_STRING) lua_pushlstring(L, o->str, o->len);
      else lua_pushnil(L);
      return 1;
    case OP_SET:
    case OP_ADD: lua_pushboolean(L, o->type == REDIS_REPLY_STATUS); return 1; /* NX: nil when it was there */
    case OP_INCR: lua_pushinteger(L, (lua_Integer)o->integer); return 1;
    case OP_KEYS:
      if (!o->str) return store_raise(L, "mcp.store.keys: redis: an answer that is no SCAN reply");
      lua_createtable(L, (int)o->nkeys, 0);
      for (size_t i = 0; i < o->nkeys; i++) {
        lua_pushlstring(L, o->keys[i], o->klens[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
      }
      if (o->len == 1 && o->str[0] == '0') lua_pushnil(L); /* the last page */
      else lua_pushlstring(L, o->str, o->len);
      return 2;
    default: lua_pushboolean(L, o->integer > 0); return 1;
  }
}

static int op_done(lua_State *L, int status, lua_KContext k) {
  (void)status;
  /* woken with the reply (a call that ends first is never resumed) */
  store_op *o = (store_op *)(intptr_t)k;
  lua_settop(L, 0);
  lua_pushcfunction(L, push_reply);
  lua_pushlightuserdata(L, o);
  int st = lua_pcall(L, 1, LUA_MULTRET, 0);
  op_free(o);
  if (st != LUA_OK) return lua_error(L);
  return lua_gettop(L);
}

/* Send the command and park the call on its reply. */
static int redis_op(lua_State *L, int op, int argc, const char **argv, const size_t *lens) {
  call *c = call_current(L);
  const char *why = call_cannot_park(L, c);
  if (why) return store_raise(L, "mcp.store.%s: %s", op_names[op], why);
  redisAsyncContext *ac = redis_conn_ctx(rconn);
  if (!ac)
    return store_raise(L, "mcp.store.%s: redis %s is unreachable (reconnecting)", op_names[op],
                      redis_conn_name(rconn));
  store_op *o = calloc(1, sizeof *o);
  o->op = op;
  o->c = c;
  o->w = (call_wait){.abort = store_on_abort, .what = "mcp.store"};
  if (redisAsyncCommandArgv(ac, on_reply, o, argc, argv, lens) != REDIS_OK) {
    free(o);
    return store_raise(L, "mcp.store.%s: redis %s: the command was not sent", op_names[op],
                      redis_conn_name(rconn));
  }
  trace_span *parent = trace_on ? call_span(c) : NULL;
  if (parent) {
    char name[64];
    snprintf(name, sizeof name, "redis %s", argv[0]);
    if ((o->span = trace_start(trace_context(parent), name, TRACE_CLIENT))) {
      trace_attr_str(o->span, "db.system.name", "redis");
      trace_attr_str(o->span, "db.operation.name", argv[0]); /* never the key or the value */
    }
  }
  lua_settop(L, 0); /* what op_done finds tells a reply from an abort */
  call_park(c, &o->w);
  return lua_yieldk(L, 0, (lua_KContext)(intptr_t)o, op_done);
}

/* cas: ARGV = has old, old, has new, new, TTL in ms (0: none) */
static const char cas_script[] =
    "local cur = redis.call('GET', KEYS[1]) "
    "if ARGV[1] == '1' then if cur ~= ARGV[2] then return 0 end elseif cur then return 0 end "
    "if ARGV[3] == '0' then redis.call('DEL', KEYS[1]) "
    "elseif ARGV[5] ~= '0' then redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5]) "
    "else redis.call('SET', KEYS[1], ARGV[4]) end return 1";

static const char incr_script[] =
    "local v = redis.call('INCRBY', KEYS[1], ARGV[1]) "
    "if ARGV[2] ~= '0' and redis.call('PTTL', KEYS[1]) == -1 then "
    "redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return v";

/* }====================================================== */

/* {====================================================== the functions */

static void in_call(lua_State *L, const char *op) {
  if (!call_current(L)) store_raise(L, "mcp.store.%s: only inside a handler", op);
}

static int store_get(lua_State *L) {
  in_call(L, "get");
  size_t kn;
  const char *k = check_key(L, "get", &kn);
  if (rconn) {
    const char *argv[] = {"GET", k};
    size_t lens[] = {3, kn};
    return redis_op(L, OP_GET, 2, argv, lens);
  }
  entry **p = slot(k, kn);
  if (p) lua_pushlstring(L, (*p)->val, (*p)->vlen);
  else lua_pushnil(L);
  return 1;
}

/* A value argument: a string, or a number as its decimal text (as Lua
   writes it); with may_be_nil, nil is NULL. */
static const char *check_value(lua_State *L, int i, const char *op, bool may_be_nil, size_t *n) {
  int t = lua_type(L, i);
  if (may_be_nil && t <= LUA_TNIL) {
    *n = 0;
    return NULL;
  }
  if (t != LUA_TSTRING && t != LUA_TNUMBER)
    store_raise(L, "mcp.store.%s: the value must be a string or a number%s, got %s", op,
               may_be_nil ? " (or nil)" : "", luaL_typename(L, i));
  const char *v = lua_tolstring(L, i, n);
  if (*n > VALUE_MAX) store_raise(L, "mcp.store.%s: the value is larger than %d MiB", op, (int)(VALUE_MAX >> 20));
  return v;
}

static void ttl_ms(double ttl, char ms[32]) { snprintf(ms, 32, "%.0f", ceil(ttl * 1000.0)); }

static int store_set(lua_State *L) {
  in_call(L, "set");
  size_t kn, vn;
  const char *k = check_key(L, "set", &kn);
  const char *v = check_value(L, 2, "set", false, &vn);
  double ttl = check_ttl(L, 3, "set");
  if (rconn) {
    char ms[32];
    ttl_ms(ttl, ms);
    const char *argv[] = {"SET", k, v, "PX", ms};
    size_t lens[] = {3, kn, vn, 2, strlen(ms)};
    return redis_op(L, OP_SET, ttl > 0 ? 5 : 3, argv, lens);
  }
  if (!mem_put(k, kn, v, vn, ttl)) return store_full(L, "set");
  lua_pushboolean(L, 1);
  return 1;
}

/* add(key, value [, ttl]): set only if the key is absent; whether it was */
static int store_add(lua_State *L) {
  in_call(L, "add");
  size_t kn, vn;
  const char *k = check_key(L, "add", &kn);
  const char *v = check_value(L, 2, "add", false, &vn);
  double ttl = check_ttl(L, 3, "add");
  if (rconn) {
    char ms[32];
    ttl_ms(ttl, ms);
    const char *argv[] = {"SET", k, v, "NX", "PX", ms};
    size_t lens[] = {3, kn, vn, 2, 2, strlen(ms)};
    return redis_op(L, OP_ADD, ttl > 0 ? 6 : 4, argv, lens);
  }
  bool absent = slot(k, kn) == NULL;
  if (absent && !mem_put(k, kn, v, vn, ttl)) return store_full(L, "add");
  lua_pushboolean(L, absent);
  return 1;
}

/* cas(key, old, new [, ttl]): new (nil: delete) only if the value is old
   now (nil: absent); whether it was. new is set as set sets it (its ttl,
   or none). */
static int store_cas(lua_State *L) {
  in_call(L, "cas");
  size_t kn, on, nn;
  const char *k = check_key(L, "cas", &kn);
  const char *old = check_value(L, 2, "cas", true, &on);
  const char *fresh = check_value(L, 3, "cas", true, &nn);
  double ttl = check_ttl(L, 4, "cas");
  if (rconn) {
    char ms[32];
    ttl_ms(ttl, ms);
    const char *argv[] = {"EVAL", cas_script, "1", k, old ? "1" : "0", old ? old : "", fresh ? "1" : "0",
                          fresh ? fresh : "", ms};
    size_t lens[] = {4, sizeof cas_script - 1, 1, kn, 1, on, 1, nn, strlen(ms)};
    return redis_op(L, OP_CAS, 9, argv, lens);
  }
  entry **p = slot(k, kn);
  bool same = old ? p && (*p)->vlen == on && memcmp((*p)->val, old, on) == 0 : p == NULL;
  if (same && fresh) {
    if (!mem_put(k, kn, fresh, nn, ttl)) return store_full(L, "cas");
  } else if (same && p) {
    entry *e = *p;
    *p = e->next;
    entry_free(e);
    mem.n--;
  }
  lua_pushboolean(L, same);
  return 1;
}

/* keys(prefix [, cursor]): a page of the keys that start with prefix and
   the cursor of the next page (nil after the last). A key there the whole
   time is on some page; one may come twice (Redis's SCAN, or the memory
   table growing between pages). */
static int store_keys(lua_State *L) {
  in_call(L, "keys");
  if (lua_type(L, 1) != LUA_TSTRING)
    return store_raise(L, "mcp.store.keys: the prefix must be a string, got %s", luaL_typename(L, 1));
  size_t pn, cn = 1;
  const char *prefix = lua_tolstring(L, 1, &pn);
  if (pn > KEY_MAX) return store_raise(L, "mcp.store.keys: the prefix is longer than a key may be (%d bytes)", KEY_MAX);
  const char *cursor = "0";
  if (!lua_isnoneornil(L, 2)) {
    if (lua_type(L, 2) != LUA_TSTRING)
      return store_raise(L, "mcp.store.keys: the cursor must be the string a page gave, got %s", luaL_typename(L, 2));
    cursor = lua_tolstring(L, 2, &cn);
  }
  long long at;
  if (!parse_int(cursor, cn, &at) || at < 0)
    return store_raise(L, "mcp.store.keys: '%s' is not a cursor a page gave", cursor);
  if (rconn) {
    buf match; /* the prefix as a glob: its own * ? [ ] \\ escaped */
    buf_init(&match);
    for (size_t i = 0; i < pn; i++) {
      if (prefix[i] && strchr("*?[]\\", prefix[i])) buf_putc(&match, '\\');
      buf_putc(&match, prefix[i]);
    }
    buf_putc(&match, '*');
    /* on the stack, not in C: redis_op yields (a longjmp) once it is sent */
    lua_pushlstring(L, match.p, match.len);
    buf_free(&match);
    size_t mn;
    const char *m = lua_tolstring(L, -1, &mn);
    char count[16];
    snprintf(count, sizeof count, "%d", KEYS_PAGE);
    const char *argv[] = {"SCAN", cursor, "MATCH", m, "COUNT", count};
    size_t lens[] = {4, cn, 5, mn, 5, strlen(count)};
    return redis_op(L, OP_KEYS, 6, argv, lens);
  }
  lua_newtable(L);
  size_t n = 0, b = (size_t)at;
  double t = clock_now();
  for (; b < mem.nb && n < KEYS_PAGE; b++)
    for (entry *e = mem.b[b]; e; e = e->next)
      if (e->klen >= pn && memcmp(e->key, prefix, pn) == 0 && !expired(e, t)) {
        lua_pushlstring(L, e->key, e->klen);
        lua_rawseti(L, -2, (lua_Integer)++n);
      }
  if (b >= mem.nb) lua_pushnil(L);
  else lua_pushfstring(L, "%d", (int)b);
  return 2;
}

static int store_incr(lua_State *L) {
  in_call(L, "incr");
  size_t kn;
  const char *k = check_key(L, "incr", &kn);
  lua_Integer by = 1;
  if (!lua_isnoneornil(L, 2)) {
    int isint;
    by = lua_tointegerx(L, 2, &isint);
    if (!isint || lua_type(L, 2) != LUA_TNUMBER)
      return store_raise(L, "mcp.store.incr: the increment must be an integer");
  }
  double ttl = check_ttl(L, 3, "incr");
  if (rconn) {
    char bys[32], ms[32];
    snprintf(bys, sizeof bys, "%lld", (long long)by);
    snprintf(ms, sizeof ms, "%.0f", ceil(ttl * 1000.0));
    if (ttl <= 0) { /* no TTL to set: INCRBY alone (a script costs Redis a SHA-1 a call) */
      const char *argv[] = {"INCRBY", k, bys};
      size_t lens[] = {6, kn, strlen(bys)};
      return redis_op(L, OP_INCR, 3, argv, lens);
    }
    const char *argv[] = {"EVAL", incr_script, "1", k, bys, ms};
    size_t lens[] = {4, sizeof incr_script - 1, 1, kn, strlen(bys), strlen(ms)};
    return redis_op(L, OP_INCR, 6, argv, lens);
  }
  entry **p = slot(k, kn);
  long long cur = 0;
  if (p && !parse_int((*p)->val, (*p)->vlen, &cur))
    return store_raise(L, "mcp.store.incr: the value of '%s' is not an integer", k);
  if ((by > 0 && cur > LLONG_MAX - by) || (by < 0 && cur < LLONG_MIN - by))
    return store_raise(L, "mcp.store.incr: '%s' would overflow", k);
  cur += by;
  char num[32];
  int n = snprintf(num, sizeof num, "%lld", cur);
  /* like the script: a TTL only for a key that has none */
  if (!mem_put(k, kn, num, (size_t)n, ttl > 0 && !(p && (*p)->expires) ? ttl : -1))
    return store_full(L, "incr");
  lua_pushinteger(L, (lua_Integer)cur);
  return 1;
}

static int store_delete(lua_State *L) {
  in_call(L, "delete");
  size_t kn;
  const char *k = check_key(L, "delete", &kn);
  if (rconn) {
    const char *argv[] = {"DEL", k};
    size_t lens[] = {3, kn};
    return redis_op(L, OP_DELETE, 2, argv, lens);
  }
  entry **p = slot(k, kn);
  if (p) {
    entry *e = *p;
    *p = e->next;
    entry_free(e);
    mem.n--;
  }
  lua_pushboolean(L, p != NULL);
  return 1;
}

/* The backend (lua/mcp.lua asks at each operation: --store is known only
   once the app has loaded): Redis while its connection is there, else
   memory with --store memory, else the app's database (lua/store_db.lua). */
static bool use_memory;

static int store_backend(lua_State *L) {
  lua_pushstring(L, rconn ? "redis" : use_memory ? "memory" : "db");
  return 1;
}

/* Wall-clock milliseconds: the database's expiries outlive the process,
   so they cannot be clock_now()'s. */
static int store_now_ms(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  lua_pushinteger(L, (lua_Integer)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
  return 1;
}

/* }====================================================== */

void store_push(lua_State *L) {
  static const luaL_Reg fns[] = {{"get", store_get},
                                 {"set", store_set},
                                 {"incr", store_incr},
                                 {"delete", store_delete},
                                 {"add", store_add},
                                 {"cas", store_cas},
                                 {"keys", store_keys},
                                 {"backend", store_backend},
                                 {"now_ms", store_now_ms},
                                 {NULL, NULL}};
  luaL_newlib(L, fns);
}

void store_use_memory(void) { use_memory = true; }

void store_use_redis(engine *e, const char *url) {
  redis_url u;
  char why[128];
  if (!redis_url_parse(url, &u, why, sizeof why)) return; /* checked by main.c */
  rconn = redis_conn_new(e, &u, &rhealth, NULL, NULL);
}

static void timer_fired(uv_timer_t *t) { *(bool *)t->data = true; }

bool store_wait_connected(engine *e, double seconds) {
  if (!rconn) return true;
  uv_loop_t *loop = engine_loop(e);
  bool late = false;
  uv_timer_t t;
  uv_timer_init(loop, &t);
  t.data = &late;
  uv_timer_start(&t, timer_fired, (uint64_t)(seconds * 1000.0), 0);
  int down = rhealth.down;
  while (!redis_conn_ctx(rconn) && !late && rhealth.down == down) uv_run(loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(loop, UV_RUN_NOWAIT); /* the close */
  return redis_conn_ctx(rconn) != NULL;
}

redis_conn *store_redis(void) { return rconn; }

void store_drop_redis(void) {
  redis_conn_free(rconn);
  rconn = NULL;
}

void store_close(void) {
  store_drop_redis();
  for (size_t i = 0; i < mem.nb; i++) /* every entry, those without a TTL too */
    for (entry *e = mem.b[i], *next; e; e = next) {
      next = e->next;
      entry_free(e);
    }
  free(mem.b);
  mem.b = NULL;
  mem.nb = mem.n = 0;
}

bool store_ready(char *why, size_t cap) {
  /* rconn is set before serving and dropped after: not while requests come */
  if (!rconn || (rhealth.live > 0 && rhealth.down == 0)) return true;
  snprintf(why, cap, "mcp.store: redis %s is not connected", redis_conn_name(rconn));
  return false;
}
