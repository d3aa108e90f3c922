/*
** lua_floor.c — the bare C + Lua 5.4 + lua-cjson floor of the stdio benchmark.
**
** What any stdio MCP server built on Lua cannot avoid: read NDJSON from
** stdin, hand each line to Lua, decode it with lua-cjson, dispatch on the
** method, encode the reply with cjson.encode, write it to stdout. It knows
** three methods (initialize; tools/call of `echo`; notifications, which get
** no reply) and answers everything else with -32601. No sessions, no schema
** validation, no registry, no coroutines: whatever luamcp adds on top of this
** loop shows as the gap between the two.
**
** It is meant to be a good floor, not a strawman: its I/O loop, shared with
** c_floor.c (ndjson_loop.h), reads input in big chunks split in place, and
** gathers replies and writes them with one write() once no more input is
** waiting, so W requests in flight cost about one read and one write per
** batch, not per message; and, like luamcp, it polls for the next request
** for a moment before it blocks (-s).
**
** Build:  cc -O2 -std=c11 -Wall -Wextra -Werror -I/usr/include/lua5.4 \
**            -o build/bench/lua_floor bench/floor/lua_floor.c -llua5.4-cjson -llua5.4
** Run:    build/bench/lua_floor [-s SPIN_US]   (exits 0 at EOF on stdin)
*/
#define _POSIX_C_SOURCE 200809L
#define FLOOR_NAME "lua_floor"
#include "ndjson_loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <lua-cjson.h> /* needs lua.h first */

/* {====================================================== the Lua side */

/* handle(line) -> reply JSON, or nil for a notification. */
static const char dispatch_lua[] =
  "local cjson = require 'cjson'\n"
  "local decode, encode, null = cjson.decode, cjson.encode, cjson.null\n"
  "local server_info = { name = 'lua-floor', version = '1.0.0' }\n"
  "local function err(id, code, message)\n"
  "  return encode { jsonrpc = '2.0', id = id, error = { code = code, message = message } }\n"
  "end\n"
  "return function(line)\n"
  "  local ok, msg = pcall(decode, line)\n"
  "  if not ok or type(msg) ~= 'table' then return err(null, -32700, 'Parse error') end\n"
  "  local id, method, params = msg.id, msg.method, msg.params\n"
  "  if id == nil then return nil end -- a notification\n"
  "  if type(params) ~= 'table' then params = {} end\n"
  "  if method == 'initialize' then\n"
  "    local v = params.protocolVersion\n"
  "    return encode { jsonrpc = '2.0', id = id, result = {\n"
  "      protocolVersion = type(v) == 'string' and v or '2025-11-25',\n"
  "      capabilities = { tools = {} }, -- cjson encodes an empty table as {}\n"
  "      serverInfo = server_info } }\n"
  "  elseif method == 'tools/call' and params.name == 'echo' then\n"
  "    local args = params.arguments\n"
  "    local text = type(args) == 'table' and args.text\n"
  "    if type(text) ~= 'string' then return err(id, -32602, 'echo needs arguments.text') end\n"
  "    return encode { jsonrpc = '2.0', id = id,\n"
  "                    result = { content = { { type = 'text', text = text } } } }\n"
  "  end\n"
  "  return err(id, -32601, 'Method not found')\n"
  "end\n";

/* Adds a traceback to an error message (lua.c's msghandler). */
static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  luaL_traceback(L, L, msg ? msg : "(error object is not a string)", 1);
  return 1;
}

/* Leaves [msghandler, handle] at stack indices 1 and 2. */
static void setup(lua_State *L) {
  luaL_openlibs(L);
  /* Each request leaves a few short-lived tables: the generational
     collector handles that ~5 % faster than the default incremental one. */
  lua_gc(L, LUA_GCGEN, 0, 0);
  /* Preload the linked-in cjson: require finds it without a dlopen or a
     search of package.cpath, as luamcp (also linked with it) does. */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_cjson);
  lua_setfield(L, -2, "cjson");
  lua_pop(L, 1);
  lua_pushcfunction(L, msghandler);
  if (luaL_loadbuffer(L, dispatch_lua, sizeof dispatch_lua - 1, "=dispatch") != LUA_OK ||
      lua_pcall(L, 0, 1, 1) != LUA_OK) {
    fprintf(stderr, "lua_floor: %s\n", lua_tostring(L, -1));
    exit(1);
  }
}

/* }====================================================== */

/* One request line through Lua; its reply, if any, appended to out. */
static void handle_line(void *ud, struct buf *out, const char *line, size_t n) {
  lua_State *L = ud;
  if (n && line[n - 1] == '\r') n--;
  if (n == 0) return;
  lua_pushvalue(L, 2);
  lua_pushlstring(L, line, n);
  if (lua_pcall(L, 1, 1, 1) != LUA_OK) {
    /* The dispatcher guards its inputs, so this is a bug in it: say so, go on. */
    fprintf(stderr, "lua_floor: %s\n", lua_tostring(L, -1));
  } else if (lua_type(L, -1) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    buf_reserve(out, len + 1);
    memcpy(out->p + out->len, s, len);
    out->p[out->len + len] = '\n';
    out->len += len + 1;
  }
  lua_settop(L, 2);
}

int main(int argc, char **argv) {
  long spin_us = parse_spin(argc, argv);
  lua_State *L = luaL_newstate();
  if (!L) { fputs("lua_floor: cannot create a Lua state\n", stderr); return 1; }
  setup(L);
  int status = ndjson_loop(spin_us, handle_line, L);
  lua_close(L);
  return status;
}
