/* cmd_new.c — luamcp new DIR [--widget] [--auth]: a new app folder that
 * passes `luamcp check` and answers a client at once (a tool, a resource
 * and a prompt; with --widget a view too; with --auth tools that know who
 * calls and need scopes), with a README and a .luarc.json that
 * points the Lua language server at luamcp's annotations (lua/mcp.d.lua,
 * installed as PREFIX/share/luamcp/mcp.d.lua). It never overwrites: DIR
 * must not exist, or be empty; each file is created with O_EXCL. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "json.h"

static const char app_lua[] =
    "-- app.lua: the app's name and what it says about itself (luamcp's README,\n"
    "-- \"An app folder\"); `luamcp pack` reads author, license, user_config and\n"
    "-- registry from here too.\n"
    "return {\n"
    "  name = \"@NAME@\",\n"
    "  version = \"0.1.0\",\n"
    "  title = \"@NAME@\",\n"
    "  description = \"Greets people by name; a luamcp app.\",\n"
    "  instructions = \"Use greet to greet someone by name.\",\n"
    "  -- for luamcp pack:\n"
    "  -- author = \"Your Name <you@example.com>\",\n"
    "  -- license = \"MIT\",\n"
    "  -- user_config = { api_key = { type = \"string\", title = \"API key\",\n"
    "  --   description = \"Asked at install\", sensitive = true, env = \"API_KEY\" } },\n"
    "  -- registry = { name = \"io.github.you/@NAME@\",\n"
    "  --   url = \"https://github.com/you/@NAME@/releases/download/v{version}/{file}\" },\n"
    "}\n";

static const char hello_lua[] =
    "-- scripts/hello.lua: a tool, a resource and a prompt. Every scripts/*.lua is\n"
    "-- loaded at start and again whenever a file of the app is saved.\n"
    "local mcp = require \"mcp\"\n"
    "\n"
    "mcp.tool {\n"
    "  name = \"greet\",\n"
    "  title = \"Greet\",\n"
    "  description = \"Greets someone by name.\",\n"
    "  input = { name = mcp.string { description = \"Who to greet\", min = 1 } },\n"
    "  annotations = { readOnlyHint = true },\n"
    "  handler = function(args, ctx)\n"
    "    ctx:info(\"greeting %s\", args.name)\n"
    "    return \"Hello, \" .. args.name .. \"!\"\n"
    "  end,\n"
    "}\n"
    "\n"
    "mcp.resource {\n"
    "  uri = \"mcp://@NAME@/about\",\n"
    "  name = \"about\",\n"
    "  mime = \"text/markdown\",\n"
    "  read = function(uri, ctx)\n"
    "    return \"# @NAME@\\n\\nAn MCP server written in Lua, served by luamcp.\\n\"\n"
    "  end,\n"
    "}\n"
    "\n"
    "mcp.prompt {\n"
    "  name = \"welcome\",\n"
    "  description = \"A welcome note for someone.\",\n"
    "  args = {\n"
    "    who = mcp.string { description = \"Who is welcomed\" },\n"
    "    tone = mcp.enum { \"warm\", \"formal\", optional = true },\n"
    "  },\n"
    "  get = function(args, ctx)\n"
    "    return mcp.user((\"Write a %s welcome note for %s.\"):format(args.tone or \"warm\", args.who))\n"
    "  end,\n"
    "}\n";

static const char hello_test_lua[] =
    "-- tests/hello_test.lua: `luamcp test` runs every tests/*_test.lua against a\n"
    "-- fresh copy of the app, through the real server (docs/testing.md).\n"
    "local test = require \"mcp.test\"\n"
    "local app = test.app()\n"
    "\n"
    "test(\"greet says hello\", function()\n"
    "  local r = app:call(\"greet\", { name = \"Ada\" })\n"
    "  test.eq(r.content, { { type = \"text\", text = \"Hello, Ada!\" } })\n"
    "end)\n"
    "\n"
    "test(\"greet needs a name\", function()\n"
    "  local r = app:call(\"greet\", { name = \"\" })\n"
    "  test.eq(r.isError, true)\n"
    "end)\n"
    "\n"
    "test(\"the about page and the welcome prompt\", function()\n"
    "  local about = app:read(\"mcp://@NAME@/about\").contents[1]\n"
    "  test.eq(about.text, \"# @NAME@\\n\\nAn MCP server written in Lua, served by luamcp.\\n\")\n"
    "  local p = app:prompt(\"welcome\", { who = \"Ada\", tone = \"formal\" })\n"
    "  test.eq(p.messages[1].content.text, \"Write a formal welcome note for Ada.\")\n"
    "end)\n";

static const char view_lua[] =
    "-- scripts/card.lua: a tool with a view. Hosts that speak MCP Apps show\n"
    "-- widgets/card.html next to its result; the others show its text.\n"
    "local mcp = require \"mcp\"\n"
    "\n"
    "mcp.widget { uri = \"ui://@NAME@/card.html\", file = \"card.html\", prefersBorder = true }\n"
    "\n"
    "mcp.tool {\n"
    "  name = \"greeting_card\",\n"
    "  title = \"Greeting card\",\n"
    "  description = \"Greets someone on a card.\",\n"
    "  input = { name = mcp.string { description = \"Who to greet\", min = 1 } },\n"
    "  output = { greeting = mcp.string(), name = mcp.string() },\n"
    "  ui = \"ui://@NAME@/card.html\",\n"
    "  handler = function(args)\n"
    "    return { greeting = \"Hello, \" .. args.name .. \"!\", name = args.name }\n"
    "  end,\n"
    "}\n";

static const char card_html[] =
    "<!doctype html>\n"
    "<html>\n"
    "<head>\n"
    "<meta charset=\"utf-8\">\n"
    "<title>Greeting card</title>\n"
    "<style>\n"
    "  body { font-family: var(--font-sans, system-ui, sans-serif); margin: 1rem;\n"
    "         color: var(--color-text-primary, #1a1a1a); }\n"
    "  .card { padding: 1rem 1.5rem; border-radius: .75rem; border: 1px solid #ccc; }\n"
    "</style>\n"
    "</head>\n"
    "<body>\n"
    "<div class=\"card\">\n"
    "  <h1 id=\"greeting\">…</h1>\n"
    "  <button id=\"again\" disabled>Greet again</button>\n"
    "</div>\n"
    "<!-- the view helper: luamcp puts it inline when it serves this page -->\n"
    "<script src=\"luamcp:view.js\"></script>\n"
    "<script>\n"
    "  const view = window.mcpView;\n"
    "  let name = null;\n"
    "  function show(result) {\n"
    "    const s = result.structuredContent || {};\n"
    "    name = s.name;\n"
    "    document.getElementById(\"greeting\").textContent = s.greeting || \"\";\n"
    "    document.getElementById(\"again\").disabled = !name;\n"
    "  }\n"
    "  view.on(\"toolresult\", show);\n"
    "  document.getElementById(\"again\").onclick = async () =>\n"
    "    show(await view.callTool(\"greeting_card\", { name }));\n"
    "</script>\n"
    "</body>\n"
    "</html>\n";

static const char notes_lua[] =
    "-- notes.lua: per-user notes, kept in the app's own SQLite database (mcp.db;\n"
    "-- migrations/001_notes.sql makes the table). Over HTTP with --auth-resource\n"
    "-- each request carries a token: ctx.auth says whose it is, and `scopes`\n"
    "-- decide who sees and calls what (a caller without notes:write never lists\n"
    "-- add_note).\n"
    "local mcp = require \"mcp\"\n"
    "\n"
    "-- Whose notes: ctx.auth.key names the caller (its issuer and subject), and\n"
    "-- no two callers share one. A request that names no one (stdio, a server\n"
    "-- without --auth-resource, a made-up caller without a subject) is refused:\n"
    "-- there is no pile of notes shared by whoever reaches the server. On your\n"
    "-- own machine, name yourself: luamcp call --as ada --scopes notes:read ...\n"
    "local NO_ONE = \"notes are kept per user and this request names no one: serve with \"\n"
    "  .. \"--auth-resource (a token names the caller), or try luamcp call --as NAME\"\n"
    "\n"
    "mcp.tool {\n"
    "  name = \"list_notes\",\n"
    "  description = \"The caller's own notes.\",\n"
    "  scopes = { \"notes:read\" },\n"
    "  annotations = { readOnlyHint = true },\n"
    "  handler = function(_, ctx)\n"
    "    local owner = ctx.auth and ctx.auth.key\n"
    "    if not owner then return mcp.fail(NO_ONE) end\n"
    "    local rows = mcp.db.query(\"SELECT body FROM notes WHERE owner = ? ORDER BY id\", owner)\n"
    "    if #rows == 0 then return \"no notes yet\" end\n"
    "    local lines = {}\n"
    "    for i, row in ipairs(rows) do lines[i] = row.body end\n"
    "    return table.concat(lines, \"\\n\")\n"
    "  end,\n"
    "}\n"
    "\n"
    "mcp.tool {\n"
    "  name = \"add_note\",\n"
    "  description = \"Add a note for the caller.\",\n"
    "  scopes = { \"notes:read\", \"notes:write\" },\n"
    "  input = { text = mcp.string { max = 1000 } },\n"
    "  handler = function(args, ctx)\n"
    "    local owner = ctx.auth and ctx.auth.key\n"
    "    if not owner then return mcp.fail(NO_ONE) end\n"
    "    return mcp.db.tx(function() -- the count is this insert's, whatever else runs\n"
    "      mcp.db.exec(\"INSERT INTO notes(owner, body, at) VALUES (?, ?, ?)\", owner, args.text, os.time())\n"
    "      local n = mcp.db.one(\"SELECT count(*) AS n FROM notes WHERE owner = ?\", owner).n\n"
    "      return (\"%d note(s)\"):format(n)\n"
    "    end)\n"
    "  end,\n"
    "}\n";

static const char notes_sql[] =
    "-- migrations/001_notes.sql: the table of scripts/notes.lua, applied once\n"
    "-- when the app loads (recorded in luamcp_migrations with its checksum).\n"
    "-- Once applied, never edit it: a change goes in 002_something.sql.\n"
    "CREATE TABLE notes(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  owner TEXT NOT NULL, -- ctx.auth.key: the caller's issuer and subject\n"
    "  body TEXT NOT NULL,\n"
    "  at INTEGER NOT NULL -- os.time() when it was added\n"
    ");\n"
    "CREATE INDEX notes_owner ON notes(owner, id);\n";

static const char notes_test_lua[] =
    "-- tests/notes_test.lua: each caller reads only their own notes, and a\n"
    "-- request that names no one reads and writes none.\n"
    "local test = require \"mcp.test\"\n"
    "local app = test.app()\n"
    "local RW = { \"notes:read\", \"notes:write\" }\n"
    "\n"
    "test(\"two users' notes stay apart\", function()\n"
    "  local bob = { subject = \"bob\", scopes = RW }\n"
    "  local alice = { subject = \"alice\", scopes = RW }\n"
    "  test.eq(app:call(\"add_note\", { text = \"bob-private-note\" }, { as = bob }).content[1].text, \"1 note(s)\")\n"
    "  test.eq(app:call(\"list_notes\", {}, { as = alice }).content[1].text, \"no notes yet\")\n"
    "  test.eq(app:call(\"list_notes\", {}, { as = bob }).content[1].text, \"bob-private-note\")\n"
    "end)\n"
    "\n"
    "test(\"no identity, no notes\", function()\n"
    "  app:call(\"add_note\", { text = \"bob-private-note\" }, { as = { subject = \"bob\", scopes = RW } })\n"
    "  for _, as in ipairs { false, { scopes = RW } } do\n"
    "    local r = app:call(\"list_notes\", {}, { as = as or nil })\n"
    "    test.eq(r.isError, true)\n"
    "    test.match(r.content[1].text, \"names no one\")\n"
    "    test.eq(app:call(\"add_note\", { text = \"x\" }, { as = as or nil }).isError, true)\n"
    "  end\n"
    "end)\n"
    "\n"
    "-- test.db: this file's own database (fresh, migrations applied), to seed\n"
    "-- rows and look at what the tools wrote\n"
    "test(\"each row is its owner's (test.db seeds and reads the table)\", function()\n"
    "  local carol = { subject = \"carol\", scopes = RW }\n"
    "  app:call(\"add_note\", { text = \"carol-first\" }, { as = carol })\n"
    "  local mine = test.db.one(\"SELECT owner FROM notes WHERE body = ?\", \"carol-first\")\n"
    "  test.db.exec(\"INSERT INTO notes(owner, body, at) VALUES (?, ?, ?)\", mine.owner, \"carol-seeded\", 0)\n"
    "  test.eq(app:call(\"list_notes\", {}, { as = carol }).content[1].text, \"carol-first\\ncarol-seeded\")\n"
    "  local others = test.db.one(\"SELECT count(*) AS n FROM notes WHERE owner <> ? AND body LIKE 'carol%'\", mine.owner)\n"
    "  test.eq(others.n, 0)\n"
    "end)\n";

static const char readme_md[] =
    "# @NAME@\n"
    "\n"
    "An MCP server written in Lua, served by luamcp.\n"
    "\n"
    "```sh\n"
    "luamcp check .                          # load every script, report problems\n"
    "luamcp list .                           # what the app offers\n"
    "luamcp call . greet '{\"name\":\"Ada\"}'    # one tool call, no client\n"
    "luamcp serve .                          # stdio, what desktop clients spawn\n"
    "luamcp pack .                           # @NAME@-0.1.0.mcpb for Claude Desktop\n"
    "```\n"
    "\n"
    "- `app.lua`: name, version, description\n"
    "- `scripts/hello.lua`: the `greet` tool, the `mcp://@NAME@/about` resource, the\n"
    "  `welcome` prompt\n"
    "@WIDGET_LINE@"
    "@AUTH_LINE@"
    "- `.luarc.json`: points the Lua language server (LuaLS) at luamcp's annotations,\n"
    "  so `require \"mcp\"` completes every `mcp.*` function and field and shows\n"
    "  their documentation as you type. LuaLS does not flag a misspelt field in a\n"
    "  table literal (`args =` on `mcp.tool`): `luamcp check .` does, at its line\n"
    "\n"
    "Saving a file while `luamcp serve` runs reloads the app.\n";

/* text with @NAME@, @WIDGET_LINE@ and @AUTH_LINE@ filled in */
static void fill(buf *b, const char *text, const char *name, bool widget, bool auth) {
  for (const char *p = text; *p;) {
    if (strncmp(p, "@NAME@", 6) == 0) buf_puts(b, name), p += 6;
    else if (strncmp(p, "@AUTH_LINE@", 11) == 0) {
      if (auth)
        buf_puts(b, "- `scripts/notes.lua`: `list_notes` and `add_note`, each user's own (rows\n"
                    "  of the app's database, `mcp.db`, keyed by `ctx.auth.key`; a request that\n"
                    "  names no one is refused), behind the scopes `notes:read` and\n"
                    "  `notes:write`. `migrations/001_notes.sql` makes their table when the app\n"
                    "  loads (a change goes in a new `migrations/002_NAME.sql`, never in an\n"
                    "  applied one); `tests/notes_test.lua` shows\n"
                    "  two users' notes kept apart. Try them as someone:\n"
                    "  `luamcp call --as ada --scopes notes:read,notes:write . add_note '{\"text\":\"hi\"}'`.\n"
                    "  Over HTTP, tokens from your authorization server decide:\n"
                    "  `luamcp serve --http 127.0.0.1:8080 --auth-resource https://YOUR.HOST/mcp\n"
                    "  --auth-issuer https://YOUR.ISSUER .` (luamcp's docs/auth.md)\n");
      p += 11;
    }
    else if (strncmp(p, "@WIDGET_LINE@", 13) == 0) {
      if (widget)
        buf_puts(b, "- `scripts/card.lua`, `widgets/card.html`: the `greeting_card` tool and its\n"
                    "  view (MCP Apps hosts render it next to the result)\n");
      p += 13;
    } else buf_putc(b, *p++);
  }
}

static bool make_file(const char *dir, const char *rel, const char *text, size_t n) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "luamcp: new: %s: %s\n", path, strerror(errno));
    return false;
  }
  bool ok = write(fd, text, n) == (ssize_t)n;
  if (close(fd) != 0) ok = false;
  if (!ok) fprintf(stderr, "luamcp: new: writing %s: %s\n", path, strerror(errno));
  return ok;
}

static bool make_filled(const char *dir, const char *rel, const char *text, const char *name,
                        const options *o) {
  buf b;
  buf_init(&b);
  fill(&b, text, name, o->widget, o->auth);
  bool ok = make_file(dir, rel, b.p, b.len);
  buf_free(&b);
  return ok;
}

/* Where mcp.d.lua is for this binary: installed (PREFIX/bin/luamcp ->
   PREFIX/share/luamcp), or in the source tree of a build (build/luamcp ->
   lua/). */
static bool find_annotations(char *out, size_t cap) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return false;
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  static const char *const rel[] = {"../share/luamcp", "../lua", "../../lua"};
  for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
    char dir[PATH_MAX + 32], file[PATH_MAX + 48];
    snprintf(dir, sizeof dir, "%s/%s", exe, rel[i]);
    snprintf(file, sizeof file, "%s/mcp.d.lua", dir);
    if (access(file, R_OK) == 0 && realpath(dir, out) && strlen(out) < cap) return true;
  }
  return false;
}

/* How the person who ran us runs this luamcp again: "luamcp" when PATH finds
   this very binary (make install), else its path, relative to here when it is
   below here (build/luamcp in a checkout). */
static void self_command(char *out, size_t cap) {
  char exe[PATH_MAX], cwd[PATH_MAX];
  snprintf(out, cap, "luamcp");
  if (!realpath("/proc/self/exe", exe)) return;
  const char *path = getenv("PATH");
  for (const char *p = path ? path : ""; *p;) {
    size_t n = strcspn(p, ":");
    char cand[PATH_MAX + 16], real[PATH_MAX];
    if (n > 0 && n < PATH_MAX) {
      snprintf(cand, sizeof cand, "%.*s/luamcp", (int)n, p);
      if (access(cand, X_OK) == 0) { /* the first luamcp on PATH is what a shell runs */
        if (realpath(cand, real) && strcmp(real, exe) == 0) return;
        break;
      }
    }
    p += n + (p[n] == ':');
  }
  size_t cl = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
  if (cl > 0 && strncmp(exe, cwd, cl) == 0 && exe[cl] == '/') snprintf(out, cap, "%s", exe + cl + 1);
  else snprintf(out, cap, "%s", exe);
}

/* s as one shell word, to paste: as is when plain, else in single quotes. */
static void shell_word(const char *s, char *out, size_t cap) {
  if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-+:@%,=") == strlen(s)) {
    snprintf(out, cap, "%s", s);
    return;
  }
  size_t n = 0;
  if (cap < 3) return;
  out[n++] = '\'';
  for (; *s && n + 6 < cap; s++) {
    if (*s == '\'') { /* ' ends the quote, \' is the quote, ' opens it again */
      memcpy(out + n, "'\\''", 4);
      n += 4;
    } else {
      out[n++] = *s;
    }
  }
  out[n++] = '\'';
  out[n] = '\0';
}

/* DIR's last part as an app name: letters, digits, - and _. */
static void app_name(const char *dir, char *out, size_t cap) {
  char copy[PATH_MAX];
  snprintf(copy, sizeof copy, "%s", dir);
  size_t len = strlen(copy);
  while (len > 1 && copy[len - 1] == '/') copy[--len] = '\0';
  const char *base = strrchr(copy, '/') ? strrchr(copy, '/') + 1 : copy;
  size_t i = 0;
  for (const char *p = base; *p && i + 1 < cap; p++) {
    char c = *p;
    bool ok = (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z') || c == '-' || c == '_';
    out[i++] = ok ? (char)(c >= 'A' && c <= 'Z' ? c | 32 : c) : '-';
  }
  out[i] = '\0';
  if (!i || strcmp(out, ".") == 0 || strcmp(out, "-") == 0) snprintf(out, cap, "my-app");
}

int cmd_new(options *o) {
  if (o->nargs != 1) cli_die_usage("%s", "new needs DIR");
  const char *dir = o->args[0];
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *de;
    bool empty = true;
    while ((de = readdir(d)))
      if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) empty = false;
    closedir(d);
    if (!empty) {
      fprintf(stderr, "luamcp: new: %s is not empty: nothing written (luamcp new never "
                      "overwrites)\n", dir);
      return 1;
    }
  } else if (errno != ENOENT || mkdir(dir, 0755) != 0) {
    fprintf(stderr, "luamcp: new: %s: %s\n", dir, strerror(errno));
    return 1;
  }
  char name[128], sub[PATH_MAX];
  app_name(dir, name, sizeof name);
  snprintf(sub, sizeof sub, "%s/scripts", dir);
  if (mkdir(sub, 0755) != 0) {
    fprintf(stderr, "luamcp: new: %s: %s\n", sub, strerror(errno));
    return 1;
  }
  snprintf(sub, sizeof sub, "%s/tests", dir);
  bool ok = mkdir(sub, 0755) == 0 && make_filled(dir, "app.lua", app_lua, name, o) &&
            make_filled(dir, "scripts/hello.lua", hello_lua, name, o) &&
            make_filled(dir, "tests/hello_test.lua", hello_test_lua, name, o) &&
            make_filled(dir, "README.md", readme_md, name, o);
  if (ok && o->auth)
    ok = make_filled(dir, "scripts/notes.lua", notes_lua, name, o) &&
         make_filled(dir, "tests/notes_test.lua", notes_test_lua, name, o) &&
         (snprintf(sub, sizeof sub, "%s/migrations", dir), mkdir(sub, 0755) == 0) &&
         make_filled(dir, "migrations/001_notes.sql", notes_sql, name, o);
  if (ok && o->widget) {
    snprintf(sub, sizeof sub, "%s/widgets", dir);
    ok = mkdir(sub, 0755) == 0 && make_filled(dir, "scripts/card.lua", view_lua, name, o) &&
         make_filled(dir, "widgets/card.html", card_html, name, o);
    if (!ok && errno) fprintf(stderr, "luamcp: new: %s: %s\n", sub, strerror(errno));
  }
  /* .luarc.json: the language server's settings for this folder */
  char lib[PATH_MAX];
  bool found = find_annotations(lib, sizeof lib);
  buf rc;
  buf_init(&rc);
  buf_puts(&rc, "{\n  \"runtime.version\": \"Lua 5.4\",\n  \"workspace.checkThirdParty\": false,\n"
                "  \"workspace.library\": [");
  if (found) json_encode_string(&rc, lib, strlen(lib));
  buf_puts(&rc, "]\n}\n");
  if (ok) ok = make_file(dir, ".luarc.json", rc.p, rc.len);
  buf_free(&rc);
  if (!ok) return 1;
  if (!found)
    fprintf(stderr, "luamcp: new: warning: mcp.d.lua (the annotations) not found next to this "
                    "luamcp: add its folder to .luarc.json's workspace.library\n");
  char me_raw[PATH_MAX], me[2 * PATH_MAX], word[2 * PATH_MAX];
  self_command(me_raw, sizeof me_raw);
  shell_word(me_raw, me, sizeof me);
  shell_word(dir, word, sizeof word); /* the hints are pasted into a shell */
  printf("made %s: app.lua, scripts/hello.lua%s%s, tests/hello_test.lua, README.md, .luarc.json\n"
         "next:\n"
         "  %s check %s\n"
         "  %s call %s greet '{\"name\":\"Ada\"}'\n",
         dir, o->widget ? ", scripts/card.lua, widgets/card.html" : "",
         o->auth ? ", scripts/notes.lua, migrations/001_notes.sql, tests/notes_test.lua" : "", me,
         word, me, word);
  if (o->auth)
    printf("  %s call --as ada --scopes notes:read,notes:write %s add_note '{\"text\":\"hi\"}'\n",
           me, word);
  printf("  %s test %s\n", me, word);
  printf("  %s serve %s\n", me, word);
  return 0;
}
