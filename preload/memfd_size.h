/* SPDX-License-Identifier: MIT */
/*
 * memfd_size.h - size a memfd of the shim's or the holder's own without
 * dying of the program's RLIMIT_FSIZE.
 */
#ifndef WTIO_MEMFD_SIZE_H
#define WTIO_MEMFD_SIZE_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>

/*
 * trunc(fd, size), with RLIMIT_FSIZE's SIGXFSZ held back in this thread:
 * the limit applies to memfds too, and a process whose `ulimit -f` is
 * below a buffer's size would be killed by the signal. 0, or -errno
 * (-EFBIG past the limit: the signal it raised is taken, unless one was
 * pending already).
 */
static inline int memfd_size(int fd, off_t size, int (*trunc)(int, off_t))
{
	struct timespec now = { 0, 0 };
	sigset_t xfsz, old, pend;
	int r, e = 0, was;

	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &xfsz, &old);
	was = sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ);
	r = trunc(fd, size);
	if (r < 0) {
		e = errno;
		if (!was)
			(void)sigtimedwait(&xfsz, NULL, &now);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r < 0 ? -e : 0;
}

#endif
