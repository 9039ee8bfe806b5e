/* SPDX-License-Identifier: MIT */
/*
 * real.c - find the next definition (libc's) of every interposed function,
 * once, thread-safely, with dlsym(RTLD_NEXT), and hand libwtio the ones
 * it calls itself (src/sys.h), so that its calls never come back through
 * the interposers.
 */
#include <dlfcn.h>
#include <pthread.h>

#include "shim.h"
#include "sys.h"
#if WTIO_HAVE_IO_URING
#include <liburing.h>
#endif

struct real_fns real;

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static bool sys_ok;

#define R(name) real.name = (__typeof__(real.name))dlsym(RTLD_NEXT, #name)

static void resolve(void)
{
	R(open); R(openat); R(close);
	R(read); R(write); R(pread); R(pwrite);
	R(readv); R(writev); R(preadv); R(pwritev); R(preadv2); R(pwritev2);
	R(lseek); R(fsync); R(fdatasync); R(sync_file_range); R(syncfs);
	R(sync); R(ftruncate); R(truncate); R(fallocate); R(posix_fallocate);
	R(copy_file_range); R(sendfile); R(splice);
	R(fstat); R(stat); R(lstat); R(fstatat); R(statx);
	R(dup); R(dup2); R(dup3); R(fcntl); R(mmap);
	R(fopen); R(fdopen); R(freopen);
	R(__xstat); R(__lxstat); R(__fxstat); R(__fxstatat);
}

int shim_dupfd_own(int fd)
{
	/* never a number the program closed lately, where a call of the
	 * program may still race (fdrace.c) */
	int nfd = fd_dup_avoiding(fd, SHIM_FD_BASE);

	return nfd >= 0 ? nfd : fd_dup_avoiding(fd, 3);
}

#if WTIO_HAVE_IO_URING
static int (*next_ring_init)(unsigned, struct io_uring *,
			     struct io_uring_params *);

/* libwtio's rings on the shim's own descriptor numbers (shim_dupfd_own):
 * a ring at the lowest free number, 3 say, is replaced by a shell's
 * "exec 3<file" without anyone seeing it, and its I/O then never ends. */
static int lib_ring_init(unsigned entries, struct io_uring *ring,
			 struct io_uring_params *p)
{
	int blk[64], nblk = fd_block_lately(blk), ret, nfd;

	/* not for a moment on a number the program just closed (fdrace.c) */
	ret = next_ring_init(entries, ring, p);
	fd_unblock(blk, nblk);

	if (ret < 0 || ring->ring_fd >= SHIM_FD_BASE)
		return ret;
	nfd = shim_dupfd_own(ring->ring_fd);
	if (nfd >= 0 && nfd != ring->ring_fd) {
		real.close(ring->ring_fd);
		ring->ring_fd = nfd;
#if WTIO_URING_ENTER_FD
		ring->enter_ring_fd = nfd;
#endif
	}
	return ret;
}
#endif

/* libwtio's table: every call the next definition (libc's, liburing's),
 * but open and close, whose meaning for served files the shim keeps
 * (shim_lib_open: the program's description; shim_close_internal: a
 * descriptor of a file the program holds record locks on stays open).
 * Done before any context exists: shim_ctx refuses to make one without. */
static void install_sys(void)
{
	struct wtio_sys t;

#define NEXT(ret, name, params) \
	t.name = (__typeof__(t.name))dlsym(RTLD_NEXT, #name);
	WTIO_SYS_CALLS(NEXT)
#undef NEXT
	t.open = shim_lib_open;
	t.close = shim_close_internal;
#if WTIO_HAVE_IO_URING
	next_ring_init = t.io_uring_queue_init_params;
	if (next_ring_init)
		t.io_uring_queue_init_params = lib_ring_init;
#endif
	sys_ok = wtio_sys_set(&t) == 0;
}

bool shim_sys_ok(void)
{
	return sys_ok;
}

static void resolve_all(void)
{
	resolve();
	install_sys();
}

void shim_resolve(void)
{
	pthread_once(&resolve_once, resolve_all);
}
