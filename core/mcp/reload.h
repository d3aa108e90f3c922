/* reload.h — watch an app folder (inotify) and have the engine reload it
 * when a file of it changes: app.lua, and everything under scripts/,
 * widgets/ and lib/ (recursively). Editors that save by writing a new file
 * and renaming it over the old one, and bursts of writes, end in one
 * reload after a short quiet time (the debounce). The new version loads on
 * a thread of its own while the current one serves (reload.c). */
#ifndef LUAMCP_RELOAD_H
#define LUAMCP_RELOAD_H

#include "server.h"

typedef struct reload_watch reload_watch;

/* Start watching dir; its events are read by the engine loop (its
   run-lock holder), and a change reloads the app after `debounce` s. NULL (and a logged reason) if inotify is unavailable: the
   server then runs without hot reload. */
reload_watch *reload_watch_new(server *srv, const char *dir, double debounce);
void reload_watch_free(reload_watch *w);
/* SIGHUP (any thread): reload the app (the engine's loop starts the load at
   its next pass; a load under way is stopped and started again). */
void reload_request(server *srv);
/* fn(published, ud) on the engine's loop each time a reload ends: the new
   version serves (true), or it failed and the last good one still does
   (false); not for a load a newer change stopped. systemd's RELOADING=1 /
   READY=1 around a SIGHUP. Before serving. */
void reload_on_end(server *srv, void (*fn)(bool published, void *ud), void *ud);

#endif
