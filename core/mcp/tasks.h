/* tasks.h — the tasks extension of MCP 2026-07-28 (io.modelcontextprotocol/
 * tasks, SEP-2663): a tool call that answers its request early with a
 * CreateTaskResult while its handler goes on, polled with tasks/get,
 * given input with tasks/update, stopped with tasks/cancel.
 *
 * A task is a call whose request was answered early: its coroutine keeps
 * running on the engine (call_adopt makes it the task's call, so
 * the request's session or connection ending does not end it), and what
 * it writes afterwards goes to the task's own outlet, which keeps the
 * JSON-RPC response (a result, or an error) for tasks/get instead of
 * sending it. When a call becomes one: a tool declared `task = "optional"`
 * or `"required"`, a 2026-07-28 request whose client capabilities name the
 * extension, at the handler's first wait that is not a question (ctx:sleep,
 * mcp.http, mcp.exec, a socket: the engine's `waits` hook) or at
 * ctx:as_task(). Questions before that are MRTR rounds of the request
 * (mrtr.h); after it they park the task in `input_required` (tasks/get
 * lists them as inputRequests; tasks/update answers them, in parts if it
 * likes, and the handler goes on with the answers).
 *
 * A task lives --task-ttl seconds from its creation (ttlMs): its work (the
 * call's deadline) and then its result. The table is the process's own:
 * several instances behind one endpoint need affinity on the taskId, or a
 * shared store (not built). Without the extension a task tool runs as a
 * plain call ("required" ones answer -32021 first); 2025-era sessions never
 * see tasks. */
#ifndef LUAMCP_TASKS_H
#define LUAMCP_TASKS_H

#include "server_internal.h"

/* the methods (2026-07-28 requests) */
void tasks_get(server *srv, inmsg *im);
void tasks_update(server *srv, inmsg *im);
void tasks_cancel(server *srv, inmsg *im);
/* -32021 naming the extension (a "required" tool, the tasks methods) */
void tasks_missing_capability(server *srv, inmsg *im);

/* the engine's waits hook: the call becomes a task if it may */
void tasks_waits(void *ud, call *c);
/* ctx:as_task (ctx_client.as_task): make the call a task now if its tool
   and its client allow; true when it is one (now or already). */
bool tasks_as_task(call *c);
/* A question from a task's handler (instead of an MRTR round): the table
   at reqs maps keys to {method=, params=}; single: ctx:elicit and co. (the
   answer itself, not the answers by key). ASK_WAIT (parked until
   tasks/update answers all) or ASK_FAILED. */
int tasks_ask(call *c, lua_State *L, int reqs, bool single, char *err, size_t errlen);
/* Shutdown begins: every running task is cancelled. */
void tasks_shutdown(server *srv);
/* After the engine is gone: free the table. */
void tasks_free_all(server *srv);

#endif
