/* SPDX-License-Identifier: MIT */
/* clock.h - the library's time: monotonic nanoseconds for ages and
 * intervals, CLOCK_REALTIME deadlines for pthread_cond_timedwait. */
#ifndef WTIO_CLOCK_H
#define WTIO_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t wtio_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The pthread_cond_timedwait deadline ns nanoseconds from now. */
static inline void wtio_deadline_in_ns(struct timespec *ts, uint64_t ns)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += (time_t)(ns / 1000000000ull);
	ts->tv_nsec += (long)(ns % 1000000000ull);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

#endif /* WTIO_CLOCK_H */
