/* SPDX-License-Identifier: MIT */
/*
 * reaper.h - a channel of the backend and the thread that completes the
 * I/O submitted to it (reaper.c): the context's started writeback and
 * each queue have one.
 */
#ifndef WTIO_REAPER_H
#define WTIO_REAPER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct wtio_io_backend;
struct wtio_io_chan;

struct wtio_reaper {
	struct wtio_io_backend *be;
	struct wtio_io_chan *chan;	/* NULL: not started */
	pthread_t thread;
	_Atomic bool stop;
	/* Work that still needs the thread (NULL: none counted): after a
	 * stop it stays until this is 0. */
	_Atomic uint64_t *users;
};

/* Open a channel of entries and start its thread: 0, or a negative
 * errno with r->chan NULL. */
int wtio_reaper_start(struct wtio_reaper *r, struct wtio_io_backend *be,
		      unsigned int entries, _Atomic uint64_t *users);
/* Stop the thread (once *users is 0) and close the channel. */
void wtio_reaper_stop(struct wtio_reaper *r);

#endif /* WTIO_REAPER_H */
