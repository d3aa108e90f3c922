/* sd_notify.h — systemd's notify protocol (Type=notify units, docs/deploy.md):
 * READY=1 once serving, RELOADING=1 then READY=1 around a SIGHUP's reload,
 * STOPPING=1 when a signal ends it, WATCHDOG=1 every
 * half WatchdogSec while the engine is not wedged (engine_stalled_for),
 * so systemd restarts a server nothing in-process can unstick. A datagram
 * to $NOTIFY_SOCKET; nothing at all without one. No libsystemd. */
#ifndef LUAMCP_SD_NOTIFY_H
#define LUAMCP_SD_NOTIFY_H

#include <stdbool.h>

#include "server.h"

/* Send state ("READY=1\nSTATUS=...") when under a notify unit. */
bool sd_notify_send(const char *state);
/* With $WATCHDOG_USEC (for this process), ping from a thread of its own
   while srv's engine has not stood still unhealthy_after seconds. */
void sd_notify_watchdog(server *srv, double unhealthy_after);
/* Stop pinging (before srv goes). */
void sd_notify_watchdog_stop(void);

#endif
