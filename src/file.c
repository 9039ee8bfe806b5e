/* SPDX-License-Identifier: MIT */
/*
 * file.c - open and close, the shared per-file state (wtio_inode: size,
 * lock, error sequence, geometry) and size changes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reserve.h"
#include "file.h"
#include "folio.h"
#include "cache.h"
#include "ctx.h"
#include "inode.h"
#include "size.h"
#include "dirty.h"
#include "flush.h"
#include "writeback.h"

#define WTIO_OPEN_FLAGS (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_DSYNC | \
			 O_SYNC | O_CLOEXEC | O_NOATIME | O_DIRECT | O_LARGEFILE)
#define WTIO_MAX_FILE_SIZE ((int64_t)1 << 62)

static uint32_t round_down_pow2(uint32_t v)
{
	return v ? 1u << (31 - __builtin_clz(v)) : 0;
}

static int inode_setup_geometry(struct wtio_ctx *ctx, struct wtio_inode *inode)
{
	uint32_t bs;

	wtio_geometry_probe(inode->fd, &inode->geo);
	bs = inode->geo.dio_offset_align;
	if (bs < 512)
		bs = 512;
	/* Per-block state at the filesystem's block size when the folio
	 * allows: a sub-block direct write is slow (XFS serialises it). */
	if (round_down_pow2(inode->geo.blksize) > bs)
		bs = round_down_pow2(inode->geo.blksize);
	if (bs > ctx->folio_size)
		bs = ctx->folio_size;
	if (bs < ctx->folio_size / WTIO_MAX_BLOCKS_PER_FOLIO)
		bs = ctx->folio_size / WTIO_MAX_BLOCKS_PER_FOLIO;
	if (bs < inode->geo.dio_offset_align || bs < inode->geo.dio_mem_align)
		return -EOPNOTSUPP;	/* folio smaller than a DIO block */
	inode->block_size = bs;
	inode->block_shift = (uint32_t)__builtin_ctz(bs);
	inode->blocks_per_folio = ctx->folio_size / bs;
	if (ctx->cfg.stripe_unit) {
		inode->geo.stripe_unit = ctx->cfg.stripe_unit;
		inode->geo.stripe_width = ctx->cfg.stripe_width ?
			ctx->cfg.stripe_width : ctx->cfg.stripe_unit;
		inode->geo.stripe_source = "config";
	}
	/* A stripe unit that is not whole blocks cannot be honoured. */
	if ((ctx->cfg.flags & WTIO_CONFIG_NO_STRIPE_ALIGN) ||
	    inode->geo.stripe_unit % bs) {
		inode->geo.stripe_unit = 0;
		inode->geo.stripe_width = 0;
		inode->geo.stripe_source = "none";
	}
	return 0;
}

/*
 * The largest size this file may have: the filesystem's s_maxbytes for
 * it (ext4 gives files without extents a smaller one). lseek(SEEK_SET)
 * accepts an offset up to exactly that and no further (vfs_setpos under
 * generic_file_llseek_size, with the limit the write checks use), so a
 * binary search finds it: about 63 lseeks, once per inode, on our own
 * descriptor, whose position no I/O uses (all of it is positional).
 * pathconf(_PC_FILESIZEBITS) cannot tell: it says 64 on ext4, whose
 * limit is 16 TiB - 4 KiB. A filesystem whose lseek refuses even 0 gets
 * wtio's own cap, 2^62, which also bounds the size arithmetic.
 */
static int64_t probe_max_bytes(int fd)
{
	int64_t lo = 0, hi = WTIO_MAX_FILE_SIZE;

	if (lseek(fd, 0, SEEK_SET) != 0 || lseek(fd, hi, SEEK_SET) == hi) {
		lseek(fd, 0, SEEK_SET);
		return hi;
	}
	while (lo < hi) {
		int64_t mid = lo + (hi - lo + 1) / 2;

		if (lseek(fd, mid, SEEK_SET) == mid)
			lo = mid;
		else
			hi = mid - 1;
	}
	lseek(fd, 0, SEEK_SET);
	return lo;
}

static struct wtio_inode *inode_new(struct wtio_ctx *ctx, int fd,
				    const struct stat *st, bool writable)
{
	struct wtio_inode *inode = calloc(1, sizeof(*inode));

	if (!inode) {
		errno = ENOMEM;
		return NULL;
	}
	inode->ctx = ctx;
	inode->fd = fd;
	inode->fd_writable = writable;
	inode->dev = st->st_dev;
	inode->ino = st->st_ino;
	atomic_store(&inode->i_size, st->st_size);
	atomic_store(&inode->disk_size_lb, st->st_size);
	inode->max_bytes = probe_max_bytes(fd);
	atomic_store(&inode->tail_guard, INT64_MAX);
	if (inode_setup_geometry(ctx, inode)) {
		free(inode);
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* Blocks go to disk whole (read-modify-write at block_size, which
	 * large folios make up to 16 KiB): a block crossing the filesystem's
	 * limit could never be written back, so the limit wtio enforces is
	 * the last whole block below it. */
	inode->max_bytes &= ~(int64_t)(inode->block_size - 1);
	pthread_rwlock_init(&inode->i_rwsem, NULL);
	pthread_mutex_init(&inode->i_pages_lock, NULL);
	pthread_mutex_init(&inode->dirty_lock, NULL);
	pthread_mutex_init(&inode->wb_list_lock, NULL);
	pthread_mutex_init(&inode->extend_lock, NULL);
	pthread_cond_init(&inode->extend_cond, NULL);
	pthread_mutex_init(&inode->io_lock, NULL);
	pthread_cond_init(&inode->io_cond, NULL);
	return inode;
}

void wtio_inode_io_get(struct wtio_inode *inode)
{
	pthread_mutex_lock(&inode->io_lock);
	inode->io_refs++;
	pthread_mutex_unlock(&inode->io_lock);
}

/* Under the lock, decrement and wake included, so that the waiter in
 * wtio_inode_free cannot free the inode between the two. */
void wtio_inode_io_put(struct wtio_inode *inode)
{
	pthread_mutex_lock(&inode->io_lock);
	if (--inode->io_refs == 0)
		pthread_cond_broadcast(&inode->io_cond);
	pthread_mutex_unlock(&inode->io_lock);
}

void wtio_inode_free(struct wtio_inode *inode)
{
	pthread_mutex_lock(&inode->io_lock);
	while (inode->io_refs)
		pthread_cond_wait(&inode->io_cond, &inode->io_lock);
	pthread_mutex_unlock(&inode->io_lock);
	pthread_mutex_destroy(&inode->io_lock);
	pthread_cond_destroy(&inode->io_cond);
	close(inode->fd);
	pthread_rwlock_destroy(&inode->i_rwsem);
	pthread_mutex_destroy(&inode->i_pages_lock);
	pthread_mutex_destroy(&inode->dirty_lock);
	pthread_mutex_destroy(&inode->wb_list_lock);
	pthread_mutex_destroy(&inode->extend_lock);
	pthread_cond_destroy(&inode->extend_cond);
	wtio_reserve_free(inode);	/* also freed by wtio_ctx_crash */
	free(inode);
}

/* Find or create the inode for an open descriptor; consumes fd. */
static int inode_get(struct wtio_ctx *ctx, int fd, bool writable,
		     struct wtio_inode **inodep)
{
	struct wtio_inode *inode;
	struct stat st;

	if (fstat(fd, &st) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	pthread_mutex_lock(&ctx->inodes_lock);
	for (inode = ctx->inodes; inode; inode = inode->next)
		if (inode->dev == st.st_dev && inode->ino == st.st_ino)
			break;
	if (inode) {
		/* dup3 swaps the descriptor atomically under I/O already
		 * submitted on the old one. */
		if (writable && !inode->fd_writable &&
		    dup3(fd, inode->fd, O_CLOEXEC) >= 0)
			inode->fd_writable = true;
		close(fd);
		inode->refs++;
	} else {
		inode = inode_new(ctx, fd, &st, writable);
		if (!inode) {
			/* -ENOMEM, or -EOPNOTSUPP: no usable geometry. */
			int err = -errno;

			pthread_mutex_unlock(&ctx->inodes_lock);
			close(fd);
			return err;
		}
		inode->refs = 1;
		inode->next = ctx->inodes;
		ctx->inodes = inode;
	}
	ctx->nr_files++;
	pthread_mutex_unlock(&ctx->inodes_lock);
	*inodep = inode;
	return 0;
}

/* A handle: a closed one again, or a new one. Every handle stays on
 * ctx->all_files until the context goes, so that a closed (or, after a
 * simulated crash, an abandoned) handle is never freed memory. */
static struct wtio_file *file_alloc(struct wtio_ctx *ctx)
{
	struct wtio_file *file;

	pthread_mutex_lock(&ctx->inodes_lock);
	file = ctx->dead_files;
	if (file) {
		ctx->dead_files = file->next_dead;
	} else {
		file = calloc(1, sizeof(*file));
		if (file) {
			file->next_all = ctx->all_files;
			ctx->all_files = file;
		}
	}
	pthread_mutex_unlock(&ctx->inodes_lock);
	return file;
}

/* Give back a handle that never became live. */
static void file_free(struct wtio_ctx *ctx, struct wtio_file *file)
{
	pthread_mutex_lock(&ctx->inodes_lock);
	file->next_dead = ctx->dead_files;
	ctx->dead_files = file;
	pthread_mutex_unlock(&ctx->inodes_lock);
}

static uint64_t errseq_sample(_Atomic uint64_t *eseq);

int wtio_file_open(struct wtio_ctx *ctx, const char *path, int oflags,
		   mode_t mode, unsigned int default_flags,
		   struct wtio_file **filep)
{
	int acc = oflags & O_ACCMODE;
	bool writable = acc != O_RDONLY;
	struct wtio_inode *inode = NULL;
	struct wtio_file *file;
	int fd, ret;

	if ((oflags & ~WTIO_OPEN_FLAGS) || acc == O_ACCMODE)
		return -EINVAL;
	if ((oflags & O_TRUNC) && !writable)
		return -EINVAL;
	/* The cache is shared by every handle: the backing descriptor must
	 * be able to write back whoever dirtied it, so prefer read-write. */
	fd = open(path, (oflags & (O_CREAT | O_EXCL | O_NOATIME)) |
		  O_RDWR | O_DIRECT | O_CLOEXEC, mode);
	if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS) &&
	    !writable)
		fd = open(path, (oflags & O_NOATIME) | O_RDONLY | O_DIRECT |
			  O_CLOEXEC);
	if (fd < 0)
		return errno == EINVAL ? -EOPNOTSUPP : -errno;
	writable = (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR;

	file = file_alloc(ctx);
	if (!file) {
		close(fd);
		return -ENOMEM;
	}
	ret = inode_get(ctx, fd, writable, &inode);
	if (ret) {
		file_free(ctx, file);
		return ret;
	}
	file->ctx = ctx;
	file->inode = inode;
	file->oflags = oflags;
	file->next_dead = NULL;
	atomic_store(&file->ra_next, 0);
	atomic_store(&file->ra_window, 0);
	file->default_flags = default_flags;
	if (oflags & (O_DSYNC | O_SYNC))
		file->default_flags |= WTIO_DSYNC;
	atomic_store(&file->err_seen, errseq_sample(&inode->wb_err));
	atomic_store(&file->magic, WTIO_FILE_MAGIC);
	if (oflags & O_TRUNC) {
		ret = wtio_file_truncate(file, 0);
		if (ret) {
			wtio_file_close(file);
			return ret;
		}
	}
	*filep = file;
	return 0;
}

/*
 * The kernel's errseq_t (lib/errseq.c), so that handles learn of errors
 * exactly as Linux file descriptors do:
 *  - an error is reported once to every handle open when it happened;
 *  - a handle opened later reports it too, as long as no handle has
 *    reported it yet (errseq_sample gives 0 for an unseen error), and not
 *    once some handle has (the word then has WTIO_ERRSEQ_SEEN set);
 *  - errors that come while the last one is unseen replace its errno and
 *    are reported together, once (the counter moves only past a seen
 *    error).
 */
#define WTIO_ERRSEQ_ERRNO	0xfffull
#define WTIO_ERRSEQ_SEEN	(1ull << 12)
#define WTIO_ERRSEQ_CTR_INC	(1ull << 13)

static uint64_t errseq_sample(_Atomic uint64_t *eseq)
{
	uint64_t old = atomic_load(eseq);

	return (old & WTIO_ERRSEQ_SEEN) ? old : 0;
}

static void errseq_set(_Atomic uint64_t *eseq, int err)
{
	uint64_t old = atomic_load(eseq), new;

	if (err >= 0 || (uint64_t)-err > WTIO_ERRSEQ_ERRNO)
		err = -EIO;
	do {
		new = (old & ~(WTIO_ERRSEQ_ERRNO | WTIO_ERRSEQ_SEEN)) |
		      (uint64_t)-err;
		if (old & WTIO_ERRSEQ_SEEN)
			new += WTIO_ERRSEQ_CTR_INC;
		if (new == old)
			return;
	} while (!atomic_compare_exchange_weak(eseq, &old, new));
}

void wtio_inode_record_error(struct wtio_inode *inode, int err)
{
	atomic_store(&inode->err_last, err);
	atomic_fetch_add(&inode->err_seq, 1);
	errseq_set(&inode->wb_err, err);
}

/* errseq_check_and_advance, with the handle's sample advanced by a
 * compare-exchange, so that of two callers on one handle (fsync racing
 * close) only one reports a given error. */
int wtio_file_check_error(struct wtio_file *file)
{
	_Atomic uint64_t *eseq = &file->inode->wb_err;
	uint64_t since = atomic_load(&file->err_seen);

	for (;;) {
		uint64_t old = atomic_load(eseq), new;

		if (old == since)
			return 0;
		new = old | WTIO_ERRSEQ_SEEN;
		/* A failed exchange means a newer error came: we report
		 * this one, the next check reports that one. */
		if (new != old)
			atomic_compare_exchange_strong(eseq, &old, new);
		if (atomic_compare_exchange_strong(&file->err_seen, &since,
						   new))
			return -(int)(new & WTIO_ERRSEQ_ERRNO);
	}
}

int wtio_inode_sync_size(struct wtio_inode *inode, bool wait_io)
{
	int64_t size = wtio_inode_size(inode);
	struct stat st;

	if (fstat(inode->fd, &st) < 0)
		return -errno;
	atomic_store(&inode->size_ahead, 0);
	if (st.st_size == size)
		return 0;
	/* The backing file only grows between the fstat and the ftruncate
	 * (our writes completing), so this stays a shrink: nothing to
	 * zero, nothing to wait for. */
	return wtio_inode_set_disk_size(inode, size,
					wait_io && size > st.st_size);
}

/*
 * XFS sizes a file with ftruncate by reading the old size, then waiting
 * for direct I/O, then zeroing from the old size to the new one through
 * its page cache: a direct write that extended the file while it waited
 * is zeroed (found as 1 MiB of zeros where an ioend had written). So no
 * write that may move the end is in flight while the size grows.
 */
int wtio_inode_set_disk_size(struct wtio_inode *inode, int64_t size,
			     bool wait_io)
{
	int ret = 0;

	pthread_mutex_lock(&inode->extend_lock);
	if (size < atomic_load(&inode->disk_size_lb))
		atomic_store(&inode->disk_size_lb, size);
	atomic_store(&inode->extend_gate, 1);
	while (wait_io && atomic_load(&inode->nr_dio_extending))
		pthread_cond_wait(&inode->extend_cond, &inode->extend_lock);
	ret = wtio_io_set_size(&inode->ctx->io, inode->fd, size);
	if (!ret) {
		atomic_store(&inode->disk_size_lb, size);
		/* Nothing lies past the new size: give back what was
		 * reserved there for appends (reserve.c). */
		wtio_reserve_clamp(inode, size);
	}
	atomic_store(&inode->extend_gate, 0);
	pthread_cond_broadcast(&inode->extend_cond);
	pthread_mutex_unlock(&inode->extend_lock);
	return ret;
}

bool wtio_inode_dio_write_begin(struct wtio_inode *inode, int64_t off,
				int64_t len, void (*reap_own)(void *),
				void *arg)
{
	/* Inside the file's known size: cannot move its end. */
	if (off + len <= atomic_load_explicit(&inode->disk_size_lb,
					      memory_order_acquire))
		return false;
	for (;;) {
		/* Paired with set_disk_size: it raises the gate, then reads
		 * the count; we raise the count, then read the gate. */
		atomic_fetch_add(&inode->nr_dio_extending, 1);
		if (!atomic_load(&inode->extend_gate))
			return true;
		wtio_inode_dio_write_end(inode, true, off, 0);
		/* The size change waits for our own writes in flight too. */
		if (reap_own)
			reap_own(arg);
		pthread_mutex_lock(&inode->extend_lock);
		while (atomic_load(&inode->extend_gate))
			pthread_cond_wait(&inode->extend_cond,
					  &inode->extend_lock);
		pthread_mutex_unlock(&inode->extend_lock);
	}
}

void wtio_inode_dio_write_end(struct wtio_inode *inode, bool extending,
			      int64_t off, ssize_t res)
{
	int64_t end = off + (res > 0 ? res : 0);
	int64_t lb = atomic_load_explicit(&inode->disk_size_lb,
					  memory_order_relaxed);

	/* A completed direct write leaves the file at least this long. */
	while (res > 0 && end > lb &&
	       !atomic_compare_exchange_weak(&inode->disk_size_lb, &lb, end))
		;
	if (!extending)
		return;
	if (atomic_fetch_sub(&inode->nr_dio_extending, 1) == 1 &&
	    atomic_load(&inode->extend_gate)) {
		pthread_mutex_lock(&inode->extend_lock);
		pthread_cond_broadcast(&inode->extend_cond);
		pthread_mutex_unlock(&inode->extend_lock);
	}
}

/* Referenced folios of the inode at or after first_index; *nr set. */
struct wtio_folio **wtio_inode_collect(struct wtio_inode *inode,
				       uint64_t first_index, uint64_t *nr)
{
	struct wtio_folio **v, *f;
	uint64_t n = 0;

	pthread_mutex_lock(&inode->i_pages_lock);
	v = malloc((inode->nr_pages + 1) * sizeof(*v));
	if (v) {
		for (f = inode->pages; f; f = f->i_next) {
			if (atomic_load_explicit(&f->index, memory_order_relaxed) <
			    first_index)
				continue;
			wtio_folio_get(f);
			v[n++] = f;
		}
	}
	pthread_mutex_unlock(&inode->i_pages_lock);
	*nr = n;
	return v;
}

/*
 * Without memory for wtio_inode_collect's array: the inode's referenced
 * folio with the lowest index at or after *next (then *next moves past
 * it), or NULL. Quadratic, but a truncate or a drop that skipped folios
 * for want of memory would leave stale data in the cache.
 */
static struct wtio_folio *inode_next_folio(struct wtio_inode *inode,
					   uint64_t *next)
{
	struct wtio_folio *f, *best = NULL;
	uint64_t best_idx = 0;

	pthread_mutex_lock(&inode->i_pages_lock);
	for (f = inode->pages; f; f = f->i_next) {
		uint64_t idx = atomic_load_explicit(&f->index,
						    memory_order_relaxed);

		if (idx >= *next && (!best || idx < best_idx)) {
			best = f;
			best_idx = idx;
		}
	}
	if (best) {
		wtio_folio_get(best);
		*next = best_idx + 1;
	}
	pthread_mutex_unlock(&inode->i_pages_lock);
	return best;
}

/*
 * Lock each collected folio that is still the inode's, wait for its I/O
 * and hand it to fn; then unlock and release it.
 */
static void inode_for_each_folio(struct wtio_inode *inode, uint64_t first,
				 void (*fn)(struct wtio_inode *,
					    struct wtio_folio *, void *),
				 void *arg)
{
	uint64_t nr, i;
	struct wtio_folio **v = wtio_inode_collect(inode, first, &nr);
	uint64_t next = first;

	for (i = 0; v ? i < nr : true; i++) {
		struct wtio_folio *f = v ? v[i] : inode_next_folio(inode, &next);

		if (!f)
			break;
		wtio_folio_lock(f);
		wtio_folio_wait_writeback(f);
		if (atomic_load(&f->inode) == inode)
			fn(inode, f, arg);
		wtio_folio_unlock(f);
		wtio_folio_put(inode->ctx, f);
	}
	free(v);
}

static void drop_one(struct wtio_inode *inode, struct wtio_folio *f, void *arg)
{
	wtio_folio_cancel_dirty(inode, f);
	wtio_folio_remove(f);
}

void wtio_inode_drop_cache(struct wtio_inode *inode, bool wait_io)
{
	inode_for_each_folio(inode, 0, drop_one, NULL);
}

/* Cut a folio at size: drop it when it lies wholly past, else zero its
 * tail and forget dirty blocks past the size. */
static void truncate_one(struct wtio_inode *inode, struct wtio_folio *f,
			 void *arg)
{
	int64_t size = *(int64_t *)arg;
	uint32_t fs = inode->ctx->folio_size;
	int64_t start = (int64_t)atomic_load(&f->index) * fs;
	uint32_t from;

	if (start >= size) {
		wtio_folio_cancel_dirty(inode, f);
		wtio_folio_remove(f);
		return;
	}
	from = (uint32_t)(size - start);
	memset(f->data + from, 0, fs - from);
	/* Blocks wholly past the size are zeros now, exactly what the disk
	 * reads past EOF, so they need no write. */
	f->ifs_dirty &= ~wtio_ifs_mask(inode,
			(from + inode->block_size - 1) & ~(inode->block_size - 1),
			fs);
	if (!f->ifs_dirty && wtio_folio_test(f, FOLIO_DIRTY))
		wtio_folio_cancel_dirty(inode, f);
}

/*
 * Before i_size moves up (a write past it or a truncate up; exclusive
 * lock held): a failed extending write whose size was put back from a
 * completion thread, which may not wait for locks, left its blocks in the
 * cache past i_size and maybe on disk past it. Cut both at i_size now, so
 * that what becomes part of the file there reads as zeros.
 */
int wtio_inode_prepare_extend(struct wtio_inode *inode, bool nowait)
{
	int64_t size;
	int ret;

	if (!atomic_load(&inode->eof_stale))
		return 0;
	if (nowait)
		return -EAGAIN;
	atomic_store(&inode->eof_stale, false);
	size = wtio_inode_size(inode);
	inode_for_each_folio(inode, (uint64_t)size >> inode->ctx->folio_shift,
			     truncate_one, &size);
	atomic_store(&inode->size_ahead, 0);
	ret = wtio_inode_set_disk_size(inode, size, true);
	if (ret)
		atomic_store(&inode->eof_stale, true);
	return ret;
}

/*
 * Undoing a failed extension must not cut a later write that landed in
 * the range the failed write had added (possible only because i_size
 * moved before the I/O completed): such a write was acknowledged. Every
 * write notes its end under the file lock before it looks at i_size;
 * an extension, once copied, lowers tail_guard to its old end and keeps
 * tail_hits; a note past the guard bumps tail_hits, and an undo sees the
 * change and leaves the size. The guard rises back only when no
 * extension is in flight, under the exclusive lock. Conservative: a
 * write past the lowest old end of any extension in flight blocks them
 * all.
 */
void wtio_inode_tail_note(struct wtio_inode *inode, int64_t end)
{
	if (end > atomic_load(&inode->tail_guard))
		atomic_fetch_add(&inode->tail_hits, 1);
}

void wtio_inode_tail_claim(struct wtio_inode *inode, struct wtio_size_undo *u)
{
	int64_t guard = atomic_load(&inode->tail_guard);

	if (u->after <= u->before)
		return;
	if (!atomic_load(&inode->tail_inflight))
		guard = INT64_MAX;
	if (u->before < guard)
		guard = u->before;
	atomic_store(&inode->tail_guard, guard);
	atomic_fetch_add(&inode->tail_inflight, 1);
	u->snap = atomic_load(&inode->tail_hits);
}

/* Put i_size back from u->after to u->before if nothing moved it or
 * wrote past u->before since. Exclusive lock held. */
static bool tail_undo_locked(struct wtio_inode *inode,
			     const struct wtio_size_undo *u)
{
	int64_t expect = u->after;

	if (atomic_load(&inode->tail_hits) != u->snap ||
	    !atomic_compare_exchange_strong(&inode->i_size, &expect,
					    u->before))
		return false;
	atomic_store(&inode->eof_stale, true);
	return true;
}

/*
 * A write that moved i_size from before to after failed (its I/O, or its
 * DSYNC step): as a failed direct write in the kernel, it leaves the size
 * where it was. Only when nothing moved the size since: a later write
 * past it, or a truncate, decided the size. A completion thread must not
 * wait for the file lock or a folio lock (their holders may wait for a
 * completion only it delivers): it tries the lock, else puts the size
 * back with an exchange and checks for a writer that came meanwhile; the
 * cleanup past the size is left to wtio_inode_prepare_extend.
 */
void wtio_inode_tail_end(struct wtio_inode *inode,
			 const struct wtio_size_undo *u, bool failed,
			 bool in_reaper)
{
	int64_t expect;

	if (u->after <= u->before)
		return;
	if (failed && !in_reaper) {
		pthread_rwlock_wrlock(&inode->i_rwsem);
		/* A failure of the cut leaves the flag set for the next. */
		if (tail_undo_locked(inode, u))
			wtio_inode_prepare_extend(inode, false);
		pthread_rwlock_unlock(&inode->i_rwsem);
	} else if (failed && !pthread_rwlock_trywrlock(&inode->i_rwsem)) {
		tail_undo_locked(inode, u);
		pthread_rwlock_unlock(&inode->i_rwsem);
	} else if (failed && atomic_load(&inode->tail_hits) == u->snap) {
		/* A writer holds the lock. It noted its end before looking
		 * at i_size: if the note came after our check but before it
		 * read the size we put back, it wrote inside the range we
		 * took away, so give the range back. Otherwise it sees the
		 * smaller size (and eof_stale) and extends from it. */
		expect = u->after;
		if (atomic_compare_exchange_strong(&inode->i_size, &expect,
						   u->before)) {
			atomic_store(&inode->eof_stale, true);
			if (atomic_load(&inode->tail_hits) != u->snap) {
				expect = u->before;
				atomic_compare_exchange_strong(&inode->i_size,
							       &expect,
							       u->after);
			}
		}
	}
	atomic_fetch_sub(&inode->tail_inflight, 1);
}

/* The same for a write that did not claim its extension (no guard: a
 * write that landed in the range since is cut with it), from a thread
 * that may wait for the file lock. */
void wtio_inode_undo_extend(struct wtio_inode *inode, int64_t before,
			    int64_t after, bool in_reaper)
{
	int64_t expect = after;

	if (before >= after)
		return;
	if (in_reaper) {
		if (atomic_compare_exchange_strong(&inode->i_size, &expect,
						   before))
			atomic_store(&inode->eof_stale, true);
		return;
	}
	pthread_rwlock_wrlock(&inode->i_rwsem);
	if (atomic_compare_exchange_strong(&inode->i_size, &expect, before)) {
		atomic_store(&inode->eof_stale, true);
		wtio_inode_prepare_extend(inode, false);
	}
	pthread_rwlock_unlock(&inode->i_rwsem);
}

int wtio_file_truncate(struct wtio_file *file, off_t length)
{
	struct wtio_inode *inode = file->inode;
	int64_t size = length;
	int ret = 0;

	if (length < 0)
		return -EINVAL;
	if ((file->oflags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	/* As ftruncate: past the filesystem's limit is -EFBIG, and nothing
	 * changes. */
	if (length > inode->max_bytes)
		return -EFBIG;
	pthread_rwlock_wrlock(&inode->i_rwsem);
	ret = wtio_inode_prepare_extend(inode, false);
	if (ret) {
		pthread_rwlock_unlock(&inode->i_rwsem);
		return ret;
	}
	if (size < wtio_inode_size(inode))
		inode_for_each_folio(inode, (uint64_t)size >> inode->ctx->folio_shift,
				     truncate_one, &size);
	atomic_store(&inode->size_ahead, 0);
	ret = wtio_inode_set_disk_size(inode, size, true);
	/* The cache is authoritative even if the backing file refused: the
	 * size is fixed again at fsync and close. */
	if (!ret || size < wtio_inode_size(inode))
		atomic_store(&inode->i_size, size);
	pthread_rwlock_unlock(&inode->i_rwsem);
	return ret;
}

int wtio_file_close(struct wtio_file *file)
{
	struct wtio_ctx *ctx = file->ctx;
	struct wtio_inode *inode = file->inode;
	int ret = 0, err;
	bool last;

	atomic_store(&file->magic, WTIO_FILE_DEAD);
	if ((file->oflags & O_ACCMODE) != O_RDONLY) {
		ret = wtio_writeback_range(inode, 0, -1, WB_SYNC, 0, 0);
		/* As fsync: I/O a flusher (or a queue) has in flight may
		 * still extend the backing file by a block tail; the size
		 * is fixed after it ends, or it would stay too long. */
		wtio_wait_writeback_range(inode, 0, -1);
		pthread_rwlock_rdlock(&inode->i_rwsem);
		err = wtio_inode_sync_size(inode, true);
		pthread_rwlock_unlock(&inode->i_rwsem);
		if (!ret)
			ret = err;
	}
	err = wtio_file_check_error(file);
	if (err)
		ret = err;

	pthread_mutex_lock(&ctx->inodes_lock);
	last = --inode->refs == 0;
	if (last) {
		struct wtio_inode **pp = &ctx->inodes;

		while (*pp != inode)
			pp = &(*pp)->next;
		*pp = inode->next;
	}
	ctx->nr_files--;
	file->next_dead = ctx->dead_files;
	ctx->dead_files = file;
	pthread_mutex_unlock(&ctx->inodes_lock);

	if (last) {
		/* Drop first: it waits for every I/O, whose completion may
		 * queue the inode for the flushers again. */
		wtio_inode_drop_cache(inode, true);
		wtio_writeback_detach_inode(inode);
		/* Space preallocated for appends past the end goes back. */
		wtio_reserve_release(inode);
		wtio_inode_free(inode);
	}
	return ret;
}
