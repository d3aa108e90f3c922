/* cli.c — what the command files share (cli.h): usage errors, loading an
 * app for a command, keeping stdout for results. */
#include "cli.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "db.h"
#include "log.h"

_Noreturn void cli_die_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "luamcp: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry 'luamcp --help'.\n");
  exit(2);
}

app *cli_load(const char *dir, const app_config *cfg) {
  buf errors;
  buf_init(&errors);
  app *a = app_load(dir, cfg, NULL, &errors);
  if (!a) fprintf(stderr, "%.*s", (int)errors.len, errors.p ? errors.p : "");
  buf_free(&errors);
  return a;
}

bool cli_migrate(const app *a) {
  buf errors;
  buf_init(&errors);
  bool ok = db_migrate(a->dir, false, NULL, &errors);
  if (!ok) fprintf(stderr, "%.*s", (int)errors.len, errors.p ? errors.p : "");
  buf_free(&errors);
  return ok;
}

/* Keep the real stdout for protocol (or results) and point fd 1 at stderr,
   so no print() or library output can corrupt what we write. */
int cli_protect_stdout(void) {
  int fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (fd < 0 || dup2(2, 1) < 0) {
    perror("luamcp: stdout");
    exit(1);
  }
  return fd;
}

/* NAME as a folder name: letters, digits, '.', '_', '-' (others '_') */
static void folder_name(const char *name, char *out, size_t cap) {
  size_t k = 0;
  for (const char *p = name; *p && k + 1 < cap; p++) {
    char ch = *p;
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-';
    out[k++] = ok ? ch : '_';
  }
  out[k] = 0;
  if (!k || strcmp(out, ".") == 0 || strcmp(out, "..") == 0) snprintf(out, cap, "app");
}

bool cli_data_dir(const options *o, const app *a, const char *dir, char *out, size_t cap) {
  if (o->data) return (size_t)snprintf(out, cap, "%s", o->data) < cap;
  const char *state = getenv("STATE_DIRECTORY"); /* systemd's StateDirectory= (the first) */
  if (state && *state) {
    size_t n = strcspn(state, ":");
    return (size_t)snprintf(out, cap, "%.*s", (int)n, state) < cap;
  }
  char name[256], real[PATH_MAX];
  const char *app_name = a && a->reg && a->reg->name && *a->reg->name ? a->reg->name : NULL;
  if (!app_name) {
    const char *base = realpath(dir, real) ? real : dir;
    const char *slash = strrchr(base, '/');
    app_name = slash && slash[1] ? slash + 1 : base;
  }
  folder_name(app_name, name, sizeof name);
  const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
  size_t n;
  if (xdg && xdg[0] == '/') n = (size_t)snprintf(out, cap, "%s/luamcp/%s", xdg, name);
  else if (home && *home) n = (size_t)snprintf(out, cap, "%s/.local/share/luamcp/%s", home, name);
  else return false;
  return n < cap;
}

void cli_use_postgres(const options *o, bool announce) {
  char password[1024] = "";
  if (o->db_password_file) {
    buf b;
    buf_init(&b);
    if (!buf_read_file(&b, o->db_password_file)) cli_die_usage("--db-password-file %s: cannot be read", o->db_password_file);
    size_t n = 0;
    while (n < b.len && b.p[n] != '\n' && b.p[n] != '\r') n++;
    if (!n || n >= sizeof password) {
      buf_free(&b);
      cli_die_usage("--db-password-file %s: its first line must hold the password (under 1 KiB)", o->db_password_file);
    }
    memcpy(password, b.p, n);
    password[n] = 0;
    memset(b.p, 0, b.len);
    buf_free(&b);
  }
  int pool = o->db_pool ? o->db_pool : CLI_DB_POOL;
  char why[300];
  bool ok = db_set_postgres(o->db, o->db_password_file ? password : NULL, pool, why, sizeof why);
  memset(password, 0, sizeof password);
  if (!ok) cli_die_usage("--db: %s", why);
  if (announce) log_msg(LOG_INFO, "mcp.db: PostgreSQL %s (a pool of %d connections, made at first use)", o->db, pool);
}

void cli_use_data(const options *o, const app *a, const char *dir, bool announce) {
  if (o->db) return cli_use_postgres(o, announce);
  char folder[PATH_MAX], file[PATH_MAX + 16];
  if (!cli_data_dir(o, a, dir, folder, sizeof folder)) {
    db_set_path(NULL);
    if (announce) log_msg(LOG_WARNING, "no data folder (set --data DIR, or HOME): mcp.db is off");
    return;
  }
  snprintf(file, sizeof file, "%s/db.sqlite", folder);
  db_set_path(file);
  if (announce) log_msg(LOG_INFO, "data folder: %s (mcp.db's file is made there at its first use)", folder);
}
