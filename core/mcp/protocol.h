/* protocol.h — the MCP protocol versions we speak, oldest first, and what
 * each one added that older clients must not be sent. */
#ifndef LUAMCP_PROTOCOL_H
#define LUAMCP_PROTOCOL_H

enum {
  PROTO_NONE, /* not negotiated */
  PROTO_2024_11_05,
  PROTO_2025_03_26, /* + tool annotations */
  PROTO_2025_06_18, /* + title, outputSchema/structuredContent, resource_link */
  PROTO_2025_11_25, /* + icons, serverInfo description/websiteUrl */
  PROTO_LATEST = PROTO_2025_11_25,
  PROTO_COUNT
};

const char *proto_name(int version);
/* The version for a requested name (exact match), or PROTO_NONE. */
int proto_from_name(const char *s, unsigned long n);

#endif
