/* auth_verify.c — what the first verification of an access token costs, per
 * algorithm (core/auth/jwt.c on nettle): the valid vectors of
 * tests/unit/jwt_vectors.h, each verified N times, microseconds per call.
 * A verified token is then remembered (core/transport/http_auth.c), so this
 * is paid once per token, not per request.
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Icore/auth -Icore/base -Itests/unit bench/auth_verify.c \
 *      build/libluamcp_auth.a build/libluamcp_base.a -lhogweed -lnettle -lgmp \
 *      $(pkg-config --libs lua5.4) -lm -o build/bench/auth_verify && build/bench/auth_verify */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jwt.h"
#include "jwt_vectors.h"

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 2000;
  char err[128];
  jwk_set *keys = jwk_set_parse(JV_JWKS, strlen(JV_JWKS), err, sizeof err);
  jwk_set *keys2 = jwk_set_parse(JV_JWKS2, strlen(JV_JWKS2), err, sizeof err);
  jwt_issuer iss[2] = {{JV_ISSUER, keys}, {JV_ISSUER2, keys2}};
  jwt_policy p = {iss, 2, JV_AUDIENCE, JV_NOW, JV_SKEW, true};
  const char *names[] = {"valid_rs256", "valid_rs512", "valid_ps256", "valid_es256",
                         "valid_es384", "valid_eddsa"};
  for (size_t k = 0; k < sizeof names / sizeof *names; k++)
    for (size_t i = 0; i < JV_NCASES; i++) {
      if (strcmp(JV_CASES[i].name, names[k]) != 0) continue;
      const char *t = JV_CASES[i].token;
      struct timespec a, b;
      clock_gettime(CLOCK_MONOTONIC, &a);
      for (int r = 0; r < n; r++) {
        jwt_claims c;
        if (jwt_verify(t, strlen(t), &p, &c) != JWT_OK) return fprintf(stderr, "%s fails\n", names[k]), 1;
        jwt_claims_free(&c);
      }
      clock_gettime(CLOCK_MONOTONIC, &b);
      double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 1e3 / n;
      printf("%-12s %8.1f us per verification (%d runs)\n", names[k] + 6, us, n);
    }
  jwk_set_free(keys);
  jwk_set_free(keys2);
  return 0;
}
