/* reload.c — hot reload: the inotify watch of an app folder, loading the
 * new version on a thread of its own (the version serving keeps serving
 * meanwhile), and publishing it (diffing the snapshots, telling clients,
 * swapping the engine's app). See reload.h and server.h. */
#include "reload.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "listen.h"
#include "server_internal.h"
#include "json.h"
#include "log.h"
#include "metrics.h"

#define WATCH_MASK                                                                    \
  (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_MODIFY | \
   IN_DELETE_SELF | IN_ATTRIB)

typedef struct watched {
  int wd;
  char *path;
  bool top; /* the app folder itself: only app.lua and the subfolders matter */
} watched;

struct reload_watch {
  server *srv;
  engine *e;
  int fd;
  char *dir;
  double debounce;
  watched *w;
  size_t nw, capw;
  bool over; /* past WATCH_MAX (said once) */
};

static const char *const subfolders[] = {"scripts", "widgets", "lib", "skills", "migrations"};
#define NSUBFOLDERS (sizeof subfolders / sizeof *subfolders)

/* Folders watched at most: inotify watches are a per-user resource of the
   kernel's, and an app with more folders than this (skills with deep
   trees, say) is not edited folder by folder; past it, changes below the
   folders left out are not seen (SIGHUP reloads). */
#define WATCH_MAX 4096

static void add_watch(reload_watch *rw, const char *path, bool top) {
  if (rw->nw >= WATCH_MAX) {
    if (!rw->over)
      log_msg(LOG_WARNING, "hot reload: more than %d folders: %s and those after it are not watched "
              "(SIGHUP reloads)", WATCH_MAX, path);
    rw->over = true;
    return;
  }
  int wd = inotify_add_watch(rw->fd, path, WATCH_MASK);
  if (wd < 0) {
    log_msg(LOG_WARNING, "cannot watch %s: %s", path, strerror(errno));
    return;
  }
  for (size_t i = 0; i < rw->nw; i++)
    if (rw->w[i].wd == wd) return; /* already watched */
  if (rw->nw == rw->capw) {
    rw->capw = rw->capw ? rw->capw * 2 : 8;
    rw->w = realloc(rw->w, rw->capw * sizeof *rw->w);
  }
  rw->w[rw->nw++] = (watched){wd, strdup(path), top};
}

/* Watch path and every folder below it. */
static void watch_add_tree(reload_watch *rw, const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return;
  add_watch(rw, path, false);
  DIR *d = opendir(path);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
    if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) watch_add_tree(rw, sub);
  }
  closedir(d);
}

static const watched *find(const reload_watch *rw, int wd) {
  for (size_t i = 0; i < rw->nw; i++)
    if (rw->w[i].wd == wd) return &rw->w[i];
  return NULL;
}

/* Editors' scratch files are not changes to the app. */
static bool ignored_name(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || name[0] == '.' || name[n - 1] == '~' || name[0] == '#') return true;
  if (strcmp(name, "4913") == 0) return true; /* vim's write test */
  const char *dot = strrchr(name, '.');
  return dot && (strcmp(dot, ".swp") == 0 || strcmp(dot, ".swx") == 0 || strcmp(dot, ".tmp") == 0);
}

static void on_events(void *ctx) {
  reload_watch *rw = ctx;
  char data[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
  ssize_t n = read(rw->fd, data, sizeof data);
  if (n <= 0) return;
  bool changed = false, writing = false;
  for (char *p = data; p < data + n;) {
    const struct inotify_event *ev = (const struct inotify_event *)p;
    p += sizeof *ev + ev->len;
    const watched *w = find(rw, ev->wd);
    if (!w) continue;
    const char *name = ev->len ? ev->name : "";
    if (ev->mask & IN_IGNORED) continue;
    if (ev->len && ignored_name(name)) continue;
    if (w->top) {
      bool sub = false;
      for (size_t i = 0; i < NSUBFOLDERS; i++) sub |= strcmp(name, subfolders[i]) == 0;
      if (sub && (ev->mask & (IN_CREATE | IN_MOVED_TO))) { /* a new scripts/, skills/, ... */
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", rw->dir, name);
        watch_add_tree(rw, path);
        changed = true;
      }
      if (strcmp(name, "app.lua") == 0) changed = true;
      continue;
    }
    if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO))) {
      char path[PATH_MAX];
      snprintf(path, sizeof path, "%s/%s", w->path, name);
      watch_add_tree(rw, path);
    }
    if ((ev->mask & IN_MODIFY) || ((ev->mask & IN_CREATE) && !(ev->mask & IN_ISDIR))) {
      /* a write in progress (a new file is still empty): wait for its close */
      writing = true;
      continue;
    }
    changed = true;
  }
  if (changed) reload_schedule(rw->srv, rw->debounce);
  /* a file being written (or just created, still empty) must not be loaded
     half-way: writes push back a reload that is already due */
  else if (writing) reload_postpone(rw->srv, rw->debounce);
}

reload_watch *reload_watch_new(server *srv, const char *dir, double debounce) {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    log_msg(LOG_WARNING, "no hot reload: inotify: %s", strerror(errno));
    return NULL;
  }
  reload_watch *rw = calloc(1, sizeof *rw);
  rw->srv = srv;
  rw->fd = fd;
  rw->dir = strdup(dir);
  rw->debounce = debounce;
  add_watch(rw, dir, true);
  for (size_t i = 0; i < NSUBFOLDERS; i++) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, subfolders[i]);
    watch_add_tree(rw, path);
  }
  rw->e = srv->e;
  engine_add_input(rw->e, fd, on_events, rw);
  return rw;
}

void reload_watch_free(reload_watch *rw) {
  if (!rw) return;
  engine_remove_input(rw->e, rw->fd);
  close(rw->fd);
  for (size_t i = 0; i < rw->nw; i++) free(rw->w[i].path);
  free(rw->w);
  free(rw->dir);
  free(rw);
}

/* {====================================================== publishing a reload */

/* A burst of writes postpones the reload, but not past this. */
#define RELOAD_MAX_WAIT 0.25

static void on_reload_timer(uv_timer_t *t) {
  server *srv = t->data;
  srv->reload_at = 0;
  reload_now(srv);
}

static void on_reload_asked(uv_async_t *a) {
  server *srv = a->data;
  uv_timer_stop(&srv->reload_timer);
  srv->reload_at = 0;
  reload_now(srv);
}

static void on_reload_done(uv_async_t *a);

void reload_init(server *srv) {
  uv_loop_t *loop = engine_loop(srv->e);
  uv_async_init(loop, &srv->reload_async, on_reload_asked);
  srv->reload_async.data = srv;
  uv_async_init(loop, &srv->reload_done, on_reload_done);
  srv->reload_done.data = srv;
  uv_timer_init(loop, &srv->reload_timer);
  srv->reload_timer.data = srv;
}

static void job_abandon(server *srv);

void reload_close(server *srv) {
  job_abandon(srv);
  uv_close((uv_handle_t *)&srv->reload_async, NULL);
  uv_close((uv_handle_t *)&srv->reload_done, NULL);
  uv_close((uv_handle_t *)&srv->reload_timer, NULL);
}

void reload_request(server *srv) { uv_async_send(&srv->reload_async); }

void reload_on_end(server *srv, void (*fn)(bool published, void *ud), void *ud) {
  srv->reload_end = fn;
  srv->reload_end_ud = ud;
}

static void ended(server *srv, bool published) {
  if (srv->reload_end) srv->reload_end(published, srv->reload_end_ud);
}

void reload_postpone(server *srv, double delay) {
  if (srv->reload_at) reload_schedule(srv, delay);
}

void reload_schedule(server *srv, double delay) {
  double t = clock_now();
  if (srv->reload_at == 0) srv->reload_first = t;
  double at = t + delay; /* quiet for `delay` */
  if (at > srv->reload_first + RELOAD_MAX_WAIT) at = srv->reload_first + RELOAD_MAX_WAIT;
  if (at <= srv->reload_at) return;
  srv->reload_at = at;
  uv_loop_t *loop = engine_loop(srv->e);
  uv_update_time(loop);
  double ms = ceil((at - t) * 1000.0);
  uv_timer_start(&srv->reload_timer, on_reload_timer, ms > 0 ? (uint64_t)ms : 0, 0);
}

static bool list_differs(const registry *a, const registry *b, reg_list l) {
  const reg_pages *x = &a->pages[l][PROTO_LATEST], *y = &b->pages[l][PROTO_LATEST];
  if (x->count != y->count || x->npages != y->npages) return true;
  for (size_t p = 0; p < x->npages; p++) {
    /* cursors differ between versions: compare the items, not the tail */
    const char *xe = strstr(x->page[p], ",\"nextCursor\"");
    const char *ye = strstr(y->page[p], ",\"nextCursor\"");
    size_t xn = xe ? (size_t)(xe - x->page[p]) : x->page_len[p];
    size_t yn = ye ? (size_t)(ye - y->page[p]) : y->page_len[p];
    if (xn != yn || memcmp(x->page[p], y->page[p], xn) != 0) return true;
  }
  return false;
}

/* The load failed: the last good version keeps serving; say why, with
   file:line, on stderr and to the clients. */
static void report_failure(server *srv, buf *errors) {
  if (metrics_on) metric_add(metric_at(M_RELOADS, (const char *const[]){"failed"}), 1);
  log_msg(LOG_ERROR, "reload failed, still serving the previous version:\n%.*s",
          (int)errors->len, errors->p ? errors->p : "");
  buf p;
  buf_init(&p);
  buf_puts(&p, "{\"level\":\"error\",\"logger\":\"luamcp\",\"data\":");
  buf_puts(errors, "(still serving the previous version)");
  json_encode_string(&p, errors->p, errors->len);
  buf_putc(&p, '}');
  for (size_t i = 0; i < srv->nsessions; i++) {
    session *s = srv->sessions[i];
    outlet *o = s->standalone;
    if (o && !o->dead && s->log_level <= LOG_ERROR)
      jsonrpc_write_notification(output_of(srv, o), "notifications/message", p.p, p.len);
  }
  buf_free(&p);
}

/* Every script of fresh loaded: tell the clients what changed and serve it. */
static void publish(server *srv, app *fresh, double t0) {
  app *old = engine_app(srv->e);
  static const char *const changed[REG_NLISTS] = {
      "notifications/tools/list_changed", "notifications/resources/list_changed",
      "notifications/resources/list_changed", "notifications/prompts/list_changed"};
  /* one notification per kind (resources and templates share one), to
     whoever can see a change */
  notify_change ch[3] = {{old->reg, fresh->reg, {REG_TOOLS}, 0},
                         {old->reg, fresh->reg, {REG_RESOURCES}, 0},
                         {old->reg, fresh->reg, {REG_PROMPTS}, 0}};
  for (int l = 0; l < REG_NLISTS; l++) {
    if (!list_differs(old->reg, fresh->reg, (reg_list)l)) continue;
    notify_change *c = &ch[l == REG_TOOLS ? 0 : l == REG_PROMPTS ? 2 : 1];
    c->lists[c->n++] = (reg_list)l;
  }
  for (int k = 0; k < 3; k++)
    if (ch[k].n) notify_lists_changed(srv, changed[k == 0 ? REG_TOOLS : k == 1 ? REG_RESOURCES : REG_PROMPTS], &ch[k]);
  /* resources/updated for subscribed URIs whose content may have changed */
  for (size_t i = 0; i < srv->nsessions; i++) {
    session *s = srv->sessions[i];
    if (!s->standalone || s->standalone->dead) continue;
    for (size_t k = 0; k < s->nsubscriptions; k++) {
      const char *uri = s->subscriptions[k];
      const reg_resource *a = registry_find_resource(old->reg, uri, strlen(uri));
      const reg_resource *b = registry_find_resource(fresh->reg, uri, strlen(uri));
      if (!a && !b) continue;
      if (a && b && a->fingerprint == b->fingerprint) continue;
      buf p;
      buf_init(&p);
      buf_puts(&p, "{\"uri\":");
      json_encode_string(&p, uri, strlen(uri));
      buf_putc(&p, '}');
      jsonrpc_write_notification(output_of(srv, s->standalone), "notifications/resources/updated",
                                 p.p, p.len);
      buf_free(&p);
    }
  }
  /* the same for 2026-07-28 subscriptions: every URI whose content may
     have changed, to the listeners that name it; and to the other
     instances (bus.h), whose clients may read it from here */
  if (srv->listeners || srv->peers.updated) {
    for (size_t i = 0; i < fresh->reg->nresources; i++) {
      const reg_resource *b = &fresh->reg->resources[i];
      const reg_resource *a = registry_find_resource(old->reg, b->uri, strlen(b->uri));
      if (a && a->fingerprint == b->fingerprint) continue;
      listen_resource_updated(srv, b->uri, strlen(b->uri));
      if (srv->peers.updated) srv->peers.updated(srv->peers.ud, b->uri, strlen(b->uri));
    }
    for (size_t i = 0; i < old->reg->nresources; i++) {
      const reg_resource *a = &old->reg->resources[i];
      if (registry_find_resource(fresh->reg, a->uri, strlen(a->uri))) continue;
      listen_resource_updated(srv, a->uri, strlen(a->uri));
      if (srv->peers.updated) srv->peers.updated(srv->peers.ud, a->uri, strlen(a->uri));
    }
  }
  engine_set_vm(srv->e, &fresh->vm); /* the old version closes with its last call */
  reload_set_facts(srv, fresh);
  if (srv->mount_published) srv->mount_published(srv); /* the mounted upstreams, listed again */
  if (metrics_on) metric_add(metric_at(M_RELOADS, (const char *const[]){"ok"}), 1);
  log_msg(LOG_INFO, "reloaded %s in %.1f ms (%zu tools, %zu resources, %zu templates, %zu prompts)",
          fresh->dir, (clock_now() - t0) * 1000.0, fresh->reg->ntools, fresh->reg->nresources,
          fresh->reg->ntemplates, fresh->reg->nprompts);
}

/* {====== loading on a thread of its own

   app_load_begin runs on the loop's thread (it reads the version serving:
   its mcp.state), app_load_end on a thread of its own: however long the new
   scripts' top levels take, the version serving keeps answering (pings,
   calls, lists), and --load-timeout bounds them (vm_limit_load). `stop`,
   read by the load's hook, ends it early: at shutdown, and when a newer
   change comes (what it was loading is out of date: the newer one loads
   next). The thread hands its result back through srv->reload_done; the
   loop's thread publishes it. One load at a time. */

/* How long a closing server waits for a stopped load to end: the hook
   stops Lua code within microseconds; a C function it runs (os.execute)
   only when it returns. */
#define RELOAD_STOP_WAIT 1.0

typedef struct reload_job {
  server *srv;
  app_loading *begun;
  app *fresh; /* what app_load_end made: NULL when it failed (errors say why) */
  buf errors;
  double t0;
  unsigned long runs; /* the serving version's handler runs when the load began */
  atomic_bool stop;
  pthread_t thread;
  pthread_mutex_t mu; /* over the three flags below */
  pthread_cond_t cv;  /* finished */
  bool finished;  /* app_load_end returned */
  bool abandoned; /* the server is closing: no hand-over */
  bool orphan;    /* ... and did not wait for the end: the thread frees the job */
} reload_job;

static void job_free(reload_job *job) {
  app_free(job->fresh);
  buf_free(&job->errors);
  pthread_mutex_destroy(&job->mu);
  pthread_cond_destroy(&job->cv);
  free(job);
}

static void *load_main(void *arg) {
  reload_job *job = arg;
  job->fresh = app_load_end(job->begun, &job->stop, &job->errors);
  job->begun = NULL;
  pthread_mutex_lock(&job->mu);
  job->finished = true;
  bool orphan = job->orphan;
  if (!job->abandoned) uv_async_send(&job->srv->reload_done); /* under mu: reload_close waits */
  pthread_cond_signal(&job->cv);
  pthread_mutex_unlock(&job->mu);
  if (orphan) job_free(job);
  return NULL;
}

/* mcp.state was copied when the load began; a handler that ran on the
   serving version since may have changed it, and publishing would lose
   that. Then load once more here, on the engine's thread, where no handler
   runs meanwhile: the load just made shows the scripts load (and in how
   long), and its migrations are applied. False: that load failed (job's
   errors say why). */
static bool carry_again(server *srv, reload_job *job) {
  app *old = engine_app(srv->e);
  if (old->vm.runs == job->runs) return true;
  app_config cfg = srv->opt.app;
  cfg.migrate = APP_MIGRATE_NONE;
  double t = clock_now();
  buf_free(&job->errors);
  buf_init(&job->errors);
  app_loading *begun = app_load_begin(old->dir, &cfg, old, &job->errors);
  app *again = begun ? app_load_end(begun, NULL, &job->errors) : NULL;
  if (!again) return false;
  log_msg(LOG_DEBUG, "reload: handlers ran while it loaded: loaded again in %.1f ms to carry their mcp.state",
          (clock_now() - t) * 1000.0);
  app_free(job->fresh);
  job->fresh = again;
  return true;
}

/* The load of job ended (its thread is joined): publish it, or say why not. */
static void job_end(server *srv, reload_job *job) {
  if (engine_finishing(srv->e)) {
    /* shutting down: nothing to publish to */
  } else if (atomic_load(&job->stop)) {
    /* out of date: what the newer change loads is published instead */
    const char *p = job->errors.p ? job->errors.p : "";
    const char *nl = strchr(p, '\n');
    int n = (int)(nl ? (size_t)(nl - p) : strlen(p));
    log_msg(LOG_INFO, "reload: a newer change came while loading%s%.*s%s: loading again",
            n ? " (" : "", n, p, n ? ")" : "");
  } else if (job->fresh && !carry_again(srv, job)) {
    report_failure(srv, &job->errors);
    ended(srv, false);
  } else if (job->fresh) {
    publish(srv, job->fresh, job->t0);
    job->fresh = NULL; /* the engine's now */
    ended(srv, true);
  } else {
    report_failure(srv, &job->errors);
    ended(srv, false);
  }
  job_free(job);
}

static void on_reload_done(uv_async_t *a) {
  server *srv = a->data;
  reload_job *job = srv->reload_job;
  if (!job) return;
  pthread_mutex_lock(&job->mu);
  bool finished = job->finished;
  pthread_mutex_unlock(&job->mu);
  if (!finished) return;
  pthread_join(job->thread, NULL);
  srv->reload_job = NULL;
  job_end(srv, job);
  if (srv->reload_again) {
    srv->reload_again = false;
    reload_now(srv);
  }
}

/* Load the app again; publish it only if every script loads. */
void reload_now(server *srv) {
  if (engine_finishing(srv->e)) return;
  if (srv->reload_job) { /* out of date: stop it, then load again */
    atomic_store(&srv->reload_job->stop, true);
    srv->reload_again = true;
    return;
  }
  app *old = engine_app(srv->e);
  reload_job *job = calloc(1, sizeof *job);
  job->srv = srv;
  buf_init(&job->errors);
  job->t0 = clock_now();
  atomic_init(&job->stop, false);
  pthread_mutex_init(&job->mu, NULL);
  pthread_cond_init(&job->cv, NULL);
  job->runs = old->vm.runs;
  job->begun = app_load_begin(old->dir, &srv->opt.app, old, &job->errors);
  if (!job->begun) {
    job_end(srv, job);
    return;
  }
  int rc = pthread_create(&job->thread, NULL, load_main, job);
  if (rc != 0) { /* no thread to be had: load here, holding the server up as before */
    log_msg(LOG_WARNING, "reload: no thread to load on (%s): loading on the engine's", strerror(rc));
    job->fresh = app_load_end(job->begun, &job->stop, &job->errors);
    job->begun = NULL;
    job_end(srv, job);
    return;
  }
  srv->reload_job = job;
}

void reload_stop(server *srv) {
  srv->reload_again = false;
  if (!srv->reload_job) return;
  atomic_store(&srv->reload_job->stop, true);
  log_msg(LOG_INFO, "reload: the load under way stops: the server is shutting down");
}

/* The server closes (the loop has ended): stop the load under way and wait
   a moment for its end; past that, leave it to free itself. */
static void job_abandon(server *srv) {
  reload_job *job = srv->reload_job;
  srv->reload_job = NULL;
  if (!job) return;
  atomic_store(&job->stop, true);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += (time_t)RELOAD_STOP_WAIT;
  pthread_mutex_lock(&job->mu);
  job->abandoned = true;
  while (!job->finished && pthread_cond_timedwait(&job->cv, &job->mu, &until) != ETIMEDOUT) {}
  bool finished = job->finished;
  job->orphan = !finished;
  pthread_mutex_unlock(&job->mu);
  if (finished) {
    pthread_join(job->thread, NULL);
    job_free(job);
  } else {
    pthread_detach(job->thread);
    log_msg(LOG_WARNING, "reload: the load under way did not stop within %g s (a C function at a "
            "script's top level?): left behind", RELOAD_STOP_WAIT);
  }
}

/* }====== */

/* }====================================================== */

/* {====================================================== what transports may ask of the serving version */

void reload_set_facts(server *srv, const app *a) {
  char *scopes = a->reg->scopes ? strdup(a->reg->scopes) : NULL;
  char *name = a->reg->name ? strdup(a->reg->name) : NULL;
  if (metrics_on) { /* mcp_server_app_info: 1 for the version serving, 0 for the one before */
    static metric_series *serving;
    metric_gauge_set(serving, 0);
    serving = metric_at(M_APP_INFO, (const char *const[]){a->reg->name ? a->reg->name : "",
                                                          a->reg->version ? a->reg->version : ""});
    metric_gauge_set(serving, 1);
  }
  pthread_mutex_lock(&srv->facts_lock);
  char *old_scopes = srv->facts_scopes, *old_name = srv->facts_name;
  srv->facts_scopes = scopes, srv->facts_name = name;
  pthread_mutex_unlock(&srv->facts_lock);
  free(old_scopes), free(old_name);
}

/* }====================================================== */
