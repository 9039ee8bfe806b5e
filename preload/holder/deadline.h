/* SPDX-License-Identifier: MIT */
/*
 * deadline.h - a CLOCK_REALTIME deadline for pthread_cond_timedwait.
 */
#ifndef WTIO_HOLDER_DEADLINE_H
#define WTIO_HOLDER_DEADLINE_H

#include <time.h>

/* Now plus ms milliseconds. */
static inline void hdeadline(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

#endif
