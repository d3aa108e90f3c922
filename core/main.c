/* main.c — the luamcp command line: serve, call, check. Options, stdout
 * protection and signals live here; everything else is in the core. */
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
#include "bus.h"
#include "redis_conn.h"
#include "store.h"
#include "request_state.h"
#include "server.h"
#include "supervise.h"
#include "json.h"
#include "jsonrpc.h"
#include "log.h"
#include "reload.h"
#include "transport_http.h"
#include "transport_stdio.h"
#include "validate.h"

static const char usage[] =
    "luamcp " LUAMCP_VERSION " — MCP servers written in Lua\n"
    "\n"
    "Usage:\n"
    "  luamcp serve [options] [DIR]          serve the app in DIR (default .) over stdio,\n"
    "                                         or over HTTP with --http\n"
    "  luamcp call [options] DIR TOOL [JSON]  run one tool call, print the result JSON\n"
    "                                         (exit 1 when the result is an error)\n"
    "  luamcp check [options] DIR             load every script, report problems (exit 1)\n"
    "  luamcp --help | --version\n"
    "\n"
    "An app DIR holds scripts/*.lua (tools, resources, prompts), widgets/, and an\n"
    "optional app.lua (name, version, title, instructions, schema = { format = \"assert\" }).\n"
    "\n"
    "Options:\n"
    "  --page-size N       items per page of tools/list etc. (default 100)\n"
    "  --timeout SECONDS   wall-clock limit of one call (default 30)\n"
    "  --memory-limit MB   heap growth one call may cause (default 64; 0 = none)\n"
    "  --queue N           messages waiting before input is paused (default 1024)\n"
    "  --state-key FILE    keys that sign the requestState of multi round-trip\n"
    "                      requests (2026-07-28), one per line, 32+ characters; the\n"
    "                      first signs, all verify (rotation). Give every instance of\n"
    "                      a service the same file (or LUAMCP_STATE_KEY). Default: a\n"
    "                      random key per process\n"
    "  --state-ttl S       how long such a requestState stays valid (default 600)\n"
    "  --task-ttl S        how long a task (2026-07-28 tasks extension) lives: its work,\n"
    "                      then its result for tasks/get (default 3600)\n"
    "  --warn-blocking MS  report a handler that blocks the server this long in one C\n"
    "                      call (os.execute, io.popen, ...) with its script line\n"
    "                      (default 250; 0 = off)\n"
    "  --max-message MB    largest accepted message (default 64)\n"
    "  --shutdown-grace S  on SIGINT/SIGTERM/EOF, calls in flight get this long (default 10)\n"
    "  --no-watch          do not reload the app when its files change (SIGHUP still does)\n"
    "  --allow-bytecode    let scripts load precompiled Lua chunks (unchecked: only\n"
    "                      for bytecode you trust; off, load() takes source text only)\n"
    "  --sandbox           for an app you did not write: no os.execute, io.popen,\n"
    "                      C modules or debug library; files read inside DIR and\n"
    "                      written inside DIR/data only; os.getenv, mcp.exec,\n"
    "                      mcp.http and mcp.socket only as app.lua's permissions\n"
    "                      declare (serve, call and check; not with --allow-bytecode)\n"
    "  --log-level LEVEL   stderr threshold: debug, info, notice, warning, error\n"
    "                      (default info; LUAMCP_LOG_LEVEL sets it too)\n"
    "\n"
    "Streamable HTTP (serve --http):\n"
    "  --http [HOST:]PORT  serve at http://HOST:PORT/mcp (HOST default 127.0.0.1)\n"
    "  --stateless         no sessions: every POST stands alone; GET is 405\n"
    "  --dev               also serve a developer page at /dev: forms for the tools,\n"
    "                      their widgets rendered, refreshed when files change\n"
    "  --allow-origin URL  also accept this Origin (repeatable, exact); loopback origins\n"
    "                      are ok when bound to loopback\n"
    "  --token TOKEN       require 'Authorization: Bearer TOKEN' (or LUAMCP_TOKEN)\n"
    "  --cert PEM          TLS: a PEM file holding the certificate (and the key,\n"
    "  --key PEM           unless --key names the key's own file)\n"
    "  --threads N         HTTP workers: each request in flight (a call waiting on I/O\n"
    "                      too) and each open SSE stream holds one (default 320)\n"
    "  --max-streams N     GET streams open at once; 503 past it, so workers remain for\n"
    "                      requests (default a fifth of --threads: 64)\n"
    "  --header-timeout S  a request's line and headers must come within S seconds; a\n"
    "                      read or write that makes no progress for S ends the\n"
    "                      connection too (default 5)\n"
    "  --body-timeout S    a request's body must come within S seconds (default 10; 408)\n"
    "  --max-body MB       largest POST body (default 4; 413 past it)\n"
    "  --session-idle S    end sessions idle this long (default 1800)\n"
    "  --init-timeout S    end sessions that never sent notifications/initialized after\n"
    "                      S seconds idle (default 30)\n"
    "  --max-sessions N    live sessions at most; initialize past it gets 503 (default 10000)\n"
    "  --max-sessions-per-peer N  live sessions of one remote address; 429 past it\n"
    "                      (default 1000; 0 = no limit)\n"
    "  --init-rate N       initialize per second from one remote address, with bursts of\n"
    "                      10 seconds' worth; 429 past it (default 50; 0 = no limit)\n"
    "  --stream-buffer MB  unsent events one stream may hold; past it the response ends\n"
    "                      and the client resumes with Last-Event-ID (default 4)\n"
    "  --sse-keepalive S   seconds between SSE keep-alive comments (default 2)\n"
    "  --restart-on-stall S  run under a supervisor process that starts the server\n"
    "                      again when it stands still S seconds (a handler blocked in\n"
    "                      a C call, a __gc finalizer that loops) or crashes; sessions\n"
    "                      are lost, clients initialize again (default 0: off)\n"
    "\n"
    "Many instances, one service (serve --http; docs/SCALING.md):\n"
    "  --instance NAME     this instance's name, [A-Za-z0-9_-], at most 32: session ids\n"
    "                      are NAME.<hex>, so a proxy routes a session to its instance\n"
    "                      (default: 8 random hex digits)\n"
    "  --trust-proxy ADDR  believe X-Forwarded-For and X-Forwarded-Host from this peer\n"
    "                      address only (repeatable): Host/Origin checks and per-peer\n"
    "                      limits then apply to the client behind the proxy\n"
    "  --bus redis://HOST:PORT[/N]  share change notifications (resources/updated,\n"
    "                      list_changed) with every instance on the same bus, over\n"
    "                      Redis pub/sub (also over stdio)\n"
    "  --store redis://HOST:PORT[/N]  mcp.store in Redis database N, shared by the\n"
    "                      instances (default: in this process's memory)\n"
    "\n"
    "In serve mode stdout carries only protocol; scripts' print() goes to stderr.\n"
    "Saving a file of the app reloads it live; a version that fails to load is\n"
    "reported (file:line) and the previous one keeps serving.\n";

typedef struct options {
  server_options server;
  double debounce;
  const char *state_key_file;
  size_t max_message;
  bool http, no_watch;
  double restart_on_stall;
  http_options h;
  const char *origins[16];
  const char *proxies[8];
  const char *bus, *store;
  char host_buf[256];
  const char *args[4];
  int nargs;
} options;

static void die_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "luamcp: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry 'luamcp --help'.\n");
  exit(2);
}

/* --http [HOST:]PORT */
static void parse_listen(struct options *o, const char *v) {
  if (!v) die_usage("%s needs [HOST:]PORT", "--http");
  char *host = o->host_buf;
  const char *colon = strrchr(v, ':');
  const char *port = colon ? colon + 1 : v;
  if (colon) {
    if ((size_t)(colon - v) >= sizeof o->host_buf) die_usage("--http: host too long: %s", v);
    snprintf(host, sizeof o->host_buf, "%.*s", (int)(colon - v), v);
    if (host[0] == '[') die_usage("--http %s: IPv6 is not available in this civetweb build", v);
    if (host[0]) o->h.host = host;
  }
  char *end;
  long p = strtol(port, &end, 10);
  if (!*port || *end || p < 0 || p > 65535) die_usage("--http: bad port in '%s'", v);
  o->h.port = (int)p;
}

static double number_arg(const char *opt, const char *v) {
  char *end;
  errno = 0;
  double d = v ? strtod(v, &end) : 0;
  if (!v || errno || *end || d < 0) die_usage("%s needs a non-negative number", opt);
  return d;
}

/* The requestState keys: --state-key FILE, else LUAMCP_STATE_KEY, else a
   random one for this process (request_state.h). */
static void load_state_keys(const char *file) {
  buf text, err;
  buf_init(&text), buf_init(&err);
  const char *env = getenv("LUAMCP_STATE_KEY");
  if (file) {
    FILE *f = fopen(file, "rb");
    if (!f) {
      fprintf(stderr, "luamcp: --state-key %s: %s\n", file, strerror(errno));
      exit(2);
    }
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_put(&text, chunk, n);
    fclose(f);
  } else if (env && *env) {
    buf_puts(&text, env);
  }
  if (text.len && !request_state_set_keys(text.p, text.len, &err)) {
    fprintf(stderr, "luamcp: %s: %.*s\n", file ? file : "LUAMCP_STATE_KEY", (int)err.len, err.p);
    exit(2);
  }
  buf_free(&text), buf_free(&err); /* none given: a random key, made when first needed */
}

static void parse_options(int argc, char **argv, int first, options *o) {
  o->server = (server_options){
      .app = {.page_size = 100},
      .engine = {.call_timeout = 30, .call_memory = (size_t)64 << 20, .queue_cap = 1024,
                 .shutdown_grace = 10, .warn_blocking = 0.25}};
  o->debounce = 0.03;
  o->server.state_ttl = 600;
  o->server.task_ttl = 3600;
  o->max_message = (size_t)64 << 20;
  o->h = (http_options){.host = "127.0.0.1", .max_body = (size_t)4 << 20, .threads = 320,
                        .session_idle = 1800, .keepalive = 2, .allow_origins = o->origins,
                        .max_sessions = 10000, .header_timeout = 5, .body_timeout = 10,
                        .init_timeout = 30, .max_sessions_per_peer = 1000, .init_rate = 50,
                        .stream_buffer = (size_t)4 << 20, .trust_proxies = o->proxies};
  o->h.token = getenv("LUAMCP_TOKEN");
  if (o->h.token && !*o->h.token) o->h.token = NULL;
  const char *lv = getenv("LUAMCP_LOG_LEVEL");
  if (lv && log_level_from_name(lv, strlen(lv)) >= 0) log_set_threshold(log_level_from_name(lv, strlen(lv)));
  for (int i = first; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--page-size") == 0) o->server.app.page_size = (size_t)number_arg(a, v), i++;
    else if (strcmp(a, "--no-watch") == 0) o->no_watch = true;
    else if (strcmp(a, "--allow-bytecode") == 0) o->server.app.allow_bytecode = true;
    else if (strcmp(a, "--sandbox") == 0) o->server.app.sandbox = true;
    else if (strcmp(a, "--state-key") == 0) {
      if (!v) die_usage("%s needs a FILE", a);
      o->state_key_file = v, i++;
    } else if (strcmp(a, "--state-ttl") == 0) o->server.state_ttl = number_arg(a, v), i++;
    else if (strcmp(a, "--task-ttl") == 0) o->server.task_ttl = number_arg(a, v), i++;
    else if (strcmp(a, "--timeout") == 0) o->server.engine.call_timeout = number_arg(a, v), i++;
    else if (strcmp(a, "--memory-limit") == 0)
      o->server.engine.call_memory = (size_t)(number_arg(a, v) * 1048576.0), i++;
    else if (strcmp(a, "--warn-blocking") == 0)
      o->server.engine.warn_blocking = number_arg(a, v) / 1000.0, i++;
    else if (strcmp(a, "--queue") == 0) o->server.engine.queue_cap = (size_t)number_arg(a, v), i++;
    else if (strcmp(a, "--shutdown-grace") == 0) o->server.engine.shutdown_grace = number_arg(a, v), i++;
    else if (strcmp(a, "--max-message") == 0)
      o->max_message = (size_t)(number_arg(a, v) * 1048576.0), i++;
    else if (strcmp(a, "--http") == 0) parse_listen(o, v), o->http = true, i++;
    else if (strcmp(a, "--stateless") == 0) o->h.stateless = true;
    else if (strcmp(a, "--instance") == 0) {
      if (!v || !http_instance_ok(v))
        die_usage("%s needs a NAME of 1 to 32 letters, digits, '_' or '-'", a);
      o->h.instance = v, i++;
    } else if (strcmp(a, "--trust-proxy") == 0) {
      unsigned char bin[16];
      if (!v || (inet_pton(AF_INET, v, bin) != 1 && inet_pton(AF_INET6, v, bin) != 1))
        die_usage("%s needs an IP address", a);
      if (o->h.ntrust_proxies == 8) die_usage("%s: at most 8", a);
      o->proxies[o->h.ntrust_proxies++] = v, i++;
    } else if (strcmp(a, "--bus") == 0 || strcmp(a, "--store") == 0) {
      char why[128];
      if (!v || !redis_url_parse(v, NULL, why, sizeof why))
        die_usage(a[2] == 'b' ? "--bus: %s" : "--store: %s", v ? why : "needs redis://HOST:PORT[/N]");
      *(a[2] == 'b' ? &o->bus : &o->store) = v, i++;
    }
    else if (strcmp(a, "--dev") == 0) o->h.dev = true;
    else if (strcmp(a, "--allow-origin") == 0) {
      if (!v) die_usage("%s needs a URL", a);
      if (o->h.nallow_origins == 16) die_usage("%s: at most 16", a);
      o->origins[o->h.nallow_origins++] = v, i++;
    } else if (strcmp(a, "--token") == 0) {
      if (!v || !*v) die_usage("%s needs a value", a);
      o->h.token = v, i++;
    } else if (strcmp(a, "--cert") == 0) {
      if (!v) die_usage("%s needs a file", a);
      o->h.cert = v, i++;
    } else if (strcmp(a, "--key") == 0) {
      if (!v) die_usage("%s needs a file", a);
      o->h.key = v, i++;
    } else if (strcmp(a, "--threads") == 0) o->h.threads = (int)number_arg(a, v), i++;
    else if (strcmp(a, "--max-body") == 0) o->h.max_body = (size_t)(number_arg(a, v) * 1048576.0), i++;
    else if (strcmp(a, "--session-idle") == 0) o->h.session_idle = number_arg(a, v), i++;
    else if (strcmp(a, "--max-sessions") == 0) o->h.max_sessions = (size_t)number_arg(a, v), i++;
    else if (strcmp(a, "--sse-keepalive") == 0) o->h.keepalive = number_arg(a, v), i++;
    else if (strcmp(a, "--max-streams") == 0) o->h.max_streams = (size_t)number_arg(a, v), i++;
    else if (strcmp(a, "--header-timeout") == 0) o->h.header_timeout = number_arg(a, v), i++;
    else if (strcmp(a, "--body-timeout") == 0) o->h.body_timeout = number_arg(a, v), i++;
    else if (strcmp(a, "--init-timeout") == 0) o->h.init_timeout = number_arg(a, v), i++;
    else if (strcmp(a, "--max-sessions-per-peer") == 0)
      o->h.max_sessions_per_peer = (size_t)number_arg(a, v), i++;
    else if (strcmp(a, "--init-rate") == 0) o->h.init_rate = number_arg(a, v), i++;
    else if (strcmp(a, "--restart-on-stall") == 0) o->restart_on_stall = number_arg(a, v), i++;
    else if (strcmp(a, "--stream-buffer") == 0)
      o->h.stream_buffer = (size_t)(number_arg(a, v) * 1048576.0), i++;
    else if (strcmp(a, "--log-level") == 0) {
      int l = v ? log_level_from_name(v, strlen(v)) : -1;
      if (l < 0) die_usage("--log-level: unknown level '%s'", v ? v : "");
      log_set_threshold(l);
      i++;
    } else if (a[0] == '-' && a[1] == '-') die_usage("unknown option %s", a);
    else if (o->nargs < 4) o->args[o->nargs++] = a;
    else die_usage("unexpected argument %s", a);
  }
  if (o->server.app.page_size == 0) die_usage("%s must be at least 1", "--page-size");
  if (o->server.engine.call_timeout <= 0) die_usage("%s must be more than 0", "--timeout");
  if (o->server.state_ttl <= 0) die_usage("%s must be more than 0", "--state-ttl");
  if (o->server.task_ttl < 1) die_usage("%s must be at least 1", "--task-ttl");
  load_state_keys(o->state_key_file);
  if (o->server.engine.queue_cap == 0) die_usage("%s must be at least 1", "--queue");
  if (o->h.threads < 2) die_usage("%s must be at least 2", "--threads");
  if (o->h.keepalive <= 0) die_usage("%s must be more than 0", "--sse-keepalive");
  if (o->h.session_idle <= 0) die_usage("%s must be more than 0", "--session-idle");
  if (o->h.init_timeout <= 0) die_usage("%s must be more than 0", "--init-timeout");
  /* civetweb takes milliseconds; under 1 ms it would fall back to 30 s */
  if (o->h.header_timeout < 0.001) die_usage("%s must be at least 0.001", "--header-timeout");
  if (o->h.body_timeout <= 0) die_usage("%s must be more than 0", "--body-timeout");
  if (o->h.stream_buffer < 65536) die_usage("%s must be at least 0.0625 (64 KiB)", "--stream-buffer");
  if (o->h.max_streams && o->h.max_streams >= (size_t)o->h.threads)
    die_usage("%s must be below --threads (workers must remain for requests)", "--max-streams");
  if (o->h.key && !o->h.cert) die_usage("%s needs --cert too", "--key");
  if (o->h.dev && !o->http) die_usage("%s needs --http", "--dev");
  /* over stdio the client's pipes and its session are the process's: a
     new one could not take them over */
  if (o->restart_on_stall > 0 && !o->http) die_usage("%s needs --http", "--restart-on-stall");
  if (o->server.app.sandbox && o->server.app.allow_bytecode)
    die_usage("%s cannot be used with --sandbox: Lua does not verify bytecode, and a crafted "
              "chunk escapes any sandbox", "--allow-bytecode");
}

static app *load_or_report(const char *dir, const app_config *cfg) {
  buf errors;
  buf_init(&errors);
  app *a = app_load(dir, cfg, NULL, &errors);
  if (!a) fprintf(stderr, "%.*s", (int)errors.len, errors.p ? errors.p : "");
  buf_free(&errors);
  return a;
}

/* Keep the real stdout for protocol (or results) and point fd 1 at stderr,
   so no print() or library output can corrupt what we write. */
static int protect_stdout(void) {
  int fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (fd < 0 || dup2(2, 1) < 0) {
    perror("luamcp: stdout");
    exit(1);
  }
  return fd;
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

/* SIGINT/SIGTERM: stop taking input, let calls in flight finish.
   SIGHUP: reload the app now. */
static void *signal_main(void *arg) {
  server *srv = arg;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  int sig;
  while (sigwait(&set, &sig) == 0) {
    if (sig == SIGHUP) {
      log_msg(LOG_INFO, "SIGHUP: reloading");
      server_request_reload(srv);
      continue;
    }
    log_msg(LOG_INFO, "%s: finishing calls in flight, then exiting", strsignal(sig));
    engine_finish(server_engine(srv));
    break;
  }
  return NULL;
}

static int cmd_serve(options *o) {
  const char *dir = o->nargs ? o->args[0] : ".";
  if (o->nargs > 1) die_usage("serve takes one DIR, got also %s", o->args[1]);
  if (o->restart_on_stall > 0) { /* before any thread: from here on, the child */
    supervise();
    o->server.engine.stall_limit = o->restart_on_stall;
    o->server.engine.stalled = supervise_stalled;
  }
  int out = protect_stdout();
  o->server.app.declare_all = !o->no_watch; /* lists may appear on reload */
  app *a = load_or_report(dir, &o->server.app);
  if (!a) return 1;
  log_msg(LOG_INFO, "serving %s over %s%s (%zu tools, %zu resources, %zu templates, %zu prompts)",
          dir, o->http ? "HTTP" : "stdio", o->server.app.sandbox ? ", sandboxed" : "",
          a->reg->ntools, a->reg->nresources, a->reg->ntemplates, a->reg->nprompts);
  server *srv = server_new(a, &o->server);
  bus *b = o->bus ? bus_new(srv, o->bus) : NULL;
  if (o->store) store_use_redis(server_engine(srv), o->store);
  reload_watch *watch = o->no_watch ? NULL : reload_watch_new(srv, dir, o->debounce);
  pthread_t sig;
  pthread_create(&sig, NULL, signal_main, srv);
  int status = 0;
  if (o->http) status = transport_http_serve(srv, &o->h);
  else {
    int in = protect_stdin();
    transport_stdio_serve(srv, in, out, o->max_message);
    close(in);
  }
  pthread_cancel(sig);
  pthread_join(sig, NULL);
  reload_watch_free(watch);
  bus_free(b);
  store_close();
  server_free(srv);
  close(out);
  return status;
}

/* {====== luamcp call: one request through the same engine, no client */

typedef struct capture {
  outlet out; /* first: the outlet is the capture */
  buf lines;
} capture;

static bool capture_write(outlet *o, const char *p, size_t n) {
  buf_put(&((capture *)o)->lines, p, n);
  return true;
}

/* Show notifications on stderr; print the reply's result on out. */
static int report_reply(const char *p, size_t n, int out) {
  int status = 1;
  const char *end = p + n;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    jsonrpc_msg m;
    jsonrpc_parse(p, len, &m);
    if (m.kind == JSONRPC_NOTIFICATION && !jsonrpc_method_is(&m, "notifications/message")) {
      fprintf(stderr, "%.*s\n", (int)len, p);
    } else if (m.kind == JSONRPC_RESPONSE && m.result.n) {
      json_span is_error;
      bool failed = json_object_get(m.result, "isError", &is_error) && json_kind(is_error) == 't';
      buf b;
      buf_init(&b);
      buf_put(&b, m.result.p, m.result.n);
      buf_putc(&b, '\n');
      ssize_t w = write(out, b.p, b.len);
      buf_free(&b);
      status = failed || w < 0 ? 1 : 0;
    } else if (m.kind == JSONRPC_RESPONSE) {
      json_span msg = {0};
      json_object_get(m.error, "message", &msg);
      buf b;
      buf_init(&b);
      if (msg.n) json_string_unescape(msg, &b);
      fprintf(stderr, "luamcp: %s\n", b.p ? b.p : "error");
      buf_free(&b);
    }
    p += len + 1;
  }
  return status;
}

static int cmd_call(options *o) {
  if (o->nargs < 2 || o->nargs > 3) die_usage("%s", "call needs DIR TOOL [JSON-ARGS]");
  const char *dir = o->args[0], *tool = o->args[1], *args = o->nargs == 3 ? o->args[2] : "{}";
  const char *err;
  size_t errpos;
  if (!json_validate(args, strlen(args), &err, &errpos)) {
    fprintf(stderr, "luamcp: JSON-ARGS is not valid JSON: %s at byte %zu\n", err, errpos);
    return 2;
  }
  int out = protect_stdout();
  app *a = load_or_report(dir, &o->server.app);
  if (!a) return 1;
  capture cap = {.out = {.write = capture_write}};
  buf_init(&cap.lines);
  session *s = session_new();
  s->initialized = true;
  s->version = PROTO_LATEST;
  s->standalone = &cap.out;
  server *srv = server_new(a, &o->server);
  engine *e = server_engine(srv);
  buf req;
  buf_init(&req);
  buf_puts(&req, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":");
  json_encode_string(&req, tool, strlen(tool));
  buf_printf(&req, ",\"arguments\":%s}}", args);
  size_t len;
  char *msg = buf_take(&req, &len);
  server_submit(srv, s, &cap.out, msg, len, NULL);
  engine_finish(e);
  engine_run(e);
  server_free(srv);
  int status = report_reply(cap.lines.p, cap.lines.len, out);
  session_unref(s);
  buf_free(&cap.lines);
  buf_free(&cap.out.out);
  close(out);
  return status;
}

/* }====== */

static int cmd_check(options *o) {
  if (o->nargs != 1) die_usage("%s", "check needs DIR");
  app *a = load_or_report(o->args[0], &o->server.app);
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
      lua_rawgeti(a->L, LUA_REGISTRYINDEX, refs[k]);
      notes.len = 0;
      if (schema_unenforced(a->L, -1, r->assert_format, &notes) > 0) {
        buf_putc(&notes, '\0');
        for (char *line = notes.p, *next; line; line = next) {
          next = strchr(line, '\n');
          if (next) *next++ = '\0';
          fprintf(stderr, "%s: warning: tool '%s' %s: %s\n", o->args[0], t->name,
                  k ? "outputSchema" : "inputSchema", line);
        }
      }
      lua_pop(a->L, 1);
    }
  }
  buf_free(&notes);
  printf("%s: ok — %zu tools, %zu resources, %zu templates, %zu prompts\n", o->args[0],
         r->ntools, r->nresources, r->ntemplates, r->nprompts);
  app_free(a);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("luamcp %s\n", LUAMCP_VERSION);
    return 0;
  }
  /* signals are taken by a thread with sigwait, never by a handler that
     could interrupt the Lua VM; a vanished client is an EPIPE, not a kill */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);
  /* the soft fd limit is often 1024: calls waiting on sockets, transfers
     and children, HTTP peers and curl's connection cache need more */
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  options o = {0};
  parse_options(argc, argv, 2, &o);
  if (strcmp(argv[1], "serve") == 0) return cmd_serve(&o);
  if (strcmp(argv[1], "call") == 0) return cmd_call(&o);
  if (strcmp(argv[1], "check") == 0) return cmd_check(&o);
  die_usage("unknown command '%s'", argv[1]);
  return 2;
}
