/* param_headers.c — 2026-07-28 over HTTP: a tool's x-mcp-header
 * parameters, each held against its Mcp-Param-* header. */
#include "server_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>
#include <lua.h>

#include "http_headers.h"
#include "json.h"

/* The value of header Mcp-Param-<name> among im's (names match ignoring
   case), or NULL. */
static const char *param_header(const inmsg *im, const char *name) {
  for (const char *p = im->params, *end = p + im->params_len; p && p < end;) {
    const char *v = p + strlen(p) + 1;
    if (strcasecmp(p, name) == 0) return v;
    p = v + strlen(v) + 1;
  }
  return NULL;
}

/* The decimal form of the integer at idx (an integer, or a float with an
   integral value: 42.0 in the body is 42), or false. */
static bool decimal_of(lua_State *L, int idx, char *out, size_t cap) {
  long long v;
  if (lua_isinteger(L, idx)) {
    v = (long long)lua_tointeger(L, idx);
  } else if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_Number f = lua_tonumber(L, idx);
    if (!(f == floor(f)) || f < -9007199254740992.0 || f > 9007199254740992.0) return false;
    v = (long long)f;
  } else {
    return false;
  }
  snprintf(out, cap, "%lld", v);
  return true;
}

/* 2026-07-28 over HTTP: the tool's x-mcp-header parameters against the
   Mcp-Param-* headers (the arguments on top of L). False after answering
   -32020 (HeaderMismatch). */
bool param_headers_ok(server *srv, inmsg *im, const reg_tool *t, lua_State *L) {
  if (t->headers == LUA_NOREF || !proto_per_request(im->cv.version) || !im->http) return true;
  int args = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, t->headers);
  int list = lua_gettop(L);
  buf want, got, why;
  buf_init(&want), buf_init(&got), buf_init(&why);
  size_t n = lua_rawlen(L, list);
  for (size_t i = 1; i <= n && !why.len; i++) {
    lua_rawgeti(L, list, (lua_Integer)i);
    lua_getfield(L, -1, "name");
    const char *name = lua_tostring(L, -1);
    lua_getfield(L, -2, "type");
    const char *type = lua_tostring(L, -1);
    lua_getfield(L, -3, "path");
    int path = lua_gettop(L);
    lua_pushvalue(L, args); /* the value at the path, if any */
    for (lua_Integer k = 1; k <= (lua_Integer)lua_rawlen(L, path) && lua_istable(L, -1); k++) {
      lua_rawgeti(L, path, k);
      lua_rawget(L, -2);
      lua_remove(L, -2);
    }
    const char *h = param_header(im, name);
    got.len = 0;
    if (h && !http_header_decode(h, &got)) {
      buf_printf(&why, "Header mismatch: Mcp-Param-%s header value is malformed", name);
    } else if (!lua_isnil(L, -1) && !json_isnull(L, -1) && lua_type(L, -1) != LUA_TTABLE) {
      want.len = 0;
      char dec[32]; /* an integer's decimal form, before tolstring below converts the value */
      bool integral = strcmp(type, "integer") == 0 && decimal_of(L, -1, dec, sizeof dec);
      if (lua_type(L, -1) == LUA_TBOOLEAN) buf_puts(&want, lua_toboolean(L, -1) ? "true" : "false");
      else if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER) {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len); /* a number converts on the stack copy */
        buf_put(&want, s, len);
      }
      bool same;
      if (!h) same = false;
      else if (strcmp(type, "integer") == 0) /* its decimal form, exactly (42, -7): the spec's */
        same = integral && got.len == strlen(dec) && memcmp(got.p, dec, got.len) == 0;
      else {
        same = got.len == want.len && memcmp(got.p, want.p, got.len) == 0;
      }
      if (!same)
        buf_printf(&why, h ? "Header mismatch: Mcp-Param-%s header does not match the argument"
                           : "Header mismatch: Mcp-Param-%s header is required (the argument is set)",
                   name);
    }
    lua_settop(L, list);
  }
  lua_settop(L, args);
  bool ok = !why.len;
  if (!ok) {
    buf_putc(&why, '\0');
    output_rpc_error(srv, im->reply, im->m.id, MCP_HEADER_MISMATCH, why.p, NULL);
  }
  buf_free(&want), buf_free(&got), buf_free(&why);
  return ok;
}
