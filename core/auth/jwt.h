/* jwt.h — verifying an OAuth 2.1 access token that is a JWT (RFC 9068
 * profile of RFC 7519/7515) against its issuer's published keys (RFC 7517).
 *
 * Pure: no I/O, no clock, no Lua. The caller says what time it is, which
 * issuers it trusts and with which key sets (fetched elsewhere), and which
 * resource it is (the audience). Runs on the transport's threads.
 *
 * The algorithm is pinned to the key, never taken from the token alone:
 * RSA keys verify RS256/384/512 and PS256/384/512, EC P-256 only ES256,
 * P-384 only ES384, OKP Ed25519 only EdDSA; "none", HMAC and symmetric keys
 * are never accepted (no HS256-with-the-public-key confusion). Crypto is
 * nettle's (hogweed), already in the build. */
#ifndef LUAMCP_JWT_H
#define LUAMCP_JWT_H

#include <stdbool.h>
#include <stddef.h>

#include "json.h"

/* One issuer's public keys, parsed from a JWKS document ({"keys":[...]}).
   Keys it cannot use (oct, unknown kty/crv, "use" other than "sig", RSA
   under 2048 bits, points not on the curve) are skipped, not fatal. */
typedef struct jwk_set jwk_set;

/* NULL with a message in err when the document is no JWKS at all. */
jwk_set *jwk_set_parse(const char *json, size_t n, char *err, size_t errlen);
void jwk_set_free(jwk_set *set);
size_t jwk_set_count(const jwk_set *set);  /* usable keys */
bool jwk_set_has_kid(const jwk_set *set, const char *kid);

typedef enum {
  JWT_OK = 0,
  JWT_MALFORMED,    /* not three base64url parts, or not JSON objects */
  JWT_TYPE,         /* typ is not at+jwt (when required) */
  JWT_ALG,          /* alg missing, "none", symmetric, or unsupported */
  JWT_ISSUER,       /* iss missing or not a trusted issuer */
  JWT_UNKNOWN_KID,  /* no key of the issuer has this kid (refetch its keys) */
  JWT_NO_KEY,       /* no key of the issuer fits the algorithm */
  JWT_SIGNATURE,    /* the signature does not verify */
  JWT_AUDIENCE,     /* aud missing or does not name this resource */
  JWT_EXPIRED,      /* exp missing or past (beyond the skew) */
  JWT_NOT_YET,      /* nbf or iat in the future (beyond the skew) */
  JWT_SUBJECT,      /* sub missing, empty or not a string: no one to name (RFC 9068 2.2) */
  JWT_NO_EXPIRY,    /* exp missing (RFC 9068 2.2 requires it) */
} jwt_status;

const char *jwt_status_text(jwt_status s);  /* a short phrase for logs/errors */
const char *jwt_status_name(jwt_status s);  /* one word: a metric label */

typedef struct jwt_issuer {
  const char *issuer;   /* exactly as in "iss" */
  const jwk_set *keys;  /* may be NULL: no keys yet (JWT_NO_KEY) */
} jwt_issuer;

typedef struct jwt_policy {
  const jwt_issuer *issuers;
  size_t n_issuers;
  const char *audience;  /* this server's canonical resource URI */
  long long now;         /* seconds since the epoch */
  long long skew;        /* seconds of clock skew allowed each way */
  bool require_typ;      /* typ must be at+jwt / application/at+jwt (else JWT or none pass too) */
} jwt_policy;

/* What a verified token says. Strings are NUL-terminated and owned. */
typedef struct jwt_claims {
  char *issuer;
  char *subject;    /* "sub": never NULL nor "" once verified (JWT_SUBJECT) */
  char *client_id;  /* "client_id", else "azp" (may be NULL) */
  char *scope;      /* "scope" (space-separated), else "scp" joined */
  char *kid;        /* the header's kid, for JWT_UNKNOWN_KID too */
  long long exp, iat;
  char *payload;    /* the whole claims object as JSON */
  size_t payload_len;
} jwt_claims;

/* A NumericDate member of obj: seconds, maybe with a fraction (dropped).
   Read by hand, not strtod, whose decimal point is the locale's. No
   exponent, at most 15 digits: later than any real date, so sums with a
   skew never overflow. 0: absent, 1: read, -1: present but no NumericDate. */
int jwt_numeric_date(json_span obj, const char *key, long long *out);

/* Verify token (the bearer credential, without "Bearer "). On JWT_OK
   *out holds the claims; on JWT_UNKNOWN_KID out->issuer and out->kid say
   which key to look for; free with jwt_claims_free either way. */
jwt_status jwt_verify(const char *token, size_t n, const jwt_policy *policy, jwt_claims *out);
void jwt_claims_free(jwt_claims *c);

#endif
