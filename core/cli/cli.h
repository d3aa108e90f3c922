/* cli.h — what the command files share: the parsed command line, usage
 * errors, loading an app for a command. main.c parses and dispatches; each
 * group of commands has its own file, so main.c stays the option parser and
 * the server's start:
 *   cli.c         what they all use: cli_die_usage, cli_load, cli_protect_stdout
 *   cli_help.c    the --help text and each command's own (luamcp help CMD)
 *   cli_client.c  call, read, prompt, list: one request to the app in process
 *   cmd_new.c     luamcp new: a working app folder
 *   cmd_pack.c    luamcp pack: the .mcpb bundle and server.json
 *   cmd_db.c      luamcp db: backup, restore, migrate, query, shell on mcp.db
 *   cmd_proxy.c   luamcp proxy: another MCP server through a generated app
 * Exit status everywhere: 0 ok, 1 a problem with the app or an error
 * result, 2 a usage error. */
#ifndef LUAMCP_CLI_H
#define LUAMCP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "app.h"
#include "server.h"
#include "transport_http.h"

typedef struct options {
  const char *command;
  server_options server;
  double debounce;
  const char *state_key_file;
  size_t max_message;
  bool http, no_watch;
  double restart_on_stall; /* --restart-on-stall S: under the supervisor (supervise.h) */
  double unhealthy_after;  /* --unhealthy-after S: /healthz answers 503 past it (health.h) */
  http_options h;
  const char *origins[16];
  const char *cors[16];         /* --cors */
  char cors_buf[1024];         /* --cors values split at commas */
  size_t cors_used;
  const char *proxies[8];      /* --trust-proxy */
  const char *issuers[8];      /* --auth-issuer */
  const char *client_secret_file; /* --auth-client-secret-file */
  const char *bus, *store;     /* --bus, --store: redis://HOST:PORT/N */
  const char *data;            /* --data DIR: the app's data folder (mcp.db) */
  const char *db;              /* --db postgres://USER@HOST:PORT/DB: mcp.db on PostgreSQL */
  const char *db_password_file; /* --db-password-file FILE: its password */
  int db_pool;                 /* --db-pool N: its connections (0: the default) */
  char host_buf[256];
  const char *access_log;     /* --access-log FILE|- */
  const char *otlp;           /* --otlp URL: OTLP/HTTP traces */
  bool metrics;                /* --metrics [HOST:]PORT */
  const char *metrics_host;
  char metrics_host_buf[256];
  int metrics_port;
  const char *args[4];
  int nargs;
  /* call, read, prompt */
  bool as_app;               /* --as-app: as an MCP Apps view (app-only tools) */
  const char *answer_elicit; /* --answer-elicit JSON: accept with this content */
  const char *answer_sample; /* --answer-sample TEXT: the model's answer */
  const char *as_subject;    /* --as SUBJECT: a made-up caller (ctx.auth, scopes) */
  const char *as_scopes;     /* --scopes LIST: its scopes */
  /* new */
  bool widget;
  bool auth;                 /* --auth: tools with scopes and ctx.auth */
  /* pack */
  const char *out_dir;       /* --out DIR (default .) */
  bool server_json;          /* --server-json */
  const char *url;           /* --url URL: where the .mcpb is downloaded from */
  /* test */
  const char *junit;         /* --junit FILE: JUnit XML of the run */
  bool watch;                /* --watch: run again on every change */
  const char *test_revision; /* --revision: the clients' default */
  double test_timeout;       /* --test-timeout: seconds one test may run (0: 60) */
} options;

/* cli.c */
/* "luamcp: <fmt with arg>" and a hint on stderr, exit 2. */
_Noreturn void cli_die_usage(const char *fmt, const char *arg);
/* Load DIR as cfg says; on failure print its problems and return NULL. */
app *cli_load(const char *dir, const app_config *cfg);
/* Keep the real stdout for results and point fd 1 at stderr (scripts'
   print() must not mix with what a command prints); returns the kept fd. */
int cli_protect_stdout(void);
/* The app's data folder (the file of mcp.db is in it) into out: --data,
   else $STATE_DIRECTORY (a systemd service's), else
   $XDG_DATA_HOME/luamcp/NAME or ~/.local/share/luamcp/NAME, NAME the app's
   name (app.lua's, else the folder's). False when none can be named. */
bool cli_data_dir(const options *o, const app *a, const char *dir, char *out, size_t cap);
/* mcp.db's file is DATA/db.sqlite from now on (nothing is made before its
   first use); announce: log where. */
void cli_use_data(const options *o, const app *a, const char *dir, bool announce);
/* --db: mcp.db on PostgreSQL (db_set_postgres), the password from
   --db-password-file; exits with a usage error when refused. */
void cli_use_postgres(const options *o, bool announce);
#define CLI_DB_POOL 4 /* --db-pool's default */
/* luamcp db --db URL query (cmd_db_pg.c): the exit code. */
int cmd_db_pg_query(FILE *out, bool write, bool as_table, const char *sql, const char **args, int nargs);
/* The app's migrations on the file cli_use_data chose (db_migrate); false:
   they failed, the problems printed. */
bool cli_migrate(const app *a);

/* cli_help.c */
extern const char cli_usage[];
/* The help of one command (NULL when there is no such command). */
const char *cli_command_help(const char *command);

/* cmd_proxy.c: luamcp proxy's command line as serve's, for the app it
   generated (a temp folder, removed at exit) */
char **cli_proxy_argv(int argc, char **argv, int *out_argc);

/* cli_client.c */
int cmd_call(options *o);
int cmd_read(options *o);
int cmd_prompt(options *o);
int cmd_list(options *o);
/* Push what app.lua said and the app's registration table (app.h). */
void cli_push_app(app *a);
/* Call lua/ship.lua's function fn with the nargs values on a's stack; its
   one result is left there. False with the message in err (nothing left). */
bool cli_ship_call(app *a, const char *fn, int nargs, buf *err);

/* cmd_new.c */
int cmd_new(options *o);

/* cmd_pack.c */
int cmd_pack(options *o);

/* cmd_db.c: parses its own arguments (argv[1] is "db") */
int cmd_db(int argc, char **argv);

/* cmd_test.c */
int cmd_test(options *o);

#endif
