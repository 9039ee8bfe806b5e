/* SPDX-License-Identifier: MIT */
/* setup.c - a context: its configuration, creation, destruction, and
 * the sum of its counters. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "setup.h"
#include "ctx.h"
#include "forked.h"
#include "export.h"
#include "folio.h"
#include "cache.h"
#include "inode.h"
#include "flusher.h"
#include "inode_table.h"
#include "inode_evict.h"
#include "inode_folios.h"
#include "stats.h"
#include "io/ops.h"

static uint64_t default_cache_size(void)
{
	long pages = sysconf(_SC_PHYS_PAGES);
	long psz = sysconf(_SC_PAGESIZE);
	uint64_t ram = (pages > 0 && psz > 0) ? (uint64_t)pages * (uint64_t)psz :
			(1ull << 30);
	uint64_t size = ram / 8;

	/* A large default would pin (fixed buffers) and fault in much memory
	 * that a short-lived user never needs. */
	if (size > (1ull << 30))
		size = 1ull << 30;
	if (size < (64ull << 20))
		size = 64ull << 20;
	return size;
}

WTIO_EXPORT void wtio_config_init(struct wtio_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->cache_size = default_cache_size();
	cfg->folio_size = 4096;
	cfg->nr_flushers = 1;
	cfg->dirty_background_ratio = 10;
	cfg->dirty_ratio = 20;
	cfg->dirty_expire_ms = 30000;
	cfg->writeback_interval_ms = 5000;
	cfg->max_io_size = 1u << 20;
	cfg->readahead_max = 128u << 10;
	cfg->backend = WTIO_BACKEND_AUTO;
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* Fill zero fields with defaults and check the rest. */
static int config_check(struct wtio_config *c)
{
	struct wtio_config d;

	wtio_config_init(&d);
	if (!c->cache_size)
		c->cache_size = d.cache_size;
	if (!c->folio_size)
		c->folio_size = d.folio_size;
	if (!c->nr_flushers)
		c->nr_flushers = d.nr_flushers;
	if (!c->dirty_background_ratio)
		c->dirty_background_ratio = d.dirty_background_ratio;
	if (!c->dirty_ratio)
		c->dirty_ratio = d.dirty_ratio;
	if (!c->dirty_expire_ms)
		c->dirty_expire_ms = d.dirty_expire_ms;
	if (!c->writeback_interval_ms)
		c->writeback_interval_ms = d.writeback_interval_ms;
	if (!c->max_io_size)
		c->max_io_size = d.max_io_size;
	if (!c->readahead_max && !(c->flags & WTIO_CONFIG_NO_READAHEAD))
		c->readahead_max = d.readahead_max;
	if (c->flags & WTIO_CONFIG_NO_READAHEAD)
		c->readahead_max = 0;
	/* The default window fits any cache the minimum allows: a quarter
	 * of a small cache (an explicit larger value stays an error, but
	 * for 128 KiB itself, which cannot be told from the default: a
	 * sentinel set by wtio_config_init would change what its callers
	 * read back and clamp themselves). */
	if (c->readahead_max == d.readahead_max &&
	    c->readahead_max > c->cache_size / 4)
		c->readahead_max = (uint32_t)(c->cache_size / 4);

	if (!is_pow2(c->folio_size) || c->folio_size < WTIO_MIN_FOLIO_SIZE ||
	    c->folio_size > WTIO_MAX_FOLIO_SIZE)
		return -EINVAL;
	if (c->cache_size / c->folio_size < WTIO_MIN_FOLIOS)
		return -EINVAL;
	if (c->cache_size > (1ull << 46))
		return -EINVAL;
	if (c->nr_flushers > 64)
		return -EINVAL;
	if (c->dirty_background_ratio > c->dirty_ratio || c->dirty_ratio > 90)
		return -EINVAL;
	if (c->max_io_size < c->folio_size || c->max_io_size > (64u << 20) ||
	    c->max_io_size % 4096)
		return -EINVAL;
	if (c->readahead_max > c->cache_size / 4)
		return -EINVAL;
	if (c->backend > WTIO_BACKEND_PSYNC || c->reserved)
		return -EINVAL;
	if (c->flags & ~(WTIO_CONFIG_NO_READAHEAD | WTIO_CONFIG_NO_FIXED_BUFFERS |
			 WTIO_CONFIG_NO_STRIPE_ALIGN | WTIO_CONFIG_SIZE_AHEAD |
			 WTIO_CONFIG_ADAPTIVE | WTIO_CONFIG_KEEP_CLOSED |
			 WTIO_CONFIG_AIO_CHANNELS | WTIO_CONFIG_URING_CHANNELS |
			 WTIO_CONFIG_DONTCACHE_READAHEAD |
			 WTIO_CONFIG_LARGE_FOLIOS))
		return -EINVAL;
	if ((c->flags & WTIO_CONFIG_AIO_CHANNELS) &&
	    (c->flags & WTIO_CONFIG_URING_CHANNELS))
		return -EINVAL;
	if (c->stripe_unit % 4096 || (!c->stripe_unit && c->stripe_width) ||
	    (c->stripe_unit && c->stripe_width % c->stripe_unit))
		return -EINVAL;
	return 0;
}

/* WTIO_LARGE_FOLIOS and WTIO_IO_CHANNEL (wtio.h): the choice made
 * without rebuilding the program, or for a whole test run. A value
 * neither "on" nor "off" is refused, not taken for one of them:
 * WTIO_LARGE_FOLIOS=no leaving large folios on would be a silent
 * change. Unset or empty: the configuration's own. */
static int config_env(struct wtio_config *c)
{
	const char *v = getenv("WTIO_LARGE_FOLIOS");

	if (v && !strcmp(v, "1"))
		c->flags |= WTIO_CONFIG_LARGE_FOLIOS;
	else if (v && !strcmp(v, "0"))
		c->flags &= ~WTIO_CONFIG_LARGE_FOLIOS;
	else if (v && *v)
		return -EINVAL;
	v = getenv("WTIO_IO_CHANNEL");
	if (v && !strcmp(v, "aio")) {
		c->flags |= WTIO_CONFIG_AIO_CHANNELS;
		c->flags &= ~WTIO_CONFIG_URING_CHANNELS;
	} else if (v && !strcmp(v, "io_uring")) {
		c->flags &= ~WTIO_CONFIG_AIO_CHANNELS;
		c->flags |= WTIO_CONFIG_URING_CHANNELS;
	} else if (v && *v) {
		return -EINVAL;
	}
	return 0;
}

WTIO_EXPORT int wtio_ctx_create(const struct wtio_config *cfg,
				struct wtio_ctx **ctxp)
{
	return wtio_ctx_create_io(cfg, NULL, NULL, ctxp);
}

/* A large folio is WTIO_LARGE_FOLIO_UNITS units, halved until it is at
 * most the largest folio and the largest I/O; only in a cache of at
 * least WTIO_MIN_LARGE_FOLIOS of them, else every chunk is one unit.
 * With large folios the budget is whole chunks (rounded down). */
#define WTIO_LARGE_FOLIO_UNITS 16u
#define WTIO_MIN_LARGE_FOLIOS 64u

static void large_folios_setup(struct wtio_ctx *ctx)
{
	uint32_t units = 1, u;

	if (ctx->cfg.flags & WTIO_CONFIG_LARGE_FOLIOS) {
		for (u = WTIO_LARGE_FOLIO_UNITS; u > 1; u >>= 1)
			if ((uint64_t)ctx->folio_size * u <= WTIO_MAX_FOLIO_SIZE &&
			    (uint64_t)ctx->folio_size * u <= ctx->cfg.max_io_size)
				break;
		/* A smaller cache keeps the one size (not a smaller large
		 * one: what the flag promises is 16 units or nothing). */
		if (ctx->nr_folios / u >= WTIO_MIN_LARGE_FOLIOS)
			units = u;
	}
	ctx->chunk_units = units;
	ctx->chunk_shift = (uint32_t)__builtin_ctz(units);
	ctx->large_size = ctx->folio_size * units;
	/* Whole chunks: the tail of the budget that is not one is unused. */
	ctx->nr_folios &= ~(uint64_t)(units - 1);
}

/* ops NULL: the built-in backend cfg->backend names. */
int wtio_ctx_create_io(const struct wtio_config *cfg,
		       const struct wtio_io_ops *ops, void *arg,
		       struct wtio_ctx **ctxp)
{
	struct wtio_ctx *ctx;
	int ret;

	if (!ctxp)
		return -EINVAL;
	/* The counter slots are cache-line aligned. */
	ctx = aligned_alloc(_Alignof(struct wtio_ctx),
			    (sizeof(*ctx) + _Alignof(struct wtio_ctx) - 1) &
			    ~(_Alignof(struct wtio_ctx) - 1));
	if (!ctx)
		return -ENOMEM;
	memset(ctx, 0, sizeof(*ctx));
	ctx->fork_gen = wtio_fork_gen_now();
	if (cfg)
		ctx->cfg = *cfg;
	else
		wtio_config_init(&ctx->cfg);
	ret = config_check(&ctx->cfg);
	if (!ret)
		ret = config_env(&ctx->cfg);
	if (ret)
		goto out_free;
	ctx->folio_size = ctx->cfg.folio_size;
	ctx->folio_shift = (uint32_t)__builtin_ctz(ctx->folio_size);
	ctx->nr_folios = ctx->cfg.cache_size / ctx->folio_size;
	large_folios_setup(ctx);
	pthread_mutex_init(&ctx->inodes_lock, NULL);
	pthread_cond_init(&ctx->kept_cond, NULL);

	ret = wtio_cache_init(ctx);
	if (ret)
		goto out_free;
	if (ops)
		ret = wtio_io_backend_setup(&ctx->io, ops, arg, ctx->arena,
					    ctx->arena_size, ctx->cfg.flags);
	else
		ret = wtio_io_backend_init(&ctx->io, ctx->cfg.backend,
					   ctx->arena, ctx->arena_size,
					   ctx->cfg.flags);
	if (ret)
		goto out_cache;
	ret = wtio_writeback_init(ctx);
	if (ret)
		goto out_io;
	*ctxp = ctx;
	return 0;

out_io:
	wtio_io_backend_exit(&ctx->io);
out_cache:
	wtio_cache_exit(ctx);
out_free:
	free(ctx);
	return ret;
}

void wtio_ctx_free(struct wtio_ctx *ctx)
{
	struct wtio_file *f;

	wtio_writeback_exit(ctx);
	wtio_io_backend_exit(&ctx->io);
	wtio_cache_exit(ctx);
	while ((f = ctx->all_files)) {
		ctx->all_files = f->next_all;
		free(f);
	}
	pthread_mutex_destroy(&ctx->inodes_lock);
	pthread_cond_destroy(&ctx->kept_cond);
	free(ctx);
}

WTIO_EXPORT int wtio_ctx_destroy(struct wtio_ctx *ctx)
{
	int ret;

	if (!ctx)
		return -EINVAL;
	/* The parent's: its threads are not here to stop, its cache not
	 * this process's to write back (forked.h). The child leaves it. */
	if (wtio_forked(ctx->fork_gen))
		return -ECHILD;
	pthread_mutex_lock(&ctx->inodes_lock);
	/* A queue keeps a channel of the backend and calls into the
	 * context until it is destroyed. */
	if (ctx->nr_files || ctx->nr_queues) {
		pthread_mutex_unlock(&ctx->inodes_lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&ctx->inodes_lock);
	/* Closed files kept with their cache (WTIO_CONFIG_KEEP_CLOSED)
	 * are written back first. */
	ret = wtio_evict_all_kept(ctx);
	wtio_ctx_free(ctx);
	return ret;
}

WTIO_EXPORT const char *wtio_ctx_backend_name(const struct wtio_ctx *ctx)
{
	return ctx ? wtio_io_name(&ctx->io) : NULL;
}

#define LOAD(c) atomic_load_explicit(&(c), memory_order_relaxed)

#define SUM(field) ({							\
	uint64_t sum_ = 0;						\
	for (unsigned int i_ = 0; i_ < WTIO_STAT_SLOTS; i_++)		\
		sum_ += LOAD(ctx->st[i_].field);			\
	sum_;								\
})

#ifdef WTIO_SHARED
/* libwtio.so: this is wtio_stats@@WTIO_0.3, the default; compat.c has
 * wtio_stats@WTIO_0.1 and @WTIO_0.2 for programs built against those
 * shorter structs. */
#define WTIO_STATS_ENTRY wtio_stats_v0_3
int wtio_stats_v0_3(struct wtio_ctx *ctx, struct wtio_stats *st);
__asm__(".symver wtio_stats_v0_3, wtio_stats@@WTIO_0.3");
#else
#define WTIO_STATS_ENTRY wtio_stats
#endif

WTIO_EXPORT int WTIO_STATS_ENTRY(struct wtio_ctx *ctx, struct wtio_stats *st)
{
	int64_t v;

	if (!ctx || !st)
		return -EINVAL;
	if (wtio_forked(ctx->fork_gen))
		return -ECHILD;
	memset(st, 0, sizeof(*st));
	st->hits = SUM(hits);
	st->misses = SUM(misses);
	st->readahead_folios = SUM(readahead);
	st->bytes_read = SUM(bytes_read);
	st->bytes_written = SUM(bytes_written);
	st->read_ios = SUM(read_ios);
	st->write_ios = SUM(write_ios);
	v = LOAD(ctx->nr_dirty);
	st->dirty_folios = v > 0 ? (uint64_t)v : 0;
	v = LOAD(ctx->nr_writeback);
	st->writeback_folios = v > 0 ? (uint64_t)v : 0;
	st->cached_folios = wtio_cache_nr_cached(ctx);
	st->total_folios = ctx->nr_folios;
	st->throttle_waits = SUM(throttle_waits);
	st->evictions = SUM(evictions);
	st->writeback_errors = SUM(wb_errors);
	st->rmw_reads = SUM(rmw_reads);
	st->stripe_splits = SUM(stripe_splits);
	st->dropbehind_folios = SUM(dropbehind);
	st->atomic_writes = SUM(atomic_writes);
	st->adaptive_writethrough = SUM(adaptive_wt);
	st->failed_dropped_folios = SUM(failed_dropped);
	return 0;
}
