/* jwk.c — an issuer's JWKS (RFC 7517) parsed into keys nettle can verify
 * with. Only public signing keys we can use are kept; the rest is skipped so
 * that one odd key in an issuer's set never locks everyone out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jwk_internal.h"
#include "json.h"

#define JWKS_MAX_KEYS 64   /* an issuer publishes a handful; more is noise */
#define RSA_MIN_BITS 2048  /* RFC 7518 3.3: 2048 or larger */
#define RSA_MAX_BITS 8192  /* past it a verification costs more than any key is worth */
/* An Ed25519 point of small order verifies R = identity, S = 0 for any
   message: its y is one of these (0, 1, p - 1 and the two of order 8;
   checked with the curve's arithmetic: (y8 x)-points have order 8). */
#define ED25519_P "7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffed"
#define ED25519_Y8 "05fc536d880238b13933c6d305acdfd5f098eff289f4c345b027b2c28f95e826"

/* base64url without padding (RFC 7515 2), the one spelling: no '=' nor
   whitespace, unused trailing bits zero. */
bool jwk_b64url_decode(buf *out, const char *s, size_t n) {
  if (n % 4 == 1) return false;
  unsigned acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '-') v = 62;
    else if (c == '_') v = 63;
    else return false;
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      buf_putc(out, (char)((acc >> bits) & 0xff));
    }
  }
  return (acc & ((1u << bits) - 1)) == 0;
}

/* A string member as a NUL-terminated copy in out (reset first); false when
   absent or not a string. */
bool jwk_json_string(json_span obj, const char *key, buf *out) {
  json_span v;
  out->len = 0;
  if (!json_object_get(obj, key, &v) || json_kind(v) != '"') return false;
  json_string_unescape(v, out);
  if (!out->p) {  /* "": make it a C string all the same */
    buf_putc(out, 0);
    out->len = 0;
  }
  /* a \u0000 would make the C string another value than the JSON one */
  return strlen(out->p) == out->len;
}

/* A base64url member's bytes into raw (the caller frees it); false when
   absent, empty or not base64url. */
static bool member_bytes(json_span obj, const char *key, buf *raw) {
  buf s;
  buf_init(&s);
  bool ok = jwk_json_string(obj, key, &s) && s.len > 0 && jwk_b64url_decode(raw, s.p, s.len) &&
            raw->len > 0;
  buf_free(&s);
  return ok;
}

/* A base64url member decoded into an mpz (big-endian unsigned). */
static bool member_mpz(json_span obj, const char *key, mpz_t x, size_t *nbytes) {
  buf raw;
  buf_init(&raw);
  bool ok = member_bytes(obj, key, &raw);
  if (ok) {
    nettle_mpz_set_str_256_u(x, raw.len, (const uint8_t *)raw.p);
    if (nbytes) *nbytes = raw.len;
  }
  buf_free(&raw);
  return ok;
}

static bool load_rsa(jwk *k, json_span obj) {
  rsa_public_key_init(&k->rsa);
  k->kind = JWK_RSA;  /* from here jwk_free clears it */
  if (!member_mpz(obj, "n", k->rsa.n, NULL) || !member_mpz(obj, "e", k->rsa.e, NULL)) return false;
  size_t bits = mpz_sizeinbase(k->rsa.n, 2);
  if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS) return false;
  /* e = 1 makes the padded digest its own signature: anyone could sign.
     An odd e from 3 to 2^32 (65537 in practice); nettle checks only n. */
  if (mpz_even_p(k->rsa.e) || mpz_cmp_ui(k->rsa.e, 3) < 0 || mpz_sizeinbase(k->rsa.e, 2) > 32)
    return false;
  return rsa_public_key_prepare(&k->rsa) != 0;
}

static bool load_ec(jwk *k, json_span obj, const struct ecc_curve *curve, size_t coord) {
  mpz_t x, y;
  size_t nx = 0, ny = 0;
  mpz_init(x);
  mpz_init(y);
  ecc_point_init(&k->ec, curve);
  k->kind = curve == nettle_get_secp_256r1() ? JWK_P256 : JWK_P384;
  bool ok = member_mpz(obj, "x", x, &nx) && member_mpz(obj, "y", y, &ny) && nx == coord &&
            ny == coord && ecc_point_set(&k->ec, x, y);  /* 0 when not on the curve */
  mpz_clear(x);
  mpz_clear(y);
  return ok;
}

/* RFC 8032 5.1.3: y < p; and not a point of small order (see above). */
static bool ed25519_key_ok(const uint8_t pub[ED25519_KEY_SIZE]) {
  uint8_t le[ED25519_KEY_SIZE];
  memcpy(le, pub, sizeof le);
  le[31] &= 0x7f;  /* the sign of x */
  mpz_t y, p, y8;
  mpz_init(y);
  mpz_import(y, sizeof le, -1, 1, 0, 0, le);
  mpz_init_set_str(p, ED25519_P, 16);
  mpz_init_set_str(y8, ED25519_Y8, 16);
  bool ok = mpz_cmp(y, p) < 0 && mpz_cmp_ui(y, 0) != 0 && mpz_cmp_ui(y, 1) != 0 && mpz_cmp(y, y8) != 0;
  mpz_sub_ui(p, p, 1);
  if (ok && mpz_cmp(y, p) == 0) ok = false;  /* p - 1 */
  mpz_add_ui(p, p, 1);
  mpz_sub(y8, p, y8);
  if (ok && mpz_cmp(y, y8) == 0) ok = false;  /* p - y8 */
  mpz_clear(y);
  mpz_clear(p);
  mpz_clear(y8);
  return ok;
}

static bool load_okp(jwk *k, json_span obj) {
  buf raw;
  buf_init(&raw);
  bool ok = member_bytes(obj, "x", &raw) && raw.len == ED25519_KEY_SIZE &&
            ed25519_key_ok((const uint8_t *)raw.p);
  if (ok) {
    memcpy(k->ed25519, raw.p, ED25519_KEY_SIZE);
    k->kind = JWK_ED25519;
  }
  buf_free(&raw);
  return ok;
}

static void jwk_free(jwk *k) {
  if (k->kind == JWK_RSA) rsa_public_key_clear(&k->rsa);
  else if (k->kind == JWK_P256 || k->kind == JWK_P384) ecc_point_clear(&k->ec);
  free(k->kid);
  free(k->alg);
  memset(k, 0, sizeof *k);
}

/* One key of the set, or false when it is one we skip. */
static bool load_key(jwk *k, json_span obj) {
  buf kty, crv, use, tmp;
  buf_init(&kty);
  buf_init(&crv);
  buf_init(&use);
  buf_init(&tmp);
  memset(k, 0, sizeof *k);
  bool ok = jwk_json_string(obj, "kty", &kty);
  if (ok && jwk_json_string(obj, "use", &use) && strcmp(use.p, "sig") != 0) ok = false;
  if (ok) {
    bool has_crv = jwk_json_string(obj, "crv", &crv);
    if (strcmp(kty.p, "RSA") == 0) ok = load_rsa(k, obj);
    else if (strcmp(kty.p, "EC") == 0 && has_crv && strcmp(crv.p, "P-256") == 0)
      ok = load_ec(k, obj, nettle_get_secp_256r1(), 32);
    else if (strcmp(kty.p, "EC") == 0 && has_crv && strcmp(crv.p, "P-384") == 0)
      ok = load_ec(k, obj, nettle_get_secp_384r1(), 48);
    else if (strcmp(kty.p, "OKP") == 0 && has_crv && strcmp(crv.p, "Ed25519") == 0)
      ok = load_okp(k, obj);
    else ok = false;  /* oct (symmetric) and what we cannot verify with */
  }
  /* present, kid and alg must be plain strings: a key we cannot name or
     pin is skipped, not taken as one with no kid or no alg */
  json_span v;
  if (ok && json_object_get(obj, "kid", &v))
    ok = jwk_json_string(obj, "kid", &tmp) && (k->kid = buf_take(&tmp, NULL)) != NULL;
  if (ok && json_object_get(obj, "alg", &v))
    ok = jwk_json_string(obj, "alg", &tmp) && (k->alg = buf_take(&tmp, NULL)) != NULL;
  if (!ok) jwk_free(k);
  buf_free(&kty);
  buf_free(&crv);
  buf_free(&use);
  buf_free(&tmp);
  return ok;
}

jwk_set *jwk_set_parse(const char *json, size_t n, char *err, size_t errlen) {
  const char *why = NULL;
  json_span doc = {json, n}, keys;
  if (!json_validate(json, n, &why, NULL)) {
    snprintf(err, errlen, "the key set is not JSON (%s)", why);
    return NULL;
  }
  if (json_kind(doc) != '{' || !json_object_get(doc, "keys", &keys) || json_kind(keys) != '[') {
    snprintf(err, errlen, "the key set has no \"keys\" array");
    return NULL;
  }
  jwk_set *set = calloc(1, sizeof *set);
  if (!set) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  /* An array's elements: walk it as the parser's object walk would, by
     spans between the brackets. json_array_next does that. */
  size_t pos = 0;
  json_span item;
  jwk spare;
  while (json_array_next(keys, &pos, &item)) {
    if (json_kind(item) != '{') continue;
    jwk *k = set->n < JWKS_MAX_KEYS ? &set->keys[set->n] : &spare;
    if (!load_key(k, item)) continue;
    if (k == &spare) {  /* silently dropping one would refuse its tokens for ever */
      jwk_free(&spare);
      jwk_set_free(set);
      snprintf(err, errlen, "the key set has more than %d usable keys", JWKS_MAX_KEYS);
      return NULL;
    }
    set->n++;
  }
  return set;
}

void jwk_set_free(jwk_set *set) {
  if (!set) return;
  for (size_t i = 0; i < set->n; i++) jwk_free(&set->keys[i]);
  free(set);
}

size_t jwk_set_count(const jwk_set *set) { return set ? set->n : 0; }

bool jwk_set_has_kid(const jwk_set *set, const char *kid) {
  for (size_t i = 0; set && kid && i < set->n; i++)
    if (set->keys[i].kid && strcmp(set->keys[i].kid, kid) == 0) return true;
  return false;
}
