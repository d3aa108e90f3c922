/* uri_template.h — matching a URI against an RFC 6570 level-1 template
 * ("mcp://app/notes/{folder}/{name}.txt"), the reverse of expanding it.
 *
 * The rule:
 *   - literal text must be in the URI exactly (bytes compared as they are);
 *   - a {variable} takes one or more characters other than '/' (so
 *     "%2F", an encoded slash, is a character it may take);
 *   - when several splits fit, each variable from the left takes the
 *     longest value that still lets the rest match: {name}.{ext} on
 *     "a.b.c" gives name "a.b", ext "c" (POSIX's rule for a regular
 *     expression's subexpressions, which tests/unit/test_uri_template.c
 *     uses as the reference); {name}.txt on "a.txt.txt" gives "a.txt";
 *   - values are percent-decoded after the split (uri_template_decode).
 *
 * Work: time and memory O(tokens x URI length) (dynamic programming over
 * template token x URI position, no backtracking blow-up), and a URI
 * longer than URI_TEMPLATE_MAX_URI bytes is not matched at all. */
#ifndef LUAMCP_URI_TEMPLATE_H
#define LUAMCP_URI_TEMPLATE_H

#include <stddef.h>

#define URI_TEMPLATE_MAX_URI 8192

typedef struct uri_template_var {
  const char *name; /* inside the template, between the braces */
  size_t name_len;
  const char *value; /* inside the URI, still percent-encoded */
  size_t value_len;
} uri_template_var;

typedef enum {
  URI_TEMPLATE_MATCH,
  URI_TEMPLATE_NO_MATCH,
  URI_TEMPLATE_TOO_LONG,     /* the URI is longer than URI_TEMPLATE_MAX_URI */
  URI_TEMPLATE_BAD_TEMPLATE, /* an unclosed '{', an empty or nested name */
  URI_TEMPLATE_NO_MEMORY,
} uri_template_result;

/* How many {variables} tpl has, or -1 when it is not a level-1 template. */
int uri_template_count(const char *tpl);

/* Match uri (n bytes, may hold any byte) against tpl; on a match, vars[i]
   is the i-th variable of the template (nvars must be its count). */
uri_template_result uri_template_match(const char *tpl, const char *uri, size_t n,
                                       uri_template_var *vars, size_t nvars);

/* Percent-decode n bytes into out (room for n): "%XX" with two hex digits
   is that byte, anything else (a lone '%' too) stays as it is. Returns the
   decoded length, or (size_t)-1 when the result holds a NUL byte (a C
   function given such a path would see only what comes before it). */
size_t uri_template_decode(const char *p, size_t n, char *out);

#endif
