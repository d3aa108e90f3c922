/* call_error.c — the text of a handler's error: "FILE:LINE: message" for
 * any value it raised (a string, a table with a message field, an object
 * with __tostring, run under the call's limits for a moment). */
#include "engine_internal.h"

#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "clock.h"
#include "json.h"
#include "log.h"

/* Does s begin with a position ("file:line: "), as error("...") makes? */
bool call_has_position(const char *s, size_t n) {
  const char *end = s + (n < 400 ? n : 400);
  const char *colon = memchr(s, ':', (size_t)(end - s));
  if (!colon || colon == s || memchr(s, '\n', (size_t)(colon - s))) return false;
  const char *p = colon + 1;
  if (p >= end || *p < '0' || *p > '9') return false;
  while (p < end && *p >= '0' && *p <= '9') p++;
  return p + 1 < end && p[0] == ':' && p[1] == ' ';
}

/* The innermost line of the app's own code on co's stack (not C, not the
   embedded mcp.lua, client.lua, mount.lua, store_db.lua): where error() was called. The stack of a coroutine
   that died of an error is still there to read. */
void call_script_position(lua_State *co, buf *out) {
  lua_Debug ar;
  for (int level = 0; lua_getstack(co, level, &ar); level++) {
    if (!lua_getinfo(co, "Sl", &ar) || ar.currentline <= 0 || strcmp(ar.source, "=mcp.lua") == 0 ||
        strcmp(ar.source, "=client.lua") == 0 || strcmp(ar.source, "=mount.lua") == 0 ||
        strcmp(ar.source, "=store_db.lua") == 0)
      continue;
    buf_printf(out, "%s:%d: ", ar.short_src, ar.currentline);
    return;
  }
}

/* An error object's __tostring, run on a thread of its own under the
   call's count hook and deadline, cut to 0.1 s (script code: it may loop
   or raise).
   Appends its string and returns true, or false. */
static bool error_tostring(engine *e, call *c, lua_State *co, buf *out) {
  if (!lua_getmetatable(co, -1)) return false;
  lua_pushliteral(co, "__tostring");
  lua_rawget(co, -2);
  lua_remove(co, -2);
  if (!lua_isfunction(co, -1)) {
    lua_pop(co, 1);
    return false;
  }
  lua_State *L = c->v->L;
  lua_State *t = lua_newthread(L);
  *(call **)lua_getextraspace(t) = c;
  lua_sethook(t, call_count_hook, LUA_MASKCOUNT, HOOK_COUNT);
  lua_pushvalue(co, -2);
  lua_xmove(co, t, 2); /* the function and the error object */
  int nres = 0;
  /* the call has failed already: a tenth of a second to say why, at most */
  double cap = clock_now() + 0.1;
  if (c->deadline > cap) c->deadline = cap;
  e->running = c;
  int status = lua_resume(t, L, 1, &nres);
  e->running = NULL;
  bool ok = status == LUA_OK && nres >= 1 && lua_type(t, -nres) == LUA_TSTRING;
  if (ok) {
    size_t n;
    const char *s = lua_tolstring(t, -nres, &n);
    buf_put(out, s, n);
  }
  *(call **)lua_getextraspace(t) = NULL;
  lua_pop(L, 1); /* the thread: collected */
  return ok;
}

/* The message of the error object on top of co: a string as it is, a
   table's `message` field or __tostring, else what the value is — with
   the script's position in front when it has none. */
void call_error_text(engine *e, call *c, buf *out) {
  lua_State *co = c->co;
  buf m;
  buf_init(&m);
  int t = lua_type(co, -1);
  if (t == LUA_TSTRING || t == LUA_TNUMBER) {
    lua_pushvalue(co, -1); /* tolstring converts a number in place: on a copy */
    size_t n;
    const char *s = lua_tolstring(co, -1, &n);
    buf_put(&m, s, n);
    lua_pop(co, 1);
  } else if (t == LUA_TTABLE) {
    lua_pushliteral(co, "message");
    if (lua_rawget(co, -2) == LUA_TSTRING) {
      size_t n;
      const char *s = lua_tolstring(co, -1, &n);
      buf_put(&m, s, n);
    }
    lua_pop(co, 1);
    if (!m.len && !error_tostring(e, c, co, &m)) {
      buf_puts(&m, "error raised with a table: ");
      char err[64];
      size_t mark = m.len;
      if (!json_encode_sorted(co, -1, &m, err, sizeof err)) {
        m.len = mark;
        buf_puts(&m, "(it has no message field)");
      }
      if (m.len > 300) m.len = 300, buf_puts(&m, "...");
    }
  } else {
    buf_printf(&m, "error raised with a %s value", lua_typename(co, t));
  }
  if (!call_has_position(m.p ? m.p : "", m.len)) call_script_position(co, out);
  buf_put(out, m.p ? m.p : "", m.len);
  buf_free(&m);
}
