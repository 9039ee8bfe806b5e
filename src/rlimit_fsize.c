/* SPDX-License-Identifier: MIT */
/*
 * rlimit_fsize.c - RLIMIT_FSIZE read and cached, and SIGXFSZ held off a
 * caller's thread while it writes back (rlimit_fsize.h).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <time.h>

#include "rlimit_fsize.h"
#include "clock.h"

/* How long a limit read is used: getrlimit is a system call (0.8-1 us
 * on the test machine, as much as a cached 4 KiB write), and extending
 * writes (appends) would each pay it. */
#define FSIZE_REREAD_NS (10 * 1000 * 1000ull)

static _Atomic int64_t limit_seen = -2;		/* -2: never read */
static _Atomic uint64_t limit_read_at;

/* Racing readers may both read it: harmless. */
int64_t wtio_rlimit_fsize(void)
{
	uint64_t now = wtio_now_ns();
	int64_t limit = atomic_load_explicit(&limit_seen,
					     memory_order_relaxed);
	struct rlimit rl;

	if (limit != -2 &&
	    now - atomic_load_explicit(&limit_read_at, memory_order_relaxed) <
	    FSIZE_REREAD_NS)
		return limit;
	if (getrlimit(RLIMIT_FSIZE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > INT64_MAX)
		limit = -1;
	else
		limit = (int64_t)rl.rlim_cur;
	atomic_store_explicit(&limit_seen, limit, memory_order_relaxed);
	atomic_store_explicit(&limit_read_at, now, memory_order_relaxed);
	return limit;
}

void wtio_xfsz_hold(struct wtio_xfsz_hold *h)
{
	sigset_t set, pending;

	h->held = false;
	if (wtio_rlimit_fsize() < 0)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGXFSZ);
	if (pthread_sigmask(SIG_BLOCK, &set, &h->old) ||
	    sigismember(&h->old, SIGXFSZ))
		return;
	h->held = true;
	h->was_pending = !sigpending(&pending) &&
			 sigismember(&pending, SIGXFSZ);
}

void wtio_xfsz_release(struct wtio_xfsz_hold *h)
{
	static const struct timespec now = { 0, 0 };
	sigset_t set, pending;

	if (!h->held)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGXFSZ);
	/* Only one that came while held is the write-back's: a SIGXFSZ
	 * pending before is not ours to take. */
	if (!h->was_pending && !sigpending(&pending) &&
	    sigismember(&pending, SIGXFSZ))
		sigtimedwait(&set, NULL, &now);
	pthread_sigmask(SIG_SETMASK, &h->old, NULL);
}
