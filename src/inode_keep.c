/* SPDX-License-Identifier: MIT */
/*
 * inode_keep.c - the list of closed inodes a context keeps with their
 * cache (WTIO_CONFIG_KEEP_CLOSED), and its cap.
 *
 * A kept inode stays in the inode table, so that a reopen finds its cache
 * and the flushers write it back as any other. Each holds its backing
 * descriptor, which is also what keeps the file's inode number from being
 * reused after an unlink: a new file at the path is another (dev, ino).
 * Descriptors are the limited resource (the program's own table, in the
 * shim), so at most max_kept are kept: half the soft RLIMIT_NOFILE when
 * the first is kept, at most 65536, at least 16. Past it the oldest is
 * evicted, a clean one among the oldest few first (it costs no I/O), then
 * one that holds no data a failed write-back gave back, and
 * from 7/8 of the cap on the flushers are asked to write back as many
 * inodes as were closed, oldest dirtied first, so that the oldest are
 * clean by the time they go and the close that evicts one makes no I/O.
 */
#include <stdatomic.h>
#include <sys/resource.h>

#include "inode_keep.h"
#include "ctx.h"
#include "inode.h"

#define KEEP_MIN 16
#define KEEP_MAX 65536
/* How far from the oldest a clean inode is looked for, and one whose
 * dirty data is not all a failed write-back's. */
#define KEEP_SCAN 8
#define KEEP_SCAN_FAILED 64
/* Closes between two kicks past 7/8 of the cap; each kick asks the
 * flushers for that many inodes. */
#define KEEP_KICK_EVERY 64

static uint64_t keep_cap(void)
{
	struct rlimit rl;
	uint64_t cap = 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		cap = rl.rlim_cur == RLIM_INFINITY ? KEEP_MAX :
		      (uint64_t)rl.rlim_cur / 2;
	if (cap > KEEP_MAX)
		cap = KEEP_MAX;
	if (cap < KEEP_MIN)
		cap = KEEP_MIN;
	return cap;
}

static void keep_unlink(struct wtio_ctx *ctx, struct wtio_inode *inode)
{
	if (inode->kept_prev)
		inode->kept_prev->kept_next = inode->kept_next;
	else
		ctx->kept_head = inode->kept_next;
	if (inode->kept_next)
		inode->kept_next->kept_prev = inode->kept_prev;
	else
		ctx->kept_tail = inode->kept_prev;
	inode->kept_prev = inode->kept_next = NULL;
	atomic_store(&inode->kept, false);
	ctx->nr_kept--;
}

/* No dirty data, no write in flight (dirty.c takes inodes_lock before
 * dirty_lock too). */
static bool inode_clean(struct wtio_inode *inode)
{
	bool clean;

	pthread_mutex_lock(&inode->dirty_lock);
	clean = !inode->nr_dirty && !atomic_load(&inode->nr_writeback);
	pthread_mutex_unlock(&inode->dirty_lock);
	return clean;
}

/*
 * The oldest kept inode, passing over those that hold data a failed
 * write-back gave back: such data leaves the cache only when nothing
 * else can (eviction tries it once more, then it is lost, the
 * context's error), so a transient fault and a busy cap do not lose it
 * while other files can go. The list is not empty.
 */
static struct wtio_inode *keep_oldest_spared(struct wtio_ctx *ctx)
{
	struct wtio_inode *inode;
	int i;

	for (i = 0, inode = ctx->kept_head; inode && i < KEEP_SCAN_FAILED;
	     i++, inode = inode->kept_next)
		if (!atomic_load(&inode->nr_dirty_error))
			return inode;
	return ctx->kept_head;
}

struct wtio_inode *wtio_keep_locked(struct wtio_ctx *ctx,
				    struct wtio_inode *inode,
				    uint32_t *write_inodes)
{
	struct wtio_inode *victim;
	int i;

	if (!ctx->max_kept)
		ctx->max_kept = keep_cap();
	inode->kept_next = NULL;
	inode->kept_prev = ctx->kept_tail;
	if (ctx->kept_tail)
		ctx->kept_tail->kept_next = inode;
	else
		ctx->kept_head = inode;
	ctx->kept_tail = inode;
	atomic_store(&inode->kept, true);
	ctx->nr_kept++;
	*write_inodes = ctx->nr_kept * 8 >= ctx->max_kept * 7 &&
			ctx->nr_keeps++ % KEEP_KICK_EVERY == 0 ?
			KEEP_KICK_EVERY : 0;
	if (ctx->nr_kept <= ctx->max_kept)
		return NULL;
	victim = NULL;
	for (i = 0, inode = ctx->kept_head; inode && i < KEEP_SCAN;
	     i++, inode = inode->kept_next)
		if (inode_clean(inode)) {
			victim = inode;
			break;
		}
	if (!victim)
		victim = keep_oldest_spared(ctx);
	keep_unlink(ctx, victim);
	victim->evicting = true;
	return victim;
}

void wtio_keep_revive_locked(struct wtio_ctx *ctx, struct wtio_inode *inode)
{
	if (atomic_load(&inode->kept))
		keep_unlink(ctx, inode);
}

struct wtio_inode *wtio_keep_take_oldest_locked(struct wtio_ctx *ctx)
{
	struct wtio_inode *inode;

	if (!ctx->kept_head)
		return NULL;
	inode = keep_oldest_spared(ctx);
	keep_unlink(ctx, inode);
	inode->evicting = true;
	return inode;
}

void wtio_keep_wait_evicted_locked(struct wtio_ctx *ctx)
{
	pthread_cond_wait(&ctx->kept_cond, &ctx->inodes_lock);
}
