/* jwk_internal.h — the parsed keys, shared by jwk.c (which builds them) and
 * jwt.c (which verifies with them); nothing outside core/auth/ sees them. */
#ifndef LUAMCP_JWK_INTERNAL_H
#define LUAMCP_JWK_INTERNAL_H

#include <stdbool.h>
#include <nettle/bignum.h>
#include <nettle/ecc-curve.h>
#include <nettle/ecc.h>
#include <nettle/eddsa.h>
#include <nettle/rsa.h>

#include "buf.h"
#include "json.h"
#include "jwt.h"

typedef enum { JWK_NONE, JWK_RSA, JWK_P256, JWK_P384, JWK_ED25519 } jwk_kind;

typedef struct jwk {
  jwk_kind kind;
  char *kid;  /* NULL when the key has none */
  char *alg;  /* NULL when the key does not pin one */
  struct rsa_public_key rsa;
  struct ecc_point ec;
  uint8_t ed25519[ED25519_KEY_SIZE];
} jwk;

struct jwk_set {
  size_t n;
  jwk keys[64];
};

bool jwk_b64url_decode(buf *out, const char *s, size_t n);
bool jwk_json_string(json_span obj, const char *key, buf *out);

#endif
