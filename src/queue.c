/* SPDX-License-Identifier: MIT */
/*
 * queue.c - asynchronous submission (the aio path of write-through).
 *
 * The submitting thread copies the data into the cache, puts the folios
 * under writeback and submits the I/O itself, to a channel: a ring that
 * the queue's completion thread reaps. Completions therefore never wait
 * for the application to call wtio_queue_reap(): a folio under writeback
 * always has a thread that will end it. A reap that has to wait reaps
 * the ring itself meanwhile (the completion thread stands back), which
 * saves two thread switches an I/O. Backends without channels (psync)
 * complete the I/O inside submit, so the submitter finishes it at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "export.h"
#include "ctx.h"
#include "clock.h"
#include "inode.h"
#include "size.h"
#include "read.h"
#include "write.h"
#include "api.h"
#include "ioend.h"
#include "reaper.h"
#include "errseq.h"
#include "sys.h"
#include "forked.h"

/* A queue of a context inherited through fork() (forked.h): -ECHILD. */
#define QUEUE_FORKED(q) do {						\
	if (wtio_forked((q)->ctx->fork_gen))				\
		return -ECHILD;						\
} while (0)

struct wtio_aio {
	struct wtio_wb_ctl wbc;		/* first: done() gets a pointer to it */
	struct wtio_queue *queue;
	struct wtio_inode *inode;
	uint64_t user_data;
	ssize_t copied;
	int64_t end;
	bool dsync_extending;
	struct wtio_aio *next;		/* the queue's free list */
};

struct wtio_queue {
	struct wtio_ctx *ctx;
	unsigned int depth;
	pthread_mutex_t lock;
	pthread_cond_t done_cond;	/* reapers: a completion was posted */
	struct wtio_cqe *cqes;		/* ring of depth entries */
	unsigned int cq_head, cq_count;
	unsigned int inflight;		/* submitted and not yet reaped */
	unsigned int in_io;		/* submitted and not yet completed */
	/* depth of them, allocated with the queue: no allocation an I/O. */
	struct wtio_aio *aios, *free_aios;
	bool helping;			/* a reap is reaping the channel */
	int efd;
	/* Its channel and completion thread; reaper.chan NULL: I/O
	 * completes in submit. */
	struct wtio_reaper reaper;
};

/* Post a completion and give back aio (NULL: none used). Once the lock
 * is dropped the queue may be destroyed: nothing of it is touched after.
 * The eventfd write is under the lock for that reason (it never blocks). */
static void queue_post(struct wtio_queue *q, struct wtio_aio *aio,
		       uint64_t user_data, int64_t res)
{
	struct wtio_cqe *cqe;

	pthread_mutex_lock(&q->lock);
	cqe = &q->cqes[(q->cq_head + q->cq_count) % q->depth];
	cqe->user_data = user_data;
	cqe->res = res;
	q->cq_count++;
	q->in_io--;
	if (aio) {
		aio->next = q->free_aios;
		q->free_aios = aio;
	}
	pthread_cond_broadcast(&q->done_cond);
	if (q->efd >= 0) {
		uint64_t one = 1;
		ssize_t w = wtio_sys_write(q->efd, &one, sizeof(one));

		(void)w;	/* a full counter still wakes the poller */
	}
	pthread_mutex_unlock(&q->lock);
}

static void aio_complete(struct wtio_aio *aio)
{
	int64_t res = aio->wbc.error ? aio->wbc.error : aio->copied;
	int64_t off = aio->end - (aio->copied > 0 ? aio->copied : 0);
	struct wtio_inode *inode = aio->inode;
	/* Out of space part way: the part on disk, as wtio_writethrough
	 * returns it; the size first, without waiting for any lock (a
	 * completion thread must not). */
	int64_t short_count = wtio_wbc_space_short(&aio->wbc, (int)res, off,
						   aio->copied);

	if (short_count >= 0) {
		res = short_count;
		wtio_inode_tail_end_short(inode, &aio->wbc.undo, off + res,
					  true);
	}
	if (res > 0 && aio->dsync_extending) {
		int err = wtio_dsync_finish(aio->inode, off + res, true);

		if (err) {
			wtio_inode_record_error(aio->inode, err);
			res = err;
		}
	}
	/* A failed write leaves the size where it was: put it back
	 * without waiting for any lock (a completion thread must not). */
	if (short_count < 0)
		wtio_inode_tail_end(aio->inode, &aio->wbc.undo, res < 0, true);
	queue_post(aio->queue, aio, aio->user_data, res);
	wtio_inode_io_put(inode);
}

/* Last ioend of an aio completed (in the completion thread, or in the
 * submitter when it dropped the last reference). */
static void aio_done(struct wtio_wb_ctl *wbc)
{
	aio_complete((struct wtio_aio *)wbc);
}

WTIO_EXPORT int wtio_queue_create(struct wtio_ctx *ctx, unsigned int depth,
				  struct wtio_queue **queuep)
{
	struct wtio_queue *q;
	unsigned int i;
	int ret;

	if (!ctx || !queuep || depth < 1 || depth > 4096)
		return -EINVAL;
	if (wtio_forked(ctx->fork_gen))
		return -ECHILD;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->cqes = calloc(depth, sizeof(*q->cqes));
	q->aios = calloc(depth, sizeof(*q->aios));
	if (!q->cqes || !q->aios) {
		free(q->cqes);
		free(q->aios);
		free(q);
		return -ENOMEM;
	}
	for (i = 0; i < depth; i++) {
		q->aios[i].next = q->free_aios;
		q->free_aios = &q->aios[i];
	}
	q->ctx = ctx;
	q->depth = depth;
	q->efd = -1;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->done_cond, NULL);
	if (wtio_io_can(&ctx->io, WTIO_IO_CAP_CHANNELS)) {
		q->reaper.wait = &ctx->reaper_wait;
		ret = wtio_reaper_start(&q->reaper, &ctx->io, 2 * depth,
					WTIO_CHAN_QUEUE, NULL);
		if (ret)
			goto out_free;
	}
	/* Counted so that wtio_ctx_destroy refuses while it exists. */
	pthread_mutex_lock(&ctx->inodes_lock);
	ctx->nr_queues++;
	pthread_mutex_unlock(&ctx->inodes_lock);
	*queuep = q;
	return 0;

out_free:
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->done_cond);
	free(q->cqes);
	free(q->aios);
	free(q);
	return ret;
}

WTIO_EXPORT int wtio_queue_destroy(struct wtio_queue *q)
{
	struct wtio_ctx *ctx;

	if (!q)
		return -EINVAL;
	QUEUE_FORKED(q);
	ctx = q->ctx;
	wtio_reaper_want_begin(&ctx->reaper_wait);
	pthread_mutex_lock(&q->lock);
	while (q->in_io)
		pthread_cond_wait(&q->done_cond, &q->lock);
	pthread_mutex_unlock(&q->lock);
	wtio_reaper_want_end(&ctx->reaper_wait);
	wtio_reaper_stop(&q->reaper);
	if (q->efd >= 0)
		wtio_sys_close(q->efd);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->done_cond);
	free(q->cqes);
	free(q->aios);
	free(q);
	/* Last: from here on the context may be destroyed. */
	pthread_mutex_lock(&ctx->inodes_lock);
	ctx->nr_queues--;
	pthread_mutex_unlock(&ctx->inodes_lock);
	return 0;
}

/* Reserve a slot for one request, and an aio for it when aiop is set
 * (there is one for every slot). */
static int queue_reserve(struct wtio_queue *q, struct wtio_aio **aiop)
{
	int ret = 0;

	pthread_mutex_lock(&q->lock);
	if (q->inflight >= q->depth) {
		ret = -EAGAIN;
	} else {
		q->inflight++;
		q->in_io++;
		if (aiop) {
			*aiop = q->free_aios;
			q->free_aios = (*aiop)->next;
		}
	}
	pthread_mutex_unlock(&q->lock);
	return ret;
}

WTIO_EXPORT int wtio_queue_pwrite(struct wtio_queue *q, struct wtio_file *file,
				  const void *buf, size_t len, off_t off,
				  unsigned int flags, uint64_t user_data)
{
	struct iovec v = { (void *)buf, len };
	struct wtio_aio *aio;
	bool extending;
	ssize_t ret;

	if (!q)
		return -EINVAL;
	QUEUE_FORKED(q);
	ret = wtio_check_rw(file, &v, 1, off, &flags, true);
	if (ret < 0)
		return (int)ret;
	v.iov_len = len = (size_t)ret;	/* cut short at the size limit */
	/* Write-back writes and untorn writes complete before submit
	 * returns; only write-through is asynchronous. */
	if (!(flags & WTIO_WRITETHROUGH) || (flags & WTIO_ATOMIC) || !len) {
		if (queue_reserve(q, NULL))
			return -EAGAIN;
		ret = len ? wtio_file_write(file, &v, 1, off, flags) : 0;
		queue_post(q, NULL, user_data, ret);
		return 0;
	}
	if (queue_reserve(q, &aio))
		return -EAGAIN;
	memset(aio, 0, sizeof(*aio));
	aio->queue = q;
	aio->inode = file->inode;
	/* Until aio_complete: its DSYNC size step uses the inode after
	 * the folios left writeback, when a close may already be freeing
	 * it. */
	wtio_inode_io_get(aio->inode);
	aio->user_data = user_data;
	ret = wtio_writethrough_copy(file, &v, 1, off, flags, &aio->wbc, true,
				     &extending);
	aio->copied = ret;
	aio->end = off + (ret > 0 ? ret : 0);
	aio->dsync_extending = extending && (flags & WTIO_DSYNC);
	if (ret < 0)
		wtio_wbc_set_error(&aio->wbc, (int)ret);
	if (!aio->wbc.deferred) {
		/* Nothing left to submit: what was copied, if anything,
		 * was already written while making room. */
		aio_complete(aio);
		wtio_inode_cut_pending(file->inode);
		return 0;
	}
	aio->wbc.done = aio_done;
	aio->wbc.chan = q->reaper.chan;
	aio->wbc.plug = true;
	/* Our own reference, so the completion thread cannot finish (and
	 * free) the aio while its ioends are still being submitted. */
	atomic_fetch_add(&aio->wbc.inflight, 1);
	wtio_ioend_submit_deferred(&aio->wbc);
	if (!q->reaper.chan) {
		struct wtio_io_backend *be = &q->ctx->io;

		while (atomic_load(&aio->wbc.inflight) > 1)
			wtio_io_reap(be, 1, NULL);
	}
	if (atomic_fetch_sub(&aio->wbc.inflight, 1) == 1)
		aio_done(&aio->wbc);
	/* An undo's cut our hold of the file lock kept from it (size.h);
	 * none of this write's I/O is on this thread's own backend now. */
	wtio_inode_cut_pending(file->inode);
	return 0;
}

WTIO_EXPORT int wtio_queue_pread(struct wtio_queue *q, struct wtio_file *file,
				 void *buf, size_t len, off_t off,
				 unsigned int flags, uint64_t user_data)
{
	struct iovec v = { buf, len };
	ssize_t ret;

	if (!q)
		return -EINVAL;
	QUEUE_FORKED(q);
	ret = wtio_check_rw(file, &v, 1, off, &flags, false);
	if (ret < 0)
		return (int)ret;
	if (queue_reserve(q, NULL))
		return -EAGAIN;
	ret = len ? wtio_buffered_read(file, &v, 1, off, flags) : 0;
	queue_post(q, NULL, user_data, ret);
	return 0;
}

/* One wait on the queue's channel in this thread, delivering what comes
 * (queue_post then runs here). -ETIME once the deadline passed. */
static int queue_help(struct wtio_queue *q, bool timed, uint64_t end_ns)
{
	struct timespec left;
	uint64_t now;

	if (!timed)
		return wtio_reaper_help(&q->reaper, NULL);
	now = wtio_now_ns();
	if (now >= end_ns)
		return -ETIME;
	left.tv_sec = (time_t)((end_ns - now) / 1000000000ull);
	left.tv_nsec = (long)((end_ns - now) % 1000000000ull);
	return wtio_reaper_help(&q->reaper, &left);
}

WTIO_EXPORT int wtio_queue_reap(struct wtio_queue *q, struct wtio_cqe *cqes,
				unsigned int max, unsigned int min,
				int64_t timeout_ns)
{
	struct timespec deadline;
	uint64_t end_ns = 0;
	bool help = q && q->reaper.chan;
	unsigned int n, i;
	int ret;

	if (!q || (!cqes && max) || min > max)
		return -EINVAL;
	QUEUE_FORKED(q);
	if (timeout_ns >= 0) {
		wtio_deadline_in_ns(&deadline, (uint64_t)timeout_ns);
		end_ns = wtio_now_ns() + (uint64_t)timeout_ns;
	}
	pthread_mutex_lock(&q->lock);
	/* Never wait for more than can still arrive. */
	while (q->cq_count < min && q->cq_count < q->inflight) {
		if (help && !q->helping) {
			q->helping = true;
			pthread_mutex_unlock(&q->lock);
			ret = queue_help(q, timeout_ns >= 0, end_ns);
			/* An owner that waits on the ring will most likely be
			 * back to do so after its next submissions (not one
			 * that polls, min 0, or waits on the eventfd: those
			 * never get here, and keep the thread's service). */
			if (ret >= 0)
				wtio_reaper_attend(&q->reaper);
			pthread_mutex_lock(&q->lock);
			q->helping = false;
			if (ret == -ETIME)
				break;
			/* Nothing on the ring (the I/O went elsewhere, or
			 * another reaper has it): wait for the post. */
			if (ret < 0)
				help = false;
			continue;
		}
		if (timeout_ns < 0) {
			pthread_cond_wait(&q->done_cond, &q->lock);
		} else if (pthread_cond_timedwait(&q->done_cond, &q->lock,
						  &deadline) == ETIMEDOUT) {
			break;
		}
		help = q->reaper.chan != NULL;
	}
	n = q->cq_count < max ? q->cq_count : max;
	for (i = 0; i < n; i++) {
		cqes[i] = q->cqes[q->cq_head];
		q->cq_head = (q->cq_head + 1) % q->depth;
	}
	q->cq_count -= n;
	q->inflight -= n;
	if (q->efd >= 0 && !q->cq_count) {
		uint64_t v;
		ssize_t r = wtio_sys_read(q->efd, &v, sizeof(v));

		(void)r;	/* EAGAIN: nothing to clear */
	}
	pthread_mutex_unlock(&q->lock);
	return (int)n;
}

WTIO_EXPORT unsigned int wtio_queue_inflight(const struct wtio_queue *q)
{
	unsigned int n;

	/* (an inherited queue's requests are the parent's: none here) */
	if (!q || wtio_forked(q->ctx->fork_gen))
		return 0;
	pthread_mutex_lock((pthread_mutex_t *)&q->lock);
	n = q->inflight;
	pthread_mutex_unlock((pthread_mutex_t *)&q->lock);
	return n;
}

WTIO_EXPORT int wtio_queue_eventfd(struct wtio_queue *q)
{
	int fd;

	if (!q)
		return -EINVAL;
	QUEUE_FORKED(q);
	pthread_mutex_lock(&q->lock);
	if (q->efd < 0) {
		q->efd = eventfd(q->cq_count ? 1 : 0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (q->efd < 0) {
			fd = -errno;
			pthread_mutex_unlock(&q->lock);
			return fd;
		}
	}
	fd = q->efd;
	pthread_mutex_unlock(&q->lock);
	return fd;
}
