/* embedded.h — the sources compiled into the binary (cmake/embed.cmake):
 * lua/mcp.lua, lua/ship.lua, lua/view.js, web/dev.html, each by its name
 * without the extension ("mcp", "ship", "view", "dev"), so an install is
 * one file. */
#ifndef LUAMCP_EMBEDDED_H
#define LUAMCP_EMBEDDED_H

#include <stddef.h>

/* The source of that name and its length, or NULL. */
const char *embedded_source(const char *name, size_t *len);

#endif
