/* SPDX-License-Identifier: MIT */
/*
 * reaper.c - a thread completing the I/O of one channel, so that a folio
 * under writeback always has a thread that will end it, whatever its
 * submitter does next.
 */
#include <errno.h>
#include <stdbool.h>
#include <time.h>

#include "reaper.h"
#include "io/io.h"

static void *reaper_main(void *arg)
{
	struct wtio_reaper *r = arg;
	/* Bounded waits only so that a stop is noticed. */
	struct timespec ts = { 0, 50 * 1000 * 1000 };

	while (!atomic_load(&r->stop) || (r->users && atomic_load(r->users)))
		wtio_io_chan_reap(r->chan, 1, &ts);
	return NULL;
}

int wtio_reaper_start(struct wtio_reaper *r, struct wtio_io_backend *be,
		      unsigned int entries, _Atomic uint64_t *users)
{
	int ret;

	r->be = be;
	r->users = users;
	atomic_store(&r->stop, false);
	r->chan = wtio_io_chan_open(be, entries, &ret);
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

void wtio_reaper_stop(struct wtio_reaper *r)
{
	if (!r->chan)
		return;
	atomic_store(&r->stop, true);
	pthread_join(r->thread, NULL);
	wtio_io_chan_close(r->chan);
	r->chan = NULL;
}
