/* SPDX-License-Identifier: MIT */
/*
 * aio.c - the library calls that reach a file past every interposer:
 *
 *  - POSIX AIO (aio_read, aio_write, aio_fsync, lio_listio): glibc runs
 *    them on its own threads with its internal pread/pwrite/fsync, which
 *    no preload sees. The descriptors they name pass through first.
 *  - open_by_handle_at: a new descriptor of a file, served as an open.
 *  - liburing's ring setup (io_uring_queue_init*, io_uring_setup and the
 *    exported raw wrappers): liburing issues its system calls with its own
 *    instructions, so syscall() never sees them; a ring the program sets
 *    up makes every file pass through (see shim_ring_seen in syscall.c).
 *    libwtio sets its own rings up through its table (src/sys.h): they
 *    never come here.
 */
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

static void *next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* fn_: the next definition of name, or return fail (errno ENOSYS). */
#define NEXT(type, name, fail)					\
	static __typeof__(type) fn_;			\
	if (!fn_)						\
		fn_ = (__typeof__(type))next(name);		\
	if (!fn_) {						\
		errno = ENOSYS;					\
		return fail;					\
	}

static void aiocb_pass(const struct aiocb *cb, const char *why)
{
	if (cb)
		shim_demote_fd(cb->aio_fildes, why);
}

typedef int (*aio_fn)(struct aiocb *);

SHIM_API int aio_read(struct aiocb *cb)
{
	NEXT(aio_fn, "aio_read", -1);
	aiocb_pass(cb, "aio_read");
	return fn_(cb);
}

SHIM_API int aio_write(struct aiocb *cb)
{
	NEXT(aio_fn, "aio_write", -1);
	aiocb_pass(cb, "aio_write");
	return fn_(cb);
}

SHIM_API int aio_fsync(int op, struct aiocb *cb)
{
	NEXT(int (*)(int, struct aiocb *), "aio_fsync", -1);
	aiocb_pass(cb, "aio_fsync");
	return fn_(op, cb);
}

SHIM_API int lio_listio(int mode, struct aiocb *const list[], int nent,
			struct sigevent *sev)
{
	NEXT(int (*)(int, struct aiocb *const[], int, struct sigevent *), "lio_listio", -1);
	for (int i = 0; i < nent; i++)
		aiocb_pass(list[i], "lio_listio");
	return fn_(mode, list, nent, sev);
}

/* On 64-bit Linux struct aiocb64 is struct aiocb. */
SHIM_API int aio_read64(struct aiocb64 *cb) __attribute__((alias("aio_read")));
SHIM_API int aio_write64(struct aiocb64 *cb) __attribute__((alias("aio_write")));
SHIM_API int aio_fsync64(int op, struct aiocb64 *cb)
	__attribute__((alias("aio_fsync")));
SHIM_API int lio_listio64(int mode, struct aiocb64 *const list[], int nent,
			  struct sigevent *sev) __attribute__((alias("lio_listio")));

SHIM_API int open_by_handle_at(int mount_fd, struct file_handle *h, int flags)
{
	int kflags = flags, fd;

	shim_resolve();
	shim_init();
	if (shim_cfg.disabled || (flags & O_PATH))
		return (int)syscall(SYS_open_by_handle_at, mount_fd, h, flags);
	kflags &= ~O_DIRECT;
	if ((flags & O_ACCMODE) != O_RDONLY &&
	    (flags & O_ACCMODE) != O_ACCMODE)
		kflags &= ~O_TRUNC;
	/* not through syscall(), which comes back here */
	{
		static long (*sc)(long, ...);

		if (!sc)
			sc = (__typeof__(sc))next("syscall");
		fd = (int)sc(SYS_open_by_handle_at, mount_fd, h, kflags);
	}
	if (fd < 0)
		return fd;
	return shim_adopt_open(fd, flags);
}

/* liburing (opaque pointers: its header is not needed here). */
SHIM_API int io_uring_queue_init_params(unsigned entries, void *ring, void *p);
SHIM_API int io_uring_queue_init(unsigned entries, void *ring, unsigned flags);
SHIM_API int io_uring_setup(unsigned entries, void *p);
SHIM_API int io_uring_enter(unsigned fd, unsigned to_submit,
			    unsigned min_complete, unsigned flags, void *sig);
SHIM_API int io_uring_enter2(unsigned fd, unsigned to_submit,
			     unsigned min_complete, unsigned flags, void *sig,
			     size_t sz);
SHIM_API int io_uring_register(unsigned fd, unsigned opcode, const void *arg,
			       unsigned nr_args);

SHIM_API int io_uring_queue_init_params(unsigned entries, void *ring, void *p)
{
	int r;
	NEXT(int (*)(unsigned, void *, void *), "io_uring_queue_init_params", -ENOSYS);
	r = fn_(entries, ring, p);
	if (r == 0)
		shim_ring_seen("io_uring_queue_init_params");
	return r;
}

SHIM_API int io_uring_queue_init(unsigned entries, void *ring, unsigned flags)
{
	int r;
	NEXT(int (*)(unsigned, void *, unsigned), "io_uring_queue_init", -ENOSYS);
	r = fn_(entries, ring, flags);
	if (r == 0)
		shim_ring_seen("io_uring_queue_init");
	return r;
}

SHIM_API int io_uring_setup(unsigned entries, void *p)
{
	int r;
	NEXT(int (*)(unsigned, void *), "io_uring_setup", -ENOSYS);
	r = fn_(entries, p);
	if (r >= 0)
		shim_ring_seen("io_uring_setup");
	return r;
}

SHIM_API int io_uring_enter(unsigned fd, unsigned to_submit,
			    unsigned min_complete, unsigned flags, void *sig)
{
	NEXT(int (*)(unsigned, unsigned, unsigned, unsigned, void *), "io_uring_enter", -ENOSYS);
	shim_ring_seen("io_uring_enter");
	return fn_(fd, to_submit, min_complete, flags, sig);
}

SHIM_API int io_uring_enter2(unsigned fd, unsigned to_submit,
			     unsigned min_complete, unsigned flags, void *sig,
			     size_t sz)
{
	NEXT(int (*)(unsigned, unsigned, unsigned, unsigned, void *, size_t), "io_uring_enter2", -ENOSYS);
	shim_ring_seen("io_uring_enter2");
	return fn_(fd, to_submit, min_complete, flags, sig, sz);
}

SHIM_API int io_uring_register(unsigned fd, unsigned opcode, const void *arg,
			       unsigned nr_args)
{
	NEXT(int (*)(unsigned, unsigned, const void *, unsigned), "io_uring_register", -ENOSYS);
	shim_ring_seen("io_uring_register");
	return fn_(fd, opcode, arg, nr_args);
}
