/* supervise.h — --restart-on-stall: the server runs as the child of a
 * small supervisor process that starts it again when it stalls or crashes.
 *
 * Why a parent process and not an exec of ourselves: a stalled server is
 * stuck in Lua code nothing in-process can stop (a __gc finalizer runs
 * without hooks) or in a C call; what still works is the watchdog thread,
 * which can end the process (_exit) but not clean up after the engine. A
 * fresh process is the only clean state, and a parent that does nothing
 * but wait cannot itself get stuck in a script. The parent forks before
 * any thread exists, forwards SIGINT, SIGTERM and SIGHUP to the child and
 * exits with the child's status when it ends for any other reason; the
 * child ends with its parent (PR_SET_PDEATHSIG). The new child binds the
 * port again: connections in the gap are refused, sessions are gone
 * (clients get 404 and initialize again, as the spec asks). */
#ifndef LUAMCP_SUPERVISE_H
#define LUAMCP_SUPERVISE_H

/* The status a stalled server exits with (EX_TEMPFAIL: try again). */
#define SUPERVISE_EXIT_STALLED 75

/* Fork the server; returns in the child only. The parent restarts the
   child when it exits with SUPERVISE_EXIT_STALLED or dies of a signal it
   was not sent (at most once a second), and otherwise exits as it did. */
void supervise(void);

/* engine_options.stalled, supervised or not: log, then _exit with
   SUPERVISE_EXIT_STALLED (a service manager restarts on it too). */
void supervise_stalled(double seconds, const char *where, const char *why);

#endif
