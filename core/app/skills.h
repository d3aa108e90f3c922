/* skills.h — the Agent Skills of an app folder (SEP-2640, the extension
 * io.modelcontextprotocol/skills): each skills/NAME/ holding a SKILL.md is
 * a skill, served as skill://NAME/... resources. Loaded with the app (a
 * broken skill is a load error, as a broken script is): the front matter
 * checked, every file's size and SHA-256 taken, the answers of skills/list,
 * skills/get and resources/directory/read encoded once. Files are read
 * again only when a client reads them, and only those found at load:
 * nothing a client sends becomes a path. */
#ifndef LUAMCP_SKILLS_H
#define LUAMCP_SKILLS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

typedef struct lua_State lua_State;

#define SKILLS_EXTENSION "io.modelcontextprotocol/skills"
#define SKILLS_MAX_FILES 512                  /* per skill, SKILL.md included (the SEP's limit) */
#define SKILLS_MAX 1024                       /* skills of one app */
#define SKILLS_MAX_BYTES (16u * 1024 * 1024) /* per skill, every file summed (the SEP's limit) */

typedef struct skill_file {
  char *key;  /* NAME/rel/path, as the folder names it */
  char *uri;  /* skill://NAME/rel/path, each segment percent-encoded */
  char *real; /* the file to read (symlinks inside the skill resolved) */
  const char *mime;
  size_t size;
  char digest[72]; /* sha256:HEX */
} skill_file;

typedef struct skill_dir {
  char *key; /* NAME or NAME/rel */
  char *uri;
  char *listing; /* its direct children, a JSON array */
  size_t listing_len;
} skill_dir;

typedef struct skill {
  char *name, *uri; /* uri: skill://NAME/SKILL.md */
  char *entry;      /* the skill entry {uri, frontmatter, resources} */
  size_t entry_len;
  char *resource; /* SKILL.md as resources/list shows it */
  size_t resource_len;
  char *description;
  skill_file *files; /* sorted by uri */
  size_t nfiles;
  skill_dir *dirs;
  size_t ndirs;
  size_t bytes;
} skill;

typedef struct skills_catalog {
  skill *v; /* sorted by uri */
  size_t n;
} skills_catalog;

/* The skills of app folder dir: an empty catalog without skills/, NULL
   with one "path:line: message" line per problem in errors. */
skills_catalog *skills_load(const char *dir, buf *errors);
void skills_free(skills_catalog *c);

/* What a client's URI names (percent-encoding and a fragment aside): a
   skill's SKILL.md, a file, a folder. NULL when nothing. */
const skill *skills_find(const skills_catalog *c, const char *uri, size_t n);
const skill_file *skills_find_file(const skills_catalog *c, const char *uri, size_t n);
const skill_dir *skills_find_dir(const skills_catalog *c, const char *uri, size_t n);
/* f's bytes as they are now, into out; false with why when the file is no
   longer what the catalog says (changed since loading: a reload is due). */
bool skills_read_file(const skill_file *f, buf *out, buf *why);
/* Push the skills as `luamcp list` shows them: { {name=, description=,
   uri=, files=, bytes=}, ... }. */
void skills_push_list(lua_State *L, const skills_catalog *c);
/* `luamcp check`: the skills of the app loaded from dir, one line on
   stdout when it has any. */
void skills_check_report(const skills_catalog *c, const char *dir);

#endif
