/* transport_stdio.h — newline-delimited JSON-RPC over a pair of file
 * descriptors (stdin/stdout for `luamcp serve`). A reader thread frames
 * lines and hands them to the engine; the engine thread writes replies. */
#ifndef LUAMCP_TRANSPORT_STDIO_H
#define LUAMCP_TRANSPORT_STDIO_H

#include <stddef.h>

#include "engine.h"

/* Serve one client until its input ends (or engine_finish is called):
   runs the engine on the calling thread. max_message bounds one line. */
void transport_stdio_serve(engine *e, int in_fd, int out_fd, size_t max_message);

#endif
