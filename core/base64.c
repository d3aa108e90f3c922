/* base64.c — RFC 4648 base64 (see base64.h). */
#include "base64.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void base64_encode(buf *out, const unsigned char *p, size_t n) {
  buf_reserve(out, (n + 2) / 3 * 4);
  char *o = out->p + out->len;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
    *o++ = alphabet[v >> 18];
    *o++ = alphabet[(v >> 12) & 63];
    *o++ = alphabet[(v >> 6) & 63];
    *o++ = alphabet[v & 63];
  }
  if (i < n) {
    unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0);
    *o++ = alphabet[v >> 18];
    *o++ = alphabet[(v >> 12) & 63];
    *o++ = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
    *o++ = '=';
  }
  *o = '\0'; /* buf.h: p[len] is 0 (buf_reserve kept that byte) */
  out->len = (size_t)(o - out->p);
}

static int value_of(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool base64_decode(buf *out, const char *s, size_t n) {
  unsigned acc = 0;
  int bits = 0;
  bool padding = false;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    int v = value_of(c);
    if (v < 0 || padding) return false;
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      buf_putc(out, (char)((acc >> bits) & 0xFF));
    }
  }
  return true;
}
