/* SPDX-License-Identifier: MIT */
/*
 * raid_files.c - files on the user-space RAID: a region of the volume per
 * inode, the placeholder's size kept in step (see raid_files.h).
 */
#include "raid_files.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct raid_slot {
	dev_t dev;
	ino_t ino;
	uint64_t base;
	uint64_t size;	/* the placeholder's size as last seen or set */
	uint64_t end;	/* past the last byte written */
};

struct raid_files {
	struct raid_vol *v;
	uint64_t span;
	pthread_mutex_t lock;
	unsigned int nr;
	struct raid_slot slot[RAID_FILES_MAX];
};

int raid_files_create(struct raid_vol *v, struct raid_files **rfp)
{
	struct raid_files *rf = calloc(1, sizeof(*rf));
	uint64_t w = raid_stripe_width(v);

	if (!rf)
		return -ENOMEM;
	rf->v = v;
	rf->span = (RAID_FILES_SPAN + w - 1) / w * w;
	pthread_mutex_init(&rf->lock, NULL);
	*rfp = rf;
	return 0;
}

void raid_files_destroy(struct raid_files *rf)
{
	if (!rf)
		return;
	pthread_mutex_destroy(&rf->lock);
	free(rf);
}

struct raid_vol *raid_files_vol(struct raid_files *rf)
{
	return rf->v;
}

/* The volume past size (up to what was ever there) reads zeros again. */
static int shrink(struct raid_files *rf, struct raid_slot *sl, uint64_t size)
{
	uint64_t top = sl->end > sl->size ? sl->end : sl->size;
	int ret = 0;

	if (size < top)
		ret = raid_discard(rf->v, sl->base + size, top - size);
	if (!ret && sl->end > size)
		sl->end = size;
	return ret;
}

/* fd's slot (added when new), with a shrink found since last time done.
 * Called with rf->lock held. */
static int slot_get(struct raid_files *rf, const struct stat *st,
		    struct raid_slot **slp)
{
	struct raid_slot *sl = NULL;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < rf->nr && !sl; i++)
		if (rf->slot[i].dev == st->st_dev &&
		    rf->slot[i].ino == st->st_ino)
			sl = &rf->slot[i];
	if (!sl) {
		if (rf->nr == RAID_FILES_MAX)
			return -ENFILE;
		sl = &rf->slot[rf->nr];
		*sl = (struct raid_slot){ .dev = st->st_dev,
					  .ino = st->st_ino,
					  .base = rf->nr * rf->span };
		rf->nr++;
		/* A region is new: zeros, whatever the file held before. */
		sl->size = (uint64_t)st->st_size;
	}
	if ((uint64_t)st->st_size < sl->size)
		ret = shrink(rf, sl, (uint64_t)st->st_size);
	sl->size = (uint64_t)st->st_size;
	*slp = sl;
	return ret;
}

static int slot_of(struct raid_files *rf, int fd, struct stat *st,
		   struct raid_slot **slp)
{
	int ret;

	/* fstat under the lock: a size read before another thread's extend
	 * would look like a shrink. */
	pthread_mutex_lock(&rf->lock);
	ret = fstat(fd, st) ? -errno : slot_get(rf, st, slp);
	pthread_mutex_unlock(&rf->lock);
	return ret;
}

int64_t raid_files_base(struct raid_files *rf, int fd)
{
	struct raid_slot *sl;
	struct stat st;
	int ret = slot_of(rf, fd, &st, &sl);

	return ret ? ret : (int64_t)sl->base;
}

static size_t iov_len(const struct iovec *iov, int iovcnt)
{
	size_t len = 0;
	int i;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	return len;
}

/* After a write that ended at end: the placeholder grows to it, as a
 * file does under a direct write. */
static int extend(struct raid_files *rf, struct raid_slot *sl, int fd,
		  uint64_t end)
{
	struct stat st;
	int ret = 0;

	pthread_mutex_lock(&rf->lock);
	if (end > sl->end)
		sl->end = end;
	if (fstat(fd, &st))
		ret = -errno;
	else if ((uint64_t)st.st_size < end && ftruncate(fd, (off_t)end))
		ret = -errno;
	else if (end > sl->size)
		sl->size = end;
	pthread_mutex_unlock(&rf->lock);
	return ret;
}

ssize_t raid_files_rw(struct raid_files *rf, int write, int fd,
		      const struct iovec *iov, int iovcnt, off_t off)
{
	size_t len = iov_len(iov, iovcnt);
	struct raid_slot *sl;
	struct stat st;
	ssize_t r;
	int ret;

	if (off < 0)
		return -EINVAL;
	ret = slot_of(rf, fd, &st, &sl);
	if (ret)
		return ret;
	if ((uint64_t)off + len > rf->span)
		return -EFBIG;
	if (!write) {
		if (off >= st.st_size)
			return 0;
		r = raid_preadv(rf->v, iov, iovcnt, sl->base + (uint64_t)off);
		if (r > st.st_size - off)
			r = st.st_size - off;
		return r;
	}
	r = raid_pwritev(rf->v, iov, iovcnt, sl->base + (uint64_t)off);
	if (r > 0) {
		ret = extend(rf, sl, fd, (uint64_t)off + (uint64_t)r);
		if (ret)
			return ret;
	}
	return r;
}

int raid_files_sync(struct raid_files *rf, int fd, int datasync)
{
	int ret = raid_sync(rf->v);

	if (!ret && (datasync ? fdatasync(fd) : fsync(fd)))
		ret = -errno;
	return ret;
}

int raid_files_set_size(struct raid_files *rf, int fd, off_t size)
{
	struct raid_slot *sl;
	struct stat st;
	int ret;

	if (size < 0)
		return -EINVAL;
	if ((uint64_t)size > rf->span)
		return -EFBIG;
	pthread_mutex_lock(&rf->lock);
	ret = fstat(fd, &st) ? -errno : slot_get(rf, &st, &sl);
	if (!ret)
		ret = shrink(rf, sl, (uint64_t)size);
	while (!ret && ftruncate(fd, size))
		if (errno != EINTR)
			ret = -errno;
	if (!ret)
		sl->size = (uint64_t)size;
	pthread_mutex_unlock(&rf->lock);
	return ret;
}
