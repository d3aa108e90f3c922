/* io_exec.h — mcp.exec{argv..., stdin=, env=, cwd=, timeout=, ...}: run a
 * child process (no shell) while other calls go on; see io_exec.c. */
#ifndef LUAMCP_IO_EXEC_H
#define LUAMCP_IO_EXEC_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct lua_State lua_State;

/* Push the mcp.exec function (the module is a function, not a table). */
void io_exec_push(lua_State *L);

/* Start argv (looked up on PATH) as the leader of a new session and process
   group, with the default signal dispositions, envp (NULL: the server's
   environment) and cwd (NULL: the server's); stdin a pipe when with_stdin,
   else /dev/null; stdout and stderr pipes. The server's ends (close-on-exec)
   go to mine[0..2] (-1: none). 0 or an errno. Shared by mcp.exec and the
   stdio upstreams of mcp.client (mcp_client.c). */
int io_exec_spawn(const char *const *argv, char *const *envp, const char *cwd, bool with_stdin,
                  pid_t *pid, int mine[3]);

#endif
