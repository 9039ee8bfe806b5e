/* SPDX-License-Identifier: MIT */
/*
 * api.c - the public entry points: every argument is checked here, so
 * that bad input returns a clear negative errno before anything changes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "folio_size.h"
#include "export.h"
#include "ctx.h"
#include "forked.h"
#include "fsize_limit.h"
#include "inode.h"
#include "file.h"
#include "read.h"
#include "write.h"
#include "write_iter.h"
#include "sync.h"

/* Flags whose behaviour this build implements. The others are defined in
 * the header so that programs can be written against them, and are
 * refused with -EOPNOTSUPP rather than silently ignored. */
#define WTIO_IMPLEMENTED_FLAGS	WTIO_ALL_FLAGS
#define WTIO_READ_FLAGS		(WTIO_DONTCACHE | WTIO_NOWAIT)
#define WTIO_MAX_OFFSET		((int64_t)1 << 62)	/* sync_range only */

static int check_flags(unsigned int flags, unsigned int allowed)
{
	if (flags & ~WTIO_ALL_FLAGS)
		return -EINVAL;
	if (flags & ~allowed)
		return -EINVAL;
	if ((flags & WTIO_NOSERIAL) &&
	    !(flags & (WTIO_WRITETHROUGH | WTIO_ATOMIC)))
		return -EINVAL;	/* as in the kernel series */
	if (flags & ~WTIO_IMPLEMENTED_FLAGS)
		return -EOPNOTSUPP;
	return 0;
}

/* 0 for a live handle of this process's context; -EBADF for a NULL or
 * closed one, -ECHILD for one inherited through fork() (forked.h). */
static int file_check(struct wtio_file *file)
{
	if (!file || atomic_load(&file->magic) != WTIO_FILE_MAGIC)
		return -EBADF;
	return wtio_forked(file->ctx->fork_gen) ? -ECHILD : 0;
}

#define FILE_CHECK(file) do {						\
	int e_ = file_check(file);					\
									\
	if (e_)								\
		return e_;						\
} while (0)

WTIO_EXPORT int wtio_open(struct wtio_ctx *ctx, const char *path, int oflags,
			  mode_t mode, unsigned int default_flags,
			  struct wtio_file **filep)
{
	int ret;

	if (!ctx || !path || !filep)
		return -EINVAL;
	if (wtio_forked(ctx->fork_gen))
		return -ECHILD;
	if (!*path)
		return -ENOENT;
	ret = check_flags(default_flags, WTIO_ALL_FLAGS);
	if (ret)
		return ret;
	return wtio_file_open(ctx, path, oflags, mode, default_flags, filep);
}

WTIO_EXPORT int wtio_close(struct wtio_file *file)
{
	FILE_CHECK(file);
	return wtio_file_close(file);
}

/*
 * Check an iovec array and return its total length, or a negative errno:
 * -EINVAL for a bad count or a total past SSIZE_MAX, -EFAULT for a NULL
 * buffer with a non-zero length.
 */
static ssize_t iov_total(const struct iovec *iov, int iovcnt)
{
	size_t total = 0;
	int i;

	if (iovcnt < 0 || iovcnt > IOV_MAX)
		return -EINVAL;
	if (iovcnt && !iov)
		return -EFAULT;
	for (i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len && !iov[i].iov_base)
			return -EFAULT;
		if (iov[i].iov_len > (size_t)SSIZE_MAX - total)
			return -EINVAL;
		total += iov[i].iov_len;
	}
	return (ssize_t)total;
}

ssize_t wtio_check_rw(struct wtio_file *file, const struct iovec *iov,
			int iovcnt, off_t off, unsigned int *flags, bool write)
{
	ssize_t len;
	int ret;

	FILE_CHECK(file);
	if ((file->oflags & O_ACCMODE) == (write ? O_RDONLY : O_WRONLY))
		return -EBADF;
	*flags |= write ? file->default_flags :
		(file->default_flags & WTIO_READ_FLAGS);
	if (write && (file->inode->ctx->cfg.flags & WTIO_CONFIG_ADAPTIVE))
		*flags |= WTIO_ADAPTIVE;
	ret = check_flags(*flags, write ? WTIO_ALL_FLAGS : WTIO_READ_FLAGS);
	if (ret)
		return ret;
	len = iov_total(iov, iovcnt);
	if (len < 0)
		return len;
	/*
	 * As pread/pwrite (rw_verify_area, then generic_write_checks): a
	 * negative offset, or an end past the largest off_t, is -EINVAL; a
	 * write starting at or past the filesystem's largest file size is
	 * -EFBIG, one that crosses it is cut short there (an untorn write
	 * cannot be: -EINVAL). A read there finds EOF. Zero bytes: 0.
	 */
	if (off < 0 || (off_t)len > INT64_MAX - off)
		return -EINVAL;
	if (write && len) {
		int64_t max = file->inode->max_bytes;

		if (off >= max)
			return -EFBIG;
		if ((int64_t)len > max - off) {
			if (*flags & WTIO_ATOMIC)
				return -EINVAL;
			len = (ssize_t)(max - off);
		}
		/* ulimit -f, as generic_write_check_limits applies it */
		if (off + len > wtio_inode_size(file->inode)) {
			ret = wtio_fsize_check_write(file->inode, off, &len,
						     *flags & WTIO_ATOMIC);
			if (ret)
				return ret;
		}
	}
	if (write && (*flags & WTIO_ATOMIC)) {
		ret = wtio_atomic_check(file->inode, off, (size_t)len);
		if (ret)
			return ret;
	}
	if (len)
		wtio_inode_pick_folio_size(file->inode, off, (size_t)len,
					   write);
	/* Checked: an adaptive write picks its mode now, once, for the
	 * synchronous and the queued calls alike. */
	if (write && len)
		*flags = wtio_write_adapt(file->inode, *flags);
	return len;
}

WTIO_EXPORT ssize_t wtio_preadv(struct wtio_file *file,
				const struct iovec *iov, int iovcnt, off_t off,
				unsigned int flags)
{
	ssize_t len = wtio_check_rw(file, iov, iovcnt, off, &flags, false);

	if (len <= 0)
		return len;
	return wtio_buffered_read(file, iov, iovcnt, off, flags);
}

WTIO_EXPORT ssize_t wtio_pread(struct wtio_file *file, void *buf, size_t len,
			       off_t off, unsigned int flags)
{
	struct iovec v = { buf, len };

	return wtio_preadv(file, &v, 1, off, flags);
}

ssize_t wtio_file_write(struct wtio_file *file, const struct iovec *iov,
			int iovcnt, off_t off, unsigned int flags)
{
	if (flags & WTIO_ATOMIC)
		return wtio_atomic_write(file, iov, iovcnt, off, flags);
	if (flags & WTIO_WRITETHROUGH)
		return wtio_writethrough(file, iov, iovcnt, off, flags);
	return wtio_buffered_write(file, iov, iovcnt, off, flags);
}

WTIO_EXPORT ssize_t wtio_pwritev(struct wtio_file *file,
				 const struct iovec *iov, int iovcnt,
				 off_t off, unsigned int flags)
{
	ssize_t len = wtio_check_rw(file, iov, iovcnt, off, &flags, true);
	struct iovec small[8], *cut;
	size_t left;
	ssize_t ret;
	int n;

	if (len <= 0)
		return len;
	if (len == iov_total(iov, iovcnt))
		return wtio_file_write(file, iov, iovcnt, off, flags);
	/* Cut short at the filesystem's limit: the iovecs up to len. */
	for (n = 0, left = (size_t)len; left; n++)
		left -= iov[n].iov_len < left ? iov[n].iov_len : left;
	cut = n <= 8 ? small : malloc((size_t)n * sizeof(*cut));
	if (!cut)
		return -ENOMEM;
	memcpy(cut, iov, (size_t)n * sizeof(*cut));
	cut[n - 1].iov_len -= (size_t)(iov_total(cut, n) - len);
	ret = wtio_file_write(file, cut, n, off, flags);
	if (cut != small)
		free(cut);
	return ret;
}

WTIO_EXPORT ssize_t wtio_pwrite(struct wtio_file *file, const void *buf,
				size_t len, off_t off, unsigned int flags)
{
	struct iovec v = { (void *)buf, len };

	return wtio_pwritev(file, &v, 1, off, flags);
}

WTIO_EXPORT int wtio_fsync(struct wtio_file *file)
{
	FILE_CHECK(file);
	return wtio_fsync_file(file, false);
}

WTIO_EXPORT int wtio_fdatasync(struct wtio_file *file)
{
	FILE_CHECK(file);
	return wtio_fsync_file(file, true);
}

WTIO_EXPORT int wtio_sync_range(struct wtio_file *file, off_t off,
				off_t nbytes, unsigned int flags)
{
	FILE_CHECK(file);
	/* The kernel's checks (fs/sync.c): only a negative or overflowing
	 * range is invalid. No data lies at or past WTIO_MAX_OFFSET, so a
	 * range starting there is valid and empty, and one reaching past it
	 * is the range to the end. */
	if (off < 0 || nbytes < 0 || off > INT64_MAX - nbytes)
		return -EINVAL;
	if (flags & ~(WTIO_SYNC_RANGE_WAIT_BEFORE | WTIO_SYNC_RANGE_WRITE |
		      WTIO_SYNC_RANGE_WAIT_AFTER))
		return -EINVAL;
	if (off >= WTIO_MAX_OFFSET)
		return 0;
	if (nbytes > WTIO_MAX_OFFSET - off)
		nbytes = 0;
	return wtio_sync_file_range(file, off, nbytes, flags);
}

WTIO_EXPORT int wtio_ftruncate(struct wtio_file *file, off_t length)
{
	FILE_CHECK(file);
	return wtio_file_truncate(file, length);
}

WTIO_EXPORT off_t wtio_file_size(struct wtio_file *file)
{
	FILE_CHECK(file);
	return wtio_inode_size(file->inode);
}

WTIO_EXPORT off_t wtio_file_max_size(struct wtio_file *file)
{
	FILE_CHECK(file);
	return file->inode->max_bytes;
}

WTIO_EXPORT int wtio_file_info(struct wtio_file *file,
			       struct wtio_file_info *info)
{
	const struct wtio_inode *inode;

	FILE_CHECK(file);
	if (!info)
		return -EINVAL;
	inode = file->inode;
	memset(info, 0, sizeof(*info));
	info->block_size = inode->block_size;
	info->dio_mem_align = inode->geo.dio_mem_align;
	info->dio_offset_align = inode->geo.dio_offset_align;
	info->atomic_unit_min = inode->geo.atomic_unit_min;
	info->atomic_unit_max = inode->geo.atomic_unit_max;
	info->stripe_unit = inode->geo.stripe_unit;
	info->stripe_width = inode->geo.stripe_width;
	snprintf(info->stripe_source, sizeof(info->stripe_source), "%s",
		 inode->geo.stripe_source ? inode->geo.stripe_source : "none");
	return 0;
}
