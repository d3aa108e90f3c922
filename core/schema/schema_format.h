/* schema_format.h — the JSON Schema `format` values validate.c can assert.
 *
 * email (RFC 5321 Mailbox), uri and uri-reference (RFC 3986), date-time,
 * date, time (RFC 3339, leap seconds only at 23:59:60 UTC) and duration
 * (RFC 3339 appendix A), uuid (RFC 4122 text), ipv4 (dotted quad, no
 * leading zeros), ipv6 (RFC 4291 text, no zone), hostname (RFC 1123
 * labels), json-pointer (RFC 6901), relative-json-pointer, and regex
 * (ECMA-262 as schema_regex reads it). Formats are an annotation unless the
 * caller asks for assertion (schema_limits.assert_format). */
#ifndef LUAMCP_SCHEMA_FORMAT_H
#define LUAMCP_SCHEMA_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

/* 1: [s, s+n) is a valid `name`; 0: it is not; -1: a format we do not
   check (any value passes). */
int schema_format_check(const char *name, const char *s, size_t n);

#endif
