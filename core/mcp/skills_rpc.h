/* skills_rpc.h — the methods of the skills extension (SEP-2640) and the
 * reads of skill:// resources, answered from the app's catalog (skills.h)
 * without Lua. Every revision has them, from 2024-11-05 sessions to
 * 2026-07-28 requests; only the latter's results carry cache hints
 * (ttlMs, cacheScope), resultType and serverInfo. An app without skills
 * answers them -32601, as a server without the extension would. */
#ifndef LUAMCP_SKILLS_RPC_H
#define LUAMCP_SKILLS_RPC_H

#include <stdbool.h>
#include <stddef.h>

#include "server_internal.h"

void skills_rpc_list(server *srv, inmsg *im);      /* skills/list */
void skills_rpc_get(server *srv, inmsg *im);       /* skills/get */
void skills_rpc_directory(server *srv, inmsg *im); /* resources/directory/read */
/* resources/read of uri: true when it names a skill's file or folder (the
   request is answered), false to look among the app's own resources. */
bool skills_rpc_read(server *srv, inmsg *im, const char *uri, size_t n);

#endif
