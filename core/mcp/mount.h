/* mount.h — mcp.mount's lists kept current (mount.c): after each load that
 * declares a mount, the server lists the mounted upstreams on its engine and
 * loads the app again when a list changed. */
#ifndef LUAMCP_MOUNT_H
#define LUAMCP_MOUNT_H

#include "server.h"

/* Serve mounts on srv (the command that serves an app calls it once, after
   server_new): the first refresh runs when the engine's loop starts. */
void mount_attach(server *srv);

#endif
