/* curl_dl.c — libcurl by dlopen (curl_dl.h). */
#include "curl_dl.h"

#include <dlfcn.h>
#include <pthread.h>

#include "log.h"

curl_dl_table curl_dl;

/* NULL once libcurl is loaded, else why it cannot be (it is tried once). */
static const char *curl_load(void) {
  static const char *why = "not loaded";
  static bool tried;
  if (tried) return why;
  tried = true;
  void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!h) return why = "libcurl is not installed (Debian: libcurl4)";
#define SYM(field, name) \
  if (!(*(void **)&curl_dl.field = dlsym(h, name))) return why = "libcurl lacks " name;
  SYM(global_init, "curl_global_init")
  SYM(version_info, "curl_version_info")
  SYM(multi_init, "curl_multi_init")
  SYM(multi_setopt, "curl_multi_setopt")
  SYM(multi_add_handle, "curl_multi_add_handle")
  SYM(multi_remove_handle, "curl_multi_remove_handle")
  SYM(multi_assign, "curl_multi_assign")
  SYM(multi_info_read, "curl_multi_info_read")
  SYM(multi_socket_action, "curl_multi_socket_action")
  SYM(multi_strerror, "curl_multi_strerror")
  SYM(easy_init, "curl_easy_init")
  SYM(easy_perform, "curl_easy_perform")
  SYM(easy_reset, "curl_easy_reset")
  SYM(easy_cleanup, "curl_easy_cleanup")
  SYM(easy_setopt, "curl_easy_setopt")
  SYM(easy_getinfo, "curl_easy_getinfo")
  SYM(easy_strerror, "curl_easy_strerror")
  SYM(slist_append, "curl_slist_append")
  SYM(slist_free_all, "curl_slist_free_all")
#undef SYM
  return why = NULL;
}

static bool global_ok;
static void global_init(void) {
  if (curl_load() || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return;
  global_ok = true;
  const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
  if (!(v->features & CURL_VERSION_ASYNCHDNS))
    log_msg(LOG_WARNING, "mcp.http: libcurl %s resolves names synchronously: "
            "a slow DNS answer stops the server while it waits", v->version);
}

bool curl_dl_ready(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, global_init);
  return global_ok;
}

const char *curl_dl_why(void) { return curl_load(); }
