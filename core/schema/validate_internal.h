/* validate_internal.h — what the walker (validate.c) shares with the
 * check of a schema (validate_check.c): the keywords, the walker, its
 * path and messages. */
#ifndef LUAMCP_VALIDATE_INTERNAL_H
#define LUAMCP_VALIDATE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#include "buf.h"
#include "json.h"

/* The order here is the order keywords are applied in, which decides the
   message when a value breaks several. */
enum {
  KW_SCHEMA, KW_REF, KW_DYNAMICREF, KW_TYPE, KW_ENUM, KW_CONST,
  KW_MINIMUM, KW_EXCLUSIVEMINIMUM, KW_MAXIMUM, KW_EXCLUSIVEMAXIMUM,
  KW_MULTIPLEOF, KW_MINLENGTH, KW_MAXLENGTH, KW_PATTERN, KW_FORMAT,
  KW_REQUIRED, KW_DEPENDENTREQUIRED, KW_MINPROPERTIES, KW_MAXPROPERTIES, KW_PROPERTIES,
  KW_PATTERNPROPERTIES, KW_ADDITIONALPROPERTIES, KW_PROPERTYNAMES, KW_DEPENDENTSCHEMAS,
  KW_DEPENDENCIES,
  KW_MINITEMS, KW_MAXITEMS, KW_PREFIXITEMS, KW_ITEMS, KW_ADDITIONALITEMS,
  KW_UNIQUEITEMS, KW_CONTAINS, KW_MINCONTAINS, KW_MAXCONTAINS,
  KW_ALLOF, KW_ANYOF, KW_ONEOF, KW_NOT, KW_IF, KW_THEN, KW_ELSE,
  KW_UNEVALUATEDPROPERTIES, KW_UNEVALUATEDITEMS,
  KW_DEFS, KW_DEFINITIONS,
  KW_N
};
/* the keyword cache keeps a bitmask of a node's keywords in a lua_Integer */
_Static_assert(KW_N < 63, "too many keywords for the cache's mask");

/* Schema applications may nest this deep (one level per subschema entered
   or $ref followed); past it we assume a $ref cycle. A decoded value nests
   at most JSON_MAX_DEPTH, and a recursive schema spends about two levels on
   each of its levels. */
#define MAX_DEPTH (2 * JSON_MAX_DEPTH)
/* Deep equality answers "different" past this nesting (cyclic Lua tables). */
#define MAX_EQ_DEPTH (JSON_MAX_DEPTH + 8)
/* Stack slots one schema level may use: the keyword values, plus a few. */
#define LEVEL_SLOTS (KW_N + 16)
/* uniqueItems compares arrays up to this long pairwise, longer ones by hash. */
#define UNIQUE_PAIRWISE 16
/* The budget reads the clock every this many steps (a step is ~0.1-1 us). */
#define CLOCK_EVERY 1024
/* The memo starts in the walker with this many slots, then moves to a
   userdata, and stops growing at MEMO_MAX_SLOTS (24 bytes each): past it
   the step budget alone bounds the work. */
#define MEMO_SMALL 32
#define MEMO_MAX_SLOTS (1u << 19)
/* An enum message lists at most this many values. */
#define ENUM_SHOW 10

/* One step of a path: a member name, or (key NULL) an array index. */
typedef struct seg {
  const char *key;
  size_t n; /* the name's length, or the index */
} seg;

/* One memo entry: see the memo, below. */
typedef struct mentry {
  const void *s; /* the schema table; NULL: an empty slot */
  uint64_t v;    /* the value's bits */
  uint32_t tag;  /* its type (and number subtype) */
  uint32_t ok;
} mentry;

/* Open addressing; e is the walker's own small array until that fills,
   then a userdata's. */
typedef struct memo {
  size_t mask, count; /* slots - 1, entries */
  mentry *e;          /* NULL before the first entry */
} memo;

/* Why the budget ran out. */
enum { LIMIT_NONE, LIMIT_WORK, LIMIT_TIME };

typedef struct walker {
  lua_State *L;
  int root;       /* absolute index of the root schema */
  int cache;      /* absolute index of the keyword cache, or 0 */
  buf *err;       /* where the one message goes (may be NULL) */
  int quiet;      /* > 0 while trying anyOf/oneOf/not branches: no messages */
  bool fatal;     /* a broken schema, the depth limit or the budget: stop, even under not */
  bool ref_alone; /* draft-06/07: a $ref hides its sibling keywords */
  bool assert_format; /* format is an assertion, not an annotation */
  int depth, npath;
  /* the budget: steps taken, the most allowed, when to look again */
  unsigned long steps, max_steps, next_check;
  double deadline;  /* CLOCK_MONOTONIC seconds, or 0 */
  int exhausted;    /* LIMIT_*: why the budget ran out */
  int memo_slot;    /* stack index of the memo's userdata (nil until it needs one), or 0: no memo */
  memo memo;
  mentry memo_small[MEMO_SMALL];
  /* schema_check pushes two steps per level ("properties.x") */
  seg path[2 * MAX_DEPTH + 4];
} walker;

lua_Integer validate_array_len(lua_State *L, int idx);
lua_Integer validate_count_arg(lua_State *L, int idx);
int validate_dialect(const char *s, size_t n);
bool validate_failf(walker *w, const char *fmt, ...);
bool validate_fatalf(walker *w, const char *fmt, ...);
bool validate_first_visit(lua_State *L, int seen, int s);
bool validate_is_object(lua_State *L, int idx);
bool validate_is_schema(lua_State *L, int idx);
bool validate_is_type_name(const char *t);
void validate_push_index(walker *w, lua_Integer i);
void validate_push_member(walker *w, int key);
void validate_push_name(walker *w, const char *k, size_t n);
void validate_put_path(buf *b, const walker *w);
bool validate_ref_push(lua_State *L, int root, const char *ref, size_t n);
buf *validate_report(walker *w);
void validate_scan_keywords(lua_State *L, int s, int slot[KW_N]);
int validate_subschema_kind(int kw);
void validate_walker_init(walker *w, lua_State *L, int root, buf *err);
void validate_push_keyword(walker *w, int kw);

/* What validate_dialect makes of a $schema URI. */
enum { DIALECT_UNKNOWN, DIALECT_REF_ALONE, DIALECT_CURRENT };
/* What a keyword's value holds (validate_subschema_kind): no schema, one,
   a map of them, a list of them. */
enum { SUB_NONE, SUB_ONE, SUB_MAP, SUB_LIST };

#endif
