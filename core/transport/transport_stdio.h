/* transport_stdio.h — newline-delimited JSON-RPC over a pair of file
 * descriptors (stdin/stdout for `luamcp serve`). Input is read on the
 * engine thread (engine_add_input): see engine.h for why. */
#ifndef LUAMCP_TRANSPORT_STDIO_H
#define LUAMCP_TRANSPORT_STDIO_H

#include <stddef.h>

#include "server.h"

/* Serve one client until its input ends (or engine_finish is called): runs
   the engine on the calling thread. max_message bounds one line. */
void transport_stdio_serve(server *srv, int in_fd, int out_fd, size_t max_message);

#endif
