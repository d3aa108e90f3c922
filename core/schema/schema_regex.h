/* schema_regex.h — JSON Schema regular expressions (pattern, patternProperties,
 * format "regex") on PCRE2, for validate.c.
 *
 * JSON Schema's regexes are ECMA-262 with the "u" flag. A pattern is read
 * as ECMA-262 and translated to PCRE2 (UTF, not UCP: ECMA's \d \w \b are
 * ASCII) with ECMA's meaning of \s, `.`, `$`, \v and \u; constructs only
 * PCRE2 has (\A \Z \z \G \K \Q \h \R, (?flags), (?>...), possessive
 * quantifiers, (*VERBS)) are refused as not ECMA-262. docs/lua-api.md's schema
 * section lists what still differs.
 *
 * Compiled patterns are cached per schema: keyed weakly by the table that
 * holds the pattern string (a schema for `pattern`, a patternProperties
 * table for its keys), so each compiles once and is freed with its schema.
 * Matching is bounded: see schema_regex_match. */
#ifndef LUAMCP_SCHEMA_REGEX_H
#define LUAMCP_SCHEMA_REGEX_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

typedef struct lua_State lua_State;
typedef struct schema_regex schema_regex;

/* Is [src, src+n) an ECMA-262 regular expression we can run? false with a
   message in err (may be NULL) when not. Compiles nothing it keeps. */
bool schema_regex_valid(const char *src, size_t n, buf *err);

/* The compiled form of the pattern string at str, held by the table at
   holder: from the cache, or compiled (once) and cached. NULL when it does
   not compile (message in err, may be NULL; remembered too). Pushes
   nothing; the result lives as long as holder is reachable. May raise a
   Lua memory error. */
const schema_regex *schema_regex_get(lua_State *L, int holder, int str, buf *err);

/* Match results. */
enum { REGEX_NO = 0, REGEX_YES = 1, REGEX_LIMIT = -1, REGEX_TIME = -2 };

/* The most backtracking units one match may take (about 0.2 s): a
   pattern that needs more for one string is too complex, whatever the
   budget. */
#define SCHEMA_REGEX_MAX_UNITS 16000000UL

/* Search the subject (UTF-8; invalid UTF-8 never matches) for the
   pattern, unanchored, spending at most max_units (capped at
   SCHEMA_REGEX_MAX_UNITS) of PCRE2's match limit (backtracking steps; the
   heap it may use, 16 MiB, is bounded too). Tries with a small limit
   first and retries with 8 times more until max_units, so *units (the sum
   of the limits tried, 0 when the first small try answered) bounds the
   work done within a factor of about 8. Between tries it reads the clock:
   REGEX_TIME once past deadline (CLOCK_MONOTONIC seconds; 0: none).
   REGEX_LIMIT when max_units (or the heap bound) was not enough. Either
   way the caller answers "too complex". */
int schema_regex_match(lua_State *L, const schema_regex *re, const char *s, size_t n,
                       unsigned long max_units, double deadline, unsigned long *units);

#endif
