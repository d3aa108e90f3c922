/* frontmatter.h — the YAML front matter of a Markdown file (SKILL.md): the
 * subset real files use — block mappings and sequences, plain, quoted and
 * block scalars, one-line flow collections, comments — typed as YAML 1.2's
 * core schema does. Anything outside the subset is an error at its line
 * rather than a value read differently from a full YAML parser. */
#ifndef LUAMCP_FRONTMATTER_H
#define LUAMCP_FRONTMATTER_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

typedef enum { FM_NULL, FM_BOOL, FM_NUM, FM_STR, FM_SEQ, FM_MAP } fm_kind;

typedef struct fm_node {
  fm_kind kind;
  int line;      /* where it starts (1 = the file's first line) */
  char *key;     /* a member of a mapping: its key */
  char *s;       /* FM_STR: the text; FM_NUM: JSON number text; FM_BOOL: true/false */
  size_t n;      /* length of s */
  struct fm_node *kids; /* FM_SEQ items, FM_MAP members (in file order) */
  size_t nkids, cap;
} fm_node;

/* Parse the front matter of a Markdown file (between a first line `---` and
   the next `---` line) into *root, a mapping. False with *line (0: no line)
   and a message in err. Free *root with frontmatter_free either way. */
bool frontmatter_parse(const char *text, size_t n, fm_node *root, int *line, buf *err);
void frontmatter_free(fm_node *root);
/* The member key of the mapping m, or NULL. */
const fm_node *frontmatter_get(const fm_node *m, const char *key);
/* node as JSON (members in file order). */
void frontmatter_json(const fm_node *node, buf *out);

#endif
