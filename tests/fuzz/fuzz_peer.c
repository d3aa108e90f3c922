/* fuzz_peer.c — what a hostile peer controls beside the JSON-RPC body, one
 * target for three parsers (the first byte picks one):
 *   0 a subscriptions/listen filter's resourceSubscriptions array
 *     (listen_scan_filter, core/mcp/listen.c): the input, when it is a JSON
 *     array, is scanned; never more than 1024 URIs reach the callback, nor
 *     more than 256 KiB of them; a refused filter has a message;
 *   1 an Mcp-Param-* header value (http_header_decode,
 *     core/proto/http_headers.c): a decoded value is no longer than the
 *     header; a plain one (no base64 sentinel) is the header without its
 *     blanks, of visible ASCII, space and tab only;
 *   2 a client's address behind --trust-proxy
 *     (http_canonical_addr, core/transport/http_checks.c): an
 *     accepted address comes out in one spelling, which is an address and
 *     its own spelling, and never an IPv4-mapped IPv6 one. */
#include <arpa/inet.h>

#include "fuzz.h"
#include "http_headers.h"
#include "json.h"
#include "listen.h"
#include "transport_http.h"

typedef struct seen {
  size_t count, bytes;
} seen;

static void count(void *ud, const char *uri, size_t n) {
  (void)uri;
  seen *s = ud;
  s->count++;
  s->bytes += n;
}

static void check_filter(const char *text, size_t n) {
  const char *err;
  size_t at;
  if (!json_validate(text, n, &err, &at)) return;
  json_span v = {text, n};
  while (v.n && (*v.p == ' ' || *v.p == '\n' || *v.p == '\t' || *v.p == '\r')) v.p++, v.n--;
  while (v.n && (v.p[v.n - 1] == ' ' || v.p[v.n - 1] == '\n' || v.p[v.n - 1] == '\t' ||
                 v.p[v.n - 1] == '\r'))
    v.n--;
  if (json_kind(v) != '[') return;
  seen s = {0, 0};
  const char *bad = listen_scan_filter(v, count, &s);
  FUZZ_CHECK(s.count <= 1024 && s.bytes <= 256 * 1024);
  if (bad) FUZZ_CHECK(*bad);
  FUZZ_CHECK(listen_scan_filter(v, NULL, NULL) == bad); /* checking alone says the same */
}

static void check_header(const char *v) {
  buf out;
  buf_init(&out);
  if (http_header_decode(v, &out)) {
    FUZZ_CHECK(out.len <= strlen(v));
    const char *t = v;
    while (*t == ' ' || *t == '\t') t++;
    size_t n = strlen(t);
    while (n && (t[n - 1] == ' ' || t[n - 1] == '\t')) n--;
    if (strncmp(t, "=?base64?", 9) != 0) {
      FUZZ_CHECK(out.len == n && (n == 0 || memcmp(out.p, t, n) == 0));
      for (size_t i = 0; i < n; i++)
        FUZZ_CHECK((t[i] >= 0x20 && t[i] <= 0x7e) || t[i] == '\t');
    }
  }
  buf_free(&out);
}

static void check_addr(const char *in) {
  char out[64], again[64];
  unsigned char bin[16];
  if (!http_canonical_addr(in, out, sizeof out)) return;
  FUZZ_CHECK(inet_pton(AF_INET, out, bin) == 1 || inet_pton(AF_INET6, out, bin) == 1);
  FUZZ_CHECK(http_canonical_addr(out, again, sizeof again) && strcmp(out, again) == 0);
  FUZZ_CHECK(strncmp(out, "::ffff:", 7) != 0 || !strchr(out, '.'));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  char *s = fuzz_strndup(data + 1, size - 1); /* a C string: headers end at a NUL */
  switch (data[0] % 3) {
    case 0: check_filter((const char *)data + 1, size - 1); break;
    case 1: check_header(s); break;
    default: check_addr(s); break;
  }
  free(s);
  return 0;
}
