/* skills.c — the Agent Skills of an app folder (see skills.h). */
#include "skills.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "frontmatter.h"
#include "json.h"
#include "log.h"
#include "request_state.h"

#define MAX_DEPTH 16 /* folders inside a skill */

/* {====== names and URIs */

/* The Agent Skills name rule: 1-64 of a-z 0-9, hyphens only between them. */
static bool name_ok(const char *s, size_t n) {
  if (n == 0 || n > 64 || s[0] == '-' || s[n - 1] == '-') return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && !(c == '-' && s[i + 1] != '-')) return false;
  }
  return true;
}

/* Characters, not bytes (the description's limit counts what a reader sees). */
static size_t utf8_chars(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
  return k;
}

/* One path segment into a URI: what a URL's path may hold as it is stays,
   the rest (and '%') is percent-encoded, so every client reads it back to
   the same name. */
static void put_segment(buf *b, const char *s, size_t n) {
  static const char keep[] = "-._~!$&'()*+,;=:@";
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        (c && strchr(keep, c)))
      buf_putc(b, (char)c);
    else
      buf_printf(b, "%%%02X", c);
  }
}

/* skill://KEY with each segment of key (NAME/rel) encoded */
static char *uri_of(const char *key) {
  buf b;
  buf_init(&b);
  buf_puts(&b, "skill://");
  for (const char *s = key;;) {
    size_t n = strcspn(s, "/");
    put_segment(&b, s, n);
    if (!s[n]) break;
    buf_putc(&b, '/');
    s += n + 1;
  }
  return buf_take(&b, NULL);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if ((c | 32) >= 'a' && (c | 32) <= 'f') return (c | 32) - 'a' + 10;
  return -1;
}

/* A client's skill:// URI as a key (NAME/rel): the fragment dropped, escapes
   decoded, trailing slashes dropped. False when it is not a skill:// URI
   without a query, or an escape is broken or decodes to NUL. */
static bool key_of(const char *uri, size_t n, buf *out) {
  static const char scheme[] = "skill://";
  out->len = 0;
  if (n < sizeof scheme - 1 || memcmp(uri, scheme, sizeof scheme - 1) != 0) return false;
  const char *hash = memchr(uri, '#', n);
  if (hash) n = (size_t)(hash - uri);
  for (size_t i = sizeof scheme - 1; i < n; i++) {
    char c = uri[i];
    if (c == '?' || c == '\0') return false; /* a raw NUL (\u0000) names nothing, as %00 does */
    if (c == '%') {
      int h = i + 2 < n ? hexval(uri[i + 1]) : -1, l = h >= 0 ? hexval(uri[i + 2]) : -1;
      if (l < 0 || (h == 0 && l == 0)) return false;
      buf_putc(out, (char)(h * 16 + l));
      i += 2;
    } else {
      buf_putc(out, c);
    }
  }
  while (out->len && out->p[out->len - 1] == '/') out->len--;
  buf_putc(out, '\0');
  out->len--;
  return out->len > 0;
}

/* }====== */

/* {====== one skill's files */

typedef struct walk {
  skill *sk;
  const char *shown;    /* the skill folder as errors name it: DIR/skills/NAME */
  const char *root;     /* its real path */
  buf *errors;
  bool failed, over; /* over: past SKILLS_MAX_FILES (said once) */
  size_t cap_files, cap_dirs;
} walk;

/* a/b into out (PATH_MAX); false when it does not fit */
static bool join_path(char *out, const char *a, const char *b) {
  int n = snprintf(out, PATH_MAX, "%s/%s", a, b);
  return n >= 0 && n < PATH_MAX;
}

static bool within(const char *p, const char *dir) {
  size_t n = strlen(dir);
  return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

static void problem(walk *w, const char *rel, const char *msg) {
  buf_printf(w->errors, "%s/%s: %s\n", w->shown, rel, msg);
  w->failed = true;
}

static const char *last_segment(const char *key) {
  const char *s = strrchr(key, '/');
  return s ? s + 1 : key;
}

static const char *mime_of(const char *name) {
  static const char *const table[][2] = {
      {"md", "text/markdown"}, {"markdown", "text/markdown"}, {"txt", "text/plain"},
      {"json", "application/json"}, {"yaml", "application/yaml"}, {"yml", "application/yaml"},
      {"py", "text/x-python"}, {"sh", "application/x-sh"}, {"bash", "application/x-sh"},
      {"js", "text/javascript"}, {"mjs", "text/javascript"}, {"ts", "text/typescript"},
      {"lua", "text/x-lua"}, {"html", "text/html"}, {"css", "text/css"}, {"csv", "text/csv"},
      {"xml", "application/xml"}, {"svg", "image/svg+xml"}, {"png", "image/png"},
      {"jpg", "image/jpeg"}, {"jpeg", "image/jpeg"}, {"gif", "image/gif"},
      {"webp", "image/webp"}, {"pdf", "application/pdf"}};
  const char *dot = strrchr(name, '.');
  if (!dot || dot == name) return "application/octet-stream";
  for (size_t i = 0; i < sizeof table / sizeof *table; i++)
    if (strcasecmp(dot + 1, table[i][0]) == 0) return table[i][1];
  return "application/octet-stream";
}

/* Read path (a regular file of at most max bytes, no symlink as its last
   part) into out. */
static bool read_regular(const char *path, size_t max, buf *out, buf *why) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    buf_printf(why, "cannot be read: %s", strerror(errno));
    return false;
  }
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!ok) buf_puts(why, "is not a regular file");
  else if ((size_t)st.st_size > max) ok = false, buf_printf(why, "is larger than %zu bytes", max);
  out->len = 0;
  if (ok) buf_reserve(out, (size_t)st.st_size + 1);
  while (ok) {
    char chunk[65536];
    ssize_t got = read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) ok = false, buf_printf(why, "cannot be read: %s", strerror(errno));
    if (got <= 0) break;
    buf_put(out, chunk, (size_t)got);
    if (out->len > max) ok = false, buf_printf(why, "is larger than %zu bytes", max);
  }
  close(fd);
  return ok;
}

/* Files and folders count together toward SKILLS_MAX_FILES: 32k empty
   folders were as many listings to build and watches to hold. False (said
   once) past it. */
static bool room_for_one(walk *w) {
  if (w->sk->nfiles + w->sk->ndirs < SKILLS_MAX_FILES) return true;
  if (!w->over)
    buf_printf(w->errors, "%s: more than %d files and folders: the SEP's limit for one skill\n",
               w->shown, SKILLS_MAX_FILES);
  w->over = w->failed = true;
  return false;
}

static void catalog_add_file(walk *w, const char *rel, const char *real) {
  skill *sk = w->sk;
  if (!room_for_one(w)) return;
  struct stat st;
  size_t left = SKILLS_MAX_BYTES - sk->bytes;
  if (stat(real, &st) == 0 && (unsigned long long)st.st_size > left) {
    buf_printf(w->errors, "%s/%s: the skill's files come to more than %u bytes: the SEP's limit "
                          "for one skill\n", w->shown, rel, SKILLS_MAX_BYTES);
    w->failed = true;
    return;
  }
  buf bytes, why;
  buf_init(&bytes), buf_init(&why);
  if (!read_regular(real, left, &bytes, &why)) {
    buf_printf(w->errors, "%s/%s: %.*s\n", w->shown, rel, (int)why.len, why.p);
    w->failed = true;
  } else {
    if (sk->nfiles == w->cap_files) {
      w->cap_files = w->cap_files ? w->cap_files * 2 : 8;
      sk->files = realloc(sk->files, w->cap_files * sizeof *sk->files);
    }
    skill_file *f = &sk->files[sk->nfiles++];
    buf key;
    buf_init(&key);
    buf_printf(&key, "%s/%s", sk->name, rel);
    f->key = buf_take(&key, NULL);
    f->uri = uri_of(f->key);
    f->real = strdup(real);
    f->mime = mime_of(last_segment(rel));
    f->size = bytes.len;
    memcpy(f->digest, "sha256:", 7);
    request_state_sha256(bytes.p ? bytes.p : "", bytes.len, f->digest + 7);
    sk->bytes += bytes.len;
  }
  buf_free(&bytes), buf_free(&why);
}

static void add_dir(walk *w, const char *rel) {
  skill *sk = w->sk;
  if (sk->ndirs == w->cap_dirs) {
    w->cap_dirs = w->cap_dirs ? w->cap_dirs * 2 : 4;
    sk->dirs = realloc(sk->dirs, w->cap_dirs * sizeof *sk->dirs);
  }
  skill_dir *d = &sk->dirs[sk->ndirs++];
  buf key;
  buf_init(&key);
  buf_puts(&key, sk->name);
  if (*rel) buf_printf(&key, "/%s", rel);
  d->key = buf_take(&key, NULL);
  d->uri = uri_of(d->key);
  d->listing = NULL;
  d->listing_len = 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

static int visible(const struct dirent *d) { return d->d_name[0] != '.'; }

/* Every file and folder below path (rel inside the skill; "" its root). */
static void walk_dir(walk *w, const char *path, const char *rel, int depth) {
  add_dir(w, rel);
  struct dirent **names;
  int n = scandir(path, &names, visible, by_name);
  if (n < 0) {
    problem(w, *rel ? rel : ".", strerror(errno));
    return;
  }
  for (int i = 0; i < n; i++) {
    const char *name = names[i]->d_name;
    char full[PATH_MAX], sub[PATH_MAX];
    bool fits = join_path(full, path, name) && (*rel ? join_path(sub, rel, name)
                                                       : snprintf(sub, sizeof sub, "%s", name) < PATH_MAX);
    bool plain = fits && json_utf8_valid(name, strlen(name));
    for (const char *c = name; plain && *c; c++) plain = (unsigned char)*c >= 0x20 && *c != 0x7f && *c != '\\';
    struct stat st;
    if (!fits) {
      problem(w, name, "the path is too long");
    } else if (!plain) {
      problem(w, sub, "a name that is not UTF-8, or holds a control character or a backslash: rename it");
    } else if (w->over) {
      /* past the limit: said once */
    } else if (lstat(full, &st) != 0) {
      problem(w, sub, strerror(errno));
    } else if (S_ISLNK(st.st_mode)) {
      /* followed only to a file inside the skill's own folder */
      char real[PATH_MAX];
      if (!realpath(full, real)) {
        problem(w, sub, "a symlink that leads nowhere");
      } else if (!within(real, w->root)) {
        char msg[PATH_MAX + 64];
        snprintf(msg, sizeof msg, "a symlink that leads out of the skill's folder (to %s): not served", real);
        problem(w, sub, msg);
      } else if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
        problem(w, sub, "a symlink to something other than a file: copy it into the skill instead");
      } else {
        catalog_add_file(w, sub, real);
      }
    } else if (S_ISDIR(st.st_mode)) {
      if (depth >= MAX_DEPTH) problem(w, sub, "folders nested deeper than 16 levels");
      else if (room_for_one(w)) walk_dir(w, full, sub, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      catalog_add_file(w, sub, full);
    } else {
      problem(w, sub, "not a regular file or folder");
    }
    free(names[i]);
  }
  free(names);
}

/* }====== */

/* {====== encoding what clients are sent */

static int file_cmp(const void *a, const void *b) {
  return strcmp(((const skill_file *)a)->uri, ((const skill_file *)b)->uri);
}

struct child { const char *uri, *key; const skill_file *f; };

static int child_cmp(const void *a, const void *b) {
  return strcmp(((const struct child *)a)->uri, ((const struct child *)b)->uri);
}

/* a folder's direct children, sorted by URI: its folders and files */
static void encode_listing(skill *sk, skill_dir *d) {
  size_t klen = strlen(d->key);
  size_t cap = sk->nfiles + sk->ndirs, n = 0;
  struct child *kids = calloc(cap ? cap : 1, sizeof *kids);
  for (size_t i = 0; i < sk->ndirs; i++) {
    const char *k = sk->dirs[i].key;
    if (strncmp(k, d->key, klen) == 0 && k[klen] == '/' && !strchr(k + klen + 1, '/'))
      kids[n++] = (struct child){sk->dirs[i].uri, k, NULL};
  }
  for (size_t i = 0; i < sk->nfiles; i++) {
    const char *k = sk->files[i].key;
    if (strncmp(k, d->key, klen) == 0 && k[klen] == '/' && !strchr(k + klen + 1, '/'))
      kids[n++] = (struct child){sk->files[i].uri, k, &sk->files[i]};
  }
  qsort(kids, n, sizeof *kids, child_cmp);
  buf b;
  buf_init(&b);
  buf_putc(&b, '[');
  for (size_t i = 0; i < n; i++) {
    const char *name = last_segment(kids[i].key);
    if (i) buf_putc(&b, ',');
    buf_puts(&b, "{\"uri\":");
    json_encode_string(&b, kids[i].uri, strlen(kids[i].uri));
    buf_puts(&b, ",\"name\":");
    json_encode_string(&b, name, strlen(name));
    if (kids[i].f) {
      buf_puts(&b, ",\"mimeType\":");
      json_encode_string(&b, kids[i].f->mime, strlen(kids[i].f->mime));
      buf_printf(&b, ",\"size\":%zu}", kids[i].f->size);
    } else {
      buf_puts(&b, ",\"mimeType\":\"inode/directory\"}");
    }
  }
  buf_putc(&b, ']');
  d->listing = buf_take(&b, &d->listing_len);
  free(kids);
}

static void encode_skill(skill *sk, const fm_node *fm) {
  qsort(sk->files, sk->nfiles, sizeof *sk->files, file_cmp);
  for (size_t i = 0; i < sk->ndirs; i++) encode_listing(sk, &sk->dirs[i]);
  buf b;
  buf_init(&b);
  buf_puts(&b, "{\"uri\":");
  json_encode_string(&b, sk->uri, strlen(sk->uri));
  buf_puts(&b, ",\"frontmatter\":");
  frontmatter_json(fm, &b);
  buf_puts(&b, ",\"resources\":[");
  size_t manifest = 0;
  for (size_t i = 0; i < sk->nfiles; i++) {
    const skill_file *f = &sk->files[i];
    if (strcmp(f->uri, sk->uri) == 0) manifest = f->size;
    if (i) buf_putc(&b, ',');
    buf_puts(&b, "{\"uri\":");
    json_encode_string(&b, f->uri, strlen(f->uri));
    buf_printf(&b, ",\"digest\":\"%s\",\"size\":%zu}", f->digest, f->size);
  }
  buf_puts(&b, "]}");
  sk->entry = buf_take(&b, &sk->entry_len);
  /* as resources/list shows SKILL.md (keys sorted, as the registry's) */
  buf_puts(&b, "{\"description\":");
  json_encode_string(&b, sk->description, strlen(sk->description));
  buf_puts(&b, ",\"mimeType\":\"text/markdown\",\"name\":");
  json_encode_string(&b, sk->name, strlen(sk->name));
  buf_printf(&b, ",\"size\":%zu,\"uri\":", manifest);
  json_encode_string(&b, sk->uri, strlen(sk->uri));
  buf_putc(&b, '}');
  sk->resource = buf_take(&b, &sk->resource_len);
}

/* }====== */

/* {====== loading */

static void skill_free(skill *sk) {
  for (size_t i = 0; i < sk->nfiles; i++) {
    free(sk->files[i].key);
    free(sk->files[i].uri);
    free(sk->files[i].real);
  }
  for (size_t i = 0; i < sk->ndirs; i++) {
    free(sk->dirs[i].key);
    free(sk->dirs[i].uri);
    free(sk->dirs[i].listing);
  }
  free(sk->files);
  free(sk->dirs);
  free(sk->name);
  free(sk->uri);
  free(sk->entry);
  free(sk->resource);
  free(sk->description);
}

void skills_free(skills_catalog *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n; i++) skill_free(&c->v[i]);
  free(c->v);
  free(c);
}

/* The front matter's rules (the SEP's and Agent Skills'), each at its line. */
static bool check_frontmatter(const fm_node *fm, const char *folder, const char *shown, buf *errors) {
  bool ok = true;
  const fm_node *name = frontmatter_get(fm, "name"), *desc = frontmatter_get(fm, "description");
  if (!name) {
    buf_printf(errors, "%s:1: the front matter needs name: %s (the skill's folder name)\n", shown, folder);
    ok = false;
  } else if (name->kind != FM_STR) {
    buf_printf(errors, "%s:%d: name must be a string (the skill's folder name, %s)\n", shown,
               name->line, folder);
    ok = false;
  } else if (!name_ok(name->s, name->n)) {
    buf_printf(errors, "%s:%d: name \"%s\" must be 1-64 lowercase letters, digits and single "
                       "hyphens (not first or last)\n", shown, name->line, name->s);
    ok = false;
  } else if (strcmp(name->s, folder) != 0) {
    buf_printf(errors, "%s:%d: name \"%s\" must be the skill's folder name \"%s\"\n", shown,
               name->line, name->s, folder);
    ok = false;
  }
  if (!desc || (desc->kind == FM_STR && desc->n == 0) || desc->kind == FM_NULL) {
    buf_printf(errors, "%s:%d: the front matter needs a description (1-1024 characters): what "
                       "the skill does and when to use it\n", shown, desc ? desc->line : 1);
    ok = false;
  } else if (desc->kind != FM_STR) {
    buf_printf(errors, "%s:%d: description must be a string (quote it)\n", shown, desc->line);
    ok = false;
  } else if (utf8_chars(desc->s, desc->n) > 1024) {
    buf_printf(errors, "%s:%d: description has %zu characters; at most 1024\n", shown, desc->line,
               utf8_chars(desc->s, desc->n));
    ok = false;
  }
  const fm_node *compat = frontmatter_get(fm, "compatibility");
  if (compat && (compat->kind != FM_STR || compat->n == 0 || utf8_chars(compat->s, compat->n) > 500)) {
    buf_printf(errors, "%s:%d: compatibility must be a string of 1-500 characters\n", shown, compat->line);
    ok = false;
  }
  const fm_node *meta = frontmatter_get(fm, "metadata");
  if (meta) {
    bool strings = meta->kind == FM_MAP;
    for (size_t i = 0; strings && i < meta->nkids; i++) strings = meta->kids[i].kind == FM_STR;
    if (!strings) {
      buf_printf(errors, "%s:%d: metadata must map strings to strings (quote numbers and booleans)\n",
                 shown, meta->line);
      ok = false;
    }
  }
  return ok;
}

static bool load_skill(skills_catalog *c, const char *skills_dir, const char *shown_dir,
                       const char *folder, buf *errors) {
  char path[PATH_MAX], shown[PATH_MAX], md[PATH_MAX], real[PATH_MAX], mdpath[PATH_MAX];
  if (!join_path(path, skills_dir, folder) || !join_path(shown, shown_dir, folder) ||
      !join_path(md, shown, "SKILL.md") || !join_path(mdpath, path, "SKILL.md")) {
    buf_printf(errors, "%s/%s: the path is too long\n", shown_dir, folder);
    return false;
  }
  buf text, why;
  buf_init(&text), buf_init(&why);
  bool ok = false;
  fm_node fm = {0};
  if (!realpath(path, real)) {
    buf_printf(errors, "%s: %s\n", shown, strerror(errno));
  } else if (!read_regular(mdpath, SKILLS_MAX_BYTES, &text, &why)) {
    buf_printf(errors, "%s: %.*s\n", md, (int)why.len, why.p);
  } else if (!json_utf8_valid(text.p ? text.p : "", text.len)) {
    buf_printf(errors, "%s:1: SKILL.md is not UTF-8 text\n", md);
  } else {
    int line = 0;
    why.len = 0;
    if (!frontmatter_parse(text.p ? text.p : "", text.len, &fm, &line, &why))
      buf_printf(errors, "%s:%d: %.*s\n", md, line ? line : 1, (int)why.len, why.p);
    else
      ok = check_frontmatter(&fm, folder, md, errors);
  }
  buf_free(&text), buf_free(&why);
  if (!ok) {
    frontmatter_free(&fm);
    return false;
  }
  skill sk = {0};
  sk.name = strdup(folder);
  const fm_node *d = frontmatter_get(&fm, "description");
  sk.description = strdup(d->s);
  char key[PATH_MAX];
  snprintf(key, sizeof key, "%s/SKILL.md", folder);
  sk.uri = uri_of(key);
  walk w = {&sk, shown, real, errors, false, false, 0, 0};
  walk_dir(&w, real, "", 0);
  if (!w.failed) encode_skill(&sk, &fm);
  frontmatter_free(&fm);
  if (w.failed) {
    skill_free(&sk);
    return false;
  }
  c->v = realloc(c->v, (c->n + 1) * sizeof *c->v);
  c->v[c->n++] = sk;
  return true;
}

skills_catalog *skills_load(const char *dir, buf *errors) {
  skills_catalog *c = calloc(1, sizeof *c);
  char path[PATH_MAX], shown[PATH_MAX];
  if (!join_path(path, dir, "skills") || !join_path(shown, dir, "skills")) {
    buf_printf(errors, "%s: the path is too long\n", dir);
    skills_free(c);
    return NULL;
  }
  if (strcmp(dir, ".") == 0) snprintf(shown, sizeof shown, "skills");
  struct stat st;
  if (lstat(path, &st) != 0) return c; /* no skills/: nothing to serve */
  if (!S_ISDIR(st.st_mode)) {
    buf_printf(errors, "%s: not a folder (skills/NAME/SKILL.md are the app's skills)\n", shown);
    skills_free(c);
    return NULL;
  }
  struct dirent **names;
  int n = scandir(path, &names, visible, by_name);
  if (n < 0) {
    buf_printf(errors, "%s: %s\n", shown, strerror(errno));
    skills_free(c);
    return NULL;
  }
  bool ok = true;
  for (int i = 0; i < n; i++) {
    const char *name = names[i]->d_name;
    char sub[PATH_MAX], md[PATH_MAX];
    if (!join_path(sub, path, name) || !join_path(md, sub, "SKILL.md")) {
      buf_printf(errors, "%s/%s: the path is too long\n", shown, name);
      ok = false;
    } else if (lstat(sub, &st) != 0 || !S_ISDIR(st.st_mode)) {
      if (S_ISLNK(st.st_mode)) {
        buf_printf(errors, "%s/%s: a symlink; a skill is a folder of the app (copy it in)\n", shown, name);
        ok = false;
      } else {
        log_msg(LOG_WARNING, "%s/%s: not a folder: skills are skills/NAME/SKILL.md (ignored)", shown, name);
      }
    } else if (lstat(md, &st) != 0) {
      log_msg(LOG_WARNING, "%s/%s/: no SKILL.md: not a skill (ignored)", shown, name);
    } else if (c->n >= SKILLS_MAX) {
      if (ok) buf_printf(errors, "%s: more than %d skills\n", shown, SKILLS_MAX);
      ok = false;
    } else if (!load_skill(c, path, shown, name, errors)) {
      ok = false;
    }
    free(names[i]);
  }
  free(names);
  if (!ok) {
    skills_free(c);
    return NULL;
  }
  /* sorted by uri (skill://NAME/SKILL.md): the folder names' order */
  return c;
}

/* }====== */

/* {====== what clients ask */

const skill *skills_find(const skills_catalog *c, const char *uri, size_t n) {
  const skill_file *f = skills_find_file(c, uri, n);
  if (!f) return NULL;
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->v[i].uri, f->uri) == 0) return &c->v[i];
  return NULL;
}

const skill_file *skills_find_file(const skills_catalog *c, const char *uri, size_t n) {
  if (!c || !c->n) return NULL;
  buf k;
  buf_init(&k);
  const skill_file *found = NULL;
  if (key_of(uri, n, &k)) {
    size_t nl = strcspn(k.p, "/");
    for (size_t i = 0; i < c->n && !found; i++) {
      const skill *sk = &c->v[i];
      if (strlen(sk->name) != nl || memcmp(sk->name, k.p, nl) != 0) continue;
      for (size_t j = 0; j < sk->nfiles && !found; j++)
        if (strcmp(sk->files[j].key, k.p) == 0) found = &sk->files[j];
    }
  }
  buf_free(&k);
  return found;
}

const skill_dir *skills_find_dir(const skills_catalog *c, const char *uri, size_t n) {
  if (!c || !c->n) return NULL;
  buf k;
  buf_init(&k);
  const skill_dir *found = NULL;
  if (key_of(uri, n, &k))
    for (size_t i = 0; i < c->n && !found; i++)
      for (size_t j = 0; j < c->v[i].ndirs && !found; j++)
        if (strcmp(c->v[i].dirs[j].key, k.p) == 0) found = &c->v[i].dirs[j];
  buf_free(&k);
  return found;
}

bool skills_read_file(const skill_file *f, buf *out, buf *why) {
  if (!read_regular(f->real, f->size, out, why)) return false;
  char digest[72] = "sha256:";
  request_state_sha256(out->p ? out->p : "", out->len, digest + 7);
  if (out->len != f->size || strcmp(digest, f->digest) != 0) {
    buf_puts(why, "changed since the skills were loaded (a reload is due)");
    return false;
  }
  return true;
}

void skills_push_list(lua_State *L, const skills_catalog *c) {
  lua_createtable(L, c ? (int)c->n : 0, 0);
  for (size_t i = 0; c && i < c->n; i++) {
    const skill *sk = &c->v[i];
    lua_createtable(L, 0, 5);
    lua_pushstring(L, sk->name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, sk->description);
    lua_setfield(L, -2, "description");
    lua_pushstring(L, sk->uri);
    lua_setfield(L, -2, "uri");
    lua_pushinteger(L, (lua_Integer)sk->nfiles);
    lua_setfield(L, -2, "files");
    lua_pushinteger(L, (lua_Integer)sk->bytes);
    lua_setfield(L, -2, "bytes");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

void skills_check_report(const skills_catalog *c, const char *dir) {
  if (!c || !c->n) return;
  printf("%s: %zu skill%s:", dir, c->n, c->n == 1 ? "" : "s");
  for (size_t i = 0; i < c->n; i++)
    printf("%s %s (%zu file%s)", i ? "," : "", c->v[i].name, c->v[i].nfiles, c->v[i].nfiles == 1 ? "" : "s");
  putchar('\n');
}

/* }====== */
