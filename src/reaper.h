/* SPDX-License-Identifier: MIT */
/*
 * reaper.h - a channel of the backend and the thread that completes the
 * I/O submitted to it (reaper.c), helped by threads that wait for those
 * completions: the context's started writeback and each queue have one.
 */
#ifndef WTIO_REAPER_H
#define WTIO_REAPER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "io/io.h"

/*
 * One per context, shared by its queues' completion threads: threads
 * about to wait for I/O that one of those threads may have to end
 * (wtio_reaper_want_begin), and those threads napping because an owner
 * reaps for them (wtio_reaper_attend). While anyone waits, none naps.
 */
struct wtio_reaper_wait {
	_Atomic uint32_t waiting;	/* a futex word */
	_Atomic uint32_t napping;
};

struct wtio_reaper {
	struct wtio_io_backend *be;
	struct wtio_io_chan *chan;	/* NULL: not started */
	pthread_t thread;
	_Atomic bool stop;
	/* Work that still needs the thread (NULL: none counted): after a
	 * stop it stays until this is 0. */
	_Atomic uint64_t *users;
	/* Threads reaping the channel themselves (wtio_reaper_help). */
	_Atomic unsigned int helpers;
	/* When an owner last said it will come back to reap
	 * (wtio_reaper_attend); 0: never. */
	_Atomic uint64_t attended_ns;
	/* Set before the start by whoever attends (a queue): its
	 * context's waiters. NULL: never attended. */
	struct wtio_reaper_wait *wait;
};

/* Open a channel of entries and start its thread: 0, or a negative
 * errno with r->chan NULL. */
int wtio_reaper_start(struct wtio_reaper *r, struct wtio_io_backend *be,
		      unsigned int entries, enum wtio_chan_use use,
		      _Atomic uint64_t *users);
/*
 * Reap the channel in the calling thread, as its completion thread
 * would, waiting at most timeout (NULL: a short while) for one
 * completion; end_io runs here. For a thread that waits for what the
 * completions post. Returns the number delivered (0: look again),
 * -EAGAIN when nothing is in flight there (or the backend cannot say),
 * or another negative errno.
 */
int wtio_reaper_help(struct wtio_reaper *r, const struct timespec *timeout);
/*
 * The caller, which has just reaped this channel itself (helped), is
 * expected back to do so again soon: for a nap from now the thread
 * leaves the ring to it instead of waking for every completion. A
 * completion then waits at most about two naps for a reaper, as under
 * a helper.
 */
void wtio_reaper_attend(struct wtio_reaper *r);
/*
 * Around a wait for I/O that a queue's completion thread may have to end
 * (a folio's writeback, a queue's last completions): the napping ones
 * go back to the ring at once, not after their nap. The owner that sent
 * them away may be the one waiting.
 */
void wtio_reaper_want_begin(struct wtio_reaper_wait *w);
void wtio_reaper_want_end(struct wtio_reaper_wait *w);
/* Stop the thread (once *users is 0) and close the channel. */
void wtio_reaper_stop(struct wtio_reaper *r);

#endif /* WTIO_REAPER_H */
