/* vm.h — the Lua state an app version runs in, as the engine sees it: the
 * state with a memory-accounting allocator (so a call's growth can be
 * capped while it runs), the guards that keep scripts inside the limits
 * (lua_guard.h, lua_pattern.h, lua_bounded.h), and the one protected-call
 * helper. What the state holds (the mcp module, the registry) is the MCP
 * layer's business (app.h): the engine knows a version only as a vm and,
 * opaquely, its owner. */
#ifndef LUAMCP_VM_H
#define LUAMCP_VM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "lua_pattern.h" /* lua_pattern_interrupt */

typedef struct vm_limits {
  /* Why the running call must stop now (its deadline, the client's cancel),
     or NULL: asked by C functions that run long inside one Lua call. */
  lua_pattern_interrupt interrupt;
  /* Does L run inside a handler's call? (debug.sethook is refused there) */
  bool (*in_call)(lua_State *L);
} vm_limits;

typedef struct vm {
  lua_State *L;
  /* allocator accounting: bytes in use and, while a call runs, the most
     they may reach (0 = no ceiling) */
  size_t mem_used, mem_ceiling;
  int refs;    /* calls in flight on this state (the engine's count) */
  /* handlers resumed on it (call_start): a reload learns whether one ran
     while the next version loaded, and so may have changed mcp.state */
  unsigned long runs;
  void *owner; /* what the layer above loaded into it (an app) */
  double load_deadline; /* while loading under vm_limit_load (monotonic s); 0: not */
  double load_seconds;  /* ... what it was given (named when it runs out) */
  /* set by another thread, the load stops at its next hook (vm_limit_load);
     NULL: nobody stops it. The owner keeps it alive while the load runs. */
  const atomic_bool *load_stop;
  bool (*in_call)(lua_State *L);
} vm;

/* Open v->L with the standard libraries and the guards; binary chunks
   only with allow_bytecode. False when no state could be made. */
bool vm_open(vm *v, void *owner, bool allow_bytecode, const vm_limits *limits);
void vm_close(vm *v);

/* Loading (the app's scripts at their top level) gets `seconds`: past
   them every instruction raises "loading took longer than --load-timeout",
   at the script's line, so a loop at a script's top level ends the load
   (the last good version keeps serving) instead of running on. So does
   *load_stop once set (shutdown, a newer change), at once. HUGE_VAL: no time
   limit, only the stop. 0 lifts the limit (before any call runs: call
   coroutines copy the main thread's hook). */
void vm_limit_load(vm *v, double seconds);
/* Is the load's time over, or was it stopped? (what is left to load is
   not started) */
bool vm_load_expired(const vm *v);

/* Call the function on top of L's stack with nargs under lua_pcall and a
   traceback handler; on error leaves the message (first line: file:line:
   message) and returns the status; the traceback goes to *traceback when
   given. */
int vm_pcall(lua_State *L, int nargs, int nresults, buf *traceback);

#endif
