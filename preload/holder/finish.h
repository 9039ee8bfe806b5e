/* SPDX-License-Identifier: MIT */
/*
 * finish.h - the holder's end: every served file closed, the counters
 * written.
 */
#ifndef WTIO_HOLDER_FINISH_H
#define WTIO_HOLDER_FINISH_H

/* Close every served file (write-back, exact size, lease dropped), wait
 * for closes and demotions under way, then write $WTIO_HOLDER_STATS if
 * set. Returns the number of files whose write-back failed. */
int hfinish(void);

#endif
