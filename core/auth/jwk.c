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
  return true;
}

/* A base64url member decoded into an mpz (big-endian unsigned). */
static bool member_mpz(json_span obj, const char *key, mpz_t x, size_t *nbytes) {
  buf s, raw;
  buf_init(&s);
  buf_init(&raw);
  bool ok = jwk_json_string(obj, key, &s) && s.len > 0 && jwk_b64url_decode(&raw, s.p, s.len) &&
            raw.len > 0;
  if (ok) {
    nettle_mpz_set_str_256_u(x, raw.len, (const uint8_t *)raw.p);
    if (nbytes) *nbytes = raw.len;
  }
  buf_free(&s);
  buf_free(&raw);
  return ok;
}

static bool load_rsa(jwk *k, json_span obj) {
  rsa_public_key_init(&k->rsa);
  k->kind = JWK_RSA;  /* from here jwk_free clears it */
  if (!member_mpz(obj, "n", k->rsa.n, NULL) || !member_mpz(obj, "e", k->rsa.e, NULL)) return false;
  if (mpz_sizeinbase(k->rsa.n, 2) < RSA_MIN_BITS) return false;
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

static bool load_okp(jwk *k, json_span obj) {
  buf s, raw;
  buf_init(&s);
  buf_init(&raw);
  bool ok = jwk_json_string(obj, "x", &s) && jwk_b64url_decode(&raw, s.p, s.len) &&
            raw.len == ED25519_KEY_SIZE;
  if (ok) {
    memcpy(k->ed25519, raw.p, ED25519_KEY_SIZE);
    k->kind = JWK_ED25519;
  }
  buf_free(&s);
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
  if (ok && jwk_json_string(obj, "kid", &tmp)) k->kid = buf_take(&tmp, NULL);
  if (ok && jwk_json_string(obj, "alg", &tmp)) k->alg = buf_take(&tmp, NULL);
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
  while (set->n < JWKS_MAX_KEYS && json_array_next(keys, &pos, &item)) {
    if (json_kind(item) == '{' && load_key(&set->keys[set->n], item)) set->n++;
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
