/* http_client.c — a request from a thread of its own (http_client.h). */
#include "http_client.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "curl_dl.h"

typedef struct get_op {
  buf *body;
  size_t max;
  long max_age;
  const atomic_bool *cancel;
} get_op;

static int get_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
  (void)a, (void)b, (void)c, (void)d;
  const get_op *g = ud;
  return g->cancel && atomic_load(g->cancel); /* non-zero: the transfer ends */
}

static size_t get_body(char *p, size_t size, size_t n, void *ud) {
  get_op *g = ud;
  size_t len = size * n;
  if (len > g->max - g->body->len) return 0;
  buf_put(g->body, p, len);
  return len;
}

/* Cache-Control: max-age=N (no-store, no-cache: 0) */
static size_t get_header(char *p, size_t size, size_t n, void *ud) {
  get_op *g = ud;
  size_t len = size * n;
  if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) g->max_age = -1; /* a new response */
  if (len > 14 && strncasecmp(p, "cache-control:", 14) == 0) {
    char v[256];
    snprintf(v, sizeof v, "%.*s", (int)(len - 14), p + 14);
    for (char *q = v; *q; q++) *q = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
    const char *ma = strstr(v, "max-age=");
    if (strstr(v, "no-store") || strstr(v, "no-cache")) g->max_age = 0;
    else if (ma) g->max_age = strtol(ma + 8, NULL, 10);
  }
  return len;
}

bool http_client_fetch(const http_client_request *r, buf *body, long *max_age, char *err, size_t cap) {
  const char *url = r->url;
  double timeout = r->timeout;
  size_t max = r->max;
  const atomic_bool *cancel = r->cancel;
  *max_age = -1;
  if (!curl_dl_ready()) {
    snprintf(err, cap, "%s", curl_dl_why() ? curl_dl_why() : "libcurl failed to start");
    return false;
  }
  CURL *e = curl_easy_init();
  if (!e) {
    snprintf(err, cap, "out of memory");
    return false;
  }
  char cerr[CURL_ERROR_SIZE] = "";
  get_op g = {body, max, -1, cancel};
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, cerr);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L); /* a key document is where it is said to be */
  curl_easy_setopt(e, CURLOPT_USERAGENT, "luamcp/" LUAMCP_VERSION);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)ceil(timeout * 1000.0));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, get_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &g);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, get_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &g);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, get_progress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, &g);
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  if (r->form) { /* application/x-www-form-urlencoded is curl's default for POSTFIELDS */
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->form);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(r->form));
  } else if (r->body) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
  }
  if (r->user) { /* HTTP Basic: curl encodes, the password never reaches an error text */
    curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    curl_easy_setopt(e, CURLOPT_USERNAME, r->user);
    curl_easy_setopt(e, CURLOPT_PASSWORD, r->password ? r->password : "");
  }
  struct curl_slist *accept = curl_slist_append(NULL, "Accept: application/json");
  char ctype[128];
  if (r->body && r->content_type) {
    snprintf(ctype, sizeof ctype, "Content-Type: %s", r->content_type);
    accept = curl_slist_append(accept, ctype);
    accept = curl_slist_append(accept, "Expect:"); /* no 100-continue round trip */
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, accept);
  CURLcode rc = curl_easy_perform(e);
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(e);
  curl_slist_free_all(accept);
  if (rc != CURLE_OK) {
    snprintf(err, cap, "%s", rc == CURLE_WRITE_ERROR ? "the document is too large"
                             : cerr[0] ? cerr : curl_easy_strerror(rc));
    return false;
  }
  if (status != 200) {
    snprintf(err, cap, "HTTP status %ld", status);
    return false;
  }
  *max_age = g.max_age;
  return true;
}
