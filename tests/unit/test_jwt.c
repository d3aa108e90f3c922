/* test_jwt.c — core/auth: every vector of jwt_vectors.h (real signatures made
 * by node:crypto, see jwt_vectors.mjs) gets the status it should, the claims
 * of a valid token come out right, and key sets skip what they cannot use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "buf.h"
#include "json.h"
#include "jwt.h"
#include "jwt_vectors.h"

static jwk_set *parse(const char *json) {
  char err[128];
  jwk_set *s = jwk_set_parse(json, strlen(json), err, sizeof err);
  if (!s) fprintf(stderr, "jwk_set_parse: %s\n", err);
  return s;
}

/* How many usable keys a one-key JWKS of this kty and members gives. */
static size_t usable(const char *members) {
  char json[2048], err[128];
  snprintf(json, sizeof json, "{\"keys\":[{%s}]}", members);
  jwk_set *s = jwk_set_parse(json, strlen(json), err, sizeof err);
  size_t n = jwk_set_count(s);
  jwk_set_free(s);
  return n;
}

/* The "n" of the first key of JV_JWKS (rsa-1, 2048 bits). */
static const char *rsa1_n(char *out, size_t cap) {
  const char *p = strstr(JV_JWKS, "\"n\":\"") + 5;
  size_t n = (size_t)(strchr(p, '"') - p);
  snprintf(out, cap, "%.*s", (int)n, p);
  return out;
}

int main(void) {
  jwk_set *keys = parse(JV_JWKS), *keys2 = parse(JV_JWKS2), *rotated = parse(JV_JWKS_ROTATED);
  CHECK(keys && keys2 && rotated);
  /* rsa-1, rsa-ps, ec-1, ec-384, ed-1; not hmac-1 (oct), rsa-weak (1024), rsa-enc */
  CHECK(jwk_set_count(keys) == JV_JWKS_USABLE);
  CHECK(jwk_set_has_kid(keys, "ed-1") && jwk_set_has_kid(keys, "ec-384"));
  CHECK(!jwk_set_has_kid(keys, "hmac-1") && !jwk_set_has_kid(keys, "rsa-weak") &&
        !jwk_set_has_kid(keys, "rsa-enc"));
  CHECK(jwk_set_has_kid(rotated, "rsa-new") && !jwk_set_has_kid(keys, "rsa-new"));

  char err[128];
  CHECK(!jwk_set_parse("{\"keys\":", 8, err, sizeof err));
  CHECK(!jwk_set_parse("[1]", 3, err, sizeof err));
  const char *odd = "{\"keys\":[{\"kty\":\"oct\",\"k\":\"AAAA\"},7,\"x\",[]]}";
  jwk_set *empty = jwk_set_parse(odd, strlen(odd), err, sizeof err);
  CHECK(empty && jwk_set_count(empty) == 0);
  jwk_set_free(empty);


  /* keys that would let anyone sign: RSA with e = 1 (the padded digest is
     its own signature), an even or tiny e; Ed25519 points of small order
     (R = identity, S = 0 verifies anything) and y >= p */
  char n[600], m[800];
  rsa1_n(n, sizeof n);
  snprintf(m, sizeof m, "\"kty\":\"RSA\",\"n\":\"%s\",\"e\":\"AQAB\"", n);
  CHECK(usable(m) == 1);
  const char *bad_e[] = {"AQ", "Ag", "AA", "Aw", "AQAAAAAB"};  /* 1, 2, 0, 3, 2^32+1 */
  for (int i = 0; i < 5; i++) {
    snprintf(m, sizeof m, "\"kty\":\"RSA\",\"n\":\"%s\",\"e\":\"%s\"", n, bad_e[i]);
    CHECK(usable(m) == (i == 3 ? 1u : 0u));  /* 3 is a valid exponent */
  }
  const char *small[] = {
      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", /* y = 0 */
      "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", /* y = 1, the identity */
      "7P_______________________________________38", /* y = p - 1 */
      "JuiVj8KyJ7BFw_SJ8u-Y8NXfrAXTxjM5sTgCiG1T_AU", /* order 8 */
      "7f_______________________________________38", /* y = p */
      "7v_______________________________________38", /* y = p + 1 */
  };
  for (int i = 0; i < 6; i++) {
    snprintf(m, sizeof m, "\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"%s\"", small[i]);
    CHECK(usable(m) == 0);
  }
  /* a kid with \u0000 is no kid we could match */
  snprintf(m, sizeof m, "\"kty\":\"RSA\",\"kid\":\"a\\u0000b\",\"n\":\"%s\",\"e\":\"AQAB\"", n);
  CHECK(usable(m) == 0);
  /* more keys than a set holds: an error, not a key silently dropped */
  buf many;
  buf_init(&many);
  buf_puts(&many, "{\"keys\":[");
  for (int i = 0; i < 65; i++)
    buf_printf(&many, "%s{\"kty\":\"RSA\",\"kid\":\"k%d\",\"n\":\"%s\",\"e\":\"AQAB\"}", i ? "," : "", i, n);
  buf_puts(&many, "]}");
  CHECK(!jwk_set_parse(many.p, many.len, err, sizeof err) && strstr(err, "more than"));
  buf_free(&many);
  /* json_string_eq: an escape in the token is compared as what it means */
  CHECK(!json_string_eq((json_span){"\"a\\nb\"", 6}, "a\\nb"));
  CHECK(json_string_eq((json_span){"\"a\\nb\"", 6}, "a\nb"));

  for (size_t i = 0; i < sizeof JV_CASES / sizeof JV_CASES[0]; i++) {
    const struct jv_case *c = &JV_CASES[i];
    jwt_issuer iss[2] = {{JV_ISSUER, c->jwks == JV_JWKS_ROTATED ? rotated : keys},
                         {JV_ISSUER2, keys2}};
    jwt_policy p = {iss, 2, JV_AUDIENCE, JV_NOW, 60, true};
    jwt_claims cl;
    jwt_status got = jwt_verify(c->token, strlen(c->token), &p, &cl);
    if (got != c->want)
      fprintf(stderr, "case \"%s\": got %d (%s), want %d (%s)\n", c->name, got,
              jwt_status_text(got), c->want, jwt_status_text(c->want));
    CHECK(got == c->want);
    if (got == JWT_OK) {
      CHECK(cl.payload && cl.payload[0] == '{' && cl.payload_len == strlen(cl.payload));
      CHECK(cl.exp > JV_NOW - 60 && cl.issuer);
    }
    jwt_claims_free(&cl);
  }

  /* the claims of the first case, a plain RS256 token */
  jwt_issuer iss[1] = {{JV_ISSUER, keys}};
  jwt_policy p = {iss, 1, JV_AUDIENCE, JV_NOW, 0, true};
  jwt_claims cl;
  CHECK(jwt_verify(JV_CASES[0].token, strlen(JV_CASES[0].token), &p, &cl) == JWT_OK);
  CHECK_STR(cl.subject, "user-42");
  CHECK_STR(cl.client_id, "client-7");
  CHECK_STR(cl.scope, "files:read files:write");
  CHECK_STR(cl.issuer, JV_ISSUER);
  CHECK_STR(cl.kid, "rsa-1");
  CHECK(cl.exp == JV_NOW + 3600 && cl.iat == JV_NOW - 60);
  jwt_claims_free(&cl);
  /* one second past exp with no skew; a policy with no keys for the issuer */
  p.now = JV_NOW + 3600;
  CHECK(jwt_verify(JV_CASES[0].token, strlen(JV_CASES[0].token), &p, &cl) == JWT_EXPIRED);
  jwt_claims_free(&cl);
  p.now = JV_NOW;
  iss[0].keys = NULL;
  CHECK(jwt_verify(JV_CASES[0].token, strlen(JV_CASES[0].token), &p, &cl) == JWT_NO_KEY);
  jwt_claims_free(&cl);
  /* typ not required (issuers that write "JWT" or nothing): those pass then */
  iss[0].keys = keys;
  p.require_typ = false;
  for (size_t i = 0; i < JV_NCASES; i++)
    if (strcmp(JV_CASES[i].name, "typ_jwt") == 0 || strcmp(JV_CASES[i].name, "typ_missing") == 0) {
      CHECK(jwt_verify(JV_CASES[i].token, strlen(JV_CASES[i].token), &p, &cl) == JWT_OK);
      jwt_claims_free(&cl);
    } else if (strcmp(JV_CASES[i].name, "typ_dpop") == 0) {
      CHECK(jwt_verify(JV_CASES[i].token, strlen(JV_CASES[i].token), &p, &cl) == JWT_TYPE);
      jwt_claims_free(&cl);
    }
  /* an audience that is a prefix of the token's */
  p.audience = "https://mcp.test.example";
  CHECK(jwt_verify(JV_CASES[0].token, strlen(JV_CASES[0].token), &p, &cl) == JWT_AUDIENCE);
  jwt_claims_free(&cl);

  jwk_set_free(keys);
  jwk_set_free(keys2);
  jwk_set_free(rotated);
  return check_report("test_jwt");
}
