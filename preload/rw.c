/* SPDX-License-Identifier: MIT */
/*
 * rw.c - the read/write family and lseek on served descriptors (in
 * shared mode requests to the holder, remote_ops.c).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"
#include "shim_rw.h"

int shim_rwf(int rwf, bool write, unsigned int *wflags, bool *append)
{
	return shim_rwf_map(rwf, write, wflags, append);
}

static size_t iov_len(const struct iovec *iov, int cnt)
{
	size_t n = 0;

	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/*
 * One read or write on a served description. off < 0: at the description's
 * position (and move it). Returns bytes or -errno; *passthrough set when
 * the file is not (or no longer) served, and nothing was done.
 */
static ssize_t served_rw(struct shim_ofd *o, const struct iovec *iov,
			 int cnt, off_t off, int rwf, bool write,
			 bool *passthrough)
{
	bool use_pos = off < 0, append;
	unsigned int wflags;
	ssize_t r;

	if (off < -1)
		return -EINVAL;
	if (use_pos)
		pthread_mutex_lock(&o->pos_lock);
	ofd_io_read(o);
	if (!o->wf) {
		*passthrough = true;
		r = 0;
		goto out;
	}
	/* pwrite on an O_APPEND file appends, as Linux does */
	append = write && (o->oflags & O_APPEND);
	r = shim_rwf(rwf, write, &wflags, &append);
	if (r)
		goto out;
	if (o->oflags & O_DIRECT)	/* no copy kept, on disk at return */
		wflags |= write ? WTIO_WRITETHROUGH | WTIO_DONTCACHE :
				  WTIO_DONTCACHE;
	if (use_pos)
		off = o->pos;
	if (write) {
		if (append) {
			/* one appender at a time per description, and the size
			 * read and the write under the same lock */
			if (!use_pos)
				pthread_mutex_lock(&o->pos_lock);
			off = wtio_file_size(o->wf);
			r = off < 0 ? off :
				wtio_pwritev(o->wf, iov, cnt, off, wflags);
			if (!use_pos)
				pthread_mutex_unlock(&o->pos_lock);
		} else {
			r = wtio_pwritev(o->wf, iov, cnt, off, wflags);
		}
	} else {
		r = wtio_preadv(o->wf, iov, cnt, off, wflags);
		/* A short read: the file may have grown outside the cache
		 * (a forked child, a passthrough peer). Look once. */
		if (r >= 0 && (size_t)r < iov_len(iov, cnt) &&
		    ofd_guard_size(o))
			r = wtio_preadv(o->wf, iov, cnt, off, wflags);
	}
	if (write && r > 0)	/* the kernel moves the mtime: so do we */
		atomic_store(&o->times_kept, false);
	/* nothing written moves nothing, O_APPEND or not (the kernel returns
	 * before it takes the end of the file) */
	if (r > 0 && use_pos)
		o->pos = off + r;
out:
	ofd_io_done(o);
	if (use_pos)
		pthread_mutex_unlock(&o->pos_lock);
	return r;
}

/* Common path of every call: served, or the real call. */
static ssize_t rw(int fd, const struct iovec *iov, int cnt, off_t off,
		  int rwf, bool write, bool *passthrough)
{
	struct shim_ofd *o;
	ssize_t r;

	if (remote_served(fd))
		return remote_rw(fd, iov, cnt, off, rwf, write, passthrough);
	*passthrough = false;
	if (!(o = fd_get(fd))) {
		*passthrough = true;
		return 0;
	}
	r = served_rw(o, iov, cnt, off, rwf, write, passthrough);
	ofd_put(o);
	return r;
}

/* An offset below min on a served descriptor: EINVAL, as the kernel
 * answers (a descriptor passed through gets the kernel's own answer). */
static bool bad_offset(int fd, off_t off, off_t min)
{
	if (off >= min || (!fd_is_served(fd) && !remote_served(fd)))
		return false;
	errno = EINVAL;
	return true;
}

/* A real call that met EINVAL on a number whose open was being served
 * meanwhile (O_DIRECT set before the number is in the table) is made
 * again once that is done (fdrace.c). */
#define SERVE(fd, iov, cnt, off, rwf, write, realcall)			\
	do {								\
		unsigned int gen_;					\
		int tries_ = 0;						\
		bool pt_;						\
		ssize_t r_;						\
		shim_resolve();						\
	serve_:								\
		gen_ = fd_adopt_gen(fd);				\
		r_ = rw(fd, iov, cnt, off, rwf, write, &pt_);		\
		if (!pt_)						\
			return shim_ret(r_);				\
		r_ = realcall;						\
		if (r_ < 0 && errno == EINVAL && tries_++ < 8 &&	\
		    fd_adopted_since(fd, gen_))				\
			goto serve_;					\
		return r_;						\
	} while (0)

SHIM_API ssize_t read(int fd, void *buf, size_t n)
{
	struct iovec v = { buf, n };

	SERVE(fd, &v, 1, -1, 0, false, real.read(fd, buf, n));
}

SHIM_API ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
SHIM_API ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		__builtin_trap();
	return read(fd, buf, n);
}

SHIM_API ssize_t write(int fd, const void *buf, size_t n)
{
	struct iovec v = { (void *)buf, n };

	SERVE(fd, &v, 1, -1, 0, true, real.write(fd, buf, n));
}

SHIM_API ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	struct iovec v = { buf, n };

	if (bad_offset(fd, off, 0))
		return -1;
	SERVE(fd, &v, 1, off, 0, false, real.pread(fd, buf, n, off));
}

SHIM_API ssize_t pread64(int fd, void *buf, size_t n, off_t off)
	__attribute__((alias("pread")));

SHIM_API ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off,
			     size_t buflen);
SHIM_API ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off,
			     size_t buflen)
{
	if (n > buflen)
		__builtin_trap();
	return pread(fd, buf, n, off);
}

SHIM_API ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off,
			       size_t buflen) __attribute__((alias("__pread_chk")));

SHIM_API ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	struct iovec v = { (void *)buf, n };

	if (bad_offset(fd, off, 0))
		return -1;
	SERVE(fd, &v, 1, off, 0, true, real.pwrite(fd, buf, n, off));
}

SHIM_API ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
	__attribute__((alias("pwrite")));

SHIM_API ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	SERVE(fd, iov, cnt, -1, 0, false, real.readv(fd, iov, cnt));
}

SHIM_API ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	SERVE(fd, iov, cnt, -1, 0, true, real.writev(fd, iov, cnt));
}

SHIM_API ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	if (bad_offset(fd, off, 0))
		return -1;
	SERVE(fd, iov, cnt, off, 0, false, real.preadv(fd, iov, cnt, off));
}

SHIM_API ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off_t off)
	__attribute__((alias("preadv")));

SHIM_API ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	if (bad_offset(fd, off, 0))
		return -1;
	SERVE(fd, iov, cnt, off, 0, true, real.pwritev(fd, iov, cnt, off));
}

SHIM_API ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
	__attribute__((alias("pwritev")));

/* preadv2/pwritev2: offset -1 means the file position, as in the kernel. */
SHIM_API ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off,
			 int flags)
{
	if (bad_offset(fd, off, -1))
		return -1;
	SERVE(fd, iov, cnt, off, flags, false,
	      real.preadv2(fd, iov, cnt, off, flags));
}

SHIM_API ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt,
			    off_t off, int flags) __attribute__((alias("preadv2")));

SHIM_API ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off,
			  int flags)
{
	if (bad_offset(fd, off, -1))
		return -1;
	SERVE(fd, iov, cnt, off, flags, true,
	      real.pwritev2(fd, iov, cnt, off,
			    flags & ~(SHIM_RWF_WRITETHROUGH | SHIM_RWF_NOSERIAL)));
}

SHIM_API ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt,
			     off_t off, int flags) __attribute__((alias("pwritev2")));

SHIM_API off_t lseek(int fd, off_t off, int whence)
{
	struct shim_ofd *o;
	off_t r, size;

	shim_resolve();
	if (remote_served(fd)) {
		int64_t res;
		off_t lr;
		int rr;

		if (remote_seek_local(fd, off, whence, &lr))
			return shim_ret(lr);
		rr = remote_fd_op(fd, HOP_LSEEK, off, whence, 0, &res, NULL);

		if (rr)
			return shim_ret(rr < 0 ? rr : res);
	}
	if (!(o = fd_get(fd)))
		return real.lseek(fd, off, whence);
	pthread_mutex_lock(&o->pos_lock);
	ofd_io_read(o);
	if (!o->wf) {
		ofd_io_done(o);
		pthread_mutex_unlock(&o->pos_lock);
		ofd_put(o);
		return real.lseek(fd, off, whence);
	}
	size = wtio_file_size(o->wf);
	r = shim_seek_to(o->pos, size, off, whence);
	if (r >= 0)
		r = shim_seek_limit(r, off, whence,
				    wtio_file_max_size(o->wf));
	if (r >= 0)
		o->pos = r;
	ofd_io_done(o);
	pthread_mutex_unlock(&o->pos_lock);
	ofd_put(o);
	return shim_ret(r);
}

SHIM_API off_t lseek64(int fd, off_t off, int whence)
	__attribute__((alias("lseek")));
