/* SPDX-License-Identifier: MIT */
/*
 * lease.c - the holder's write lease on each served file, and the thread
 * that hears the kernel break one (another process's open or truncate of
 * the file): the file's one description in the whole system is the
 * holder's, so any other open breaks the lease, and the opener waits
 * until the holder has written the file back and given the lease up.
 *
 * As in the preload shim (preload/lease.c): the signal (F_SETSIG) is
 * directed with F_SETOWN_EX F_OWNER_TID at this thread, blocked in every
 * thread and taken with sigtimedwait; F_SETLEASE F_UNLCK clears owner and
 * signal, so both are set before every lease; while a break is pending,
 * F_GETLEASE no longer says F_WRLCK. A lost signal costs at most one poll
 * period.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lease.h"

static pid_t thr_tid;
static void (*break_fn)(void);

void hlease_block(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, HOLDER_LEASE_SIG);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

static void *lease_thread(void *arg)
{
	struct timespec poll = { .tv_sec = 0, .tv_nsec = 200 * 1000 * 1000 };
	sigset_t set;
	siginfo_t si;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, HOLDER_LEASE_SIG);
	__atomic_store_n(&thr_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	for (;;) {
		(void)sigtimedwait(&set, &si, &poll);
		break_fn();
	}
	return NULL;
}

int hlease_start(void (*on_break)(void))
{
	pthread_attr_t attr;
	pthread_t t;
	int err;

	break_fn = on_break;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, lease_thread, NULL);
	pthread_attr_destroy(&attr);
	if (err)
		return -err;
	while (!__atomic_load_n(&thr_tid, __ATOMIC_ACQUIRE))
		sched_yield();
	return 0;
}

int hlease_take(int fd)
{
	struct f_owner_ex ow = { .type = F_OWNER_TID,
				 .pid = __atomic_load_n(&thr_tid, __ATOMIC_ACQUIRE) };
	int err;

	if (!ow.pid)
		return -EAGAIN;
	if (fcntl(fd, F_SETSIG, HOLDER_LEASE_SIG) < 0 ||
	    fcntl(fd, F_SETOWN_EX, &ow) < 0)
		goto fail;
	if (fcntl(fd, F_SETLEASE, F_WRLCK) == 0)
		return 0;
fail:
	err = errno;
	fcntl(fd, F_SETSIG, 0);
	ow.type = F_OWNER_PID;
	ow.pid = 0;
	fcntl(fd, F_SETOWN_EX, &ow);
	return -err;
}

void hlease_drop(int fd)
{
	fcntl(fd, F_SETLEASE, F_UNLCK);
}

bool hlease_broken(int fd)
{
	return fcntl(fd, F_GETLEASE) != F_WRLCK;
}

void hlease_kick(void)
{
	pid_t tid = __atomic_load_n(&thr_tid, __ATOMIC_ACQUIRE);

	if (tid)
		syscall(SYS_tgkill, getpid(), tid, HOLDER_LEASE_SIG);
}
