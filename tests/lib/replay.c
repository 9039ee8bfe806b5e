/* SPDX-License-Identifier: MIT */
/*
 * replay.c - rebuild, from the fault backend's record, a file as a crash
 * could have left it on a disk with a volatile write cache (the model is
 * in backend.c's first comment).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fault_priv.h"

/* splitmix64: tiny, seedable, and good enough to pick events. */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	ssize_t n;

	while (len) {
		n = pwrite(fd, buf, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		buf = (const char *)buf + n;
		len -= n;
		off += n;
	}
	return 0;
}

/*
 * Apply an unflushed write as a crash may leave it: whole, not at all, or
 * torn, i.e. only some of its blocks (the file's block size, split at
 * block boundaries of the file offset) landed. RWF_ATOMIC writes land
 * whole or not at all. The landed blocks are written in record order, so
 * a block's newer version is never replaced by an older one (a device
 * never does that either); which blocks of which writes land is chosen
 * independently, so later writes land without earlier ones: every image
 * a device reordering its volatile cache could persist is one of these.
 */
static int replay_unflushed(const struct fault_event *e, int dst_fd,
			    uint64_t *rng, struct wtio_fault_replay_info *info)
{
	size_t bs = e->blksize ? e->blksize : 4096, pos, n, landed = 0,
	       dropped = 0, nblocks;
	uint64_t mode = splitmix64(rng);
	off_t end = e->off + (off_t)e->len;
	int ret;

	nblocks = (size_t)((end + (off_t)bs - 1) / (off_t)bs -
			   e->off / (off_t)bs);
	if (e->atomic || nblocks < 2) {
		info->atomic_writes += e->atomic;
		if (!(mode & 1)) {
			info->writes_dropped++;
			info->blocks_dropped += nblocks;
			return 0;
		}
		info->writes_whole++;
		info->blocks_landed += nblocks;
		return pwrite_all(dst_fd, e->data, e->len, e->off);
	}
	/* Multi-block: a quarter whole, a quarter lost, half torn. */
	switch (mode & 3) {
	case 0:
		info->writes_whole++;
		info->blocks_landed += nblocks;
		return pwrite_all(dst_fd, e->data, e->len, e->off);
	case 1:
		info->writes_dropped++;
		info->blocks_dropped += nblocks;
		return 0;
	}
	for (pos = 0; pos < e->len; pos += n) {
		off_t at = e->off + (off_t)pos;

		n = bs - (size_t)(at % (off_t)bs);
		if (n > e->len - pos)
			n = e->len - pos;
		if (!(splitmix64(rng) & 1)) {
			dropped++;
			continue;
		}
		landed++;
		ret = pwrite_all(dst_fd, (const char *)e->data + pos, n, at);
		if (ret)
			return ret;
	}
	info->blocks_landed += landed;
	info->blocks_dropped += dropped;
	if (landed && dropped)
		info->writes_torn++;
	else if (landed)
		info->writes_whole++;
	else
		info->writes_dropped++;
	return 0;
}

int wtio_fault_replay_ex(const struct wtio_fault *cfault,
				     const char *path, uint64_t nr_events,
				     uint64_t seed, int dst_fd,
				     struct wtio_fault_replay_info *infop)
{
	/* Replay only reads the record, but needs its lock. */
	struct wtio_fault *f = (struct wtio_fault *)cfault;
	struct wtio_fault_replay_info info;
	const struct fault_event *e;
	uint64_t rng = seed;
	size_t i, n, last_flush = 0;
	bool have_flush = false, durable;
	struct stat st;
	int ret = 0;

	memset(&info, 0, sizeof(info));
	if (!f || !path || dst_fd < 0)
		return -EINVAL;
	if (stat(path, &st) < 0)
		return -errno;

	pthread_mutex_lock(&f->lock);
	if (f->record_err) {
		ret = f->record_err;
		goto out;
	}
	n = nr_events < f->nr_ev ? nr_events : f->nr_ev;
	for (i = 0; i < n; i++) {
		e = &f->ev[i];
		if (e->type == EV_FLUSH && e->dev == st.st_dev &&
		    e->ino == st.st_ino) {
			last_flush = i;
			have_flush = true;
		}
	}

	for (i = 0; i < n && !ret; i++) {
		e = &f->ev[i];
		if (e->dev != st.st_dev || e->ino != st.st_ino ||
		    e->type == EV_FLUSH || e->type == EV_FUA)
			continue;
		if (have_flush && i < last_flush)
			durable = true;
		else if (e->type == EV_WRITE && i + 1 < n &&
			 f->ev[i + 1].type == EV_FUA)
			durable = true;	/* its own FUA made it durable */
		else
			durable = !seed;	/* seed 0: the disk kept all */
		if (e->type == EV_TRUNCATE) {
			if ((durable || (splitmix64(&rng) & 1)) &&
			    ftruncate(dst_fd, e->off) < 0)
				ret = -errno;
			continue;
		}
		if (durable) {
			info.writes_durable++;
			ret = pwrite_all(dst_fd, e->data, e->len, e->off);
			continue;
		}
		info.writes_unflushed++;
		ret = replay_unflushed(e, dst_fd, &rng, &info);
	}
out:
	pthread_mutex_unlock(&f->lock);
	if (infop)
		*infop = info;
	return ret;
}

int wtio_fault_replay(const struct wtio_fault *fault,
				  const char *path, uint64_t nr_events,
				  uint64_t seed, int dst_fd)
{
	return wtio_fault_replay_ex(fault, path, nr_events, seed, dst_fd,
				    NULL);
}
