/* SPDX-License-Identifier: MIT */
/*
 * compat.c - libwtio.so's entry points for programs built against an
 * older wtio.h whose structs were shorter. Only in the shared library
 * (src/meson.build): a static link always has its own header's layout.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "export.h"

/* wtio_stats@WTIO_0.1: 0.1's struct wtio_stats ended at atomic_writes,
 * so no more than that is written. wtio_stats_v0_2 (setup.c) is the
 * default version. */
int wtio_stats_v0_2(struct wtio_ctx *ctx, struct wtio_stats *st);
int wtio_stats_v0_1(struct wtio_ctx *ctx, struct wtio_stats *st);
__asm__(".symver wtio_stats_v0_1, wtio_stats@WTIO_0.1");

WTIO_EXPORT int wtio_stats_v0_1(struct wtio_ctx *ctx, struct wtio_stats *st)
{
	struct wtio_stats all;
	int ret;

	if (!st)
		return -EINVAL;
	ret = wtio_stats_v0_2(ctx, &all);
	if (!ret)
		memcpy(st, &all, offsetof(struct wtio_stats,
					  adaptive_writethrough));
	return ret;
}
