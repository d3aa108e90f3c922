/* protocol.c — the revisions' names (see protocol.h). */
#include "protocol.h"

#include <string.h>

static const char *const names[PROTO_COUNT] = {NULL,         "2024-11-05", "2025-03-26",
                                               "2025-06-18", "2025-11-25", "2026-07-28"};

const char *proto_name(int version) {
  return version > PROTO_NONE && version <= PROTO_LATEST ? names[version] : NULL;
}

int proto_from_name(const char *s, unsigned long n) {
  for (int v = PROTO_2024_11_05; v <= PROTO_LATEST; v++)
    if (n == strlen(names[v]) && memcmp(names[v], s, n) == 0) return v;
  return PROTO_NONE;
}

void proto_per_request_json(buf *out) {
  const char *sep = "[";
  for (int v = PROTO_2024_11_05; v <= PROTO_LATEST; v++)
    if (proto_per_request(v)) buf_printf(out, "%s\"%s\"", sep, names[v]), sep = ",";
  buf_puts(out, "]");
}
