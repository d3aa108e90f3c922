/* jwt.c — the checks of an access token, in the order that leaks least:
 * shape, header (typ, alg, no unknown crit), issuer, key by kid, signature,
 * and only then the claims (audience, times) of a token we know is genuine. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <nettle/dsa.h>
#include <nettle/ecdsa.h>
#include <nettle/sha2.h>

#include "jwk_internal.h"

#define JWT_MAX_BYTES 16384  /* real access tokens are 1-2 KiB */

typedef enum { ALG_RS256, ALG_RS512, ALG_PS256, ALG_PS384, ALG_PS512, ALG_ES256, ALG_ES384,
               ALG_EDDSA, ALG_NONE } jwt_alg;

static const char *const alg_names[] = {"RS256", "RS512", "PS256", "PS384", "PS512",
                                        "ES256", "ES384", "EdDSA"};

const char *jwt_status_text(jwt_status s) {
  switch (s) {
    case JWT_OK: return "valid";
    case JWT_MALFORMED: return "the token is not a well-formed JWT";
    case JWT_TYPE: return "the token is not an access token (typ)";
    case JWT_ALG: return "the token's algorithm is not accepted";
    case JWT_ISSUER: return "the token's issuer is not trusted";
    case JWT_UNKNOWN_KID: return "the token names a key its issuer does not publish";
    case JWT_NO_KEY: return "no key of the issuer fits the token's algorithm";
    case JWT_SIGNATURE: return "the token's signature does not verify";
    case JWT_AUDIENCE: return "the token was not issued for this resource";
    case JWT_EXPIRED: return "the token has expired";
    case JWT_NOT_YET: return "the token is not valid yet";
    case JWT_SUBJECT: return "the token names no subject (sub)";
    case JWT_NO_EXPIRY: return "the token has no expiry (exp)";
  }
  return "invalid token";
}

const char *jwt_status_name(jwt_status s) {
  static const char *const names[] = {"valid",      "malformed", "typ",       "alg",
                                      "issuer",     "unknown_kid", "no_key",  "signature",
                                      "audience",   "expired",   "not_yet",   "subject",
                                      "no_exp"};
  return (unsigned)s < sizeof names / sizeof *names ? names[s] : "invalid";
}

static bool fits(const jwk *k, jwt_alg alg) {
  if (k->alg && strcmp(k->alg, alg_names[alg]) != 0) return false;
  switch (alg) {
    case ALG_RS256: case ALG_RS512: case ALG_PS256: case ALG_PS384: case ALG_PS512:
      return k->kind == JWK_RSA;
    case ALG_ES256: return k->kind == JWK_P256;
    case ALG_ES384: return k->kind == JWK_P384;
    case ALG_EDDSA: return k->kind == JWK_ED25519;
    case ALG_NONE: break;
  }
  return false;
}

/* The digest the algorithm signs; returns its length. */
static size_t digest(jwt_alg alg, const uint8_t *msg, size_t n, uint8_t *out) {
  if (alg == ALG_RS256 || alg == ALG_PS256 || alg == ALG_ES256) {
    struct sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, n, msg);
    sha256_digest(&c, SHA256_DIGEST_SIZE, out);
    return SHA256_DIGEST_SIZE;
  }
  if (alg == ALG_PS384 || alg == ALG_ES384) {
    struct sha384_ctx c;
    sha384_init(&c);
    sha384_update(&c, n, msg);
    sha384_digest(&c, SHA384_DIGEST_SIZE, out);
    return SHA384_DIGEST_SIZE;
  }
  struct sha512_ctx c;
  sha512_init(&c);
  sha512_update(&c, n, msg);
  sha512_digest(&c, SHA512_DIGEST_SIZE, out);
  return SHA512_DIGEST_SIZE;
}

static bool verify_rsa(const jwk *k, jwt_alg alg, const uint8_t *d, const buf *sig) {
  if (sig->len != k->rsa.size) return false;
  mpz_t s;
  mpz_init(s);
  nettle_mpz_set_str_256_u(s, sig->len, (const uint8_t *)sig->p);
  int ok = 0;
  switch (alg) {
    case ALG_RS256: ok = rsa_sha256_verify_digest(&k->rsa, d, s); break;
    case ALG_RS512: ok = rsa_sha512_verify_digest(&k->rsa, d, s); break;
    /* RFC 7518 3.5: the salt is as long as the hash */
    case ALG_PS256: ok = rsa_pss_sha256_verify_digest(&k->rsa, SHA256_DIGEST_SIZE, d, s); break;
    case ALG_PS384: ok = rsa_pss_sha384_verify_digest(&k->rsa, SHA384_DIGEST_SIZE, d, s); break;
    case ALG_PS512: ok = rsa_pss_sha512_verify_digest(&k->rsa, SHA512_DIGEST_SIZE, d, s); break;
    default: break;
  }
  mpz_clear(s);
  return ok != 0;
}

/* JWS ECDSA signatures are r || s, each as long as a coordinate (RFC 7518
   3.4), not DER. */
static bool verify_ec(const jwk *k, const uint8_t *d, size_t dn, const buf *sig, size_t coord) {
  if (sig->len != 2 * coord) return false;
  struct dsa_signature rs;
  dsa_signature_init(&rs);
  nettle_mpz_set_str_256_u(rs.r, coord, (const uint8_t *)sig->p);
  nettle_mpz_set_str_256_u(rs.s, coord, (const uint8_t *)sig->p + coord);
  int ok = ecdsa_verify(&k->ec, dn, d, &rs);
  dsa_signature_clear(&rs);
  return ok != 0;
}

static bool verify_with(const jwk *k, jwt_alg alg, const char *signed_part, size_t n,
                        const buf *sig) {
  if (alg == ALG_EDDSA)
    return sig->len == ED25519_SIGNATURE_SIZE &&
           ed25519_sha512_verify(k->ed25519, n, (const uint8_t *)signed_part,
                                 (const uint8_t *)sig->p);
  uint8_t d[SHA512_DIGEST_SIZE];
  size_t dn = digest(alg, (const uint8_t *)signed_part, n, d);
  if (k->kind == JWK_RSA) return verify_rsa(k, alg, d, sig);
  return verify_ec(k, d, dn, sig, alg == ALG_ES256 ? 32 : 48);
}

/* Decode one base64url part into a JSON object. No \u0000 anywhere: a
   claim read as a C string must be the value the issuer signed ("admin\0x"
   is not "admin"). */
static bool decode_object(const char *s, size_t n, buf *out) {
  const char *why;
  return n > 0 && jwk_b64url_decode(out, s, n) && out->len > 0 &&
         json_validate(out->p, out->len, &why, NULL) && out->p[0] == '{' &&
         !memmem(out->p, out->len, "\\u0000", 6);
}

int jwt_numeric_date(json_span obj, const char *key, long long *out) {
  json_span v;
  if (!json_object_get(obj, key, &v)) return 0;
  size_t i = 0, digits = 0;
  bool neg = v.n && v.p[0] == '-';
  long long x = 0;
  for (i = neg; i < v.n && v.p[i] >= '0' && v.p[i] <= '9'; i++, digits++)
    if (digits < 15) x = x * 10 + (v.p[i] - '0');
  if (i < v.n && v.p[i] == '.')
    for (i++; i < v.n && v.p[i] >= '0' && v.p[i] <= '9'; i++) {}
  if (!digits || digits > 15 || i != v.n) return -1;
  *out = neg ? -x : x;
  return 1;
}

static char *string_member(json_span obj, const char *key) {
  buf b;
  buf_init(&b);
  if (jwk_json_string(obj, key, &b)) return buf_take(&b, NULL);
  buf_free(&b);
  return NULL;
}

static bool audience_ok(json_span payload, const char *audience) {
  json_span aud, item;
  if (!audience || !json_object_get(payload, "aud", &aud)) return false;
  if (json_kind(aud) == '"') return json_string_eq(aud, audience);
  if (json_kind(aud) != '[') return false;
  for (size_t pos = 0; json_array_next(aud, &pos, &item);)
    if (json_kind(item) == '"' && json_string_eq(item, audience)) return true;
  return false;
}

/* "scope" as issued (RFC 9068 2.2.3), else "scp" (an array some issuers
   use) joined with spaces. */
static char *scopes(json_span payload) {
  char *s = string_member(payload, "scope");
  json_span scp, item;
  if (s || !json_object_get(payload, "scp", &scp)) return s;
  if (json_kind(scp) == '"') return string_member(payload, "scp");
  if (json_kind(scp) != '[') return NULL;
  buf b, one;
  buf_init(&b);
  buf_init(&one);
  for (size_t pos = 0; json_array_next(scp, &pos, &item);) {
    if (json_kind(item) != '"') continue;
    one.len = 0;
    json_string_unescape(item, &one);
    /* a scope has no space (RFC 6749 3.3) and no NUL: "a b" is not two */
    if (!one.len || memchr(one.p, ' ', one.len) || strlen(one.p) != one.len) continue;
    if (b.len) buf_putc(&b, ' ');
    buf_put(&b, one.p, one.len);
  }
  buf_free(&one);
  buf_putc(&b, 0);  /* a C string even when empty */
  return buf_take(&b, NULL);
}

static jwt_status check_header(json_span h, const jwt_policy *p, jwt_alg *alg, char **kid) {
  json_span v;
  if (json_object_get(h, "crit", &v)) return JWT_MALFORMED;  /* we understand no extension */
  buf s;
  buf_init(&s);
  jwt_status st = JWT_OK;
  /* RFC 9068's at+jwt; without require_typ also what most issuers write
     (JWT, or nothing), never another kind of JWT (dpop+jwt, logout+jwt...) */
  bool has = jwk_json_string(h, "typ", &s);
  bool at = has && (strcasecmp(s.p, "at+jwt") == 0 || strcasecmp(s.p, "application/at+jwt") == 0);
  bool plain = !has || strcasecmp(s.p, "JWT") == 0 || strcasecmp(s.p, "application/jwt") == 0;
  if (!at && (p->require_typ || !plain)) st = JWT_TYPE;
  *alg = ALG_NONE;
  if (st == JWT_OK && jwk_json_string(h, "alg", &s))
    for (int i = 0; i < ALG_NONE; i++)
      if (strcmp(s.p, alg_names[i]) == 0) *alg = (jwt_alg)i;
  if (st == JWT_OK && *alg == ALG_NONE) st = JWT_ALG;
  buf_free(&s);
  if (st == JWT_OK) *kid = string_member(h, "kid");
  return st;
}

static jwt_status check_signature(const jwk_set *keys, jwt_alg alg, const char *kid,
                                  const char *signed_part, size_t n, const buf *sig) {
  if (!keys) return JWT_NO_KEY;
  if (kid && !jwk_set_has_kid(keys, kid)) return JWT_UNKNOWN_KID;
  bool any = false;
  for (size_t i = 0; i < keys->n; i++) {
    const jwk *k = &keys->keys[i];
    if (kid && (!k->kid || strcmp(k->kid, kid) != 0)) continue;
    if (!fits(k, alg)) continue;
    any = true;
    if (verify_with(k, alg, signed_part, n, sig)) return JWT_OK;
  }
  return any ? JWT_SIGNATURE : JWT_NO_KEY;
}

static jwt_status check_claims(json_span pl, const jwt_policy *p, jwt_claims *out) {
  long long nbf = 0, iat = 0;
  if (!audience_ok(pl, p->audience)) return JWT_AUDIENCE;
  int has_exp = jwt_numeric_date(pl, "exp", &out->exp);
  if (has_exp < 0) return JWT_MALFORMED;
  if (has_exp == 0) return JWT_NO_EXPIRY;
  if (p->now >= out->exp + p->skew) return JWT_EXPIRED;
  /* present, they must be dates: one we cannot read fails closed */
  int has_nbf = jwt_numeric_date(pl, "nbf", &nbf), has_iat = jwt_numeric_date(pl, "iat", &iat);
  if (has_nbf < 0 || has_iat < 0) return JWT_MALFORMED;
  if ((has_nbf && nbf - p->skew > p->now) || (has_iat && iat - p->skew > p->now)) return JWT_NOT_YET;
  out->iat = iat;
  /* RFC 9068 2.2 requires sub: without one the caller would have no
     identity, and every such caller the same (none) in a script's data */
  out->subject = string_member(pl, "sub");
  if (!out->subject || !out->subject[0]) return JWT_SUBJECT;
  out->client_id = string_member(pl, "client_id");
  if (!out->client_id) out->client_id = string_member(pl, "azp");
  out->scope = scopes(pl);
  return JWT_OK;
}

jwt_status jwt_verify(const char *token, size_t n, const jwt_policy *p, jwt_claims *out) {
  memset(out, 0, sizeof *out);
  const char *d1 = n <= JWT_MAX_BYTES ? memchr(token, '.', n) : NULL;
  const char *d2 = d1 ? memchr(d1 + 1, '.', (size_t)(token + n - d1 - 1)) : NULL;
  if (!d2 || memchr(d2 + 1, '.', (size_t)(token + n - d2 - 1))) return JWT_MALFORMED;
  buf hdr, pay, sig;
  buf_init(&hdr);
  buf_init(&pay);
  buf_init(&sig);
  jwt_alg alg = ALG_NONE;
  jwt_status st = JWT_OK;
  if (!decode_object(token, (size_t)(d1 - token), &hdr)) st = JWT_MALFORMED;
  if (st == JWT_OK) st = check_header((json_span){hdr.p, hdr.len}, p, &alg, &out->kid);
  if (st == JWT_OK && !decode_object(d1 + 1, (size_t)(d2 - d1 - 1), &pay)) st = JWT_MALFORMED;
  if (st == JWT_OK && !jwk_b64url_decode(&sig, d2 + 1, (size_t)(token + n - d2 - 1)))
    st = JWT_MALFORMED;
  json_span pl = {pay.p, pay.len};
  const jwk_set *keys = NULL;
  if (st == JWT_OK) {
    out->issuer = string_member(pl, "iss");
    size_t i = 0;
    while (out->issuer && i < p->n_issuers && strcmp(p->issuers[i].issuer, out->issuer) != 0) i++;
    if (!out->issuer || i == p->n_issuers) st = JWT_ISSUER;
    else keys = p->issuers[i].keys;
  }
  if (st == JWT_OK)
    st = check_signature(keys, alg, out->kid, token, (size_t)(d2 - token), &sig);
  if (st == JWT_OK) st = check_claims(pl, p, out);
  if (st == JWT_OK) out->payload = buf_take(&pay, &out->payload_len);
  buf_free(&hdr);
  buf_free(&pay);
  buf_free(&sig);
  return st;
}

void jwt_claims_free(jwt_claims *c) {
  free(c->issuer);
  free(c->subject);
  free(c->client_id);
  free(c->scope);
  free(c->kid);
  free(c->payload);
  memset(c, 0, sizeof *c);
}
