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

/* 0..63 for the alphabet, 64 for whitespace, 65 for '=', 255 for the rest:
   one lookup a character (the requestState of every MRTR retry is decoded) */
static const unsigned char decode_table[256] = {
    255, 255, 255, 255, 255, 255, 255, 255, 255,  64,  64, 255, 255,  64, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
     64, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,  62, 255, 255, 255,  63,
     52,  53,  54,  55,  56,  57,  58,  59,  60,  61, 255, 255, 255,  65, 255, 255,
    255,   0,   1,   2,   3,   4,   5,   6,   7,   8,   9,  10,  11,  12,  13,  14,
     15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25, 255, 255, 255, 255, 255,
    255,  26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,
     41,  42,  43,  44,  45,  46,  47,  48,  49,  50,  51, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
};

bool base64_decode_canonical(buf *out, const char *s, size_t n) {
  if (n % 4) return false;
  size_t pad = n >= 1 && s[n - 1] == '=' ? (n >= 2 && s[n - 2] == '=' ? 2 : 1) : 0;
  for (size_t i = 0; i < n - pad; i++)
    if (decode_table[(unsigned char)s[i]] >= 64) return false; /* whitespace, '=' inside */
  /* the bits the last character carries past the data must be zero */
  if (pad) {
    unsigned last = decode_table[(unsigned char)s[n - pad - 1]];
    if (last & (pad == 1 ? 0x3 : 0xF)) return false;
  }
  return base64_decode(out, s, n);
}

bool base64_decode(buf *out, const char *s, size_t n) {
  buf_reserve(out, n / 4 * 3 + 3);
  unsigned char *o = (unsigned char *)out->p + out->len;
  unsigned acc = 0;
  int bits = 0;
  bool padding = false;
  for (size_t i = 0; i < n; i++) {
    unsigned v = decode_table[(unsigned char)s[i]];
    if (v < 64) {
      if (padding) return false;
      acc = (acc << 6) | v;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        *o++ = (unsigned char)((acc >> bits) & 0xFF);
      }
    } else if (v == 65) padding = true;
    else if (v != 64) return false;
  }
  *o = '\0';
  out->len = (size_t)((char *)o - out->p);
  return true;
}
