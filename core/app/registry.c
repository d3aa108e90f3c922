/* registry.c — build the immutable snapshot of an app (see registry.h). */
#include "registry.h"
#include "envelope.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "cursor.h"
#include "json.h"

static char *dup_field(lua_State *L, int idx, const char *key) {
  lua_getfield(L, idx, key);
  const char *s = lua_tostring(L, -1);
  char *out = s ? strdup(s) : NULL;
  lua_pop(L, 1);
  return out;
}

static int ref_field(lua_State *L, int idx, const char *key) {
  lua_getfield(L, idx, key);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return LUA_NOREF;
  }
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

static uint64_t fnv64(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
  return h;
}

/* Hash a resource's listing and the contents of the files in its `files`
   list (the script that registered it; a widget's HTML). */
static uint64_t fingerprint(lua_State *L, int entry) {
  uint64_t h = 14695981039346656037ULL;
  buf b;
  buf_init(&b);
  char err[64];
  lua_getfield(L, entry, "def");
  if (json_encode_sorted(L, -1, &b, err, sizeof err)) h = fnv64(h, b.p, b.len);
  lua_pop(L, 1);
  lua_getfield(L, entry, "files");
  size_t n = lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
  for (size_t i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, (lua_Integer)i);
    const char *path = lua_tostring(L, -1);
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (f) {
      char chunk[8192];
      size_t got;
      while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) h = fnv64(h, chunk, got);
      fclose(f);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  buf_free(&b);
  return h;
}

static uint32_t hash_name(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

static void index_tools(registry *r) {
  size_t cap = 8;
  while (cap < r->ntools * 2) cap *= 2;
  r->tool_index = calloc(cap, sizeof *r->tool_index);
  r->tool_index_cap = cap;
  for (size_t i = 0; i < r->ntools; i++) {
    const char *name = r->tools[i].name;
    size_t h = hash_name(name, strlen(name)) & (cap - 1);
    while (r->tool_index[h]) h = (h + 1) & (cap - 1);
    r->tool_index[h] = (uint32_t)i + 1;
  }
}

const reg_tool *registry_find_tool(const registry *r, const char *name, size_t len) {
  if (!r->tool_index_cap) return NULL;
  size_t mask = r->tool_index_cap - 1;
  for (size_t h = hash_name(name, len) & mask; r->tool_index[h]; h = (h + 1) & mask) {
    const reg_tool *t = &r->tools[r->tool_index[h] - 1];
    if (strlen(t->name) == len && memcmp(t->name, name, len) == 0) return t;
  }
  return NULL;
}

const reg_resource *registry_find_resource(const registry *r, const char *uri, size_t len) {
  for (size_t i = 0; i < r->nresources; i++)
    if (strlen(r->resources[i].uri) == len && memcmp(r->resources[i].uri, uri, len) == 0)
      return &r->resources[i];
  return NULL;
}

const reg_prompt *registry_find_prompt(const registry *r, const char *name, size_t len) {
  for (size_t i = 0; i < r->nprompts; i++)
    if (strlen(r->prompts[i].name) == len && memcmp(r->prompts[i].name, name, len) == 0)
      return &r->prompts[i];
  return NULL;
}

/* Fields that protocol version v does not know, per list; they are left
   out of what that version's clients are sent. */
static bool field_unknown_to(int v, int list, const char *key) {
  if (strcmp(key, "icons") == 0) return v < PROTO_2025_11_25;
  if (strcmp(key, "title") == 0 || strcmp(key, "outputSchema") == 0) return v < PROTO_2025_06_18;
  if (strcmp(key, "annotations") == 0) return list == REG_TOOLS && v < PROTO_2025_03_26;
  return false;
}

/* Encode the table at idx without the keys version v lacks. */
static bool encode_for(lua_State *L, int idx, int v, int list, buf *b, char *err, size_t errlen) {
  static const char *const gated[] = {"icons", "title", "outputSchema", "annotations"};
  idx = lua_absindex(L, idx);
  int saved = lua_gettop(L);
  for (size_t i = 0; i < sizeof gated / sizeof *gated; i++) {
    if (!field_unknown_to(v, list, gated[i])) continue;
    lua_getfield(L, idx, gated[i]); /* keep the value to put it back */
    lua_pushnil(L);
    lua_setfield(L, idx, gated[i]);
  }
  bool ok = json_encode_sorted(L, idx, b, err, errlen);
  int k = saved;
  for (size_t i = 0; i < sizeof gated / sizeof *gated; i++) {
    if (!field_unknown_to(v, list, gated[i])) continue;
    lua_pushvalue(L, ++k);
    lua_setfield(L, idx, gated[i]);
  }
  lua_settop(L, saved);
  return ok;
}

/* Does version v leave out a field the table at idx holds? */
static bool loses_fields(lua_State *L, int idx, int v, int list) {
  static const char *const gated[] = {"icons", "title", "outputSchema", "annotations"};
  for (size_t i = 0; i < sizeof gated / sizeof *gated; i++) {
    if (!field_unknown_to(v, list, gated[i])) continue;
    bool has = lua_getfield(L, idx, gated[i]) != LUA_TNIL;
    lua_pop(L, 1);
    if (has) return true;
  }
  return false;
}

/* Cut the encoded entries (less those skip[] marks, when given) into pages
   of page_size, each a complete result object; cursors name list. */
static void cut_pages(const buf *const *entries, const bool *skip, size_t all, const char *key,
                      int list, size_t page_size, uint64_t cursor_key, reg_pages *out) {
  size_t n = 0;
  const buf **kept = calloc(all ? all : 1, sizeof *kept);
  for (size_t i = 0; i < all; i++)
    if (!skip || !skip[i]) kept[n++] = entries[i];
  out->count = n;
  out->npages = n ? (n + page_size - 1) / page_size : 1;
  out->page = calloc(out->npages, sizeof *out->page);
  out->page_len = calloc(out->npages, sizeof *out->page_len);
  for (size_t p = 0; p < out->npages; p++) {
    size_t first = p * page_size, last = first + page_size;
    if (last > n) last = n;
    buf b;
    buf_init(&b);
    size_t bytes = strlen(key) + 8 + CURSOR_MAX + 20;
    for (size_t i = first; i < last; i++) bytes += kept[i]->len + 1;
    buf_reserve(&b, bytes);
    buf_printf(&b, "{\"%s\":[", key);
    for (size_t i = first; i < last; i++) {
      if (i > first) buf_putc(&b, ',');
      buf_put(&b, kept[i]->p, kept[i]->len);
    }
    buf_putc(&b, ']');
    if (last < n) {
      char c[CURSOR_MAX];
      cursor_make(cursor_key, list, last, c);
      buf_printf(&b, ",\"nextCursor\":\"%s\"", c);
    }
    buf_putc(&b, '}');
    out->page[p] = buf_take(&b, &out->page_len[p]);
  }
  free(kept);
}

/* Encode the list at list_idx (entries {def = ..., app_only = ...}) for
   every protocol version into r->pages[list] (and r->model_tools). Each
   entry is encoded once, and again only for a version that lacks one of
   its fields; a version whose entries are all the latest's shares the
   latest's pages. (Encoding every entry for every version and list was
   most of the start-up of an app with 10k tools, and of its memory.) */
/* The scopes entry i of list declares (the item's string), or NULL. */
static const char *item_scopes(const registry *r, int list, size_t i) {
  switch (list) {
    case REG_TOOLS: return i < r->ntools ? r->tools[i].scopes : NULL;
    case REG_RESOURCES: return i < r->nresources ? r->resources[i].scopes : NULL;
    case REG_TEMPLATES: return i < r->ntemplates ? r->templates[i].scopes : NULL;
    default: return i < r->nprompts ? r->prompts[i].scopes : NULL;
  }
}

static bool encode_list(lua_State *L, int list_idx, const char *key, int list, registry *r,
                        const skills_catalog *skills, buf *err) {
  /* resources/list ends with the skills' SKILL.md (encoded by skills.c) */
  size_t lua_n = lua_rawlen(L, list_idx);
  size_t extra = list == REG_RESOURCES && skills ? skills->n : 0;
  size_t all = lua_n + extra, cap = all ? all : 1;
  buf *latest = calloc(cap, sizeof *latest);
  buf *older = calloc(cap * PROTO_COUNT, sizeof *older); /* [v * cap + i]; empty: the latest's */
  bool *app_only = calloc(cap, sizeof *app_only);
  bool differs[PROTO_COUNT] = {false}, ok = true;
  for (size_t i = 0; i < extra; i++)
    buf_put(&latest[lua_n + i], skills->v[i].resource, skills->v[i].resource_len);
  for (size_t i = 0; i < lua_n && ok; i++) {
    lua_rawgeti(L, list_idx, (lua_Integer)i + 1);
    lua_getfield(L, -1, "app_only");
    app_only[i] = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, -1, "def");
    char msg[200];
    ok = encode_for(L, -1, PROTO_LATEST, list, &latest[i], msg, sizeof msg);
    for (int v = PROTO_2024_11_05; v < PROTO_LATEST && ok; v++) {
      if (!loses_fields(L, -1, v, list)) continue;
      ok = encode_for(L, -1, v, list, &older[v * cap + i], msg, sizeof msg);
      differs[v] = true;
    }
    if (!ok) buf_printf(err, "%s entry %zu: %s\n", key, i + 1, msg);
    lua_pop(L, 2);
  }
  if (ok) {
    bool any_app_only = false;
    for (size_t i = 0; i < all; i++) any_app_only |= app_only[i];
    const buf **entries = calloc(cap, sizeof *entries);
    for (int v = PROTO_LATEST; v >= PROTO_2024_11_05; v--) {
      bool own = v == PROTO_LATEST || differs[v];
      for (size_t i = 0; i < all; i++)
        entries[i] = v != PROTO_LATEST && older[v * cap + i].len ? &older[v * cap + i] : &latest[i];
      reg_pages *pg = &r->pages[list][v], *model = &r->model_tools[v];
      if (own) {
        cut_pages(entries, NULL, all, key, list, r->page_size, r->cursor_key, pg);
      } else {
        *pg = r->pages[list][PROTO_LATEST];
        pg->shared = true;
      }
      if (list != REG_TOOLS) continue;
      /* its own cursors (they name the list), even when no tool is app-only */
      if (own) {
        cut_pages(entries, any_app_only ? app_only : NULL, all, key, REG_MODEL_TOOLS,
                  r->page_size, r->cursor_key, model);
      } else {
        *model = r->model_tools[PROTO_LATEST];
        model->shared = true;
      }
    }
    free(entries);
  }
  if (ok) {
    r->entry_hash[list] = calloc(cap, sizeof *r->entry_hash[list]);
    for (size_t i = 0; i < all; i++) { /* FNV-1a */
      uint64_t h = 14695981039346656037ull;
      for (size_t k = 0; k < latest[i].len; k++) h = (h ^ (unsigned char)latest[i].p[k]) * 1099511628211ull;
      r->entry_hash[list][i] = h;
    }
  }
  bool any_scoped = false;
  for (size_t i = 0; i < all; i++) any_scoped |= item_scopes(r, list, i) != NULL;
  if (ok && any_scoped) { /* kept: each caller's pages are cut from them */
    reg_scoped *sc = &r->scoped[list];
    *sc = (reg_scoped){all, latest, older, calloc(all, sizeof *sc->scopes), app_only};
    for (size_t i = 0; i < all; i++) sc->scopes[i] = item_scopes(r, list, i);
    return true;
  }
  for (size_t i = 0; i < all; i++) buf_free(&latest[i]);
  for (size_t i = 0; i < cap * PROTO_COUNT; i++) buf_free(&older[i]);
  free(latest);
  free(older);
  free(app_only);
  return ok;
}

/* Add the scope s (n bytes) to the space-separated list all unless there. */
static void add_scope(buf *all, const char *s, size_t n) {
  for (const char *t = all->p; t && t < all->p + all->len;) {
    size_t m = strcspn(t, " ");
    if (m == n && memcmp(t, s, n) == 0) return;
    t += m + 1;
  }
  if (all->len) buf_putc(all, ' ');
  buf_put(all, s, n);
}

/* r->scopes: each scope any item declares, then those of app.lua's
   scopes = { ... } (scopes its code checks with ctx.auth:has, declared so
   that the metadata publishes them), once each. info_idx: app.lua's table
   or 0; its scopes were checked (internal.lua's app_info: strings, no spaces). */
static void collect_scopes(registry *r, lua_State *L, int info_idx) {
  buf all;
  buf_init(&all);
  size_t counts[REG_NLISTS] = {r->ntools, r->nresources, r->ntemplates, r->nprompts};
  for (int l = 0; l < REG_NLISTS; l++)
    for (size_t i = 0; i < counts[l]; i++)
      for (const char *s = item_scopes(r, l, i); s && *s;) {
        size_t n = strcspn(s, " ");
        add_scope(&all, s, n);
        s += n + (s[n] == ' ');
      }
  if (info_idx && lua_getfield(L, info_idx, "scopes") == LUA_TTABLE) {
    for (lua_Integer i = 1; i <= (lua_Integer)lua_rawlen(L, -1); i++) {
      size_t n = 0;
      const char *s = lua_rawgeti(L, -1, i) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
      if (s && n && !memchr(s, ' ', n)) {
        add_scope(&all, s, n);
        r->app_scopes = true;
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, info_idx ? 1 : 0);
  r->scopes = all.len ? buf_take(&all, NULL) : NULL;
  buf_free(&all);
}

static const char *const list_keys[REG_NLISTS] = {"tools", "resources", "resourceTemplates",
                                                  "prompts"};

bool registry_pages_for(const registry *r, reg_list list, int version, bool model_only,
                        const principal *who, reg_pages *out) {
  const reg_scoped *sc = &r->scoped[list];
  if (!sc->n) return false;
  const buf **entries = calloc(sc->n, sizeof *entries);
  bool *skip = calloc(sc->n, sizeof *skip);
  for (size_t i = 0; i < sc->n; i++) {
    const buf *older = &sc->older[(size_t)version * sc->n + i];
    entries[i] = version != PROTO_LATEST && older->len ? older : &sc->latest[i];
    skip[i] = (model_only && sc->app_only[i]) || !principal_has_all(who, sc->scopes[i], NULL, NULL);
  }
  memset(out, 0, sizeof *out);
  cut_pages(entries, skip, sc->n, list_keys[list], model_only ? REG_MODEL_TOOLS : (int)list,
            r->page_size, r->cursor_key, out);
  free(entries);
  free(skip);
  return true;
}

static size_t list_count(const registry *r, reg_list l) {
  switch (l) {
    case REG_TOOLS: return r->ntools;
    case REG_RESOURCES: return r->nresources + r->nskills;
    case REG_TEMPLATES: return r->ntemplates;
    default: return r->nprompts;
  }
}

/* The next entry of l at or after *i that who may see: its hash, or false. */
static bool next_visible(const registry *r, reg_list l, const principal *who, size_t *i,
                         uint64_t *h) {
  for (size_t n = list_count(r, l); *i < n; (*i)++)
    if (principal_has_all(who, item_scopes(r, l, *i), NULL, NULL)) {
      *h = r->entry_hash[l] ? r->entry_hash[l][*i] : 0;
      (*i)++;
      return true;
    }
  return false;
}

bool registry_visible_differs(const registry *a, const registry *b, reg_list l,
                              const principal *who) {
  size_t i = 0, j = 0;
  uint64_t x, y;
  for (;;) {
    bool more_a = next_visible(a, l, who, &i, &x), more_b = next_visible(b, l, who, &j, &y);
    if (more_a != more_b || (more_a && x != y)) return true;
    if (!more_a) return false;
  }
}

bool registry_list_scoped(const registry *a, const registry *b, reg_list l) {
  return a->scoped[l].n || b->scoped[l].n;
}

void registry_pages_free(reg_pages *pg) {
  for (size_t p = 0; p < pg->npages; p++) free(pg->page[p]);
  free(pg->page);
  free(pg->page_len);
  memset(pg, 0, sizeof *pg);
}

static void encode_init_tail(lua_State *L, registry *r, int info_idx, int v, bool all) {
  buf b;
  buf_init(&b);
  buf_puts(&b, "\"capabilities\":{\"logging\":{}");
  if (all || r->nprompts || r->ntemplates) buf_puts(&b, ",\"completions\":{}");
  if (r->declares_prompts) buf_puts(&b, ",\"prompts\":{\"listChanged\":true}");
  if (r->declares_resources)
    buf_puts(&b, ",\"resources\":{\"subscribe\":true,\"listChanged\":true}");
  buf_puts(&b, ",\"tools\":{\"listChanged\":true}");
  if (r->has_widgets || r->nskills) buf_puts(&b, ",\"extensions\":{");
  if (r->has_widgets) /* MCP Apps (SEP-1865) */
    buf_puts(&b, "\"io.modelcontextprotocol/ui\":{\"mimeTypes\":[\"text/html;profile=mcp-app\"]}");
  if (r->nskills) /* Agent Skills (SEP-2640), folders readable by resources/directory/read */
    buf_printf(&b, "%s\"" SKILLS_EXTENSION "\":{\"directoryRead\":true}", r->has_widgets ? "," : "");
  if (r->has_widgets || r->nskills) buf_putc(&b, '}');
  buf_putc(&b, '}');
  /* serverInfo: name and version are required; the rest pass through */
  buf_puts(&b, ",\"serverInfo\":{\"name\":");
  json_encode_string(&b, r->name, strlen(r->name));
  char *version = info_idx ? dup_field(L, info_idx, "version") : NULL;
  buf_puts(&b, ",\"version\":");
  const char *shown = version ? version : "0.0.0";
  json_encode_string(&b, shown, strlen(shown));
  free(version);
  static const char *const extra[] = {"title", "description", "websiteUrl", "icons"};
  static const int since[] = {PROTO_2025_06_18, PROTO_2025_11_25, PROTO_2025_11_25,
                              PROTO_2025_11_25};
  for (size_t i = 0; info_idx && i < sizeof extra / sizeof *extra; i++) {
    if (v < since[i]) continue;
    lua_getfield(L, info_idx, extra[i]);
    if (!lua_isnil(L, -1)) {
      char msg[200];
      buf_printf(&b, ",\"%s\":", extra[i]);
      if (!json_encode_sorted(L, -1, &b, msg, sizeof msg)) buf_puts(&b, "null");
    }
    lua_pop(L, 1);
  }
  buf_putc(&b, '}');
  char *instructions = info_idx ? dup_field(L, info_idx, "instructions") : NULL;
  if (instructions) {
    buf_puts(&b, ",\"instructions\":");
    json_encode_string(&b, instructions, strlen(instructions));
    free(instructions);
  }
  buf_putc(&b, '}');
  r->init_tail[v] = buf_take(&b, &r->init_tail_len[v]);
}

/* Cache hints of the lists and server/discover: app.lua's cache = { ttl =
   seconds, scope = "public"|"private" }, else public, and a TTL of 0 while
   the app may reload at any moment (watching), 5 minutes otherwise. */
static void encode_list_cache(lua_State *L, registry *r, int info_idx, bool watching) {
  double ttl = watching ? 0 : 300;
  const char *scope = "public";
  if (info_idx && lua_getfield(L, info_idx, "cache") == LUA_TTABLE) {
    if (lua_getfield(L, -1, "ttl") == LUA_TNUMBER && lua_tonumber(L, -1) >= 0) ttl = lua_tonumber(L, -1);
    lua_pop(L, 1);
    if (lua_getfield(L, -1, "scope") == LUA_TSTRING &&
        strcmp(lua_tostring(L, -1), "private") == 0)
      scope = "private";
    lua_pop(L, 1);
  }
  if (info_idx) lua_pop(L, 1);
  buf b;
  buf_init(&b);
  buf_printf(&b, ",\"ttlMs\":%.0f,\"cacheScope\":\"%s\"", ttl * 1000.0, scope);
  r->list_cache = buf_take(&b, &r->list_cache_len);
}

/* app.lua's schema = { format = "assert" | "annotate" }: whether the
   validator checks format (JSON Schema makes it an annotation by default). */
static bool read_schema_options(lua_State *L, registry *r, int info_idx, buf *err) {
  if (!info_idx) return true;
  int t = lua_getfield(L, info_idx, "schema");
  bool ok = true;
  if (t == LUA_TTABLE) {
    if (lua_getfield(L, -1, "format") == LUA_TSTRING) {
      const char *f = lua_tostring(L, -1);
      if (strcmp(f, "assert") == 0) r->assert_format = true;
      else ok = strcmp(f, "annotate") == 0;
    } else {
      ok = lua_isnil(L, -1);
    }
    lua_pop(L, 1);
  } else {
    ok = t == LUA_TNIL;
  }
  lua_pop(L, 1);
  if (!ok)
    buf_puts(err, "app.lua: schema must be a table like { format = \"assert\" } "
                  "(format: \"assert\" or \"annotate\")\n");
  return ok;
}

/* The 2026-07-28 fragments: the serverInfo every per-request result carries,
   and server/discover (capabilities as initialize declares them). */
static void encode_complete_tail(lua_State *L, registry *r, int info_idx) {
  buf b;
  buf_init(&b);
  char *version = info_idx ? dup_field(L, info_idx, "version") : NULL;
  r->version = version ? version : strdup("0.0.0");
  buf_puts(&b, "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{\"name\":");
  json_encode_string(&b, r->name, strlen(r->name));
  buf_puts(&b, ",\"version\":");
  json_encode_string(&b, r->version, strlen(r->version));
  buf_puts(&b, "}}");
  r->server_meta = buf_take(&b, &r->server_meta_len);
  buf_puts(&b, ",\"resultType\":\"complete\",");
  buf_put(&b, r->server_meta, r->server_meta_len);
  r->complete_tail = buf_take(&b, &r->complete_tail_len);
  /* init_tail is `"capabilities":{...},"serverInfo":{...}[,"instructions":...]}` */
  const char *tail = r->init_tail[PROTO_LATEST];
  const char *si = strstr(tail, ",\"serverInfo\":");
  buf_puts(&b, "{\"supportedVersions\":");
  proto_per_request_json(&b);
  buf_puts(&b, ",");
  const char *ext = strstr(tail, ",\"extensions\":{");
  if (!r->has_tasks || si - tail < 2) {
    buf_put(&b, tail, (size_t)(si - tail));
  } else if (ext && ext < si) { /* the tasks extension (2026-07-28 only) beside the others */
    size_t at = (size_t)(ext - tail) + strlen(",\"extensions\":{");
    buf_put(&b, tail, at);
    buf_puts(&b, "\"" TASKS_EXTENSION "\":{},");
    buf_put(&b, tail + at, (size_t)(si - tail) - at);
  } else { /* the capabilities object ends just before serverInfo */
    buf_put(&b, tail, (size_t)(si - tail) - 1);
    buf_puts(&b, ",\"extensions\":{\"" TASKS_EXTENSION "\":{}}}");
  }
  char *instructions = info_idx ? dup_field(L, info_idx, "instructions") : NULL;
  if (instructions) {
    buf_puts(&b, ",\"instructions\":");
    json_encode_string(&b, instructions, strlen(instructions));
    free(instructions);
  }
  buf_put(&b, r->list_cache, r->list_cache_len);
  buf_put(&b, r->complete_tail, r->complete_tail_len);
  buf_putc(&b, '}');
  r->discover = buf_take(&b, &r->discover_len);
}

registry *registry_build(lua_State *L, int reg_idx, int info_idx,
                         size_t page_size, bool declare_all, const skills_catalog *skills,
                         buf *err) {
  reg_idx = lua_absindex(L, reg_idx);
  if (info_idx) info_idx = lua_absindex(L, info_idx);
  if (info_idx && !lua_istable(L, info_idx)) info_idx = 0;
  registry *r = calloc(1, sizeof *r);
  r->middleware = LUA_NOREF;
  r->mount_refresh = LUA_NOREF;
  r->cursor_key = cursor_new_key();
  r->page_size = page_size ? page_size : SIZE_MAX / 2;
  r->name = info_idx ? dup_field(L, info_idx, "name") : NULL;
  if (!r->name) r->name = strdup("luamcp-app");
  r->nskills = skills ? skills->n : 0;
  bool ok = true;

  static const char *const lists[REG_NLISTS] = {"tools", "resources", "templates", "prompts"};
  for (int l = 0; l < REG_NLISTS; l++) {
    lua_getfield(L, reg_idx, lists[l]);
    int li = lua_gettop(L);
    size_t n = lua_rawlen(L, li);
    for (size_t i = 0; i < n; i++) {
      lua_rawgeti(L, li, (lua_Integer)i + 1);
      int e = lua_gettop(L);
      switch (l) {
        case REG_TOOLS:
          if (!r->tools) r->tools = calloc(n, sizeof *r->tools);
          lua_getfield(L, e, "app_only");
          bool app_only = lua_toboolean(L, -1);
          lua_pop(L, 1);
          r->has_app_only |= app_only;
          lua_getfield(L, e, "task");
          const char *tm = lua_tostring(L, -1);
          int task = !tm ? TASK_NEVER : strcmp(tm, "required") == 0 ? TASK_REQUIRED : TASK_OPTIONAL;
          lua_pop(L, 1);
          r->has_tasks |= task != TASK_NEVER;
          r->tools[i] = (reg_tool){dup_field(L, e, "name"), ref_field(L, e, "handler"),
                                   ref_field(L, e, "input"), ref_field(L, e, "output"), app_only,
                                   ref_field(L, e, "headers"), task, dup_field(L, e, "where"),
                                   dup_field(L, e, "scopes")};
          r->ntools = i + 1;
          break;
        case REG_RESOURCES:
          if (!r->resources) r->resources = calloc(n, sizeof *r->resources);
          lua_pushvalue(L, e);
          r->resources[i] = (reg_resource){dup_field(L, e, "uri"), luaL_ref(L, LUA_REGISTRYINDEX),
                                           fingerprint(L, e), dup_field(L, e, "scopes")};
          r->nresources = i + 1;
          lua_getfield(L, e, "mime"); /* a widget: what `list` and `check` show apart */
          if (lua_type(L, -1) == LUA_TSTRING && (strcmp(lua_tostring(L, -1), "text/html;profile=mcp-app") == 0 ||
                                                 strcmp(lua_tostring(L, -1), "text/html+skybridge") == 0))
            r->nwidgets++;
          lua_pop(L, 1);
          break;
        case REG_TEMPLATES:
          if (!r->templates) r->templates = calloc(n, sizeof *r->templates);
          lua_pushvalue(L, e);
          r->templates[i] = (reg_template){dup_field(L, e, "uri"), luaL_ref(L, LUA_REGISTRYINDEX),
                                           dup_field(L, e, "scopes")};
          r->ntemplates = i + 1;
          break;
        default:
          if (!r->prompts) r->prompts = calloc(n, sizeof *r->prompts);
          lua_pushvalue(L, e);
          r->prompts[i] = (reg_prompt){dup_field(L, e, "name"), luaL_ref(L, LUA_REGISTRYINDEX),
                                       dup_field(L, e, "scopes")};
          r->nprompts = i + 1;
          break;
      }
      lua_pop(L, 1);
    }
    if (!encode_list(L, li, list_keys[l], l, r, skills, err)) ok = false;
    lua_pop(L, 1);
  }
  index_tools(r);
  collect_scopes(r, L, info_idx);
  lua_getfield(L, reg_idx, "mount_refresh");
  if (lua_isfunction(L, -1)) r->mount_refresh = luaL_ref(L, LUA_REGISTRYINDEX);
  else lua_pop(L, 1);
  lua_getfield(L, reg_idx, "middleware");
  if (lua_istable(L, -1) && lua_rawlen(L, -1) > 0) r->middleware = luaL_ref(L, LUA_REGISTRYINDEX);
  else lua_pop(L, 1);
  lua_getfield(L, reg_idx, "has_widgets");
  r->has_widgets = lua_toboolean(L, -1);
  lua_pop(L, 1);
  r->declares_prompts = declare_all || r->nprompts;
  /* skill files are resources: the extension needs the capability */
  r->declares_resources = declare_all || r->nresources || r->ntemplates || r->nskills;
  for (int v = PROTO_2024_11_05; v <= PROTO_LATEST; v++) encode_init_tail(L, r, info_idx, v, declare_all);
  encode_list_cache(L, r, info_idx, declare_all);
  encode_complete_tail(L, r, info_idx);
  if (ok && !read_schema_options(L, r, info_idx, err)) ok = false;
  if (!ok) {
    registry_free(r, L);
    return NULL;
  }
  return r;
}

void registry_free(registry *r, lua_State *L) {
  if (!r) return;
  for (int l = 0; l < REG_NLISTS; l++) {
    reg_scoped *sc = &r->scoped[l];
    for (size_t i = 0; i < sc->n; i++) buf_free(&sc->latest[i]);
    for (size_t i = 0; i < sc->n * PROTO_COUNT; i++) buf_free(&sc->older[i]);
    free(sc->latest);
    free(sc->older);
    free((void *)sc->scopes);
    free(sc->app_only);
  }
  free(r->scopes);
  if (L) luaL_unref(L, LUA_REGISTRYINDEX, r->middleware);
  if (L) luaL_unref(L, LUA_REGISTRYINDEX, r->mount_refresh);
  for (int l = 0; l < REG_NLISTS; l++) free(r->entry_hash[l]);
  for (size_t i = 0; i < r->ntools; i++) {
    free(r->tools[i].scopes);
    free(r->tools[i].name);
    free(r->tools[i].where);
    if (L) {
      luaL_unref(L, LUA_REGISTRYINDEX, r->tools[i].handler);
      luaL_unref(L, LUA_REGISTRYINDEX, r->tools[i].input);
      luaL_unref(L, LUA_REGISTRYINDEX, r->tools[i].output);
      luaL_unref(L, LUA_REGISTRYINDEX, r->tools[i].headers);
    }
  }
  for (size_t i = 0; i < r->nresources; i++) {
    free(r->resources[i].scopes);
    free(r->resources[i].uri);
    if (L) luaL_unref(L, LUA_REGISTRYINDEX, r->resources[i].entry);
  }
  for (size_t i = 0; i < r->ntemplates; i++) {
    free(r->templates[i].scopes);
    free(r->templates[i].uri_template);
    if (L) luaL_unref(L, LUA_REGISTRYINDEX, r->templates[i].entry);
  }
  for (size_t i = 0; i < r->nprompts; i++) {
    free(r->prompts[i].scopes);
    free(r->prompts[i].name);
    if (L) luaL_unref(L, LUA_REGISTRYINDEX, r->prompts[i].entry);
  }
  for (int l = 0; l <= REG_NLISTS; l++)
    for (int v = 0; v < PROTO_COUNT; v++) {
      reg_pages *pg = l < REG_NLISTS ? &r->pages[l][v] : &r->model_tools[v];
      if (pg->shared) continue; /* another version's pages */
      for (size_t p = 0; p < pg->npages; p++) free(pg->page[p]);
      free(pg->page);
      free(pg->page_len);
    }
  free(r->tools);
  free(r->tool_index);
  free(r->resources);
  free(r->templates);
  free(r->prompts);
  for (int v = 0; v < PROTO_COUNT; v++) free(r->init_tail[v]);
  free(r->complete_tail);
  free(r->version);
  free(r->server_meta);
  free(r->list_cache);
  free(r->discover);
  free(r->name);
  free(r);
}
