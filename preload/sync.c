/* SPDX-License-Identifier: MIT */
/*
 * sync.c - fsync and friends, sizes (truncate, fallocate), the calls that
 * pass through on the real descriptor after a flush (copy_file_range,
 * sendfile, splice, mmap), and exec/_exit.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

/* Run f(o) on a served descriptor; 1 = served (result in *res), 0 = not
 * served or passed through (caller does the real call). */
#define WITH_WF(fd, body)						\
	do {								\
		struct shim_ofd *o_;					\
		long r_ = 0;						\
		bool done_ = false;					\
		shim_resolve();						\
		if (!shim_busy && (o_ = fd_get(fd))) {			\
			pthread_rwlock_rdlock(&o_->io_lock);		\
			if (o_->wf) {					\
				struct wtio_file *wf = o_->wf;		\
				BUSY_ENTER();				\
				r_ = (body);				\
				BUSY_LEAVE();				\
				done_ = true;				\
			}						\
			pthread_rwlock_unlock(&o_->io_lock);		\
			ofd_put(o_);					\
		}							\
		if (done_)						\
			return (int)shim_ret(r_);			\
	} while (0)

SHIM_API int fsync(int fd)
{
	WITH_WF(fd, (ofd_guard_size(o_), wtio_fsync(wf)));
	return real.fsync(fd);
}

SHIM_API int fdatasync(int fd)
{
	WITH_WF(fd, (ofd_guard_size(o_), wtio_fdatasync(wf)));
	return real.fdatasync(fd);
}

SHIM_API int sync_file_range(int fd, off_t off, off_t n, unsigned int flags)
{
	/* SYNC_FILE_RANGE_WAIT_BEFORE/WRITE/WAIT_AFTER are 1, 2, 4 like
	 * wtio's; the system call's extra bits are refused there too. */
	WITH_WF(fd, wtio_sync_range(wf, off, n, flags));
	return real.sync_file_range(fd, off, n, flags);
}

SHIM_API int syncfs(int fd)
{
	shim_resolve();
	shim_flush_all(false);
	return real.syncfs(fd);
}

SHIM_API void sync(void)
{
	shim_resolve();
	shim_flush_all(false);
	real.sync();
}

SHIM_API int ftruncate(int fd, off_t len)
{
	WITH_WF(fd, wtio_ftruncate(wf, len));
	return real.ftruncate(fd, len);
}

SHIM_API int ftruncate64(int fd, off_t len) __attribute__((alias("ftruncate")));

struct real_call {
	int kind;
	int fd, fd2, mode;
	off_t a, b;
	const char *path;
	off_t *pa, *pb;
	size_t n;
	unsigned int flags;
	int err;
};

enum { RC_TRUNCATE, RC_FALLOCATE, RC_POSIX_FALLOCATE };

static long do_real(void *arg)
{
	struct real_call *c = arg;
	long r = -1;

	switch (c->kind) {
	case RC_TRUNCATE:
		r = real.truncate(c->path, c->a);
		break;
	case RC_FALLOCATE:
		r = real.fallocate(c->fd, c->mode, c->a, c->b);
		break;
	case RC_POSIX_FALLOCATE:
		r = real.posix_fallocate(c->fd, c->a, c->b);
		if (r) {
			c->err = (int)r;
			return -1;
		}
		return 0;
	}
	c->err = r < 0 ? errno : 0;
	return r;
}

/* Write everything back and empty the cache of fd's file, run the real
 * call, then serve the file again. 1 = done here (*ret set). */
static int around_fd(int fd, struct real_call *c, long *ret)
{
	struct shim_ofd *o;

	shim_resolve();
	if (shim_busy || !(o = fd_get(fd)))
		return 0;
	*ret = inode_around(o->inode, do_real, c, false);
	ofd_put(o);
	return 1;
}

SHIM_API int truncate(const char *path, off_t len)
{
	struct real_call c = { .kind = RC_TRUNCATE, .path = path, .a = len };
	struct stat st;
	off_t size;
	int fd;

	shim_resolve();
	if (shim_busy || real.stat(path, &st) < 0 ||
	    !shim_inode_size(st.st_dev, st.st_ino, &size))
		return real.truncate(path, len);
	/* Served here: truncate through wtio on a descriptor of our own,
	 * so that the cache and the file change together. */
	/* one parked by an earlier call while the program holds record
	 * locks on the file (locks.c), or a new one */
	fd = shim_unpark(AT_FDCWD, path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0)
		shim_adopt(fd, O_WRONLY | O_CLOEXEC);
	else
		fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return real.truncate(path, len);
	{
		long r = 0;

		/* a descriptor of the shim's own: closing it must not drop
		 * the program's record locks on the file (locks.c) */
		if (!around_fd(fd, &c, &r)) {
			shim_close_internal(fd);
			return real.truncate(path, len);
		}
		shim_close_internal(fd);
		if (r < 0)
			errno = c.err;
		return (int)r;
	}
}

SHIM_API int truncate64(const char *path, off_t len)
	__attribute__((alias("truncate")));

SHIM_API int fallocate(int fd, int mode, off_t off, off_t len)
{
	struct real_call c = { .kind = RC_FALLOCATE, .fd = fd, .mode = mode,
			       .a = off, .b = len };
	long r;

	if (!around_fd(fd, &c, &r))
		return real.fallocate(fd, mode, off, len);
	if (r < 0)
		errno = c.err;
	return (int)r;
}

SHIM_API int fallocate64(int fd, int mode, off_t off, off_t len)
	__attribute__((alias("fallocate")));

SHIM_API int posix_fallocate(int fd, off_t off, off_t len)
{
	struct real_call c = { .kind = RC_POSIX_FALLOCATE, .fd = fd,
			       .a = off, .b = len };
	long r;

	if (!around_fd(fd, &c, &r))
		return real.posix_fallocate(fd, off, len);
	return r < 0 ? c.err : 0;
}

SHIM_API int posix_fallocate64(int fd, off_t off, off_t len)
	__attribute__((alias("posix_fallocate")));

/*
 * Data movers between descriptors. A served source is flushed (data and
 * exact size) so the kernel reads what the program wrote, and its position,
 * which the kernel does not know, is passed explicitly. A served
 * destination is written back and emptied around the call (inode_around
 * puts the kernel position right before and takes it back after).
 */
enum { MV_COPY, MV_SENDFILE, MV_SPLICE };

struct mover {
	int kind;
	int fd_in, fd_out;
	off_t *off_in, *off_out;
	size_t len;
	unsigned int flags;
	ssize_t ret;
	int err;
	struct shim_ofd *in;
	off_t in_pos;
};

static long mover_call(void *arg)
{
	struct mover *m = arg;

	switch (m->kind) {
	case MV_COPY:
		m->ret = real.copy_file_range(m->fd_in, m->off_in, m->fd_out,
					      m->off_out, m->len, m->flags);
		break;
	case MV_SENDFILE:
		m->ret = real.sendfile(m->fd_out, m->fd_in, m->off_in, m->len);
		break;
	default:
		m->ret = real.splice(m->fd_in, m->off_in, m->fd_out,
				     m->off_out, m->len, m->flags);
	}
	m->err = errno;
	return 0;
}

static ssize_t move(struct mover *m)
{
	struct shim_ofd *out;

	shim_resolve();
	m->in = shim_busy ? NULL : fd_get(m->fd_in);
	out = shim_busy ? NULL : fd_get(m->fd_out);
	if (m->in && !m->in->wf) {
		ofd_put(m->in);
		m->in = NULL;
	}
	if (m->in) {
		ofd_flush(m->in, false);
		if (!m->off_in) {
			pthread_mutex_lock(&m->in->pos_lock);
			m->in_pos = m->in->pos;
			m->off_in = &m->in_pos;
		}
	}
	/* also when out is the source's description: a copy within the
	 * file changes what the cache holds */
	if (out)
		inode_around(out->inode, mover_call, m, false);
	else
		mover_call(m);
	if (m->in) {
		if (m->off_in == &m->in_pos) {
			m->in->pos = m->in_pos;
			pthread_mutex_unlock(&m->in->pos_lock);
		}
		ofd_put(m->in);
	}
	if (out)
		ofd_put(out);
	errno = m->err;
	return m->ret;
}

SHIM_API ssize_t copy_file_range(int fd_in, off_t *off_in, int fd_out,
				 off_t *off_out, size_t len, unsigned int flags)
{
	struct mover m = { .kind = MV_COPY, .fd_in = fd_in, .fd_out = fd_out,
			   .off_in = off_in, .off_out = off_out, .len = len,
			   .flags = flags };

	return move(&m);
}

SHIM_API ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	struct mover m = { .kind = MV_SENDFILE, .fd_in = in_fd,
			   .fd_out = out_fd, .off_in = offset, .len = count };

	return move(&m);
}

SHIM_API ssize_t sendfile64(int out_fd, int in_fd, off_t *offset, size_t count)
	__attribute__((alias("sendfile")));

SHIM_API ssize_t splice(int fd_in, off_t *off_in, int fd_out, off_t *off_out,
			size_t len, unsigned int flags)
{
	struct mover m = { .kind = MV_SPLICE, .fd_in = fd_in, .fd_out = fd_out,
			   .off_in = off_in, .off_out = off_out, .len = len,
			   .flags = flags };

	return move(&m);
}

/* A mapping sees the kernel's page cache: write everything back, then
 * stop caching the file in this process (for as long as it lives). */
SHIM_API void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		    off_t off)
{
	struct shim_ofd *o;

	shim_resolve();
	if (!shim_busy && !(flags & MAP_ANONYMOUS) && (o = fd_get(fd))) {
		if (o->wf)
			ofd_demote(o);
		ofd_put(o);
	}
	return real.mmap(addr, len, prot, flags, fd, off);
}

SHIM_API void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		      off_t off) __attribute__((alias("mmap")));
