/* main.c — the luamcp command line: the options, stdout protection and
 * signals, serve and check; the other commands have files of their own
 * (cli.h says which). */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include <arpa/inet.h>

#include "app.h"
#include "cli.h"
#include "health.h"
#include "sd_notify.h"
#include "bus.h"
#include "redis_conn.h"
#include "store.h"
#include "db.h"
#include "request_state.h"
#include "server.h"
#include "supervise.h"
#include "json.h"
#include "jsonrpc.h"
#include "log.h"
#include "mount.h"
#include "reload.h"
#include "access_log.h"
#include "metrics_http.h"
#include "trace.h"
#include "trace_export.h"
#include "transport_http.h"
#include "transport_stdio.h"
#include "validate.h"

/* --http or --metrics [HOST:]PORT: the host (when given) into host_buf,
   the port into *port */
static void parse_listen(const char *opt, const char *v, char *host_buf, size_t cap,
                         const char **host, int *port) {
  if (!v) cli_die_usage("%s needs [HOST:]PORT", opt);
  const char *colon = strrchr(v, ':');
  const char *ps = colon ? colon + 1 : v;
  if (colon) {
    if ((size_t)(colon - v) >= cap) cli_die_usage("host too long: %s", v);
    snprintf(host_buf, cap, "%.*s", (int)(colon - v), v);
    if (host_buf[0] == '[') cli_die_usage("%s: IPv6 is not available in this civetweb build", v);
    if (host_buf[0]) *host = host_buf;
  }
  char *end;
  long p = strtol(ps, &end, 10);
  if (!*ps || *end || p < 0 || p > 65535) cli_die_usage("bad port in '%s'", v);
  *port = (int)p;
}

static double number_arg(const char *opt, const char *v) {
  char *end;
  errno = 0;
  double d = v ? strtod(v, &end) : 0;
  if (!v || errno || *end || d < 0) cli_die_usage("%s needs a non-negative number", opt);
  return d;
}

/* The requestState keys: --state-key FILE, else LUAMCP_STATE_KEY, else a
   random one for this process (request_state.h). */
static void load_state_keys(const char *file) {
  buf text, err;
  buf_init(&text), buf_init(&err);
  const char *env = getenv("LUAMCP_STATE_KEY");
  if (file) {
    if (!buf_read_file(&text, file)) {
      fprintf(stderr, "luamcp: --state-key %s: %s\n", file, strerror(errno));
      exit(2);
    }
  } else if (env && *env) {
    buf_puts(&text, env);
  }
  if (text.len && !request_state_set_keys(text.p, text.len, &err)) {
    fprintf(stderr, "luamcp: %s: %.*s\n", file ? file : "LUAMCP_STATE_KEY", (int)err.len, err.p);
    exit(2);
  }
  buf_free(&text), buf_free(&err); /* none given: a random key, made when first needed */
}

static void defaults(options *o) {
  o->server = (server_options){
      .app = {.page_size = 100, .load_timeout = 10},
      .engine = {.call_timeout = 30, .call_memory = (size_t)64 << 20, .queue_cap = 1024,
                 .shutdown_grace = 10, .warn_blocking = 0.25, .stalled = supervise_stalled}};
  o->debounce = 0.03;
  o->server.state_ttl = 600;
  o->server.task_ttl = 3600;
  o->max_message = (size_t)64 << 20;
  o->h = (http_options){.host = "127.0.0.1", .max_body = (size_t)4 << 20, .threads = 320,
                        .session_idle = 1800, .keepalive = 2, .allow_origins = o->origins, .cors_origins = o->cors,
                        .max_sessions = 10000, .header_timeout = 5, .body_timeout = 10,
                        .init_timeout = 30, .max_sessions_per_peer = 1000, .init_rate = 50,
                        .stream_buffer = (size_t)4 << 20, .trust_proxies = o->proxies,
                        .auth_issuers = o->issuers, .auth_skew = 60};
  o->h.token = getenv("LUAMCP_TOKEN");
  if (o->h.token && !*o->h.token) o->h.token = NULL;
  /* a bundle's user_config reaches luamcp as environment variables only
     (app.lua's user_config = { data = { ..., env = "LUAMCP_DATA" } }): these
     stand for --data, --store and --db when set and not empty (the option
     wins; LUAMCP_DB only where --db is taken, so it never fails `luamcp test`) */
  const char *data = getenv("LUAMCP_DATA"), *store = getenv("LUAMCP_STORE"), *db = getenv("LUAMCP_DB");
  if (data && *data) o->data = data;
  const char *c = o->command ? o->command : "";
  if (db && *db && strcmp(c, "test") && strcmp(c, "new") && strcmp(c, "pack") && strcmp(c, "list")) {
    if (strncmp(db, "postgres://", 11) != 0 && strncmp(db, "postgresql://", 13) != 0)
      cli_die_usage("%s: needs postgres://USER@HOST:PORT/DB", "LUAMCP_DB");
    o->db = db;
  }
  if (store && *store) {
    char why[128];
    if (strcmp(store, "memory") != 0 && !redis_url_parse(store, NULL, why, sizeof why))
      cli_die_usage("LUAMCP_STORE: %s (nor memory)", why);
    o->store = store;
  }
  const char *lv = getenv("LUAMCP_LOG_LEVEL");
  if (lv && log_level_from_name(lv, strlen(lv)) >= 0) log_set_threshold(log_level_from_name(lv, strlen(lv)));
  /* a handler's failure is a test's result, shown with it: stderr stays quiet */
  else if (o->command && strcmp(o->command, "test") == 0) log_set_threshold(LOG_CRITICAL);
}

#define IS(name) (strcmp(a, name) == 0)
#define MB(v) ((size_t)(number_arg(a, v) * 1048576.0))

/* The options of the app, its calls and the server in general: how many
   arguments a took (with its value), 0 when it is none of them. */
static int app_option(options *o, const char *a, const char *v) {
  if (IS("--page-size")) return o->server.app.page_size = (size_t)number_arg(a, v), 2;
  if (IS("--no-watch")) return o->no_watch = true, 1;
  if (IS("--allow-bytecode")) return o->server.app.allow_bytecode = true, 1;
  if (IS("--sandbox")) return o->server.app.sandbox = true, 1;
  if (IS("--state-key")) {
    if (!v) cli_die_usage("%s needs a FILE", a);
    return o->state_key_file = v, 2;
  }
  if (IS("--state-ttl")) return o->server.state_ttl = number_arg(a, v), 2;
  if (IS("--task-ttl")) return o->server.task_ttl = number_arg(a, v), 2;
  if (IS("--max-tasks-per-peer")) return o->server.max_tasks_per_peer = (size_t)number_arg(a, v), 2;
  if (IS("--timeout")) return o->server.engine.call_timeout = number_arg(a, v), 2;
  if (IS("--load-timeout")) return o->server.app.load_timeout = number_arg(a, v), 2;
  if (IS("--memory-limit")) return o->server.engine.call_memory = MB(v), 2;
  if (IS("--warn-blocking")) return o->server.engine.warn_blocking = number_arg(a, v) / 1000.0, 2;
  if (IS("--queue")) return o->server.engine.queue_cap = (size_t)number_arg(a, v), 2;
  if (IS("--shutdown-grace")) return o->server.engine.shutdown_grace = number_arg(a, v), 2;
  if (IS("--max-message")) return o->max_message = MB(v), 2;
  if (IS("--restart-on-stall")) return o->restart_on_stall = number_arg(a, v), 2;
  if (IS("--unhealthy-after")) return o->unhealthy_after = number_arg(a, v), 2;
  if (IS("--store") && v && strcmp(v, "memory") == 0) return o->store = v, 2;
  if (IS("--bus") || IS("--store")) {
    char why[128];
    if (!v || !redis_url_parse(v, NULL, why, sizeof why))
      cli_die_usage(a[2] == 'b' ? "--bus: %s" : v ? "--store: %s (nor memory)" : "--store: %s",
                    v ? why : a[2] == 'b' ? "needs redis://HOST:PORT[/N]" : "needs memory or redis://HOST:PORT[/N]");
    return *(a[2] == 'b' ? &o->bus : &o->store) = v, 2;
  }
  if (IS("--data")) {
    if (!v || !*v) cli_die_usage("%s needs a DIR", a);
    return o->data = v, 2;
  }
  if (IS("--db")) {
    if (!v || (strncmp(v, "postgres://", 11) != 0 && strncmp(v, "postgresql://", 13) != 0))
      cli_die_usage("%s needs postgres://USER@HOST:PORT/DB", a);
    return o->db = v, 2;
  }
  if (IS("--db-password-file")) {
    if (!v || !*v) cli_die_usage("%s needs a FILE", a);
    return o->db_password_file = v, 2;
  }
  if (IS("--db-pool")) {
    double n = number_arg(a, v);
    if (n < 1 || n > 64 || n != (int)n) cli_die_usage("%s takes 1 to 64 connections", a);
    return o->db_pool = (int)n, 2;
  }
  if (IS("--log-level")) {
    int l = v ? log_level_from_name(v, strlen(v)) : -1;
    if (l < 0) cli_die_usage("--log-level: unknown level '%s'", v ? v : "");
    log_set_threshold(l);
    return 2;
  }
  return 0;
}

/* The options of serve --http (0 when a is none of them). */
static int http_option(options *o, const char *a, const char *v) {
  if (IS("--http"))
    return parse_listen(a, v, o->host_buf, sizeof o->host_buf, &o->h.host, &o->h.port), o->http = true, 2;
  if (IS("--otlp")) {
    if (!v || !*v) cli_die_usage("%s needs the URL of an OTLP/HTTP collector", a);
    return o->otlp = v, 2;
  }
  if (IS("--access-log")) {
    if (!v || !*v) cli_die_usage("%s needs a FILE (or - for stderr)", a);
    return o->access_log = v, 2;
  }
  if (IS("--metrics"))
    return parse_listen(a, v, o->metrics_host_buf, sizeof o->metrics_host_buf, &o->metrics_host,
                        &o->metrics_port), o->metrics = true, 2;
  if (IS("--stateless")) return o->h.stateless = true, 1;
  if (IS("--dev")) return o->h.dev = true, 1;
  if (IS("--instance")) {
    if (!v || !transport_http_instance_ok(v)) cli_die_usage("%s needs a NAME of 1 to 32 letters, digits, '_' or '-'", a);
    return o->h.instance = v, 2;
  }
  if (IS("--trust-proxy")) {
    unsigned char bin[16];
    if (!v || (inet_pton(AF_INET, v, bin) != 1 && inet_pton(AF_INET6, v, bin) != 1))
      cli_die_usage("%s needs an IP address", a);
    if (o->h.ntrust_proxies == 8) cli_die_usage("%s: at most 8", a);
    return o->proxies[o->h.ntrust_proxies++] = v, 2;
  }
  if (IS("--allow-origin")) {
    if (!v) cli_die_usage("%s needs a URL", a);
    if (o->h.nallow_origins == 16) cli_die_usage("%s: at most 16", a);
    return o->origins[o->h.nallow_origins++] = v, 2;
  }
  if (IS("--cors")) { /* ORIGIN[,ORIGIN...]; checked by transport_http_check */
    if (!v || !*v) cli_die_usage("%s needs an ORIGIN (scheme://host[:port]) or '*'", a);
    size_t n = strlen(v);
    if (o->cors_used + n + 1 > sizeof o->cors_buf) cli_die_usage("%s: too many origins", a);
    char *copy = memcpy(o->cors_buf + o->cors_used, v, n + 1);
    o->cors_used += n + 1;
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      while (*t == ' ') t++;
      size_t tn = strlen(t);
      while (tn && t[tn - 1] == ' ') t[--tn] = '\0';
      if (strcmp(t, "*") == 0) o->h.cors_any = true;
      else if (o->h.ncors_origins == 16) cli_die_usage("%s: at most 16 origins", a);
      else o->cors[o->h.ncors_origins++] = t;
    }
    if (!o->h.cors_any && !o->h.ncors_origins) cli_die_usage("%s needs an ORIGIN (scheme://host[:port]) or '*'", a);
    return 2;
  }
  if (IS("--token")) {
    if (!v || !*v) cli_die_usage("%s needs a value", a);
    return o->h.token = v, 2;
  }
  if (IS("--auth-resource") || IS("--auth-jwks") || IS("--auth-scopes")) {
    if (!v || !*v) cli_die_usage("%s needs a value", a);
    const char **slot = a[7] == 'r' ? &o->h.auth_resource : a[7] == 'j' ? &o->h.auth_jwks
                                                                          : &o->h.auth_scopes;
    return *slot = v, 2;
  }
  if (IS("--auth-issuer")) {
    if (!v || !*v) cli_die_usage("%s needs a URL", a);
    if (o->h.nauth_issuers == 8) cli_die_usage("%s: at most 8", a);
    return o->issuers[o->h.nauth_issuers++] = v, 2;
  }
  if (IS("--auth-skew")) return o->h.auth_skew = number_arg(a, v), 2;
  if (IS("--auth-plain-jwt")) return o->h.auth_plain_jwt = true, 1;
  if (IS("--auth-introspect") || IS("--auth-client-id")) {
    if (!v || !*v) cli_die_usage("%s needs a value", a);
    return *(a[7] == 'i' ? &o->h.auth_introspect : &o->h.auth_client_id) = v, 2;
  }
  if (IS("--auth-client-secret-file")) {
    if (!v || !*v) cli_die_usage("%s needs a FILE", a);
    return o->client_secret_file = v, 2;
  }
  if (IS("--cert") || IS("--key")) {
    if (!v) cli_die_usage("%s needs a file", a);
    return *(a[2] == 'c' ? &o->h.cert : &o->h.key) = v, 2;
  }
  if (IS("--threads")) return o->h.threads = (int)number_arg(a, v), 2;
  if (IS("--max-body")) return o->h.max_body = MB(v), 2;
  if (IS("--session-idle")) return o->h.session_idle = number_arg(a, v), 2;
  if (IS("--max-sessions")) return o->h.max_sessions = (size_t)number_arg(a, v), 2;
  if (IS("--sse-keepalive")) return o->h.keepalive = number_arg(a, v), 2;
  if (IS("--max-streams")) return o->h.max_streams = (size_t)number_arg(a, v), 2;
  if (IS("--max-streams-per-peer")) return o->h.max_streams_per_peer = (size_t)number_arg(a, v), 2;
  if (IS("--header-timeout")) return o->h.header_timeout = number_arg(a, v), 2;
  if (IS("--body-timeout")) return o->h.body_timeout = number_arg(a, v), 2;
  if (IS("--init-timeout")) return o->h.init_timeout = number_arg(a, v), 2;
  if (IS("--max-sessions-per-peer")) return o->h.max_sessions_per_peer = (size_t)number_arg(a, v), 2;
  if (IS("--init-rate")) return o->h.init_rate = number_arg(a, v), 2;
  if (IS("--stream-buffer")) return o->h.stream_buffer = MB(v), 2;
  return 0;
}

/* The options of one command: call/read/prompt, new, pack (0: none). */
static int command_option(options *o, const char *a, const char *v) {
  if (IS("--as-app")) return o->as_app = true, 1;
  if (IS("--as") || IS("--scopes")) {
    if (!v) cli_die_usage(a[3] == 's' ? "%s needs a SUBJECT" : "%s needs a LIST of scopes", a);
    return *(a[3] == 's' ? &o->as_subject : &o->as_scopes) = v, 2;
  }
  if (IS("--answer-elicit")) {
    if (!v) cli_die_usage("%s needs a JSON object", a);
    return o->answer_elicit = v, 2;
  }
  if (IS("--answer-sample")) {
    if (!v) cli_die_usage("%s needs a TEXT", a);
    return o->answer_sample = v, 2;
  }
  if (IS("--widget")) return o->widget = true, 1;
  if (IS("--auth")) return o->auth = true, 1;
  if (IS("--out")) {
    if (!v) cli_die_usage("%s needs a DIR", a);
    return o->out_dir = v, 2;
  }
  if (IS("--server-json")) return o->server_json = true, 1;
  if (IS("--junit")) {
    if (!v || !*v) cli_die_usage("%s needs a FILE", a);
    return o->junit = v, 2;
  }
  if (IS("--watch")) return o->watch = true, 1;
  if (IS("--test-timeout")) {
    double t = number_arg(a, v);
    if (!(t > 0)) cli_die_usage("%s must be more than 0", a);
    return o->test_timeout = t, 2;
  }
  if (IS("--revision")) {
    if (!v || (strcmp(v, "2025-11-25") != 0 && strcmp(v, "2026-07-28") != 0))
      cli_die_usage("%s needs 2025-11-25 or 2026-07-28", a);
    return o->test_revision = v, 2;
  }
  if (IS("--url")) {
    if (!v) cli_die_usage("%s needs a URL", a);
    return o->url = v, 2;
  }
  return 0;
}

#undef IS
#undef MB

/* The introspection client's secret: from a file (its first line) or
   LUAMCP_AUTH_CLIENT_SECRET, never from the command line (ps shows it). */
static void load_client_secret(options *o) {
  const char *env = getenv("LUAMCP_AUTH_CLIENT_SECRET");
  if (env && *env) o->h.auth_client_secret = env;
  if (!o->client_secret_file) return;
  buf b;
  buf_init(&b);
  if (!buf_read_file(&b, o->client_secret_file)) cli_die_usage("%s: cannot be read", o->client_secret_file);
  size_t n = 0;
  while (n < b.len && b.p[n] != '\n' && b.p[n] != '\r') n++;
  if (!n) cli_die_usage("%s: the first line holds no secret", o->client_secret_file);
  static char secret[512];
  if (n >= sizeof secret) cli_die_usage("%s: the secret is too long", o->client_secret_file);
  memcpy(secret, b.p, n);
  secret[n] = '\0';
  buf_free(&b);
  o->h.auth_client_secret = secret;
}

/* systemd's LoadCredential= (luamcp@.service): secrets a unit hands over as
   files in $CREDENTIALS_DIRECTORY, readable by this service alone, never in
   argv or the environment. Each is used only when nothing else gave it:
   auth-client-secret (--auth-client-secret-file), token (--token), tls-key
   (--key, with --cert), state-key (--state-key), db-password
   (--db-password-file, with --db; PGPASSWORD and PGPASSFILE win too). */
static const char *credential(const char *name) {
  const char *dir = getenv("CREDENTIALS_DIRECTORY");
  if (!dir || !*dir) return NULL;
  static char paths[4][PATH_MAX];
  static int next;
  char *p = paths[next++ % 4];
  if ((size_t)snprintf(p, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX || access(p, R_OK) != 0) return NULL;
  return p;
}

static void from_credentials(options *o) {
  const char *env = getenv("LUAMCP_AUTH_CLIENT_SECRET"), *f;
  if (!o->client_secret_file && !(env && *env) && (f = credential("auth-client-secret")))
    o->client_secret_file = f;
  if (!o->state_key_file && !getenv("LUAMCP_STATE_KEY") && (f = credential("state-key")))
    o->state_key_file = f;
  if (o->h.cert && !o->h.key && (f = credential("tls-key"))) o->h.key = f;
  if (o->db && !o->db_password_file && !getenv("PGPASSWORD") && !getenv("PGPASSFILE") &&
      (f = credential("db-password")))
    o->db_password_file = f;
  if (!o->h.token && (f = credential("token"))) {
    buf b;
    buf_init(&b);
    if (!buf_read_file(&b, f)) cli_die_usage("%s: cannot be read", f);
    size_t n = 0;
    while (n < b.len && b.p[n] != '\n' && b.p[n] != '\r') n++;
    if (!n) cli_die_usage("%s: the first line holds no token", f);
    static char token[512];
    if (n >= sizeof token) cli_die_usage("%s: the token is too long", f);
    memcpy(token, b.p, n);
    token[n] = '\0';
    buf_free(&b);
    o->h.token = token;
  }
}

/* The options of one command only, and values in range. */
static void check_options(options *o) {
  const char *cmd = o->command;
  bool client = !strcmp(cmd, "call") || !strcmp(cmd, "read") || !strcmp(cmd, "prompt");
  if (o->as_app && strcmp(cmd, "call") != 0) cli_die_usage("%s is an option of call", "--as-app");
  if ((o->as_subject || o->as_scopes) && !client)
    cli_die_usage("%s is an option of call, read and prompt", o->as_subject ? "--as" : "--scopes");
  if (o->answer_elicit && !client) cli_die_usage("%s is an option of call, read and prompt", "--answer-elicit");
  if (o->answer_sample && !client) cli_die_usage("%s is an option of call, read and prompt", "--answer-sample");
  if (o->widget && strcmp(cmd, "new") != 0) cli_die_usage("%s is an option of new", "--widget");
  if (o->auth && strcmp(cmd, "new") != 0) cli_die_usage("%s is an option of new", "--auth");
  if ((o->out_dir || o->server_json || o->url) && strcmp(cmd, "pack") != 0)
    cli_die_usage("%s is an option of pack", o->out_dir ? "--out" : o->server_json ? "--server-json" : "--url");
  if (o->url && !o->server_json) cli_die_usage("%s needs --server-json", "--url");
  if ((o->junit || o->watch || o->test_revision || o->test_timeout) && strcmp(cmd, "test") != 0)
    cli_die_usage("%s is an option of test", o->junit ? "--junit" : o->watch ? "--watch"
                                             : o->test_revision ? "--revision" : "--test-timeout");
  if (o->answer_elicit) {
    const char *err;
    size_t at;
    if (!json_validate(o->answer_elicit, strlen(o->answer_elicit), &err, &at) ||
        o->answer_elicit[strspn(o->answer_elicit, " \t\r\n")] != '{')
      cli_die_usage("--answer-elicit needs a JSON object, got %s", o->answer_elicit);
  }
  if (o->server.app.page_size == 0) cli_die_usage("%s must be at least 1", "--page-size");
  if (o->server.engine.call_timeout <= 0) cli_die_usage("%s must be more than 0", "--timeout");
  /* a loop at a script's top level ends the load there (on reload, the last
     good version keeps serving meanwhile and after) */
  if (o->server.app.load_timeout <= 0) cli_die_usage("%s must be more than 0", "--load-timeout");
  if (o->server.state_ttl <= 0) cli_die_usage("%s must be more than 0", "--state-ttl");
  if (o->server.task_ttl < 1) cli_die_usage("%s must be at least 1", "--task-ttl");
  from_credentials(o);
  load_state_keys(o->state_key_file);
  if (o->server.engine.queue_cap == 0) cli_die_usage("%s must be at least 1", "--queue");
  if (o->h.threads < 2) cli_die_usage("%s must be at least 2", "--threads");
  if (o->h.keepalive <= 0) cli_die_usage("%s must be more than 0", "--sse-keepalive");
  if (o->h.session_idle <= 0) cli_die_usage("%s must be more than 0", "--session-idle");
  if (o->h.init_timeout <= 0) cli_die_usage("%s must be more than 0", "--init-timeout");
  /* civetweb takes milliseconds; under 1 ms it would fall back to 30 s */
  if (o->h.header_timeout < 0.001) cli_die_usage("%s must be at least 0.001", "--header-timeout");
  if (o->h.body_timeout <= 0) cli_die_usage("%s must be more than 0", "--body-timeout");
  if (o->h.stream_buffer < 65536) cli_die_usage("%s must be at least 0.0625 (64 KiB)", "--stream-buffer");
  if (o->h.max_streams && o->h.max_streams >= (size_t)o->h.threads)
    cli_die_usage("%s must be below --threads (workers must remain for requests)", "--max-streams");
  if (o->h.key && !o->h.cert) cli_die_usage("%s needs --cert too", "--key");
  if (o->h.dev && !o->http) cli_die_usage("%s needs --http", "--dev");
  if (o->metrics && strcmp(cmd, "serve") != 0) cli_die_usage("%s is an option of serve", "--metrics");
  if ((o->db_password_file || o->db_pool) && !o->db)
    cli_die_usage("%s needs --db", o->db_pool ? "--db-pool" : "--db-password-file");
  /* --db wins over --data (and LUAMCP_DATA, which a bundle's settings may set) */
  if (o->db && (!strcmp(cmd, "test") || !strcmp(cmd, "new") || !strcmp(cmd, "pack") || !strcmp(cmd, "list")))
    cli_die_usage("%s is an option of serve, call, read, prompt, check and db (luamcp test gives each test "
                  "file a SQLite database of its own)", "--db");
  if (o->db && !strcmp(cmd, "check")) cli_use_postgres(o, false); /* the URL checked; migrations on scratch SQLite */
  if (o->access_log && strcmp(cmd, "serve") != 0) cli_die_usage("%s is an option of serve", "--access-log");
  if (o->otlp && strcmp(cmd, "serve") != 0) cli_die_usage("%s is an option of serve", "--otlp");
  /* over stdio the client is the user's own process: no tokens (the
     specification's authorization is for HTTP) */
  load_client_secret(o);
  bool auth_any = o->h.auth_resource || o->h.nauth_issuers || o->h.auth_jwks || o->h.auth_scopes ||
                  o->h.auth_introspect || o->h.auth_client_id || o->h.auth_plain_jwt;
  if (auth_any && !o->http && strcmp(cmd, "check") != 0) cli_die_usage("%s needs --http", "--auth-resource");
  if (auth_any && !o->h.auth_resource)
    cli_die_usage("%s: the --auth-* options need --auth-resource URI", o->h.auth_jwks ? "--auth-jwks"
                  : o->h.nauth_issuers ? "--auth-issuer" : "--auth-scopes");
  if (o->h.auth_skew < 0 || o->h.auth_skew > 3600) cli_die_usage("%s must be 0 to 3600", "--auth-skew");
  if ((o->h.auth_introspect || o->h.auth_client_secret) && !o->h.auth_client_id)
    cli_die_usage("%s: introspection needs --auth-client-id, this server's client at the issuer",
                  o->h.auth_introspect ? "--auth-introspect" : "the client secret");
  if (o->h.auth_client_id && !o->h.auth_client_secret)
    cli_die_usage("%s needs its secret: LUAMCP_AUTH_CLIENT_SECRET or --auth-client-secret-file FILE",
                  "--auth-client-id");
  /* the rest of what serve's authorization would refuse, before anything
     loads or listens (a usage error, status 2) */
  char auth_why[1200];
  if (o->http && !transport_http_check(&o->h, auth_why, sizeof auth_why))
    cli_die_usage("%s", auth_why);
  /* over stdio the client's pipes and its session are the process's: a
     new one could not take them over */
  if (o->restart_on_stall > 0 && !o->http) cli_die_usage("%s needs --http", "--restart-on-stall");
  if (o->unhealthy_after < 0) cli_die_usage("%s must be more than 0", "--unhealthy-after");
  if (o->server.app.sandbox && o->server.app.allow_bytecode)
    cli_die_usage("%s cannot be used with --sandbox: Lua does not verify bytecode, and a crafted "
              "chunk escapes any sandbox", "--allow-bytecode");
}

static void parse_options(int argc, char **argv, int first, options *o) {
  defaults(o);
  for (int i = first; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int took = app_option(o, a, v);
    if (!took) took = http_option(o, a, v);
    if (!took) took = command_option(o, a, v);
    if (took) i += took - 1;
    else if (a[0] == '-' && a[1] == '-') cli_die_usage("unknown option %s", a);
    else if (o->nargs < 4) o->args[o->nargs++] = a;
    else cli_die_usage("unexpected argument %s", a);
  }
  check_options(o);
}

/* The same for stdin in stdio mode: the protocol stream is kept for the
   transport and fd 0 reads /dev/null, so a script's io.read() cannot take
   the client's next message. */
static int protect_stdin(void) {
  int fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || null < 0 || dup2(null, 0) < 0) {
    perror("luamcp: stdin");
    exit(1);
  }
  close(null);
  return fd;
}

/* SIGINT/SIGTERM: stop taking input, let calls in flight finish; a
   second one: exit now (the calls in flight are not answered).
   SIGHUP: reload the app now. */
/* READY=1: the listener is up (systemd's Type=notify) */
static void notify_listening(const char *url) {
  char state[700];
  snprintf(state, sizeof state, "READY=1\nSTATUS=serving %s", url);
  sd_notify_send(state);
}

/* SIGHUP under a notify unit: RELOADING=1 when it comes, READY=1 once the
   reload it asked for has ended (published or not: the server serves
   either way), so `systemctl reload` returns when it is done. */
static atomic_bool hup_reloading;

static void notify_reloaded(bool published, void *ud) {
  (void)ud;
  if (!atomic_exchange(&hup_reloading, false)) return;
  sd_notify_send(published ? "READY=1\nSTATUS=serving the reloaded app"
                           : "READY=1\nSTATUS=serving the last good version: the reload failed");
}

static void *signal_main(void *arg) {
  server *srv = arg;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR1);
  int sig;
  bool finishing = false;
  while (sigwait(&set, &sig) == 0) {
    if (sig == SIGHUP) {
      log_msg(LOG_INFO, "SIGHUP: reloading");
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      char state[96]; /* MONOTONIC_USEC: what notify-reload units (systemd 253) ask for */
      snprintf(state, sizeof state, "RELOADING=1\nMONOTONIC_USEC=%llu",
               (unsigned long long)now.tv_sec * 1000000ull + (unsigned long long)now.tv_nsec / 1000);
      atomic_store(&hup_reloading, true);
      sd_notify_send(state);
      reload_request(srv);
      continue;
    }
    if (sig == SIGUSR1) { /* logrotate moved the access log: a new file at the next round */
      access_log_reopen(); /* done before the next line is written */
      continue;
    }
    if (finishing) {
      log_msg(LOG_WARNING, "%s again: exiting now, without the calls in flight", strsignal(sig));
      fflush(stderr);
      _exit(1);
    }
    log_msg(LOG_INFO, "%s: finishing calls in flight, then exiting", strsignal(sig));
    sd_notify_send("STOPPING=1");
    engine_finish(server_engine(srv));
    finishing = true;
  }
  return NULL;
}

/* --otlp URL (its /v1/traces), else OpenTelemetry's variables: the
   traces endpoint, or the endpoint with /v1/traces; the service's name; the
   sampler. Nothing set: no tracing. */
static bool start_tracing(options *o) {
  const char *full = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const char *base = o->otlp ? o->otlp : getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  if (!o->otlp && full && *full) base = NULL;
  else full = NULL;
  if ((!base || !*base) && (!full || !*full)) return true;
  char url[1024];
  if (full) {
    snprintf(url, sizeof url, "%s", full);
  } else {
    size_t n = strlen(base);
    while (n && base[n - 1] == '/') n--;
    snprintf(url, sizeof url, "%.*s/v1/traces", (int)n, base);
  }
  const char *sampler = getenv("OTEL_TRACES_SAMPLER"), *arg = getenv("OTEL_TRACES_SAMPLER_ARG");
  trace_configure(sampler, arg && *arg ? atof(arg) : 1.0);
  char why[1200];
  if (!trace_export_start(url, getenv("OTEL_SERVICE_NAME"), o->h.instance, why, sizeof why)) {
    log_msg(LOG_ERROR, "%s", why);
    return false;
  }
  return true;
}

static int cmd_serve(options *o) {
  const char *dir = o->nargs ? o->args[0] : ".";
  if (o->nargs > 1) cli_die_usage("serve takes one DIR, got also %s", o->args[1]);
  if (o->restart_on_stall > 0) { /* before any thread: from here on, the child */
    supervise();
    o->server.engine.stall_limit = o->restart_on_stall;
  }
  int out = cli_protect_stdout();
  o->server.app.declare_all = !o->no_watch; /* lists may appear on reload */
  /* the first load has no calls to finish and no thread yet: SIGINT and
     SIGTERM end it at once, as they end check (the signal thread takes
     them from the first thread on; reloads load on a thread of their own,
     which shutdown stops) */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
  app *a = cli_load(dir, &o->server.app);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  if (!a) return 1;
  log_msg(LOG_INFO, "serving %s over %s%s (%zu tools, %zu resources, %zu templates, %zu prompts, %zu widgets)",
          dir, o->http ? "HTTP" : "stdio", o->server.app.sandbox ? ", sandboxed" : "", a->reg->ntools,
          a->reg->nresources - a->reg->nwidgets, a->reg->ntemplates, a->reg->nprompts, a->reg->nwidgets);
  o->server.instance = o->h.instance;
  cli_use_data(o, a, dir, true);
  /* the data folder is known now (it may be named after the app): the
     migrations, and on every reload from here on */
  if (!cli_migrate(a)) {
    app_free(a);
    return 1;
  }
  o->server.app.migrate = APP_MIGRATE_DATA;
  if (o->access_log) {
    char why[4200];
    if (!access_log_open(o->access_log, why, sizeof why)) {
      log_msg(LOG_ERROR, "%s", why);
      app_free(a);
      return 1;
    }
  }
  /* metrics_on is set before any thread that reads it starts (the
     exporter's: a race TSan saw) */
  if (o->metrics) {
    char why[256];
    if (!metrics_http_start(o->metrics_host ? o->metrics_host : "127.0.0.1", o->metrics_port, why,
                            sizeof why)) {
      log_msg(LOG_ERROR, "%s", why);
      app_free(a);
      return 1;
    }
  }
  if (!start_tracing(o)) {
    app_free(a);
    return 1;
  }
  server *srv = server_new(a, &o->server);
  mount_attach(srv); /* mcp.mount: list the mounted upstreams once the loop runs */
  bus *b = o->bus ? bus_new(srv, o->bus) : NULL;
  if (o->store && strcmp(o->store, "memory") == 0) store_use_memory();
  else if (o->store) store_use_redis(server_engine(srv), o->store);
  reload_watch *watch = o->no_watch ? NULL : reload_watch_new(srv, dir, o->debounce);
  health_use(srv, o->unhealthy_after);
  sd_notify_watchdog(srv, o->unhealthy_after);
  o->h.listening = notify_listening;
  reload_on_end(srv, notify_reloaded, NULL);
  pthread_t sig;
  pthread_create(&sig, NULL, signal_main, srv);
  int status = 0;
  if (o->http) status = transport_http_serve(srv, &o->h);
  else {
    sd_notify_send("READY=1\nSTATUS=serving over stdio");
    int in = protect_stdin();
    transport_stdio_serve(srv, in, out, o->max_message);
    close(in);
  }
  pthread_cancel(sig);
  pthread_join(sig, NULL);
  /* the metrics listener's health checks and the watchdog read the server: no longer */
  sd_notify_watchdog_stop();
  health_use(NULL, 0);
  metrics_http_stop();
  reload_watch_free(watch);
  bus_free(b);
  store_close();
  db_close();
  server_free(srv);
  trace_export_stop(o->server.engine.shutdown_grace);
  access_log_close();
  close(out);
  return status;
}

static int cmd_check(options *o) {
  if (o->nargs != 1) cli_die_usage("%s", "check needs DIR");
  o->server.app.migrate = APP_MIGRATE_SCRATCH; /* nothing written to the data folder */
  app *a = cli_load(o->args[0], &o->server.app);
  if (!a) return 1;
  const registry *r = a->reg;
  /* what the validator will not enforce: a warning, not a problem */
  buf notes;
  buf_init(&notes);
  for (size_t i = 0; i < r->ntools; i++) {
    const reg_tool *t = &r->tools[i];
    const int refs[2] = {t->input, t->output};
    for (int k = 0; k < 2; k++) {
      if (refs[k] == LUA_NOREF || refs[k] == LUA_REFNIL) continue;
      lua_rawgeti(a->vm.L, LUA_REGISTRYINDEX, refs[k]);
      notes.len = 0;
      if (schema_unenforced(a->vm.L, -1, r->assert_format, &notes) > 0) {
        buf_putc(&notes, '\0');
        for (char *line = notes.p, *next; line; line = next) {
          next = strchr(line, '\n');
          if (next) *next++ = '\0';
          fprintf(stderr, "%s: warning: tool '%s' %s: %s\n", o->args[0], t->name,
                  k ? "outputSchema" : "inputSchema", line);
        }
      }
      lua_pop(a->vm.L, 1);
    }
  }
  buf_free(&notes);
  /* a model chooses a tool by its description: without one it has only the name */
  lua_State *L = a->vm.L;
  lua_getfield(L, LUA_REGISTRYINDEX, APP_REG_KEY);
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "tools");
    for (lua_Integer i = 1; lua_istable(L, -1) && i <= (lua_Integer)lua_rawlen(L, -1); i++) {
      lua_rawgeti(L, -1, i);
      lua_getfield(L, -1, "def");
      lua_getfield(L, -1, "description");
      size_t len = 0;
      if (lua_type(L, -1) != LUA_TSTRING || (lua_tolstring(L, -1, &len), len == 0)) {
        lua_getfield(L, -3, "where");
        lua_getfield(L, -3, "name");
        fprintf(stderr, "%s: warning: tool '%s' has no description: a model sees only its name\n",
                lua_isstring(L, -2) ? lua_tostring(L, -2) : o->args[0], lua_tostring(L, -1));
        lua_pop(L, 2);
      }
      lua_pop(L, 3);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  /* counted as list shows them */
  printf("%s: ok — %zu tools, %zu resources, %zu templates, %zu prompts, %zu widgets\n", o->args[0],
         r->ntools, r->nresources - r->nwidgets, r->ntemplates, r->nprompts, r->nwidgets);
  skills_check_report(a->skills, o->args[0]);
  /* the scopes the metadata publishes (besides --auth-scopes): items' and app.lua's */
  if (r->scopes && !o->h.auth_resource)
    fprintf(stderr, "%s: note: items %sdeclare scopes (%s); they apply once the HTTP server has "
            "--auth-resource\n", o->args[0], r->app_scopes ? "and app.lua " : "", r->scopes);
  else if (r->scopes)
    fprintf(stderr, "%s: scopes (the metadata's scopes_supported, after --auth-scopes): %s\n",
            o->args[0], r->scopes);
  app_free(a);
  return transport_http_check_auth(&o->h);
}

static bool is_help(const char *a) {
  return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || is_help(argv[1]) || (strcmp(argv[1], "help") == 0 && argc == 2)) {
    fputs(cli_usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("luamcp %s\n", LUAMCP_VERSION);
    return 0;
  }
  /* luamcp help COMMAND, luamcp COMMAND --help */
  const char *help_of = strcmp(argv[1], "help") == 0 ? (is_help(argv[2]) ? "help" : argv[2]) : NULL;
  for (int i = 2; !help_of && i < argc && strcmp(argv[i], "--") != 0; i++) /* proxy's COMMAND keeps its own */
    if (is_help(argv[i])) help_of = argv[1];
  if (help_of) {
    const char *text = cli_command_help(help_of);
    if (!text) cli_die_usage("unknown command '%s'", help_of);
    fputs(text, stdout);
    return 0;
  }
  static const char *const known[] = {"serve", "call", "read", "prompt", "list",
                                      "check", "new", "pack", "test", "db", "proxy"};
  bool found = false;
  for (size_t i = 0; i < sizeof known / sizeof *known; i++) found |= !strcmp(argv[1], known[i]);
  if (!found) cli_die_usage("unknown command '%s'", argv[1]);
  if (strcmp(argv[1], "proxy") == 0) argv = cli_proxy_argv(argc, argv, &argc); /* serve, of its app */
  /* serve: signals are taken by a thread with sigwait, never by a handler
     that could interrupt the Lua VM (blocked here, before any thread);
     the other commands keep the default, so Ctrl-C ends them even while a
     script loops. A vanished client is an EPIPE, not a kill. */
  if (strcmp(argv[1], "serve") == 0) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
  }
  signal(SIGPIPE, SIG_IGN);
  /* the soft fd limit is often 1024: calls waiting on sockets, transfers
     and children, HTTP peers and curl's connection cache need more */
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  if (strcmp(argv[1], "db") == 0) return cmd_db(argc, argv);
  options o = {.command = argv[1]};
  parse_options(argc, argv, 2, &o);
  if (strcmp(o.command, "serve") == 0) return cmd_serve(&o);
  if (strcmp(o.command, "call") == 0) return cmd_call(&o);
  if (strcmp(o.command, "read") == 0) return cmd_read(&o);
  if (strcmp(o.command, "prompt") == 0) return cmd_prompt(&o);
  if (strcmp(o.command, "list") == 0) return cmd_list(&o);
  if (strcmp(o.command, "new") == 0) return cmd_new(&o);
  if (strcmp(o.command, "pack") == 0) return cmd_pack(&o);
  if (strcmp(o.command, "test") == 0) return cmd_test(&o);
  return cmd_check(&o);
}
