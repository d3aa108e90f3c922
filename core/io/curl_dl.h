/* curl_dl.h — libcurl, loaded with dlopen when first needed (mcp.http, the
 * key and introspection threads, the OTLP exporter), not linked: it and
 * what it links (OpenSSL, GnuTLS, LDAP, SSH, ...) were 31 more shared
 * libraries at every start, doubling start-up and idle memory for apps that
 * never make a request (docs/PERFORMANCE.md). */
#ifndef LUAMCP_CURL_DL_H
#define LUAMCP_CURL_DL_H

#include <stdbool.h>

#define CURL_DISABLE_TYPECHECK /* the setopt macros would hide our pointers */
#include <curl/curl.h>

typedef struct curl_dl_table {
  CURLcode (*global_init)(long);
  curl_version_info_data *(*version_info)(CURLversion);
  CURLM *(*multi_init)(void);
  CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
  CURLMcode (*multi_add_handle)(CURLM *, CURL *);
  CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
  CURLMcode (*multi_assign)(CURLM *, curl_socket_t, void *);
  CURLMsg *(*multi_info_read)(CURLM *, int *);
  CURLMcode (*multi_socket_action)(CURLM *, curl_socket_t, int, int *);
  const char *(*multi_strerror)(CURLMcode);
  CURL *(*easy_init)(void);
  CURLcode (*easy_perform)(CURL *);
  void (*easy_reset)(CURL *);
  void (*easy_cleanup)(CURL *);
  CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
  CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
  const char *(*easy_strerror)(CURLcode);
  struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
  void (*slist_free_all)(struct curl_slist *);
} curl_dl_table;
extern curl_dl_table curl_dl;

/* libcurl loaded and initialized, once for the process (the engine's
   thread and the key fetcher may come first; any thread). */
bool curl_dl_ready(void);
/* Why it is not (NULL once loaded). */
const char *curl_dl_why(void);

/* a user of this header calls libcurl by its own names (curl.h defines
   three of them as macros of themselves) */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt
#define curl_global_init curl_dl.global_init
#define curl_version_info curl_dl.version_info
#define curl_multi_init curl_dl.multi_init
#define curl_multi_setopt curl_dl.multi_setopt
#define curl_multi_add_handle curl_dl.multi_add_handle
#define curl_multi_remove_handle curl_dl.multi_remove_handle
#define curl_multi_assign curl_dl.multi_assign
#define curl_multi_info_read curl_dl.multi_info_read
#define curl_multi_socket_action curl_dl.multi_socket_action
#define curl_multi_strerror curl_dl.multi_strerror
#define curl_easy_init curl_dl.easy_init
#define curl_easy_perform curl_dl.easy_perform
#define curl_easy_reset curl_dl.easy_reset
#define curl_easy_cleanup curl_dl.easy_cleanup
#define curl_easy_setopt curl_dl.easy_setopt
#define curl_easy_getinfo curl_dl.easy_getinfo
#define curl_easy_strerror curl_dl.easy_strerror
#define curl_slist_append curl_dl.slist_append
#define curl_slist_free_all curl_dl.slist_free_all

#endif
