/* test_principal.c — core/auth/principal: the key a script keeps a caller's
 * data under (ctx.auth.key) names issuer and subject so that no two callers
 * share one, a client's own identity is not the user of the same name, and
 * a caller without a subject gets none (never a shared one). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "principal.h"

/* A principal as a token would make it (issuer, subject, client). */
static principal *from_token(const char *iss, const char *sub, const char *client, bool is_client) {
  jwt_claims c = {0};
  c.issuer = strdup(iss);
  c.subject = strdup(sub);
  c.client_id = client ? strdup(client) : NULL;
  c.payload = strdup("{}");
  c.payload_len = 2;
  principal *p = principal_from_claims(&c);
  jwt_claims_free(&c);
  if (p) p->subject_is_client = is_client;
  return p;
}

static char *key_of(const char *iss, const char *sub, bool is_client) {
  principal *p = from_token(iss, sub, NULL, is_client);
  char *k = principal_owner_key(p);
  principal_unref(p);
  return k;
}

int main(void) {
  char *k = key_of("https://as.example", "alice", false);
  CHECK_STR(k, "alice@https%3A%2F%2Fas.example");
  free(k);
  k = key_of("https://as.example/realms/a b", "svc-1", true);
  CHECK_STR(k, "client:svc-1@https%3A%2F%2Fas.example%2Frealms%2Fa%20b");
  free(k);

  /* pairs a plain join would run together: each its own key */
  const char *pairs[][2] = {
      {"https://a.example", "b@https://c.example"}, {"https://c.example", "b"},
      {"https://a.example@b", "c"},                 {"https://a.example", "c@b"},
      {"https://a.example", "client:x"},            {"https://a.example", "x"},
      {"https://a.example", "%41"},                 {"https://a.example", "A"},
      {"https://a.example:", "x"},                  {"https://a.example", ":x"},
      {"https://a.example", "x y"},                 {"https://a.example", "x%20y"},
  };
  enum { N = sizeof pairs / sizeof *pairs };
  char *keys[2 * N];
  for (size_t i = 0; i < N; i++) {
    keys[2 * i] = key_of(pairs[i][0], pairs[i][1], false);
    keys[2 * i + 1] = key_of(pairs[i][0], pairs[i][1], true); /* a client of that name */
  }
  for (size_t i = 0; i < 2 * N; i++) {
    CHECK(keys[i] != NULL);
    /* safe as a file name or a store key: no '/', never "." or ".." */
    CHECK(keys[i] && strspn(keys[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789-._%:@") == strlen(keys[i]));
    for (size_t j = 0; j < i; j++) CHECK(keys[i] && keys[j] && strcmp(keys[i], keys[j]) != 0);
  }
  for (size_t i = 0; i < 2 * N; i++) free(keys[i]);

  /* a client's own identity is neither the same caller nor the same task
     owner as the user of that name using that client */
  principal *user = from_token("https://as.example", "svc", "svc", false);
  principal *client = from_token("https://as.example", "svc", "svc", true);
  char ku[PRINCIPAL_KEY_LEN + 1], kc[PRINCIPAL_KEY_LEN + 1];
  principal_key(user, ku);
  principal_key(client, kc);
  CHECK(strcmp(ku, kc) != 0);
  CHECK(!principal_same(user, client) && principal_same(client, client));
  principal_unref(user);
  principal_unref(client);

  /* made up (luamcp call --as, luamcp test): no issuer; without a subject
     (--scopes alone, "" too) no key at all */
  principal *ada = principal_made_up("ada", "notes:read");
  k = principal_owner_key(ada);
  CHECK_STR(k, "ada@");
  free(k);
  principal_unref(ada);
  const char *none[] = {NULL, ""};
  for (int i = 0; i < 2; i++) {
    principal *p = principal_made_up(none[i], "notes:read");
    CHECK(p && !p->subject && !principal_owner_key(p));
    principal_unref(p);
  }
  CHECK(!principal_owner_key(NULL));
  return check_report("test_principal");
}
