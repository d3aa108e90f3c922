/* tasks_remote.h — a task asked about on an instance that does not run it.
 *
 * Why: behind a round-robin proxy, a client's tasks/get, tasks/update and
 * tasks/cancel land on any instance, but a task is a coroutine parked in
 * the memory of the one that created it; its body carries the taskId,
 * where nginx cannot route. So with --bus, a task's id begins with its
 * instance's bus origin (tasks.c), and an instance that gets a request for
 * another origin's task sends the request, as it came, to that instance's
 * own channel (bus.h), and answers with what comes back: the owner runs it
 * through the same code as its own clients' (server_inject), so a remote
 * task behaves as a local one, tasks/update resuming the parked handler.
 * Only the three task methods travel, and the owner takes only requests
 * for its own tasks (no relaying on).
 *
 * If the owner is gone (stopped, crashed) its tasks are gone with it, as a
 * 2025 session is: Redis says that no one received the request, and it is
 * answered as an unknown task is (-32602). An owner that is there but
 * silent makes it -32603 after TASKS_REMOTE_TIMEOUT seconds; so does a
 * bus that is down, at once. The wire: "<from> Q <seq> <who> <the JSON-RPC request>" to the
 * owner, "<owner> R <seq> <its JSON-RPC response>" back.
 *
 * Everything here is for the engine's run-lock holder. */
#ifndef LUAMCP_TASKS_REMOTE_H
#define LUAMCP_TASKS_REMOTE_H

#include "server_internal.h"

#define TASKS_REMOTE_TIMEOUT 5.0

/* tasks.c: im names a task of the instance whose bus origin is `owner`
   (16 hex digits), task_id its taskId (raw JSON): send it there; im is
   answered when the answer comes (im->taken), or now with an error. */
void tasks_remote_forward(server *srv, inmsg *im, const char *owner, json_span task_id);
/* bus.c: a message on our own channel from `from` (16 hex digits). */
void tasks_remote_message(server *srv, const char *from, char kind, const char *body, size_t n);
/* Shutdown begins: the requests still waiting are answered with an error. */
void tasks_remote_shutdown(server *srv);
/* With the bus (bus_free): stop, free. */
void tasks_remote_free(server *srv);

#endif
