/* principal.h — who a request comes from, once its token is verified: the
 * subject, the client, the scopes granted and until when, and the token's
 * claims (JSON). Shared between threads by reference: the token cache
 * holds one, each request and call holding it another. Made up for tests
 * of scope logic (luamcp call --as) the same way, without a token. */
#ifndef LUAMCP_PRINCIPAL_H
#define LUAMCP_PRINCIPAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "jwt.h"

typedef struct principal {
  atomic_int refs;
  char *issuer;    /* NULL for a made-up one */
  char *subject;   /* never NULL nor "" from a token; NULL for a made-up one without */
  char *client_id; /* may be NULL */
  bool subject_is_client; /* the subject is client_id: an introspection answer without sub */
  char *scope;     /* the granted scopes, space-separated ("" for none) */
  long long exp;   /* seconds since the epoch; 0: none */
  char *claims;    /* the claims object as JSON ("{}" for a made-up one) */
  size_t claims_len;
} principal;

/* From verified claims: they are moved into it (c is left empty). NULL when
   out of memory. One reference, the caller's. */
principal *principal_from_claims(jwt_claims *c);
/* A made-up one: subject and the space- or comma-separated scopes. */
principal *principal_made_up(const char *subject, const char *scopes);
principal *principal_ref(principal *p);   /* p may be NULL */
void principal_unref(principal *p);       /* p may be NULL */

/* Was scope (n bytes) granted? */
bool principal_has(const principal *p, const char *scope, size_t n);
/* Are all of the scopes in list (space-separated) granted? NULL or "" is
   true; the first one missing, when not, in *missing (n bytes). */
bool principal_has_all(const principal *p, const char *list, const char **missing, size_t *n);
/* A key naming p's issuer, subject and client (what principal_same
   compares): 64 hex digits of SHA-256, "" for NULL. What outlives the
   principal (a task) or crosses to another instance keeps this. */
#define PRINCIPAL_KEY_LEN 64
void principal_key(const principal *p, char out[PRINCIPAL_KEY_LEN + 1]);
/* The key already made (forwarded: copied as it is), else p's. */
void principal_key_or(const char *made, const principal *p, char out[PRINCIPAL_KEY_LEN + 1]);
/* The key a script keeps a caller's data under (ctx.auth.key): issuer and
   subject, each percent-encoded (every byte but ASCII letters, digits, '-',
   '.' and '_' as %XX), as "SUBJECT@ISSUER", "client:SUBJECT@ISSUER" for a
   client's own identity (subject_is_client), and "SUBJECT@" for a made-up
   caller (no issuer). No two callers share one: neither part can hold '@'
   or ':' once encoded, and a trusted issuer is never empty. A string to
   free, or NULL for a caller without a subject (only a made-up one) and
   when out of memory. */
char *principal_owner_key(const principal *p);
/* Same issuer, subject and client (a session belongs to them). */
bool principal_same(const principal *a, const principal *b);

#endif
