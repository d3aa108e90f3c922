/* thread_stack.c — room on civetweb's worker stacks for Lua handlers.
 *
 * A worker that finds the engine idle runs the handler of its own request
 * (engine.c: help). Debian's civetweb gives its workers 100 kB stacks
 * (built with USE_STACK_SIZE), where a handler that decodes deeply nested
 * JSON with lua-cjson, or nests C calls, overflowed and crashed the
 * server (the engine thread has the default 8 MB). civetweb sets that size
 * with pthread_attr_setstacksize, which this definition in the executable
 * takes the place of: no thread of the process gets less than
 * MIN_THREAD_STACK. Only touched pages count as memory, so idle RSS stays
 * the same. Should the override ever not apply (say, a static civetweb),
 * engine.c sees the small stack and leaves the work to the engine thread. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "thread_stack.h"

typedef int (*setstacksize_fn)(pthread_attr_t *, size_t);

int pthread_attr_setstacksize(pthread_attr_t *attr, size_t size) {
  setstacksize_fn real = (setstacksize_fn)dlsym(RTLD_NEXT, "pthread_attr_setstacksize");
  if (!real) return 0; /* cannot happen with glibc; the default size then applies */
  return real(attr, size < MIN_THREAD_STACK ? MIN_THREAD_STACK : size);
}
