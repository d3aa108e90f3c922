/* io_exec.h — mcp.exec{argv..., stdin=, env=, cwd=, timeout=, ...}: run a
 * child process (no shell) while other calls go on; see io_exec.c. */
#ifndef LUAMCP_IO_EXEC_H
#define LUAMCP_IO_EXEC_H

typedef struct lua_State lua_State;

/* Push the mcp.exec function (the module is a function, not a table). */
void io_exec_push(lua_State *L);

#endif
