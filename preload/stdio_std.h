/* SPDX-License-Identifier: MIT */
/* stdio_std.h - libc's own streams through the shim (stdio_std.c). */
#ifndef WTIO_SHIM_STDIO_STD_H
#define WTIO_SHIM_STDIO_STD_H

#include <stdbool.h>

/* Route glibc's stream I/O on served descriptors through the shim (once
 * per process); whether it does: only then may 0 and 1 be served. */
bool shim_std_hooked(void);

#endif
