/* reload.c — inotify watch of an app folder (see reload.h). */
#include "reload.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define WATCH_MASK                                                                    \
  (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_MODIFY | \
   IN_DELETE_SELF | IN_ATTRIB)

typedef struct watched {
  int wd;
  char *path;
  bool top; /* the app folder itself: only app.lua and the subfolders matter */
} watched;

struct reload_watch {
  engine *e;
  int fd;
  char *dir;
  double debounce;
  watched *w;
  size_t nw, capw;
};

static const char *const subfolders[] = {"scripts", "widgets", "lib"};

static void add_watch(reload_watch *rw, const char *path, bool top) {
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
static void add_tree(reload_watch *rw, const char *path) {
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
    if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) add_tree(rw, sub);
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
  bool changed = false;
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
      for (size_t i = 0; i < 3; i++) sub |= strcmp(name, subfolders[i]) == 0;
      if (sub && (ev->mask & (IN_CREATE | IN_MOVED_TO))) { /* a new scripts/ or widgets/ */
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", rw->dir, name);
        add_tree(rw, path);
        changed = true;
      }
      if (strcmp(name, "app.lua") == 0) changed = true;
      continue;
    }
    if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO))) {
      char path[PATH_MAX];
      snprintf(path, sizeof path, "%s/%s", w->path, name);
      add_tree(rw, path);
    }
    if (ev->mask & IN_MODIFY) continue; /* wait for the close */
    changed = true;
  }
  if (changed) engine_schedule_reload(rw->e, rw->debounce);
}

reload_watch *reload_watch_new(engine *e, const char *dir, double debounce) {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    log_msg(LOG_WARNING, "no hot reload: inotify: %s", strerror(errno));
    return NULL;
  }
  reload_watch *rw = calloc(1, sizeof *rw);
  rw->e = e;
  rw->fd = fd;
  rw->dir = strdup(dir);
  rw->debounce = debounce;
  add_watch(rw, dir, true);
  for (size_t i = 0; i < 3; i++) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, subfolders[i]);
    add_tree(rw, path);
  }
  engine_add_input(e, fd, on_events, rw);
  return rw;
}

void reload_watch_free(reload_watch *rw) {
  if (!rw) return;
  close(rw->fd);
  for (size_t i = 0; i < rw->nw; i++) free(rw->w[i].path);
  free(rw->w);
  free(rw->dir);
  free(rw);
}
