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

/* wtio_stats_v0_3 (setup.c) is the default version. A program built
 * against 0.1 has a struct wtio_stats that ends at atomic_writes, one
 * built against 0.2 one that ends at adaptive_writethrough: no more
 * than that is written. */
int wtio_stats_v0_3(struct wtio_ctx *ctx, struct wtio_stats *st);
int wtio_stats_v0_1(struct wtio_ctx *ctx, struct wtio_stats *st);
int wtio_stats_v0_2(struct wtio_ctx *ctx, struct wtio_stats *st);
__asm__(".symver wtio_stats_v0_1, wtio_stats@WTIO_0.1");
__asm__(".symver wtio_stats_v0_2, wtio_stats@WTIO_0.2");

static int stats_upto(struct wtio_ctx *ctx, struct wtio_stats *st,
		      size_t len)
{
	struct wtio_stats all;
	int ret;

	if (!st)
		return -EINVAL;
	ret = wtio_stats_v0_3(ctx, &all);
	if (!ret)
		memcpy(st, &all, len);
	return ret;
}

WTIO_EXPORT int wtio_stats_v0_1(struct wtio_ctx *ctx, struct wtio_stats *st)
{
	return stats_upto(ctx, st, offsetof(struct wtio_stats,
					    adaptive_writethrough));
}

WTIO_EXPORT int wtio_stats_v0_2(struct wtio_ctx *ctx, struct wtio_stats *st)
{
	return stats_upto(ctx, st, offsetof(struct wtio_stats,
					    failed_dropped_folios));
}
