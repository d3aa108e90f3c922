/* principal.c — who a request comes from (principal.h). */
#include "principal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

static principal *alloc_principal(void) {
  principal *p = calloc(1, sizeof *p);
  if (p) atomic_init(&p->refs, 1);
  return p;
}

principal *principal_from_claims(jwt_claims *c) {
  principal *p = alloc_principal();
  if (!p) return NULL;
  p->issuer = c->issuer, c->issuer = NULL;
  p->subject = c->subject, c->subject = NULL;
  p->client_id = c->client_id, c->client_id = NULL;
  p->scope = c->scope ? c->scope : strdup("");
  c->scope = NULL;
  p->exp = c->exp;
  p->claims = c->payload, p->claims_len = c->payload_len;
  c->payload = NULL, c->payload_len = 0;
  if (!p->scope || !p->claims) {
    principal_unref(p);
    return NULL;
  }
  return p;
}

principal *principal_made_up(const char *subject, const char *scopes) {
  principal *p = alloc_principal();
  if (!p) return NULL;
  if (subject && !subject[0]) subject = NULL; /* "" names no one */
  p->subject = subject ? strdup(subject) : NULL;
  p->scope = strdup(scopes ? scopes : "");
  p->claims = strdup("{}");
  p->claims_len = 2;
  if (!p->scope || !p->claims || (subject && !p->subject)) {
    principal_unref(p);
    return NULL;
  }
  for (char *s = p->scope; *s; s++)
    if (*s == ',') *s = ' ';
  return p;
}

principal *principal_ref(principal *p) {
  if (p) atomic_fetch_add(&p->refs, 1);
  return p;
}

void principal_unref(principal *p) {
  if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
  free(p->issuer);
  free(p->subject);
  free(p->client_id);
  free(p->scope);
  free(p->claims);
  free(p);
}

bool principal_has(const principal *p, const char *scope, size_t n) {
  if (!p || !n) return false;
  for (const char *s = p->scope; *s;) {
    size_t len = strcspn(s, " ");
    if (len == n && memcmp(s, scope, n) == 0) return true;
    s += len;
    while (*s == ' ') s++;
  }
  return false;
}

bool principal_has_all(const principal *p, const char *list, const char **missing, size_t *n) {
  for (const char *s = list; s && *s;) {
    while (*s == ' ') s++;
    size_t len = strcspn(s, " ");
    if (len && !principal_has(p, s, len)) {
      if (missing) *missing = s, *n = len;
      return false;
    }
    s += len;
  }
  return true;
}

static bool same_str(const char *a, const char *b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

bool principal_same(const principal *a, const principal *b) {
  if (a == b) return true;
  return a && b && same_str(a->issuer, b->issuer) && same_str(a->subject, b->subject) &&
         same_str(a->client_id, b->client_id) && a->subject_is_client == b->subject_is_client;
}

static void key_part(struct sha256_ctx *c, const char *s) {
  char len[24]; /* each part with its length: no two identities run together alike */
  int n = snprintf(len, sizeof len, "%zu:", s ? strlen(s) : 0);
  sha256_update(c, (size_t)n, (const uint8_t *)len);
  if (s) sha256_update(c, strlen(s), (const uint8_t *)s);
}

void principal_key_or(const char *made, const principal *p, char out[PRINCIPAL_KEY_LEN + 1]) {
  if (made) snprintf(out, PRINCIPAL_KEY_LEN + 1, "%s", made);
  else principal_key(p, out);
}

void principal_key(const principal *p, char out[PRINCIPAL_KEY_LEN + 1]) {
  out[0] = '\0';
  if (!p) return;
  struct sha256_ctx c;
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_init(&c);
  key_part(&c, p->issuer);
  key_part(&c, p->subject);
  key_part(&c, p->client_id);
  /* a client's own identity is not the user of the same name and client
     (only then a part more: the keys of users stay as they were) */
  if (p->subject_is_client) key_part(&c, "client");
  sha256_digest(&c, sizeof d, d);
  for (size_t i = 0; i < sizeof d; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* s percent-encoded onto out (at most 3 bytes per byte of s) */
static char *encode_part(char *out, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_') {
      *out++ = (char)c;
    } else {
      *out++ = '%';
      *out++ = hex[c >> 4];
      *out++ = hex[c & 15];
    }
  }
  return out;
}

char *principal_owner_key(const principal *p) {
  if (!p || !p->subject || !p->subject[0]) return NULL;
  size_t ns = strlen(p->subject), ni = p->issuer ? strlen(p->issuer) : 0;
  char *key = malloc(sizeof "client:@" + 3 * (ns + ni));
  if (!key) return NULL;
  char *o = key;
  if (p->subject_is_client) memcpy(o, "client:", 7), o += 7;
  o = encode_part(o, p->subject);
  *o++ = '@';
  o = encode_part(o, p->issuer);
  *o = '\0';
  return key;
}
