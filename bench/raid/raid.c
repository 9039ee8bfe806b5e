/* SPDX-License-Identifier: MIT */
/*
 * raid.c - the volume: its members, their counted I/O, per-thread scratch
 * memory, a stripe loaded whole (failed members rebuilt from parity), the
 * counters.
 */
#include "raid_priv.h"
#include "raid_gf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

struct scratch {
	size_t size;
	uint8_t *buf;
};

static void scratch_free(void *p)
{
	struct scratch *sc = p;

	free(sc->buf);
	free(sc);
}

static void scratch_key_make(void)
{
	pthread_key_create(&scratch_key, scratch_free);
}

uint8_t *raid_scratch(struct raid_vol *v)
{
	size_t need = (size_t)(v->nd + v->n) * v->chunk;
	struct scratch *sc;

	pthread_once(&scratch_once, scratch_key_make);
	sc = pthread_getspecific(scratch_key);
	if (!sc) {
		sc = calloc(1, sizeof(*sc));
		if (!sc || pthread_setspecific(scratch_key, sc)) {
			free(sc);
			return NULL;
		}
	}
	if (sc->size < need) {
		void *nb;

		if (posix_memalign(&nb, 4096, need))
			return NULL;
		free(sc->buf);
		sc->buf = nb;
		sc->size = need;
	}
	return sc->buf;
}

int raid_mread(struct raid_vol *v, unsigned int k, void *buf, size_t len,
	       uint64_t off)
{
	struct raid_member *m = &v->m[k];
	size_t done = 0;

	if (m->failed)
		return -EIO;
	atomic_fetch_add_explicit(&m->reads, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->read_bytes, len, memory_order_relaxed);
	while (done < len) {
		ssize_t r = pread(m->fd, (char *)buf + done, len - done,
				  (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0) {
			/* Past the member's end: never written, zeros. */
			memset((char *)buf + done, 0, len - done);
			break;
		}
		done += (size_t)r;
	}
	return 0;
}

int raid_mwrite(struct raid_vol *v, unsigned int k, const void *buf,
		size_t len, uint64_t off)
{
	struct raid_member *m = &v->m[k];
	size_t done = 0;

	/* A failed member being rebuilt is written, never read. */
	if (m->fd < 0)
		return -EIO;
	atomic_fetch_add_explicit(&m->writes, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->write_bytes, len, memory_order_relaxed);
	while (done < len) {
		ssize_t r = pwrite(m->fd, (const char *)buf + done, len - done,
				   (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		done += (size_t)r;
	}
	return 0;
}

/* Open a member O_DIRECT if its filesystem takes it; *direct says. */
static int member_open(const char *path, int flags, int *direct)
{
	int fd = open(path, flags | O_DIRECT | O_CLOEXEC, 0600);

	if (fd >= 0 || errno != EINVAL) {
		if (fd < 0)
			return -errno;
		return fd;
	}
	*direct = 0;
	fd = open(path, flags | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

int raid_member_reopen(struct raid_vol *v, unsigned int k, int flags)
{
	int fd = member_open(v->m[k].path, O_RDWR | flags, &v->direct);

	if (fd < 0)
		return fd;
	v->m[k].fd = fd;
	return 0;
}

int raid_create(const char *dir, const char *prefix, int level,
		unsigned int ndisks, uint32_t chunk, struct raid_vol **volp)
{
	struct raid_vol *v;
	unsigned int k;
	int ret;

	if ((level != 5 && level != 6) || ndisks > RAID_MAX_DISKS ||
	    ndisks < (unsigned int)(level == 5 ? 3 : 4) || chunk < 4096 ||
	    chunk > (16u << 20) || (chunk & (chunk - 1)))
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->level = level;
	v->n = ndisks;
	v->np = level == 5 ? 1 : 2;
	v->nd = ndisks - v->np;
	v->chunk = chunk;
	v->width = (uint64_t)chunk * v->nd;
	v->direct = 1;
	for (k = 0; k < RAID_NLOCKS; k++)
		pthread_mutex_init(&v->locks[k], NULL);
	for (k = 0; k < ndisks; k++)
		v->m[k].fd = -1;
	for (k = 0; k < ndisks; k++) {
		if ((size_t)snprintf(v->m[k].path, sizeof(v->m[k].path),
				     "%s/%s.%u", dir, prefix, k) >=
		    sizeof(v->m[k].path)) {
			ret = -ENAMETOOLONG;
			goto fail;
		}
		ret = raid_member_reopen(v, k, O_CREAT | O_TRUNC);
		if (ret)
			goto fail;
	}
	*volp = v;
	return 0;
fail:
	raid_destroy(v, 1);
	return ret;
}

void raid_destroy(struct raid_vol *v, int remove)
{
	unsigned int k;

	if (!v)
		return;
	for (k = 0; k < v->n; k++) {
		if (v->m[k].fd >= 0)
			close(v->m[k].fd);
		if (remove && v->m[k].path[0])
			unlink(v->m[k].path);
	}
	for (k = 0; k < RAID_NLOCKS; k++)
		pthread_mutex_destroy(&v->locks[k]);
	free(v);
}

int raid_level(const struct raid_vol *v) { return v->level; }
unsigned int raid_disks(const struct raid_vol *v) { return v->n; }
unsigned int raid_data_disks(const struct raid_vol *v) { return v->nd; }
uint32_t raid_chunk(const struct raid_vol *v) { return v->chunk; }
uint64_t raid_stripe_width(const struct raid_vol *v) { return v->width; }
int raid_direct(const struct raid_vol *v) { return v->direct; }

const char *raid_member_path(const struct raid_vol *v, unsigned int k)
{
	return k < v->n ? v->m[k].path : NULL;
}

void raid_iov_copy(const struct iovec *iov, int iovcnt, size_t skip,
		   uint8_t *buf, size_t len, int to_iov)
{
	int i;

	for (i = 0; i < iovcnt && len; i++) {
		size_t l = iov[i].iov_len;
		uint8_t *base = iov[i].iov_base;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		base += skip;
		l -= skip;
		skip = 0;
		if (l > len)
			l = len;
		if (to_iov)
			memcpy(base, buf, l);
		else
			memcpy(buf, base, l);
		buf += l;
		len -= l;
	}
}

size_t raid_iov_len(const struct iovec *iov, int iovcnt)
{
	size_t len = 0;
	int i;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	return len;
}

ssize_t raid_walk(struct raid_vol *v, const struct iovec *iov, int iovcnt,
		  uint64_t off, int write, raid_stripe_fn fn)
{
	size_t len = raid_iov_len(iov, iovcnt), done = 0;
	uint8_t *buf;

	if (off % RAID_SECTOR || len % RAID_SECTOR)
		return -EINVAL;
	buf = raid_scratch(v);
	if (!buf)
		return -ENOMEM;
	while (done < len) {
		uint64_t pos = off + done, s = pos / v->width;
		uint64_t so = pos % v->width;
		uint64_t eo = so + (len - done) < v->width ?
			      so + (len - done) : v->width;
		pthread_mutex_t *lk = &v->locks[s % RAID_NLOCKS];
		int ret;

		if (write)
			raid_iov_copy(iov, iovcnt, done, buf + so, eo - so, 0);
		pthread_mutex_lock(lk);
		ret = fn(v, s, buf, so, eo);
		pthread_mutex_unlock(lk);
		if (ret)
			return done ? (ssize_t)done : ret;
		if (!write)
			raid_iov_copy(iov, iovcnt, done, buf + so, eo - so, 1);
		done += eo - so;
	}
	return (ssize_t)done;
}

int raid_load_stripe(struct raid_vol *v, uint64_t s, uint8_t *const *blk)
{
	unsigned int fail[RAID_MAX_DISKS], nfail = 0, d;
	int ret;

	for (d = 0; d < v->nd + v->np; d++) {
		unsigned int k = raid_map(v, s, d);

		if (v->m[k].failed) {
			fail[nfail++] = d;
			continue;
		}
		ret = raid_mread(v, k, blk[d], v->chunk, s * v->chunk);
		if (ret)
			return ret;
	}
	if (nfail > v->np)
		return -EIO;
	if (nfail)
		raid_recover(blk, v->nd, v->np, fail, nfail, 0, v->chunk);
	return 0;
}

int raid_sync(struct raid_vol *v)
{
	unsigned int k;

	for (k = 0; k < v->n; k++)
		if (!v->m[k].failed && fdatasync(v->m[k].fd))
			return -errno;
	return 0;
}

void raid_stats(struct raid_vol *v, struct raid_member_stats *members,
		struct raid_vol_stats *vol)
{
	unsigned int k;

	for (k = 0; members && k < v->n; k++) {
		members[k].reads = atomic_load(&v->m[k].reads);
		members[k].writes = atomic_load(&v->m[k].writes);
		members[k].read_bytes = atomic_load(&v->m[k].read_bytes);
		members[k].write_bytes = atomic_load(&v->m[k].write_bytes);
	}
	if (!vol)
		return;
	vol->full_stripe_writes = atomic_load(&v->full_stripes);
	vol->rmw_rows = atomic_load(&v->rmw_rows);
	vol->rcw_rows = atomic_load(&v->rcw_rows);
	vol->full_rows = atomic_load(&v->full_rows);
	vol->partial_stripe_writes = atomic_load(&v->partial_stripes);
}

void raid_stats_reset(struct raid_vol *v)
{
	unsigned int k;

	for (k = 0; k < v->n; k++) {
		atomic_store(&v->m[k].reads, 0);
		atomic_store(&v->m[k].writes, 0);
		atomic_store(&v->m[k].read_bytes, 0);
		atomic_store(&v->m[k].write_bytes, 0);
	}
	atomic_store(&v->full_stripes, 0);
	atomic_store(&v->rmw_rows, 0);
	atomic_store(&v->rcw_rows, 0);
	atomic_store(&v->full_rows, 0);
	atomic_store(&v->partial_stripes, 0);
}
