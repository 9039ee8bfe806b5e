/* SPDX-License-Identifier: MIT */
/*
 * engine_wtio.c - the wtio modes: one context per run (--cache-size,
 * --folio-size, --flushers), one wtio_file per file shared by the threads.
 * iodepth 1: wtio_pwrite/wtio_pread in a loop. iodepth > 1: the async
 * queue API (wtio_queue_*), one queue per thread.
 *
 * The queue functions are referenced weakly, so this tool builds and runs
 * against a libwtio that does not have them yet: engine_pick() then
 * reports the iodepth > 1 wtio modes as unsupported.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "raidtarget.h"

#pragma weak wtio_queue_create
#pragma weak wtio_queue_destroy
#pragma weak wtio_queue_pwrite
#pragma weak wtio_queue_pread
#pragma weak wtio_queue_reap

static bool wq_available(const char **why)
{
	if (wtio_queue_create && wtio_queue_destroy && wtio_queue_pwrite &&
	    wtio_queue_pread && wtio_queue_reap)
		return true;
	*why = "iodepth > 1 needs wtio_queue_*, not in this libwtio";
	return false;
}

static int w_mode_init(struct trial *tr)
{
	const struct job_opts *job = tr->job;
	struct wtio_config cfg;

	wtio_config_init(&cfg);
	if (job->cache_size)
		cfg.cache_size = job->cache_size;
	if (job->folio_size)
		cfg.folio_size = (uint32_t)job->folio_size;
	if (job->flushers)
		cfg.nr_flushers = job->flushers;
	if (job->dirty_ratio)
		cfg.dirty_ratio = job->dirty_ratio;
	if (job->dirty_bg_ratio)
		cfg.dirty_background_ratio = job->dirty_bg_ratio;
	/* The kernel's rule (domain_dirty_limits): a background threshold
	 * at or above the limit is taken as half the limit. */
	if (cfg.dirty_background_ratio >= cfg.dirty_ratio)
		cfg.dirty_background_ratio = cfg.dirty_ratio / 2;
	if (!job->stripe_align)
		cfg.flags |= WTIO_CONFIG_NO_STRIPE_ALIGN;
	if (job->size_ahead)
		cfg.flags |= WTIO_CONFIG_SIZE_AHEAD;
	if (job->large_folios)
		cfg.flags |= WTIO_CONFIG_LARGE_FOLIOS;
	cfg.flags |= tr->mode->cfgflags;
	/* Closed files kept cached hold a descriptor each, up to half the
	 * soft limit: let them use what the hard limit allows. */
	if (cfg.flags & WTIO_CONFIG_KEEP_CLOSED) {
		struct rlimit rl;

		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	if (bench_raid_active()) {
		bench_raid_stats_reset();
		return bench_raid_ctx_create(&cfg, &tr->wctx);
	}
	return wtio_ctx_create(&cfg, &tr->wctx);
}

static void w_mode_exit(struct trial *tr)
{
	/* With closed files kept cached, destroy writes them back: an
	 * error there is a lost write the figures must not hide. */
	int ret = tr->wctx ? wtio_ctx_destroy(tr->wctx) : 0;

	if (ret)
		fprintf(stderr, "wtio-bench: %s: wtio_ctx_destroy: %s\n",
			tr->mode->name, strerror(-ret));
	tr->wctx = NULL;
	bench_raid_report(tr->mode->name);
}

static int w_open_file(struct trial *tr, struct bfile *f)
{
	/* Flags go per call, so that reads get only the read flags. */
	return wtio_open(tr->wctx, f->path, O_RDWR | O_CREAT, 0644, 0, &f->wf);
}

static int w_close_file(struct trial *tr, struct bfile *f)
{
	int ret = 0;

	if (f->wf)
		ret = wtio_close(f->wf);
	f->wf = NULL;
	return ret;
}

static int w_sync_queue(struct thread_ctx *tc, struct io_u *u)
{
	if (u->is_read)
		u->res = wtio_pread(u->f->wf, u->buf, u->len, (off_t)u->off,
				    tc->tr->rflags);
	else
		u->res = wtio_pwrite(u->f->wf, u->buf, u->len, (off_t)u->off,
				     tc->tr->wflags);
	return 1;
}

static int w_sync_range(struct thread_ctx *tc, struct bfile *f, uint64_t off,
			uint64_t len, unsigned int flags)
{
	unsigned int wf = 0;

	/* sync_file_range(2) bits -> wtio's (same meanings). */
	if (flags & 1u)	/* SYNC_FILE_RANGE_WAIT_BEFORE */
		wf |= WTIO_SYNC_RANGE_WAIT_BEFORE;
	if (flags & 2u)	/* SYNC_FILE_RANGE_WRITE */
		wf |= WTIO_SYNC_RANGE_WRITE;
	if (flags & 4u)	/* SYNC_FILE_RANGE_WAIT_AFTER */
		wf |= WTIO_SYNC_RANGE_WAIT_AFTER;
	return wtio_sync_range(f->wf, (off_t)off, (off_t)len, wf);
}

static int w_fsync(struct thread_ctx *tc, struct bfile *f)
{
	return wtio_fsync(f->wf);
}

static long w_read_file(struct trial *tr, struct bfile *f, void *buf,
			size_t len, uint64_t off)
{
	return (long)wtio_pread(f->wf, buf, len, (off_t)off, 0);
}

static int w_create_file(struct thread_ctx *tc, const char *path,
			 const void *buf, size_t len)
{
	struct wtio_file *wf;
	int ret = wtio_open(tc->tr->wctx, path, O_RDWR | O_CREAT | O_TRUNC,
			    0644, 0, &wf);

	if (ret)
		return ret;
	ssize_t r = wtio_pwrite(wf, buf, len, 0, tc->tr->wflags);
	ret = r < 0 ? (int)r : ((size_t)r == len ? 0 : -EIO);
	int cret = wtio_close(wf);
	return ret ? ret : cret;
}

/* --- iodepth > 1: the queue API --- */

struct wq_thread {
	struct wtio_queue *q;
	struct wtio_cqe *cqes;
};

static int wq_thread_init(struct thread_ctx *tc)
{
	struct wq_thread *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->cqes = calloc(tc->depth, sizeof(*w->cqes));
	if (!w->cqes) {
		free(w);
		return -ENOMEM;
	}
	int ret = wtio_queue_create(tc->tr->wctx, tc->depth, &w->q);
	if (ret) {
		free(w->cqes);
		free(w);
		return ret;
	}
	tc->eng = w;
	return 0;
}

static void wq_thread_exit(struct thread_ctx *tc)
{
	struct wq_thread *w = tc->eng;

	if (!w)
		return;
	wtio_queue_destroy(w->q);
	free(w->cqes);
	free(w);
	tc->eng = NULL;
}

static int wq_queue(struct thread_ctx *tc, struct io_u *u)
{
	struct wq_thread *w = tc->eng;

	if (u->is_read)
		return wtio_queue_pread(w->q, u->f->wf, u->buf, u->len,
					(off_t)u->off, tc->tr->rflags,
					(uint64_t)(uintptr_t)u);
	return wtio_queue_pwrite(w->q, u->f->wf, u->buf, u->len, (off_t)u->off,
				 tc->tr->wflags, (uint64_t)(uintptr_t)u);
}

static int wq_reap(struct thread_ctx *tc, unsigned int min,
		   struct io_u **done, unsigned int max)
{
	struct wq_thread *w = tc->eng;

	if (max > tc->depth)
		max = tc->depth;
	int n = wtio_queue_reap(w->q, w->cqes, max, min, -1);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		struct io_u *u = (struct io_u *)(uintptr_t)w->cqes[i].user_data;
		u->res = w->cqes[i].res;
		done[i] = u;
	}
	return n;
}

const struct engine_ops engine_wtio_sync = {
	.name = "wtio-sync",
	.mode_init = w_mode_init,
	.mode_exit = w_mode_exit,
	.open_file = w_open_file,
	.close_file = w_close_file,
	.queue = w_sync_queue,
	.sync_range = w_sync_range,
	.fsync = w_fsync,
	.read_file = w_read_file,
	.create_file = w_create_file,
};

const struct engine_ops engine_wtio_queue = {
	.name = "wtio-queue",
	.available = wq_available,
	.mode_init = w_mode_init,
	.mode_exit = w_mode_exit,
	.open_file = w_open_file,
	.close_file = w_close_file,
	.thread_init = wq_thread_init,
	.thread_exit = wq_thread_exit,
	.queue = wq_queue,
	.reap = wq_reap,
	.sync_range = w_sync_range,
	.fsync = w_fsync,
	.read_file = w_read_file,
	.create_file = w_create_file,
};
