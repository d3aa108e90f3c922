/* base64.h — RFC 4648 base64 (standard alphabet, padded), for image/audio
 * content and resource blobs. */
#ifndef LUAMCP_BASE64_H
#define LUAMCP_BASE64_H

#include <stdbool.h>
#include "buf.h"

void base64_encode(buf *out, const unsigned char *p, size_t n);
/* Accepts padded or unpadded input, ignores ASCII whitespace; false on any
   other character. */
bool base64_decode(buf *out, const char *s, size_t n);
/* Only the one encoding base64_encode writes: padded to a multiple of 4,
   no whitespace, the unused bits of the last character zero. For tokens
   that are compared or signed, where another spelling of the same bytes
   must not pass. */
bool base64_decode_canonical(buf *out, const char *s, size_t n);

#endif
