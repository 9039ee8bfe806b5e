/* SPDX-License-Identifier: MIT */
/*
 * sync.c - fsync and friends, sizes (truncate, fallocate), and the calls
 * that pass the file through first (copy_file_range, sendfile, splice,
 * mmap). In shared mode, requests to the holder (remote_ops.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"
#include "shim_rw.h"

/* Shared mode: the request for a descriptor the holder serves; returns
 * from the caller unless fd is the kernel's (now). */
#define REMOTE_OP(fd, op, a0, a1, a2)					\
	do {								\
		int64_t res_;						\
		int rr_ = remote_fd_op(fd, op, a0, a1, a2, &res_, NULL); \
		if (rr_)						\
			return (int)shim_ret(rr_ < 0 ? rr_ : res_);	\
	} while (0)

/* Run f(o) on a served descriptor; 1 = served (result in *res), 0 = not
 * served or passed through (caller does the real call). */
#define WITH_WF(fd, body)						\
	do {								\
		struct shim_ofd *o_;					\
		long r_ = 0;						\
		bool done_ = false;					\
		shim_resolve();						\
		if ((o_ = fd_get(fd))) {				\
			ofd_io_read(o_);		\
			if (o_->wf) {					\
				struct wtio_file *wf = o_->wf;		\
				r_ = (body);				\
				done_ = true;				\
			}						\
			ofd_io_done(o_);		\
			ofd_put(o_);					\
		}							\
		if (done_)						\
			return (int)shim_ret(r_);			\
	} while (0)

SHIM_API int fsync(int fd)
{
	int e;

	REMOTE_OP(fd, HOP_FSYNC, 0, 0, 0);
	if (remote_on && (e = remote_take_err(fd)) < 0)
		return (int)shim_ret(e);
	WITH_WF(fd, (ofd_guard_size(o_), wtio_fsync(wf)));
	return real.fsync(fd);
}

SHIM_API int fdatasync(int fd)
{
	int e;

	REMOTE_OP(fd, HOP_FDATASYNC, 0, 0, 0);
	if (remote_on && (e = remote_take_err(fd)) < 0)
		return (int)shim_ret(e);
	WITH_WF(fd, (ofd_guard_size(o_), wtio_fdatasync(wf)));
	return real.fdatasync(fd);
}

SHIM_API int sync_file_range(int fd, off_t off, off_t n, unsigned int flags)
{
	/* SYNC_FILE_RANGE_WAIT_BEFORE/WRITE/WAIT_AFTER are 1, 2, 4 like
	 * wtio's; the system call's extra bits are refused there too. */
	REMOTE_OP(fd, HOP_SYNC_RANGE, off, n, flags);
	WITH_WF(fd, wtio_sync_range(wf, off, n, flags));
	return real.sync_file_range(fd, off, n, flags);
}

SHIM_API int syncfs(int fd)
{
	int r;

	shim_resolve();
	/* the holder's files: those of every process of the program */
	if (remote_on && (r = remote_syncfs()) < 0)
		return (int)shim_ret(r);
	shim_flush_all(false);
	return real.syncfs(fd);
}

SHIM_API void sync(void)
{
	shim_resolve();
	if (remote_on)
		remote_syncfs();
	shim_flush_all(false);
	real.sync();
}

SHIM_API int ftruncate(int fd, off_t len)
{
	struct shim_ofd *o;

	{
		int64_t res, val = 0;
		int rr = remote_fd_op(fd, HOP_FTRUNCATE, len,
				      remote_fsize_arg(), 0, &res, &val);

		if (rr)
			return (int)shim_ret(rr < 0 ? rr :
					     remote_fsize_reply(res, val));
	}
	o = fd_get(fd);

	if (o) {	/* a truncate moves the mtime, as a write does */
		atomic_store(&o->times_kept, false);
		ofd_put(o);
	}
	/* wtio's EBADF for a handle not open for writing is the kernel's
	 * EINVAL (do_sys_ftruncate) */
	WITH_WF(fd, ({ int t_ = wtio_ftruncate(wf, len);
		       t_ == -EBADF ? -EINVAL : t_; }));
	return real.ftruncate(fd, len);
}

SHIM_API int ftruncate64(int fd, off_t len) __attribute__((alias("ftruncate")));

struct real_call {
	int kind;
	int fd, mode;
	off_t a, b;
	int err;
};

enum { RC_FALLOCATE, RC_POSIX_FALLOCATE };

static long do_real(void *arg)
{
	struct real_call *c = arg;
	long r = -1;

	switch (c->kind) {
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
	if (!(o = fd_get(fd)))
		return 0;
	*ret = inode_around(o->inode, do_real, c, false);
	ofd_put(o);
	return 1;
}

/* fallocate's -EFBIG at wtio's limit for a served fd (shim_falloc_limit);
 * a read-only description is left to the kernel's EBADF. 0 otherwise. */
static int falloc_limit(int fd, off_t off, off_t len)
{
	struct shim_ofd *o;
	int r = 0;

	shim_resolve();
	if (!(o = fd_get(fd)))
		return 0;
	ofd_io_read(o);
	if (o->wf && (o->oflags & O_ACCMODE) != O_RDONLY)
		r = shim_falloc_limit(off, len, wtio_file_max_size(o->wf));
	ofd_io_done(o);
	ofd_put(o);
	return r;
}

/* A truncate by path breaks the write lease of a process serving the file,
 * this one included: its lease thread writes the file back and passes it
 * through before the kernel truncates (lease.c). Nothing to do here, and
 * no shim lock may be held across the call. */
SHIM_API int truncate(const char *path, off_t len)
{
	shim_resolve();
	return real.truncate(path, len);
}

SHIM_API int truncate64(const char *path, off_t len)
	__attribute__((alias("truncate")));

SHIM_API int fallocate(int fd, int mode, off_t off, off_t len)
{
	struct real_call c = { .kind = RC_FALLOCATE, .fd = fd, .mode = mode,
			       .a = off, .b = len };
	long r;
	int e;

	REMOTE_OP(fd, HOP_FALLOCATE, mode, off, len);
	if ((e = falloc_limit(fd, off, len))) {
		errno = -e;
		return -1;
	}
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
	int64_t res;
	long r;
	int rr;

	/* returns the error number, errno untouched */
	rr = remote_fd_op(fd, HOP_FALLOCATE, 0, off, len, &res, NULL);
	if (rr)
		return rr < 0 ? -rr : (res < 0 ? (int)-res : 0);
	if ((rr = falloc_limit(fd, off, len)))
		return -rr;
	if (!around_fd(fd, &c, &r))
		return real.posix_fallocate(fd, off, len);
	return r < 0 ? c.err : 0;
}

SHIM_API int posix_fallocate64(int fd, off_t off, off_t len)
	__attribute__((alias("posix_fallocate")));

/*
 * Data movers between descriptors: the kernel moves the data, so a served
 * source or destination is written back (exact size) and passed through
 * for good first (the served description has O_DIRECT, whose alignment
 * rules the kernel would apply to the copy). The kernel position of a
 * demoted description is the program's (inode_around sets it).
 */
enum { MV_COPY, MV_SENDFILE, MV_SPLICE };

struct mover {
	int kind;
	int fd_in, fd_out;
	off_t *off_in, *off_out;
	size_t len;
	unsigned int flags;
};

static ssize_t move(struct mover *m)
{
	shim_resolve();
	shim_demote_fd(m->fd_in, "a kernel copy reads it");
	shim_demote_fd(m->fd_out, "a kernel copy writes it");
	switch (m->kind) {
	case MV_COPY:
		return real.copy_file_range(m->fd_in, m->off_in, m->fd_out,
					    m->off_out, m->len, m->flags);
	case MV_SENDFILE:
		return real.sendfile(m->fd_out, m->fd_in, m->off_in, m->len);
	default:
		return real.splice(m->fd_in, m->off_in, m->fd_out,
				   m->off_out, m->len, m->flags);
	}
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
	if (!(flags & MAP_ANONYMOUS) && remote_served(fd)) {
		/* the kernel's page cache is what a mapping sees */
		int r = remote_demote_fd(fd, HDEMOTE_PROGRAM);

		if (r < 0) {
			errno = -r;
			return MAP_FAILED;
		}
	}
	if (!(flags & MAP_ANONYMOUS) && (o = fd_get(fd))) {
		if (o->wf)
			ofd_demote(o);
		ofd_put(o);
	}
	return real.mmap(addr, len, prot, flags, fd, off);
}

SHIM_API void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		      off_t off) __attribute__((alias("mmap")));
