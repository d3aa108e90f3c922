/* io_socket.h — mcp.socket: TCP and unix stream sockets as cosockets. A
 * handler that connects, sends or receives parks its call on the engine's
 * loop instead of blocking the server; the script sees luasocket's client
 * API, so pure-Lua libraries written for luasocket run unchanged.
 *
 *   local s = mcp.socket.tcp()          -- or mcp.socket.unix() / .unix.stream()
 *   s:settimeout(2)                      -- seconds; nil: only the call's deadline
 *   assert(s:connect("localhost", 6379)) -- names resolve on libuv's thread pool
 *   s:send("PING\r\n")
 *   local line, err, partial = s:receive("*l")   -- "*l" | "*a" | n (also "l", "a")
 *   s:close()
 *   local c, err = mcp.socket.connect(host, port) -- tcp() + connect() in one
 *
 * Handing it to a luasocket library (e.g. Debian's lua-redis, which does
 * require('socket').tcp() when it connects): make `require "socket"` find
 * mcp.socket before the library asks, once, at load time:
 *
 *   package.loaded.socket = mcp.socket
 *   package.loaded["socket.unix"] = mcp.socket.unix
 *   package.path = "/usr/share/lua/5.3/?.lua;" .. package.path -- Debian ships
 *   local redis = require "redis"                      -- lua-redis for 5.1-5.3
 *   ... in a handler:  local db = redis.connect("127.0.0.1", port)
 *   or with a socket of your own: redis.connect{ socket = mcp.socket.connect(h, p) }
 *
 * A socket may outlive the call that connected it (a pool in mcp.state):
 * each operation parks the call that runs it. One operation at a time: a
 * second call using a socket that is waiting gets nil, "socket busy".
 * mcp.state keeps only plain data across a hot reload: sockets stored there
 * do not carry over (the new version finds nil and reconnects); the old
 * version's sockets close when its last call ends and its state closes.
 * When a call times out or is cancelled while waiting on a socket, the
 * socket is closed (the peer sees the connection end); later use of the
 * object gives nil, "closed". */
#ifndef LUAMCP_IO_SOCKET_H
#define LUAMCP_IO_SOCKET_H

typedef struct lua_State lua_State;

/* Push the mcp.socket module table (and register the socket metatable). */
void io_socket_push(lua_State *L);

#endif
