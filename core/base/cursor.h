/* cursor.h — opaque pagination cursors: an offset plus a keyed check, so a
 * cursor we did not issue (unknown, edited, or from before a reload) is
 * refused with -32602 rather than silently mis-paging. */
#ifndef LUAMCP_CURSOR_H
#define LUAMCP_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CURSOR_MAX 40

/* Write the cursor for (list, offset) into out (NUL-terminated). */
void cursor_make(uint64_t key, int list, size_t offset, char out[CURSOR_MAX]);
/* Parse a cursor string; true with *offset when it is one of ours. */
bool cursor_parse(uint64_t key, int list, const char *s, size_t n, size_t *offset);
/* A fresh random key (getrandom; falls back to time and address bits). */
uint64_t cursor_new_key(void);

#endif
