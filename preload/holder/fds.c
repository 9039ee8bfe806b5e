/* SPDX-License-Identifier: MIT */
/*
 * fds.c - the holder's descriptors, which every file it serves for the
 * whole program costs (the file's description and libwtio's, two a file,
 * more with closed files kept with their cache): they are not the
 * program's, so a holder short of them must not fail the program's open
 * (REVIEW B9): the open is not served, and the program's own open gives
 * the kernel's answer. A few are kept in reserve, so that a new thread's
 * or process's connection can still be accepted (accept4 would fail with
 * EMFILE, and the client would wait for its greeting) and a demotion can
 * still hand out kernel descriptions.
 *
 * Counting the descriptors in use (/proc/self/fd) costs a system call per
 * thousand of them, too much for every open; it is done when a budget of
 * opens is spent, the budget being what is left after the reserve, at
 * FD_PER_OPEN a served open. Closes give nothing back to the budget (it
 * errs on the side of counting again early).
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fds.h"

#define FD_RESERVE 16
/* The most descriptors one served open keeps: the file's description
 * and libwtio's (a new file), a kept closed inode's, one spare. */
#define FD_PER_OPEN 4

static atomic_long budget;		/* opens before the next count */
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

/* Descriptors open in the holder, -1 if they cannot be counted (no
 * descriptor left for the directory, a common reason). */
static long count_open(void)
{
	char buf[32768];
	long n = 0;
	int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return -1;
	for (;;) {
		long got = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
		long off = 0;

		if (got <= 0) {
			if (got < 0)
				n = -1;
			break;
		}
		while (off < got) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);

			if (d->d_name[0] != '.')
				n++;
			off += d->d_reclen;
		}
	}
	close(dfd);
	return n < 0 ? -1 : n - 1;	/* not dfd itself */
}

bool hfds_short(void)
{
	struct rlimit rl;
	long used, left;
	bool is_short;

	if (atomic_fetch_sub(&budget, 1) > 0)
		return false;
	pthread_mutex_lock(&count_lock);
	/* another thread counted meanwhile */
	if (atomic_load(&budget) > 0) {
		atomic_fetch_sub(&budget, 1);
		pthread_mutex_unlock(&count_lock);
		return false;
	}
	used = count_open();
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		rl.rlim_cur = 1u << 20;	/* the kernel's default nr_open */
	left = (long)rl.rlim_cur - used - FD_RESERVE;
	is_short = used < 0 || left < FD_PER_OPEN;
	atomic_store(&budget, is_short ? 0 : left / FD_PER_OPEN - 1);
	pthread_mutex_unlock(&count_lock);
	return is_short;
}
