/* protocol.h — the MCP revisions luamcp speaks, oldest first, and what each
 * one changed. This table is where a revision is decided: a 2025-11-25
 * session negotiates one of the first four with initialize; a request that
 * carries its own envelope (params._meta, envelope.h) names one of the
 * per-request revisions, from 2026-07-28 on. Everything else asks this
 * table (proto_per_request, proto_*_json) rather than naming a revision.
 *
 * Adding a revision (docs/DESIGN.md, "Adding a revision"): a row here and
 * in protocol.c, and the rows of methods.c whose methods it adds or
 * removes; features it adds are keyed on `version >= PROTO_...`. */
#ifndef LUAMCP_PROTOCOL_H
#define LUAMCP_PROTOCOL_H

#include <stdbool.h>

#include "buf.h"

enum {
  PROTO_NONE, /* not negotiated */
  PROTO_2024_11_05,
  PROTO_2025_03_26, /* + tool annotations */
  PROTO_2025_06_18, /* + title, outputSchema/structuredContent, resource_link */
  PROTO_2025_11_25, /* + icons, serverInfo description/websiteUrl */
  /* + the per-request envelope (stateless: no initialize, no session),
     multi round-trip requests, subscriptions/listen, the tasks extension,
     the standard HTTP headers; - ping, logging/setLevel, resources/subscribe */
  PROTO_2026_07_28,
  PROTO_LATEST = PROTO_2026_07_28,
  PROTO_COUNT
};

/* The newest revision initialize can negotiate (the session-based ones). */
#define PROTO_LATEST_SESSION PROTO_2025_11_25

const char *proto_name(int version);
/* The revision of this exact name, or PROTO_NONE. */
int proto_from_name(const char *s, unsigned long n);

/* Does a request of this revision carry its own envelope (no session)? */
static inline bool proto_per_request(int version) { return version >= PROTO_2026_07_28; }

/* Append the per-request revisions as a JSON array of names ("supported"
   of -32022, server/discover's supportedVersions). */
void proto_per_request_json(buf *out);

#endif
