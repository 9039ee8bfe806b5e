/* SPDX-License-Identifier: MIT */
/*
 * syscall.c - syscall(2): a program (or a library: libaio, fio's io_uring
 * engine) that issues the raw system call numbers goes past every libc
 * interposer. The numbers that read, write, size, copy, sync, map, open,
 * duplicate or close file descriptors are routed to the shim's own
 * interposers, which serve or pass through exactly as for the libc calls;
 * the ones that cannot be followed (io_uring, libaio's io_submit on a
 * served fd) pass the files through first. Every other number goes
 * straight to the kernel (libwtio's own futex calls among them).
 *
 * syscall() is variadic; like glibc's, it reads six long arguments, which
 * is what the calling convention leaves in the argument registers whether
 * or not the caller passed them. LP64 only: a 64-bit offset is one long
 * (preadv/pwritev's "high" word is then 0 and ignored by the kernel too).
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/aio_abi.h>

#include "shim.h"

#if __SIZEOF_LONG__ != 8
#error "the syscall interposer assumes LP64 (one long per 64-bit offset)"
#endif

static long (*next_syscall)(long, ...);

static long raw6(long n, long a, long b, long c, long d, long e, long f)
{
	long (*fn)(long, ...) = __atomic_load_n(&next_syscall, __ATOMIC_ACQUIRE);

	if (!fn) {
		fn = (__typeof__(fn))dlsym(RTLD_NEXT, "syscall");
		__atomic_store_n(&next_syscall, fn, __ATOMIC_RELEASE);
	}
	return fn(n, a, b, c, d, e, f);
}

/*
 * The program has an io_uring. Its submissions name descriptors in shared
 * memory the kernel reads (with SQPOLL, without any system call), so the
 * shim cannot see which files a ring touches: every served file is
 * written back and passed through now, and nothing is served from then
 * on in this process.
 */
static atomic_bool ring_seen;

void shim_ring_seen(const char *why)
{
	if (atomic_load_explicit(&ring_seen, memory_order_relaxed) ||
	    shim_vfork_child())
		return;
	if (atomic_exchange(&ring_seen, true))
		return;
	shim_init();
	shim_debug("%s: the program uses io_uring: every file passes through from now on",
		   why);
	shim_cfg.disabled = true;	/* new opens first, then what is open */
	shim_demote_where(DEMOTE_ALL, why);
	remote_demote_inheritable(true, HDEMOTE_PROGRAM);
}

/* libaio's io_submit: the control blocks name their descriptors. */
static void aio_submit_check(long nr, struct iocb **cbs)
{
	if (nr <= 0 || !cbs)
		return;
	for (long i = 0; i < nr; i++)
		if (cbs[i])
			shim_demote_fd((int)cbs[i]->aio_fildes, "io_submit");
}

/* st_size of a file this process serves is wtio's (as in stat.c).
 * true: stat again (SHIM_SIZE_AGAIN: the holder closed it just now). */
static bool fix_stat(struct stat *st)
{
	off_t size;
	int k;

	if (!S_ISREG(st->st_mode))
		return false;
	k = shim_served_size(st->st_dev, st->st_ino, &size);
	if (k == SHIM_SIZE_SERVED)
		st->st_size = size;
	return k == SHIM_SIZE_AGAIN;
}

static bool fix_statx(struct statx *stx)
{
	off_t size;
	int k;

	if (!(stx->stx_mask & STATX_SIZE) || !(stx->stx_mask & STATX_INO) ||
	    !S_ISREG(stx->stx_mode))
		return false;
	k = shim_served_size(makedev(stx->stx_dev_major, stx->stx_dev_minor),
			     stx->stx_ino, &size);
	if (k == SHIM_SIZE_SERVED)
		stx->stx_size = (uint64_t)size;
	return k == SHIM_SIZE_AGAIN;
}

/* A stat by path, or of a descriptor with AT_EMPTY_PATH and "": only a
 * descriptor the table knows is looked up (no other one is served). */
static bool stat_wanted(int dirfd, const char *path, int flags)
{
	if ((flags & AT_EMPTY_PATH) && path && !*path)
		return fd_is_served(dirfd) || remote_served(dirfd);
	return true;
}

/* openat2 (no libc wrapper): as shim_openat, with the program's how. */
struct shim_open_how {
	uint64_t flags, mode, resolve;
};

static long do_openat2(int dirfd, const char *path,
		       const struct shim_open_how *how, size_t size)
{
	unsigned char buf[256];
	struct shim_open_how *k = (void *)buf;
	int flags;
	long fd;

	shim_init();
	/* shared: the kernel opens it (a served file's lease breaks) */
	if (shim_cfg.disabled || remote_on || !how ||
	    size < sizeof(*how) || size > sizeof(buf))
		return raw6(SYS_openat2, dirfd, (long)path, (long)how,
			    (long)size, 0, 0);
	flags = (int)how->flags;
	if ((flags & (O_PATH | O_DIRECTORY)) ||
	    (flags & __O_TMPFILE) == __O_TMPFILE)
		return raw6(SYS_openat2, dirfd, (long)path, (long)how,
			    (long)size, 0, 0);
	memcpy(buf, how, size);
	k->flags &= ~(uint64_t)O_DIRECT;
	if ((flags & O_ACCMODE) != O_RDONLY &&
	    (flags & O_ACCMODE) != O_ACCMODE)
		k->flags &= ~(uint64_t)O_TRUNC;
	fd = raw6(SYS_openat2, dirfd, (long)path, (long)k, (long)size, 0, 0);
	if (fd >= 0)
		return shim_adopt_open((int)fd, flags);
	return fd;
}

/* A raw clone that makes a process (no CLONE_VM): a plain one is glibc's
 * fork (the atfork handlers write back and reset the child's tables);
 * with other flags the files are written back first, and the child's
 * copy of the tables is the parent's (docs/SHIM.md). */
static long do_clone(long flags, long stack, long a, long b, long c)
{
	if (!(flags & ~(long)CSIGNAL) && !stack)
		return fork();
	/* shared: the child would use the holder's descriptions with no
	 * references of its own */
	if (!(flags & CLONE_VM) && !shim_vfork_child())
		remote_demote_inheritable(true, HDEMOTE_EXEC);
	if (!(flags & CLONE_VM) && !shim_vfork_child())
		shim_flush_all(false);
	return raw6(SYS_clone, flags, stack, a, b, c, 0);
}

#ifdef SYS_clone3
/*
 * A raw clone3 that is a plain fork: no flags, SIGCHLD at the child's
 * exit, no stack, TLS, pid or cgroup asked for (the fields of struct
 * clone_args up to its third version, 88 bytes; a larger one must be
 * zero past them, as the kernel demands). glibc's fork then makes it,
 * with the atfork handlers that write back and reset the child's tables
 * (its own fork uses clone, not clone3).
 */
static bool clone3_is_fork(long args, long size)
{
	uint64_t ca[11] = { 0 };
	size_t n = (size_t)size, i;

	if (!args || size < 64 || size > 4096)
		return false;
	memcpy(ca, (const void *)args, n < sizeof(ca) ? n : sizeof(ca));
	for (i = sizeof(ca); i < n; i++)
		if (((const unsigned char *)args)[i])
			return false;
	/* flags, exit_signal, stack, stack_size, tls, set_tid,
	 * set_tid_size, cgroup; pidfd, child_tid and parent_tid are only
	 * read for flags */
	return ca[0] == 0 && ca[4] == SIGCHLD && !ca[5] && !ca[6] && !ca[7] &&
	       !ca[8] && !ca[9] && !ca[10];
}
#endif

SHIM_API long syscall(long n, ...)
{
	long a0, a1, a2, a3, a4, a5;
	va_list ap;

	va_start(ap, n);
	a0 = va_arg(ap, long);
	a1 = va_arg(ap, long);
	a2 = va_arg(ap, long);
	a3 = va_arg(ap, long);
	a4 = va_arg(ap, long);
	a5 = va_arg(ap, long);
	va_end(ap);

#define I(x) ((int)(x))
#define P(x) ((void *)(x))
	switch (n) {
	case SYS_read:
		return read(I(a0), P(a1), (size_t)a2);
	case SYS_write:
		return write(I(a0), P(a1), (size_t)a2);
	case SYS_pread64:
		return pread(I(a0), P(a1), (size_t)a2, a3);
	case SYS_pwrite64:
		return pwrite(I(a0), P(a1), (size_t)a2, a3);
	case SYS_readv:
		return readv(I(a0), P(a1), I(a2));
	case SYS_writev:
		return writev(I(a0), P(a1), I(a2));
	case SYS_preadv:
		return preadv(I(a0), P(a1), I(a2), a3);
	case SYS_pwritev:
		return pwritev(I(a0), P(a1), I(a2), a3);
	case SYS_preadv2:
		return preadv2(I(a0), P(a1), I(a2), a3, I(a5));
	case SYS_pwritev2:
		return pwritev2(I(a0), P(a1), I(a2), a3, I(a5));
	case SYS_lseek:
		return lseek(I(a0), a1, I(a2));
	case SYS_copy_file_range:
		return copy_file_range(I(a0), P(a1), I(a2), P(a3), (size_t)a4,
				       (unsigned int)a5);
	case SYS_sendfile:
		return sendfile(I(a0), I(a1), P(a2), (size_t)a3);
	case SYS_splice:
		return splice(I(a0), P(a1), I(a2), P(a3), (size_t)a4,
			      (unsigned int)a5);
	case SYS_fallocate:
		return fallocate(I(a0), I(a1), a2, a3);
	case SYS_ftruncate:
		return ftruncate(I(a0), a1);
	case SYS_truncate:
		return truncate(P(a0), a1);
	case SYS_utimensat:
		/* the kernel's NULL path is futimens (glibc's is EINVAL) */
		return a1 ? utimensat(I(a0), P(a1), P(a2), I(a3)) :
			    futimens(I(a0), P(a2));
	case SYS_fsync:
		return fsync(I(a0));
	case SYS_fdatasync:
		return fdatasync(I(a0));
	case SYS_sync_file_range:
		return sync_file_range(I(a0), a1, a2, (unsigned int)a3);
	case SYS_syncfs:
		return syncfs(I(a0));
	case SYS_sync:
		sync();
		return 0;
	case SYS_close:
		return close(I(a0));
	case SYS_close_range: {
		extern int close_range(unsigned int, unsigned int, int);

		return close_range((unsigned int)a0, (unsigned int)a1, I(a2));
	}
	case SYS_dup:
		return dup(I(a0));
#ifdef SYS_dup2
	case SYS_dup2:
		return dup2(I(a0), I(a1));
#endif
	case SYS_dup3:
		return dup3(I(a0), I(a1), I(a2));
	case SYS_fcntl:
		return fcntl(I(a0), I(a1), P(a2));
	case SYS_ioctl:
		return ioctl(I(a0), (unsigned long)a1, a2);
	case SYS_mmap:
		return (long)mmap(P(a0), (size_t)a1, I(a2), I(a3), I(a4), a5);
#ifdef SYS_open
	case SYS_open:
		return shim_openat(AT_FDCWD, P(a0), I(a1), (mode_t)a2);
#endif
#ifdef SYS_creat
	case SYS_creat:
		return shim_openat(AT_FDCWD, P(a0),
				   O_CREAT | O_WRONLY | O_TRUNC, (mode_t)a1);
#endif
	case SYS_openat:
		return shim_openat(I(a0), P(a1), I(a2), (mode_t)a3);
#ifdef SYS_openat2
	case SYS_openat2:
		return do_openat2(I(a0), P(a1), P(a2), (size_t)a3);
#endif
	case SYS_open_by_handle_at:
		return open_by_handle_at(I(a0), P(a1), I(a2));
#ifdef SYS_fstat
	case SYS_fstat: {
		long r;

		if (remote_served(I(a0)))
			return fstat(I(a0), P(a1));
		r = raw6(n, a0, a1, 0, 0, 0, 0);
		if (r == 0 && fd_is_served(I(a0)))
			fix_stat(P(a1));
		return r;
	}
#endif
#ifdef SYS_stat
	case SYS_stat:
	case SYS_lstat: {
		long r = raw6(n, a0, a1, 0, 0, 0, 0);

		if (r == 0 && fix_stat(P(a1)))
			r = raw6(n, a0, a1, 0, 0, 0, 0);
		return r;
	}
#endif
	case SYS_newfstatat: {
		long r = raw6(n, a0, a1, a2, a3, 0, 0);

		if (r == 0 && stat_wanted(I(a0), P(a1), I(a3)) &&
		    fix_stat(P(a2)))
			r = raw6(n, a0, a1, a2, a3, 0, 0);
		return r;
	}
	case SYS_statx: {
		long r = raw6(n, a0, a1, a2, a3, a4, 0);

		if (r == 0 && stat_wanted(I(a0), P(a1), I(a2)) &&
		    fix_statx(P(a4)))
			r = raw6(n, a0, a1, a2, a3, a4, 0);
		return r;
	}
	case SYS_io_submit:
		aio_submit_check(a1, P(a2));
		break;
	case SYS_io_uring_setup: {
		long r = raw6(n, a0, a1, 0, 0, 0, 0);

		if (r >= 0)
			shim_ring_seen("io_uring_setup");
		return r;
	}
	case SYS_io_uring_enter:
	case SYS_io_uring_register:
		/* a ring this process did not set up through here (inherited,
		 * passed over a socket, or made with raw instructions) */
		shim_ring_seen(n == SYS_io_uring_enter ? "io_uring_enter" :
			       "io_uring_register");
		break;
	case SYS_exit_group:
		/* the exit interposers write everything back */
		_exit(I(a0));
#ifdef SYS_execve
	case SYS_execve:
		return execve(P(a0), P(a1), P(a2));
#endif
	case SYS_execveat:
		if (!shim_vfork_child()) {
			int e = remote_before_exec();

			if (e < 0)
				return shim_ret(e);
			shim_flush_all(false);
		}
		break;
#ifdef SYS_fork
	case SYS_fork:
		return fork();
#endif
#ifdef SYS_vfork
	case SYS_vfork:
		/* cannot return twice from this frame; the shim's vfork is a
		 * fork too (exec.c) */
		return fork();
#endif
	case SYS_clone:
		return do_clone(a0, a1, a2, a3, a4);
#ifdef SYS_clone3
	case SYS_clone3:
		if (clone3_is_fork(a0, a1))
			return fork();
		/* struct clone_args starts with the u64 flags */
		if (a0 && !(*(uint64_t *)a0 & CLONE_VM) && !shim_vfork_child()) {
			remote_demote_inheritable(true, HDEMOTE_EXEC);
			shim_flush_all(false);
		}
		break;
#endif
	}
#undef I
#undef P
	return raw6(n, a0, a1, a2, a3, a4, a5);
}
