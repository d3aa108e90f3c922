/* schema_format.c — `format` checkers of JSON Schema (see schema_format.h).
 * Its own file: thirteen small grammars (RFC 3339, 3986, 4291, 5321, 6901)
 * that have nothing to do with the keyword walk of validate.c. */
#include "schema_format.h"

#include <string.h>

#include "schema_regex.h"

typedef struct span {
  const char *p, *end;
} span;

static bool digit(char c) { return c >= '0' && c <= '9'; }
static bool alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool hexdig(char c) { return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* n ASCII digits at p as a number, or -1. */
static int digits(const char *p, const char *end, int n) {
  if (end - p < n) return -1;
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (!digit(p[i])) return -1;
    v = v * 10 + (p[i] - '0');
  }
  return v;
}

/* {====== RFC 3339 */

static bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static bool full_date(const char *p, const char *end) {
  if (end - p != 10 || p[4] != '-' || p[7] != '-') return false;
  int y = digits(p, end, 4), m = digits(p + 5, end, 2), d = digits(p + 8, end, 2);
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 0 || m < 1 || m > 12 || d < 1) return false;
  return d <= mdays[m - 1] + (m == 2 && leap(y));
}

static bool full_time(const char *p, const char *end) {
  if (end - p < 9 || p[2] != ':' || p[5] != ':') return false;
  int h = digits(p, end, 2), m = digits(p + 3, end, 2), s = digits(p + 6, end, 2);
  if (h < 0 || h > 23 || m < 0 || m > 59 || s < 0 || s > 60) return false;
  p += 8;
  if (p < end && *p == '.') {
    const char *f = ++p;
    while (p < end && digit(*p)) p++;
    if (p == f) return false;
  }
  if (p == end) return false;
  int off = 0; /* minutes east of UTC */
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    if (end - p != 6 || p[3] != ':') return false;
    int oh = digits(p + 1, end, 2), om = digits(p + 4, end, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return false;
    off = (*p == '+' ? 1 : -1) * (oh * 60 + om);
    p = end;
  } else {
    return false;
  }
  if (p != end) return false;
  if (s == 60) { /* a leap second is 23:59:60 in UTC */
    int utc = ((h * 60 + m - off) % 1440 + 1440) % 1440;
    if (utc != 23 * 60 + 59) return false;
  }
  return true;
}

static bool date_time(const char *p, const char *end) {
  if (end - p < 11 || (p[10] != 'T' && p[10] != 't')) return false;
  return full_date(p, p + 10) && full_time(p + 11, end);
}

/* RFC 3339 appendix A: P(nY[nM[nD]] | nM[nD] | nD)[T...] | PT... | PnW */
static bool duration(const char *p, const char *end) {
  if (p == end || *p++ != 'P' || p == end) return false;
  static const char date_units[] = "YMD", time_units[] = "HMS";
  const char *units = date_units;
  int next = 0; /* the first unit the next element may have */
  bool any = false, in_time = false;
  while (p < end) {
    if (*p == 'T') {
      if (in_time) return false;
      in_time = true;
      units = time_units;
      next = 0;
      any = false;
      p++;
      if (p == end) return false;
      continue;
    }
    const char *n = p;
    while (p < end && digit(*p)) p++;
    if (p == n || p == end) return false;
    if (!in_time && *p == 'W') return !any && p + 1 == end && n[-1] == 'P';
    const char *u = strchr(units, *p);
    if (!u || !*p) return false;
    int at = (int)(u - units);
    /* each unit follows the one before it: nothing may be skipped */
    if (at < next || (any && at != next)) return false;
    next = at + 1;
    any = true;
    p++;
  }
  return any;
}

/* }====== */

/* {====== addresses and names */

static bool ipv4(const char *p, const char *end) {
  for (int part = 0; part < 4; part++) {
    if (part && (p == end || *p++ != '.')) return false;
    const char *n = p;
    int v = 0;
    while (p < end && digit(*p) && p - n < 3) v = v * 10 + (*p++ - '0');
    if (p == n || v > 255 || (*n == '0' && p - n > 1)) return false;
  }
  return p == end;
}

static bool ipv6(const char *p, const char *end) {
  int groups = 0;
  bool gap = false;
  if (end - p >= 2 && p[0] == ':' && p[1] == ':') {
    gap = true;
    p += 2;
    if (p == end) return true;
  } else if (p < end && *p == ':') {
    return false;
  }
  while (p < end) {
    const char *g = p;
    while (p < end && hexdig(*p) && p - g < 5) p++;
    if (p < end && *p == '.') { /* an IPv4 tail takes two groups */
      if (!ipv4(g, end) || groups > 6) return false;
      groups += 2;
      p = end;
      break;
    }
    if (p == g || p - g > 4) return false;
    groups++;
    if (p == end) break;
    if (*p != ':') return false;
    p++;
    if (p < end && *p == ':') {
      if (gap) return false;
      gap = true;
      p++;
      if (p == end) break;
    } else if (p == end) {
      return false; /* a trailing single colon */
    }
  }
  return gap ? groups <= 7 : groups == 8;
}

static bool hostname(const char *p, const char *end) {
  if (p == end || end - p > 253) return false;
  while (p <= end) {
    const char *l = p;
    while (p < end && *p != '.') {
      if (!alpha(*p) && !digit(*p) && *p != '-') return false;
      p++;
    }
    if (p == l || p - l > 63 || *l == '-' || p[-1] == '-') return false;
    /* "--" in the 3rd and 4th places is for A-labels only (RFC 5891 4.2.3.1);
       whether an "xn--" label is good Punycode and IDNA is not checked */
    if (p - l >= 4 && l[2] == '-' && l[3] == '-' && !((l[0] | 0x20) == 'x' && (l[1] | 0x20) == 'n'))
      return false;
    if (p == end) return true;
    p++;
    if (p == end) return false; /* an empty last label */
  }
  return true;
}

static bool atext(char c) {
  return alpha(c) || digit(c) || (c && strchr("!#$%&'*+-/=?^_`{|}~", c));
}

static bool email(const char *p, const char *end) {
  if (p < end && *p == '"') { /* a quoted local part */
    p++;
    for (;;) {
      if (p == end) return false;
      unsigned char c = (unsigned char)*p;
      if (c == '"') break;
      if (c == '\\') {
        if (++p == end || (unsigned char)*p < 32 || (unsigned char)*p > 126) return false;
      } else if (c < 32 || c > 126) {
        return false;
      }
      p++;
    }
    p++;
  } else {
    const char *l = p;
    for (bool dot_ok = false; p < end && *p != '@'; p++) {
      if (*p == '.') {
        if (!dot_ok) return false;
        dot_ok = false;
      } else if (atext(*p)) {
        dot_ok = true;
      } else {
        return false;
      }
    }
    if (p == l || p[-1] == '.') return false;
  }
  if (p == end || *p++ != '@') return false;
  if (p < end && *p == '[') {
    if (end[-1] != ']') return false;
    if (end - p > 6 && memcmp(p, "[IPv6:", 6) == 0) return ipv6(p + 6, end - 1);
    return ipv4(p + 1, end - 1);
  }
  return hostname(p, end);
}

static bool uuid(const char *p, const char *end) {
  if (end - p != 36) return false;
  for (int i = 0; i < 36; i++) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (p[i] != '-') return false;
    } else if (!hexdig(p[i])) {
      return false;
    }
  }
  return true;
}

/* }====== */

/* {====== RFC 3986 and RFC 6901 */

static bool unreserved(char c) { return alpha(c) || digit(c) || (c && strchr("-._~", c)); }
static bool sub_delim(char c) { return c && strchr("!$&'()*+,;=", c); }

/* *(allowed / pct-encoded) from *pp; extra: more single characters allowed. */
static void uri_chars(const char **pp, const char *end, const char *extra) {
  const char *p = *pp;
  while (p < end) {
    if (*p == '%') {
      if (end - p < 3 || !hexdig(p[1]) || !hexdig(p[2])) break;
      p += 3;
    } else if (unreserved(*p) || sub_delim(*p) || (*p && strchr(extra, *p))) {
      p++;
    } else {
      break;
    }
  }
  *pp = p;
}

static bool authority(const char *p, const char *end) {
  const char *at = memchr(p, '@', (size_t)(end - p));
  if (at) {
    const char *u = p;
    uri_chars(&u, at, ":");
    if (u != at) return false;
    p = at + 1;
  }
  if (p < end && *p == '[') {
    const char *close = memchr(p, ']', (size_t)(end - p));
    if (!close) return false;
    const char *h = p + 1;
    if (h < close && (*h == 'v' || *h == 'V')) { /* IPvFuture */
      const char *x = ++h;
      while (h < close && hexdig(*h)) h++;
      if (h == x || h == close || *h++ != '.' || h == close) return false;
      uri_chars(&h, close, ":");
      if (h != close) return false;
    } else if (!ipv6(h, close)) {
      return false;
    }
    p = close + 1;
  } else {
    uri_chars(&p, end, "");
  }
  if (p < end && *p == ':') {
    p++;
    while (p < end && digit(*p)) p++;
  }
  return p == end;
}

/* hier-part or relative-part, then [?query] [#fragment]; noscheme: the
   first path segment may not hold a ':' (a relative reference). */
static bool uri_rest(const char *p, const char *end, bool noscheme) {
  if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
    const char *a = p + 2;
    p = a;
    while (p < end && *p != '/' && *p != '?' && *p != '#') p++;
    if (!authority(a, p)) return false;
  } else if (noscheme) {
    const char *s = p;
    uri_chars(&s, end, "@");
    if (s < end && *s == ':') return false;
  }
  uri_chars(&p, end, ":@/");
  if (p < end && *p == '?') {
    p++;
    uri_chars(&p, end, ":@/?");
  }
  if (p < end && *p == '#') {
    p++;
    uri_chars(&p, end, ":@/?");
  }
  return p == end;
}

static bool uri(const char *p, const char *end) {
  if (p == end || !alpha(*p)) return false;
  const char *s = p + 1;
  while (s < end && (alpha(*s) || digit(*s) || *s == '+' || *s == '-' || *s == '.')) s++;
  if (s == end || *s != ':') return false;
  return uri_rest(s + 1, end, false);
}

static bool uri_reference(const char *p, const char *end) {
  return uri(p, end) || uri_rest(p, end, true);
}

static bool json_pointer(const char *p, const char *end) {
  if (p < end && *p != '/') return false;
  for (; p < end; p++)
    if (*p == '~' && (p + 1 == end || (p[1] != '0' && p[1] != '1'))) return false;
  return true;
}

static bool relative_json_pointer(const char *p, const char *end) {
  const char *n = p;
  while (p < end && digit(*p)) p++;
  if (p == n || (*n == '0' && p - n > 1)) return false;
  if (p < end && *p == '#') return p + 1 == end;
  return json_pointer(p, end);
}

static bool regex(const char *p, const char *end) {
  return schema_regex_valid(p, (size_t)(end - p), NULL);
}

/* }====== */

int schema_format_check(const char *name, const char *s, size_t n) {
  static const struct {
    const char *name;
    bool (*check)(const char *, const char *);
  } formats[] = {
    {"date-time", date_time}, {"date", full_date}, {"time", full_time},
    {"duration", duration}, {"email", email}, {"hostname", hostname},
    {"ipv4", ipv4}, {"ipv6", ipv6}, {"uri", uri}, {"uri-reference", uri_reference},
    {"uuid", uuid}, {"json-pointer", json_pointer},
    {"relative-json-pointer", relative_json_pointer}, {"regex", regex},
  };
  for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
    if (strcmp(name, formats[i].name) == 0) return formats[i].check(s, s + n);
  return -1;
}
