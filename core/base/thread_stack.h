/* thread_stack.h — how much stack a thread needs to run Lua handlers (see
 * thread_stack.c for why civetweb's workers get it). */
#ifndef LUAMCP_THREAD_STACK_H
#define LUAMCP_THREAD_STACK_H

/* What every thread of the process gets at least: four times what the
   deepest C nesting Lua allows needed over HTTP (pcall, gsub and sort
   callbacks, __index chains near LUAI_MAXCCALLS, lua-cjson's 999 levels;
   docs/PERFORMANCE.md). Address space, not memory: only touched pages
   count. */
#define MIN_THREAD_STACK ((size_t)2 << 20)
/* Less than this and a thread hands its messages to the engine thread. */
#define HELP_THREAD_STACK ((size_t)1 << 20)

#endif
