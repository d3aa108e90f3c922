/* request_state.h — sealing the requestState of multi round-trip requests
 * (2026-07-28). The state carries the answers a handler got in earlier
 * rounds; it travels through the client, which may change it, so it is
 * signed: "v1." base64(payload) "." base64(HMAC-SHA256(key, payload)).
 * Signed, not encrypted: it holds nothing the client did not send.
 *
 * Keys: --state-key FILE (or LUAMCP_STATE_KEY, the same text) holds one
 * or more keys, one per line (32 bytes or more each, as text). The first
 * signs; every one verifies — so a service rotates without downtime: add
 * the new key second on every instance, then move it first, then drop the
 * old one. Without a key file each process makes a random key: rounds
 * then must come back to the same process. */
#ifndef LUAMCP_REQUEST_STATE_H
#define LUAMCP_REQUEST_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* Load the keys from text (lines); false with err when none is usable. */
bool request_state_set_keys(const char *text, size_t n, buf *err);
/* A random key for this process, when none was given. */
void request_state_random_key(void);
/* Append the sealed token for payload to out. */
void request_state_seal(buf *out, const char *payload, size_t n);
/* Verify tok with every key; on success append its payload to out. */
bool request_state_open(const char *tok, size_t n, buf *out);
/* SHA-256 of p[0..n) as 64 hex digits (and a NUL). */
void request_state_sha256(const void *p, size_t n, char out[65]);

#endif
