/* fuzz_encoding.c — what the core encodes and later trusts: base64
 * (core/base/base64.c), the sealed requestState of multi round-trip requests
 * (core/proto/request_state.c) and pagination cursors (core/base/cursor.c). The first
 * byte picks the check, the rest is its input.
 *   0 base64: encode -> decode is the identity, the output is a C string
 *     (buf.h's promise); decoding any text either fails or gives bytes
 *     whose encoding decodes to them again.
 *   1 requestState: seal -> open gives the payload back (under a rotation
 *     of two keys, and after rotating the sealing key second); a token
 *     with one byte changed (input: position, byte, payload) either is
 *     refused or opens to the same payload — never to another one.
 *   2 requestState: any bytes as a token are refused, or open to a payload
 *     whose own seal carries the same signature.
 *   3 cursors: cursor_make -> cursor_parse gives the offset back; a cursor
 *     edited (input: offset, list, position, deleted count, inserted
 *     bytes) or any bytes are accepted only when they are exactly what
 *     cursor_make writes for the offset they parse to. */
#include "base64.h"
#include "cursor.h"
#include "fuzz.h"
#include "request_state.h"

#define KEY_A "fuzzing-key-A-0123456789abcdefghijkl"
#define KEY_B "fuzzing-key-B-0123456789abcdefghijkl"

static void use_keys(const char *text) {
  buf err;
  buf_init(&err);
  FUZZ_CHECK(request_state_set_keys(text, strlen(text), &err));
  buf_free(&err);
}

static void check_base64(const uint8_t *p, size_t n) {
  buf e, d, e2, d2;
  buf_init(&e), buf_init(&d), buf_init(&e2), buf_init(&d2);
  base64_encode(&e, p, n);
  FUZZ_CHECK(e.len == (n + 2) / 3 * 4);
  FUZZ_CHECK(e.p && e.p[e.len] == '\0');
  FUZZ_CHECK(base64_decode(&d, e.p, e.len));
  FUZZ_CHECK(d.len == n && (n == 0 || memcmp(d.p, p, n) == 0));
  /* what encode writes is the canonical form; a canonical input is exactly
     the encoding of what it decodes to */
  d.len = 0;
  FUZZ_CHECK(base64_decode_canonical(&d, e.p, e.len) && d.len == n);
  d.len = 0;
  if (base64_decode_canonical(&d, (const char *)p, n)) {
    base64_encode(&e2, (const unsigned char *)(d.p ? d.p : ""), d.len);
    FUZZ_CHECK(e2.len == n && memcmp(e2.p, p, n) == 0);
    e2.len = 0;
  }
  if (base64_decode(&d2, (const char *)p, n)) {
    FUZZ_CHECK(d2.len <= n * 3 / 4 + 1);
    base64_encode(&e2, (const unsigned char *)(d2.p ? d2.p : ""), d2.len);
    d.len = 0;
    FUZZ_CHECK(base64_decode(&d, e2.p, e2.len));
    FUZZ_CHECK(d.len == d2.len && (d.len == 0 || memcmp(d.p, d2.p, d.len) == 0));
  }
  buf_free(&e), buf_free(&d), buf_free(&e2), buf_free(&d2);
}

static bool opens_to(const char *tok, size_t n, const void *payload, size_t pn) {
  buf out;
  buf_init(&out);
  bool ok = request_state_open(tok, n, &out);
  if (ok) FUZZ_CHECK(out.len == pn && (pn == 0 || memcmp(out.p, payload, pn) == 0));
  buf_free(&out);
  return ok;
}

static void check_seal(const uint8_t *p, size_t n) {
  if (n < 2) return;
  size_t at = p[0];
  uint8_t byte = p[1];
  p += 2, n -= 2;
  use_keys(KEY_A "\n" KEY_B "\n");
  buf tok;
  buf_init(&tok);
  request_state_seal(&tok, (const char *)p, n);
  FUZZ_CHECK(opens_to(tok.p, tok.len, p, n));
  use_keys(KEY_B "\n" KEY_A "\n"); /* rotated: A still verifies */
  FUZZ_CHECK(opens_to(tok.p, tok.len, p, n));
  use_keys(KEY_B "\n");
  buf out;
  buf_init(&out);
  FUZZ_CHECK(!request_state_open(tok.p, tok.len, &out)); /* A dropped */
  use_keys(KEY_A "\n");
  at %= tok.len;
  if (tok.p[at] != (char)byte) {
    tok.p[at] = (char)byte;
    /* refused, or a spelling of the same bytes (base64 ignores blanks) */
    (void)opens_to(tok.p, tok.len, p, n);
  }
  buf_free(&tok), buf_free(&out);
}

static void check_open(const uint8_t *p, size_t n) {
  use_keys(KEY_A "\n");
  char *tok = malloc(n ? n : 1);
  memcpy(tok, p, n);
  buf out, again;
  buf_init(&out), buf_init(&again);
  if (request_state_open(tok, n, &out)) {
    /* only a token that carries the right signature for its payload */
    request_state_seal(&again, out.p ? out.p : "", out.len);
    const char *dot = memchr(tok + 3, '.', n - 3), *dot2 = strrchr(again.p, '.');
    buf s1, s2;
    buf_init(&s1), buf_init(&s2);
    FUZZ_CHECK(base64_decode(&s1, dot + 1, n - (size_t)(dot + 1 - tok)));
    FUZZ_CHECK(base64_decode(&s2, dot2 + 1, strlen(dot2 + 1)));
    FUZZ_CHECK(s1.len == 32 && s2.len == 32 && memcmp(s1.p, s2.p, 32) == 0);
    buf_free(&s1), buf_free(&s2);
  }
  buf_free(&out), buf_free(&again);
  free(tok);
}

static void check_cursor_string(uint64_t key, int list, const char *s, size_t n) {
  size_t off;
  if (!cursor_parse(key, list, s, n, &off)) return;
  char want[CURSOR_MAX];
  cursor_make(key, list, off, want);
  if (strlen(want) != n || memcmp(want, s, n) != 0) {
    fprintf(stderr, "cursor_parse accepted \"%.*s\" (offset %zu), not \"%s\"\n", (int)n, s, off,
            want);
    FUZZ_CHECK(!"cursor_parse accepts only what cursor_make writes");
  }
}

static void check_cursor(const uint8_t *p, size_t n) {
  const uint64_t key = 0x0123456789abcdefULL;
  check_cursor_string(key, 0, (const char *)p, n);
  if (n < 11) return;
  uint64_t off64;
  memcpy(&off64, p, 8);
  size_t off = (size_t)(off64 >> (p[8] & 63)); /* small offsets too */
  int list = p[8] >> 6;
  char s[CURSOR_MAX];
  cursor_make(key, list, off, s);
  size_t got;
  FUZZ_CHECK(cursor_parse(key, list, s, strlen(s), &got) && got == off);
  FUZZ_CHECK(!cursor_parse(key, (list + 1) & 3, s, strlen(s), &got) || got != off);
  /* the cursor with bytes [at, at + del) replaced by the rest of the input */
  size_t len = strlen(s), at = p[9] % (len + 1), del = p[10] % 4;
  if (at + del > len) del = len - at;
  char edited[3 * CURSOR_MAX];
  size_t ins = n - 11 > CURSOR_MAX ? CURSOR_MAX : n - 11, k = 0;
  memcpy(edited, s, at), k = at;
  memcpy(edited + k, p + 11, ins), k += ins;
  memcpy(edited + k, s + at + del, len - at - del), k += len - at - del;
  check_cursor_string(key, list, edited, k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  switch (data[0] & 3) {
    case 0: check_base64(data + 1, size - 1); break;
    case 1: check_seal(data + 1, size - 1); break;
    case 2: check_open(data + 1, size - 1); break;
    default: check_cursor(data + 1, size - 1); break;
  }
  return 0;
}
