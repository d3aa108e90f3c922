/* validate.h — JSON Schema (2020-12, draft-07 compatible) validation of Lua values.
 *
 * Schemas and values are Lua values in json.h's mapping: a table is an array
 * when json_table_array_len says so (an empty table counts as an empty array
 * where a keyword wants one, e.g. required = {}), null is json_isnull or nil.
 *
 * Supported (JSON Schema 2020-12, and draft-07's spellings): type, enum,
 * const, minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf,
 * minLength, maxLength (code points), pattern (ECMA-262 on PCRE2, see
 * schema_regex.h), format (an annotation unless schema_limits asks for
 * assertion; see schema_format.h), properties, patternProperties,
 * additionalProperties, propertyNames, required, dependentRequired,
 * dependentSchemas, dependencies, minProperties, maxProperties, items,
 * prefixItems, additionalItems (with draft-style array items), contains,
 * minContains, maxContains, minItems, maxItems, uniqueItems, allOf, anyOf,
 * oneOf, not, if/then/else, unevaluatedProperties, unevaluatedItems,
 * boolean schemas, $ref within the schema ("#", "#/$defs/x", any JSON
 * pointer, "#name" for an $anchor, $dynamicAnchor or draft-07 "$id":
 * "#name", and the exact URI of an $id, optionally with a fragment),
 * $dynamicRef (resolved as a $ref: no dynamic scope), $defs/definitions
 * and $schema (draft-06/07, 2019-09, 2020-12; under draft-06/07 a $ref
 * ignores its sibling keywords, as those drafts say). Every other keyword
 * is an annotation and ignored; schema_unenforced lists the ones a schema
 * author may expect to be checked.
 *
 * Work is bounded: every (subschema, value) pair an anyOf, oneOf, allOf,
 * not or $ref meets is evaluated once per validation (a memo), uniqueItems
 * hashes its items (O(n log n)), and a step budget and a deadline stop the
 * rest (schema_limits below).
 *
 * No function here calls metamethods or Lua code; like any API call that
 * may allocate (following a $ref, the memo, uniqueItems' index), they can
 * raise a Lua memory error. */
#ifndef LUAMCP_VALIDATE_H
#define LUAMCP_VALIDATE_H

#include <stdbool.h>

#include "buf.h"

typedef struct lua_State lua_State;

/* Validate the Lua value at value_idx against the schema table at schema_idx
   (that schema is also the root for "#..." $ref). Returns true when valid;
   otherwise false and appends to err one message naming where it failed,
   e.g. "budget: must be >= 0", "missing required property 'budget'",
   "items[2].name: expected string, got number",
   "occasion: must be one of \"birthday\", \"wedding\"".
   Paths name object members bare ("a.b", or a["odd key"]) and array
   elements by their 0-based JSON index ("a[2]"). Schemas that did not pass
   schema_check never crash it, but what they mean is then unspecified.
   Leaves the stack as it found it. */
bool schema_validate(lua_State *L, int schema_idx, int value_idx, buf *err);

/* How much work one validation may do. A value comes from a client, and
   validating it runs in C, where no count hook can stop it: so the walker
   counts steps (a schema applied to a value, a value hashed or compared)
   and gives up, answering false, when either limit is reached. The message
   is then "too complex to validate (work limit reached)" or "(time limit
   reached)", with no path, and exhausted says so. A regular expression
   match counts too, and one that would backtrack past what is left of
   the budget is stopped by PCRE2's match limit with the same answer. */
typedef struct schema_limits {
  double deadline;         /* in: CLOCK_MONOTONIC seconds (clock_now()'s clock); 0: none */
  unsigned long max_steps; /* in: steps per pass; 0: SCHEMA_DEFAULT_STEPS */
  bool assert_format;      /* in: format is an assertion (default: an annotation) */
  bool exhausted;          /* out: false was answered because a limit was reached */
} schema_limits;

/* About a second of the walker's work on a complex schema, far more than a
   large valid message needs (a step per schema node and value it meets,
   each (subschema, value) pair at most once). */
#define SCHEMA_DEFAULT_STEPS 4000000UL

/* schema_validate within limits (NULL: the defaults, no deadline, which is
   what schema_validate and schema_validate_frozen use). */
bool schema_validate_limited(lua_State *L, int schema_idx, int value_idx, buf *err,
                             schema_limits *lim);

/* schema_validate for a schema that will not change (a registered tool's):
   what each of its tables holds is read once and remembered, keyed weakly
   by the table, in L's registry. Same answers, fewer instructions. */
bool schema_validate_frozen(lua_State *L, int schema_idx, int value_idx, buf *err);

/* schema_validate_frozen within limits (NULL: the defaults). When the fast
   path says invalid, the walker runs again for the message, with a fresh
   max_steps (the deadline stays): a message costs at most twice that. */
bool schema_validate_frozen_limited(lua_State *L, int schema_idx, int value_idx, buf *err,
                                    schema_limits *lim);

/* Check that a schema table is usable (keyword values of the right JSON
   types, known "type" names, local $refs that resolve, no unsupported
   $schema dialect, patterns that are ECMA-262 and compile: each is
   compiled here, once, and kept with the schema). Used when a script registers a tool: false + message
   (with a path like "properties.budget.minimum: must be a number") on
   error. Leaves the stack as it found it. */
bool schema_check(lua_State *L, int schema_idx, buf *err);

/* The keywords of the schema at schema_idx that the validator does not
   enforce, one line each appended to out ("properties.a: $dynamicRef is
   resolved statically, without a dynamic scope"): $dynamicRef,
   $recursiveRef, $vocabulary, contentEncoding, contentMediaType,
   contentSchema, and format (all of them unless assert_format, then the
   names schema_format_check does not know). Returns how many. For
   `luamcp check`. Leaves the stack as it found it. */
int schema_unenforced(lua_State *L, int schema_idx, bool assert_format, buf *out);

#endif
