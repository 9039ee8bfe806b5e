/* SPDX-License-Identifier: MIT */
/*
 * lease.c - the write lease that keeps a served file this process's alone
 * (docs/SHIM.md, "Two processes on one file"), the thread that hears the
 * kernel break it, and sendmsg (SCM_RIGHTS hands a description to another
 * process without an open, which breaks no lease).
 *
 * The kernel grants F_SETLEASE F_WRLCK only while the description asking is
 * the file's only open one (every writer and, with file locking, every
 * reader counts, this process's own included), and breaks it on any later
 * open or truncate of the file: the opener waits (up to
 * /proc/sys/fs/lease-break-time) until the holder gives the lease up, and
 * the holder is told with F_SETSIG's signal. The signal is directed with
 * F_SETOWN_EX F_OWNER_TID at the shim's own thread, which keeps it blocked
 * and takes it with sigtimedwait: the program's threads never see it, its
 * handlers and masks are untouched.
 *
 * Kernel details this relies on (checked on Linux 6.18): F_SETLEASE F_UNLCK
 * clears the owner and the signal (so both are set again before every
 * lease); F_SETLEASE sets the owner only when none is set (so F_SETOWN_EX
 * first keeps it at the thread); a lease can be taken on an O_RDONLY
 * description; while a break is pending F_GETLEASE returns the type the
 * breaker allows (F_RDLCK or F_UNLCK), no longer F_WRLCK.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

static pthread_mutex_t thr_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t thr_cond = PTHREAD_COND_INITIALIZER;
static pid_t thr_tid;			/* 0: no lease thread (yet) */

static void *lease_thread(void *arg)
{
	sigset_t set;
	siginfo_t si;
	/* A signal lost (queue full, or sent while the file was being
	 * registered) costs at most this long: every served lease is
	 * looked at on this period too. */
	struct timespec poll = { .tv_sec = 0, .tv_nsec = 200 * 1000 * 1000 };

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, SHIM_LEASE_SIG);
	pthread_mutex_lock(&thr_lock);
	thr_tid = (pid_t)syscall(SYS_gettid);
	pthread_cond_broadcast(&thr_cond);
	pthread_mutex_unlock(&thr_lock);
	for (;;) {
		(void)sigtimedwait(&set, &si, &poll);
		shim_demote_where(DEMOTE_BROKEN,
				  "lease broken (another open or truncate of the file)");
	}
	return NULL;
}

/* The lease thread's tid, started on first use (and again in a child
 * after fork, where it does not exist). 0 if it cannot be started. */
static pid_t lease_tid(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	pid_t tid;

	pthread_mutex_lock(&thr_lock);
	if (!thr_tid) {
		/* created with every signal blocked, so that none of the
		 * program's is ever delivered to it */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 * 1024);
		if (pthread_create(&t, &attr, lease_thread, NULL) == 0)
			while (!thr_tid)
				pthread_cond_wait(&thr_cond, &thr_lock);
		pthread_attr_destroy(&attr);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	tid = thr_tid;
	pthread_mutex_unlock(&thr_lock);
	return tid;
}

int shim_lease_take(int fd)
{
	struct f_owner_ex ow = { .type = F_OWNER_TID };
	int err;

	ow.pid = lease_tid();
	if (!ow.pid)
		return -EAGAIN;
	/* signal and owner before the lease (see the top of this file) */
	if (real.fcntl(fd, F_SETSIG, SHIM_LEASE_SIG) < 0 ||
	    real.fcntl(fd, F_SETOWN_EX, &ow) < 0)
		goto fail;
	if (real.fcntl(fd, F_SETLEASE, F_WRLCK) == 0)
		return 0;
fail:
	err = errno;
	real.fcntl(fd, F_SETSIG, 0);
	ow.type = F_OWNER_PID;
	ow.pid = 0;
	real.fcntl(fd, F_SETOWN_EX, &ow);
	return -err;
}

void shim_lease_drop(int fd)
{
	/* clears the owner and the signal too */
	real.fcntl(fd, F_SETLEASE, F_UNLCK);
}

void shim_lease_kick(void)
{
	pid_t tid = __atomic_load_n(&thr_tid, __ATOMIC_RELAXED);

	if (tid)
		syscall(SYS_tgkill, getpid(), tid, SHIM_LEASE_SIG);
}

void shim_lease_atfork_child(void)
{
	/* the thread is the parent's; a lease in the child starts its own */
	pthread_mutex_init(&thr_lock, NULL);
	pthread_cond_init(&thr_cond, NULL);
	thr_tid = 0;
}

/* ---- descriptors handed to another process without an open ---- */

static void demote_rights(const struct msghdr *msg)
{
	struct cmsghdr *c;

	if (!msg || !msg->msg_control)
		return;
	for (c = CMSG_FIRSTHDR((struct msghdr *)msg); c;
	     c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
		size_t n, i;
		const int *fds;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		fds = (const int *)CMSG_DATA(c);
		for (i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, fds + i, sizeof(fd));
			shim_demote_fd(fd, "sent with SCM_RIGHTS");
		}
	}
}

SHIM_API ssize_t sendmsg(int sock, const struct msghdr *msg, int flags)
{
	static ssize_t (*next)(int, const struct msghdr *, int);

	if (!next)
		next = (__typeof__(next))dlsym(RTLD_NEXT, "sendmsg");
	shim_resolve();
	demote_rights(msg);
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(sock, msg, flags);
}

SHIM_API int sendmmsg(int sock, struct mmsghdr *vec, unsigned int n,
		      int flags)
{
	static int (*next)(int, struct mmsghdr *, unsigned int, int);
	unsigned int i;

	if (!next)
		next = (__typeof__(next))dlsym(RTLD_NEXT, "sendmmsg");
	shim_resolve();
	for (i = 0; vec && i < n; i++)
		demote_rights(&vec[i].msg_hdr);
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(sock, vec, n, flags);
}
