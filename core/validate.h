/* validate.h — JSON Schema (2020-12, draft-07 compatible) validation of Lua values.
 *
 * Schemas and values are Lua values in json.h's mapping: a table is an array
 * when json_table_array_len says so (an empty table counts as an empty array
 * where a keyword wants one, e.g. required = {}), null is json_isnull or nil.
 *
 * Supported: type, enum, const, minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum, multipleOf, minLength, maxLength (code points),
 * properties, required, additionalProperties, minProperties, maxProperties,
 * items, prefixItems, additionalItems (with draft-style array items),
 * minItems, maxItems, uniqueItems, allOf, anyOf, oneOf, not, boolean
 * schemas, local $ref ("#", "#/$defs/x", any JSON pointer into the root),
 * $defs/definitions and $schema (draft-06/07, 2019-09, 2020-12; under
 * draft-06/07 a $ref ignores its sibling keywords, as those drafts say).
 * Every other keyword is ignored: notably pattern, patternProperties and
 * format (the regexes are ECMA-262, and Lua patterns are not regexes),
 * contains, if/then/else, dependencies, propertyNames, $id and anchors.
 *
 * Neither function calls metamethods or Lua code; like any API call that
 * may allocate (here only while following a $ref), they can raise a Lua
 * memory error. */
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

/* schema_validate for a schema that will not change (a registered tool's):
   what each of its tables holds is read once and remembered, keyed weakly
   by the table, in L's registry. Same answers, fewer instructions. */
bool schema_validate_frozen(lua_State *L, int schema_idx, int value_idx, buf *err);

/* Check that a schema table is usable (keyword values of the right JSON
   types, known "type" names, local $refs that resolve, no unsupported
   $schema dialect). Used when a script registers a tool: false + message
   (with a path like "properties.budget.minimum: must be a number") on
   error. Leaves the stack as it found it. */
bool schema_check(lua_State *L, int schema_idx, buf *err);

#endif
