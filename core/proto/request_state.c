/* request_state.c — HMAC-SHA256 sealing of MRTR request state (see
 * request_state.h), with Debian's nettle (small: OpenSSL's libcrypto cost
 * a millisecond of start-up to load). */
#include "request_state.h"

#include <stdlib.h>
#include <string.h>

#include <sys/random.h>

#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>

#include "base64.h"

#define MAX_KEYS 8
#define MIN_KEY 32

static struct {
  unsigned char k[256];
  size_t n;
  struct hmac_sha256_ctx keyed; /* set once: setting the key is two of a mac's ~8 blocks */
} keys[MAX_KEYS];
static size_t nkeys;

bool request_state_set_keys(const char *text, size_t n, buf *err) {
  nkeys = 0;
  const char *p = text, *end = text + n;
  while (p < end && nkeys < MAX_KEYS) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *e = nl ? nl : end;
    const char *q = e;
    while (q > p && (q[-1] == '\r' || q[-1] == ' ' || q[-1] == '\t')) q--;
    size_t len = (size_t)(q - p);
    if (len && p[0] != '#') {
      if (len < MIN_KEY || len > sizeof keys[0].k) {
        buf_printf(err, "a state key must be %d to %zu characters long (key %zu has %zu)", MIN_KEY,
                   sizeof keys[0].k, nkeys + 1, len);
        nkeys = 0;
        return false;
      }
      memcpy(keys[nkeys].k, p, len);
      keys[nkeys].n = len;
      hmac_sha256_set_key(&keys[nkeys].keyed, len, keys[nkeys].k);
      nkeys++;
    }
    p = nl ? nl + 1 : end;
  }
  if (!nkeys) buf_puts(err, "no state key found (one per line)");
  return nkeys > 0;
}

void request_state_random_key(void) {
  if (nkeys) return;
  if (getrandom(keys[0].k, 32, 0) != 32) abort(); /* no randomness: nothing is safe */
  keys[0].n = 32;
  hmac_sha256_set_key(&keys[0].keyed, 32, keys[0].k);
  nkeys = 1;
}

static void mac(size_t key, const char *p, size_t n, unsigned char out[32]) {
  struct hmac_sha256_ctx ctx = keys[key].keyed;
  hmac_sha256_update(&ctx, n, (const uint8_t *)p);
  hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

void request_state_seal(buf *out, const char *payload, size_t n) {
  request_state_random_key();
  unsigned char m[32];
  mac(0, payload, n, m);
  buf_puts(out, "v1.");
  base64_encode(out, (const unsigned char *)payload, n);
  buf_putc(out, '.');
  base64_encode(out, m, sizeof m);
}

bool request_state_open(const char *tok, size_t n, buf *out) {
  request_state_random_key();
  if (n < 4 || memcmp(tok, "v1.", 3) != 0) return false;
  const char *dot = memchr(tok + 3, '.', n - 3);
  if (!dot) return false;
  buf payload, sig;
  buf_init(&payload), buf_init(&sig);
  /* one spelling only: a token is what request_state_seal wrote, byte for byte */
  bool ok = base64_decode_canonical(&payload, tok + 3, (size_t)(dot - tok - 3)) &&
            base64_decode_canonical(&sig, dot + 1, n - (size_t)(dot + 1 - tok)) && sig.len == 32;
  bool good = false;
  for (size_t k = 0; ok && k < nkeys && !good; k++) {
    unsigned char m[32];
    mac(k, payload.p ? payload.p : "", payload.len, m);
    good = memeql_sec(m, sig.p, 32); /* constant time */
  }
  if (good) buf_put(out, payload.p ? payload.p : "", payload.len);
  buf_free(&payload), buf_free(&sig);
  return good;
}

void request_state_sha256(const void *p, size_t n, char out[65]) {
  unsigned char d[32];
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, n, p);
  sha256_digest(&ctx, sizeof d, d);
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    out[2 * i] = hex[d[i] >> 4];
    out[2 * i + 1] = hex[d[i] & 15];
  }
  out[64] = '\0';
}
