/* pq_dl.c — libpq by dlopen (pq_dl.h). */
#define PQ_DL_OWN_NAMES
#include "pq_dl.h"

#include <dlfcn.h>
#include <pthread.h>

pq_dl_table pq_dl;

static const char *why = "not loaded";
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
  void *h = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    why = "libpq is not installed (Debian: apt-get install libpq5)";
    return;
  }
#define PQ_DL_SYM(name)                                                  \
  if (!(*(void **)&pq_dl.name = dlsym(h, #name))) {                      \
    why = "libpq lacks " #name " (PostgreSQL's libpq 14 or newer is needed)"; \
    return;                                                              \
  }
  PQ_DL_FUNCS(PQ_DL_SYM)
#undef PQ_DL_SYM
  why = NULL;
}

bool pq_dl_ready(void) {
  pthread_once(&once, load);
  return why == NULL;
}

const char *pq_dl_why(void) {
  pthread_once(&once, load);
  return why;
}
