/* fuzz_jwt.c — what an attacker hands the resource server: access tokens
 * (core/auth/jwt.c) and, through a hostile or broken issuer, key sets
 * (core/auth/jwk.c). The first byte picks the check, the rest is its input.
 *   0 the input is a token, checked against the test vectors' key sets:
 *     never a crash, and JWT_OK only for a token whose signed part (header
 *     and claims) is a valid vector's: nobody forges a signature. (Not the
 *     whole token: an ECDSA signature (r, s) has a twin (r, n - s).)
 *   1 the input is a JWKS: parsing it either fails or gives a set that
 *     verifies the vectors' tokens without crashing (odd moduli, points
 *     off the curve, short coordinates); it accepts at most its own keys.
 *   2 the input is a token whose parts are mutated from a valid vector
 *     (input: vector index, position, byte): a token with a changed byte
 *     in its signed part is refused. */
#include "fuzz.h"
#include "jwt.h"
#include "../unit/jwt_vectors.h"

static jwk_set *keys, *keys2;

static jwt_status verify(const char *tok, size_t n, const jwk_set *k1) {
  jwt_issuer iss[2] = {{JV_ISSUER, k1}, {JV_ISSUER2, keys2}};
  jwt_policy p = {iss, 2, JV_AUDIENCE, JV_NOW, JV_SKEW, true};
  jwt_claims c;
  jwt_status st = jwt_verify(tok, n, &p, &c);
  if (st == JWT_OK) FUZZ_CHECK(c.payload && c.issuer && c.exp > 0);
  jwt_claims_free(&c);
  return st;
}

/* The length of header.payload, the part a signature covers. */
static size_t signed_len(const char *tok, size_t n) {
  const char *d = memchr(tok, '.', n);
  d = d ? memchr(d + 1, '.', (size_t)(tok + n - d - 1)) : NULL;
  return d ? (size_t)(d - tok) : n;
}

static bool signed_part_of_a_vector(const char *tok, size_t n) {
  size_t m = signed_len(tok, n);
  for (size_t i = 0; i < JV_NCASES; i++) {
    const char *v = JV_CASES[i].token;
    if (JV_CASES[i].want == JWT_OK && signed_len(v, strlen(v)) == m && memcmp(v, tok, m) == 0)
      return true;
  }
  return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[128];
  if (!keys) {
    keys = jwk_set_parse(JV_JWKS, strlen(JV_JWKS), err, sizeof err);
    keys2 = jwk_set_parse(JV_JWKS2, strlen(JV_JWKS2), err, sizeof err);
    FUZZ_CHECK(keys && keys2);
  }
  if (size < 1) return 0;
  const char *in = (const char *)data + 1;
  size_t n = size - 1;
  switch (data[0] % 3) {
    case 0:
      /* the rotated set is not used: a valid vector may need it */
      if (verify(in, n, keys) == JWT_OK) FUZZ_CHECK(signed_part_of_a_vector(in, n));
      break;
    case 1: {
      jwk_set *s = jwk_set_parse(in, n, err, sizeof err);
      for (size_t i = 0; s && i < JV_NCASES; i++)
        (void)verify(JV_CASES[i].token, strlen(JV_CASES[i].token), s);
      jwk_set_free(s);
      break;
    }
    default: {
      if (n < 3) return 0;
      const struct jv_case *c = &JV_CASES[(uint8_t)in[0] % JV_NCASES];
      size_t len = strlen(c->token);
      if (c->want != JWT_OK || c->jwks == JV_JWKS_ROTATED || !len) return 0;
      char *t = malloc(len);
      memcpy(t, c->token, len);
      size_t pos = (size_t)(uint8_t)in[1] * 7 % len;
      t[pos] = in[2];
      if (verify(t, len, keys) == JWT_OK && pos < signed_len(c->token, len))
        FUZZ_CHECK(t[pos] == c->token[pos]);  /* one spelling: another byte, another token */
      free(t);
    }
  }
  return 0;
}
