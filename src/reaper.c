/* SPDX-License-Identifier: MIT */
/*
 * reaper.c - a thread completing the I/O of one channel, so that a folio
 * under writeback always has a thread that will end it, whatever its
 * submitter does next; and the way for a thread that waits for the
 * channel's completions to reap them itself, without the hop through
 * the completion thread.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "sys.h"
#include "clock.h"
#include "reaper.h"
#include "io/io.h"

/*
 * While a helper waits on the ring, the thread stays off it: both would
 * wake for every completion. It naps instead and looks again, so that
 * once the helper goes (its caller stops waiting with I/O in flight)
 * completions wait at most a nap for it.
 */
#define REAPER_NAP_NS	(1000 * 1000)

/* An owner reaped within the last nap (or just now, on another CPU:
 * a stamp after our clock reading is as fresh), and nobody waits. */
static bool attended(struct wtio_reaper *r)
{
	uint64_t now = wtio_now_ns();
	uint64_t at = atomic_load_explicit(&r->attended_ns,
					   memory_order_relaxed);

	return r->wait && at && (int64_t)(now - at) < REAPER_NAP_NS &&
	       !atomic_load(&r->wait->waiting);
}

/*
 * A nap that a waiter ends: napping is raised before the futex looks at
 * waiting, and a waiter raises waiting before it looks at napping (both
 * sequentially consistent), so either the waiter sees us and wakes us,
 * or the kernel sees its count and we do not sleep.
 */
static void nap_attended(struct wtio_reaper *r, const struct timespec *nap)
{
	struct wtio_reaper_wait *w = r->wait;

	atomic_fetch_add(&w->napping, 1);
	wtio_sys_syscall(SYS_futex, &w->waiting, FUTEX_WAIT_PRIVATE, 0, nap,
			 NULL, 0);
	atomic_fetch_sub(&w->napping, 1);
}

static void *reaper_main(void *arg)
{
	struct wtio_reaper *r = arg;
	/* Bounded waits only so that a stop is noticed. */
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	struct timespec nap = { 0, REAPER_NAP_NS };

	wtio_sys_block_xfsz();

	while (!atomic_load(&r->stop) || (r->users && atomic_load(r->users))) {
		if (atomic_load(&r->helpers))
			nanosleep(&nap, NULL);
		else if (attended(r))
			nap_attended(r, &nap);
		else
			wtio_io_chan_reap(r->chan, 1, &ts);
	}
	return NULL;
}

int wtio_reaper_start(struct wtio_reaper *r, struct wtio_io_backend *be,
		      unsigned int entries, enum wtio_chan_use use,
		      _Atomic uint64_t *users)
{
	int ret;

	r->be = be;
	r->users = users;
	atomic_store(&r->stop, false);
	atomic_store(&r->helpers, 0);
	atomic_store(&r->attended_ns, 0);
	r->chan = wtio_io_chan_open(be, entries, use, &ret);
	if (!r->chan)
		return ret;
	ret = pthread_create(&r->thread, NULL, reaper_main, r);
	if (ret) {
		wtio_io_chan_close(r->chan);
		r->chan = NULL;
		return -ret;
	}
	return 0;
}

int wtio_reaper_help(struct wtio_reaper *r, const struct timespec *timeout)
{
	/* A helper that came just after another reaper took the last
	 * completion would wait for one that never comes: bound it. */
	struct timespec ts = { 0, 2 * REAPER_NAP_NS };
	unsigned int n = wtio_io_chan_inflight(r->chan);
	int ret;

	if (!n || n == UINT_MAX)
		return -EAGAIN;
	if (timeout && timeout->tv_sec <= 0 && timeout->tv_nsec < ts.tv_nsec)
		ts = *timeout;
	atomic_fetch_add(&r->helpers, 1);
	ret = wtio_io_chan_reap(r->chan, 1, &ts);
	atomic_fetch_sub(&r->helpers, 1);
	return ret;
}

void wtio_reaper_attend(struct wtio_reaper *r)
{
	atomic_store_explicit(&r->attended_ns, wtio_now_ns(),
			      memory_order_relaxed);
}

void wtio_reaper_want_begin(struct wtio_reaper_wait *w)
{
	atomic_fetch_add(&w->waiting, 1);
	if (atomic_load(&w->napping))
		wtio_sys_syscall(SYS_futex, &w->waiting, FUTEX_WAKE_PRIVATE,
				 INT_MAX, NULL, NULL, 0);
}

void wtio_reaper_want_end(struct wtio_reaper_wait *w)
{
	atomic_fetch_sub(&w->waiting, 1);
}

void wtio_reaper_stop(struct wtio_reaper *r)
{
	if (!r->chan)
		return;
	atomic_store(&r->stop, true);
	pthread_join(r->thread, NULL);
	wtio_io_chan_close(r->chan);
	r->chan = NULL;
}
