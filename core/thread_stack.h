/* thread_stack.h — how much stack a thread needs to run Lua handlers (see
 * thread_stack.c for why civetweb's workers get it). */
#ifndef LUAMCP_THREAD_STACK_H
#define LUAMCP_THREAD_STACK_H

/* What every thread of the process gets at least: the usual default. */
#define MIN_THREAD_STACK ((size_t)8 << 20)
/* Less than this and a thread hands its messages to the engine thread. */
#define HELP_THREAD_STACK ((size_t)1 << 20)

#endif
