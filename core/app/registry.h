/* registry.h — the immutable snapshot of what an app offers: tools,
 * resources, templates, prompts, and its server info. Built once after every
 * script of a load has run; list pages and the initialize answer are encoded
 * here once, so the list methods and initialize never touch Lua. Handlers and schemas
 * are references into the app's lua_State (LUA_REGISTRYINDEX). */
#ifndef LUAMCP_REGISTRY_H
#define LUAMCP_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "principal.h"
#include "protocol.h"
#include "skills.h"

typedef struct lua_State lua_State;

typedef struct reg_tool {
  char *name;
  int handler, input, output; /* Lua refs; output is LUA_NOREF when absent */
  bool app_only; /* MCP Apps visibility ["app"]: for views, not the model */
  int headers;   /* ref: its x-mcp-header params {name=, path=, type=}, or LUA_NOREF */
  int task;      /* TASK_*: may (must) it run as a task (the tasks extension) */
  char *where;   /* FILE:LINE of the handler: a result's errors name it */
  char *scopes;  /* what a caller's token must grant (space-separated), or NULL */
} reg_tool;
enum { TASK_NEVER, TASK_OPTIONAL, TASK_REQUIRED };

typedef struct reg_resource {
  char *uri;
  int entry; /* ref to the registration table {read=, mime=, ...} */
  /* changes when its listing or a file it comes from changes: a reload
     tells subscribers about the resources whose fingerprint moved */
  uint64_t fingerprint;
  char *scopes; /* as reg_tool's */
} reg_resource;

typedef struct reg_template {
  char *uri_template;
  int entry; /* ref: {read=, mime=, vars=, complete=} */
  char *scopes;
} reg_template;

typedef struct reg_prompt {
  char *name;
  int entry; /* ref: {get=, args=, complete=, def=} */
  char *scopes;
} reg_prompt;

/* One list, pre-encoded page by page: each page is a complete result
   object such as {"tools":[...],"nextCursor":"..."}. */
typedef struct reg_pages {
  size_t count, npages;
  char **page;
  size_t *page_len;
  bool shared; /* the latest version's pages, which own them */
} reg_pages;

typedef enum reg_list {
  REG_TOOLS, REG_RESOURCES, REG_TEMPLATES, REG_PROMPTS, REG_NLISTS,
  REG_MODEL_TOOLS = REG_NLISTS /* tools less the app-only ones (a cursor id) */
} reg_list;

/* A list some of whose entries declare scopes: its entries encoded one by
   one, kept to cut pages for each caller from those it may see. */
typedef struct reg_scoped {
  size_t n;            /* entries; 0: none declares scopes (every caller sees all) */
  buf *latest, *older; /* older[v * n + i]: version v's when it differs, else empty */
  const char **scopes; /* each entry's (the reg_* item's string), or NULL */
  bool *app_only;      /* tools: MCP Apps visibility ["app"] */
} reg_scoped;

typedef struct registry {
  reg_tool *tools;
  size_t ntools;
  uint32_t *tool_index; /* open-addressing hash of tool names -> index+1 */
  size_t tool_index_cap;
  reg_resource *resources;
  size_t nresources;
  reg_template *templates;
  size_t ntemplates;
  reg_prompt *prompts;
  size_t nprompts;
  /* per list and protocol version: fields a version lacks are left out */
  reg_pages pages[REG_NLISTS][PROTO_COUNT];
  /* tools/list for clients without MCP Apps: app-only tools left out */
  reg_pages model_tools[PROTO_COUNT];
  bool has_app_only, has_widgets;
  size_t nwidgets; /* of the resources, those that are MCP Apps views */
  reg_scoped scoped[REG_NLISTS];
  int mount_refresh; /* ref: lua/client.lua's refresh of mcp.mount lists, or LUA_NOREF (no mount) */
  int middleware; /* ref: the list of mcp.use functions, or LUA_NOREF (none: handlers are called directly) */
  uint64_t *entry_hash[REG_NLISTS]; /* each entry's encoding, hashed: what changed for whom */
  char *scopes; /* every scope an item or app.lua's scopes = {...} declares, space-separated
                   (for the resource metadata and check) */
  bool app_scopes; /* app.lua declares some (scopes its code checks: ctx.auth:has) */
  /* the capabilities this app declares (and subscriptions/listen honours):
     prompts and resources always when watching, since a reload may add them */
  bool declares_prompts, declares_resources;
  bool has_tasks; /* a tool may run as a task: discover advertises the extension */
  size_t nskills; /* skills (skills.h): their SKILL.md ends resources/list, and the
                     capabilities declare the skills extension */
  bool assert_format; /* app.lua schema = { format = "assert" }: format is checked */
  size_t page_size; /* items per page (every page but the last is full) */
  uint64_t cursor_key; /* keys the cursor check (see cursor.h) */
  /* initialize result minus protocolVersion, per version: `"capabilities":...}` */
  char *init_tail[PROTO_COUNT];
  size_t init_tail_len[PROTO_COUNT];
  char *name;    /* serverInfo.name, used as the logger name */
  char *version; /* serverInfo.version */
  /* 2026-07-28: what every result of a per-request revision ends with (`,"resultType":
     "complete","_meta":{serverInfo}`), the lists' cache hints
     (`,"ttlMs":N,"cacheScope":"public"`), and the whole server/discover
     result */
  char *complete_tail, *list_cache, *discover;
  size_t complete_tail_len, list_cache_len, discover_len;
  char *server_meta; /* `"_meta":{"io.modelcontextprotocol/serverInfo":{...}}` */
  size_t server_meta_len;
} registry;

/* Build the snapshot from the registration table at reg_idx (filled by
   lua/mcp.lua) and the app info table at info_idx (may be nil), and the
   app's skills (may be NULL): each SKILL.md is listed after the app's own
   resources. Returns
   NULL with a message in err on failure (e.g. a value that cannot be
   encoded). */
registry *registry_build(lua_State *L, int reg_idx, int info_idx,
                         size_t page_size, bool declare_all, const skills_catalog *skills,
                         buf *err);
void registry_free(registry *r, lua_State *L);

const reg_tool *registry_find_tool(const registry *r, const char *name, size_t len);
const reg_resource *registry_find_resource(const registry *r, const char *uri, size_t len);
const reg_prompt *registry_find_prompt(const registry *r, const char *name, size_t len);

/* The pages of list (tools: less the app-only ones when model_only) as
   caller who may see them (the entries whose scopes it was granted), cut
   into *out (free it with registry_pages_free). False when no entry of the
   list declares scopes: the shared pages serve every caller. */
bool registry_pages_for(const registry *r, reg_list list, int version, bool model_only,
                        const principal *who, reg_pages *out);
void registry_pages_free(reg_pages *pg);
/* Does what who may see of list l (its entries whose scopes who holds)
   differ between a and b? */
bool registry_visible_differs(const registry *a, const registry *b, reg_list l,
                              const principal *who);
/* Does some entry of list l declare scopes, in a or in b? */
bool registry_list_scoped(const registry *a, const registry *b, reg_list l);

#endif
