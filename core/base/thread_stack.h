/* thread_stack.h — how much stack a thread needs to run Lua handlers (see
 * thread_stack.c for why civetweb's workers get it). */
#ifndef LUAMCP_THREAD_STACK_H
#define LUAMCP_THREAD_STACK_H

/* What every thread of the process gets at least. Measured over HTTP: the
   deepest C nesting Lua allows (pcall, gsub and sort callbacks, __index
   chains near LUAI_MAXCCALLS; lua-cjson decoding and encoding 999 levels)
   all fit in 512 kB; this is four times that, and 64 workers reserve
   128 MB of address space (touched pages only count as memory). */
#define MIN_THREAD_STACK ((size_t)2 << 20)
/* Less than this and a thread hands its messages to the engine thread. */
#define HELP_THREAD_STACK ((size_t)1 << 20)

#endif
