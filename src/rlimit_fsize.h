/* SPDX-License-Identifier: MIT */
/*
 * rlimit_fsize.h - the process's file size limit (RLIMIT_FSIZE), read at
 * most every 10 ms, and the hold on SIGXFSZ around write-back a caller's
 * thread does.
 */
#ifndef WTIO_RLIMIT_FSIZE_H
#define WTIO_RLIMIT_FSIZE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* The limit, or -1 for none: a change (setrlimit, prlimit) is seen
 * within 10 ms. */
int64_t wtio_rlimit_fsize(void);

/*
 * Around write-back of data acknowledged earlier, done by the caller's
 * thread (fsync, sync_file_range, a throttled writer, drop-behind): a
 * backing write at or past the limit fails with EFBIG, an I/O error for
 * fsync to report, as in wtio's own threads (sys.h), and the kernel's
 * SIGXFSZ for it is discarded instead of killing the process for a
 * write the limit had allowed. Nothing to do without a limit or with
 * SIGXFSZ blocked already (wtio's threads); nests.
 */
struct wtio_xfsz_hold {
	sigset_t old;
	bool held, was_pending;
};
void wtio_xfsz_hold(struct wtio_xfsz_hold *h);
void wtio_xfsz_release(struct wtio_xfsz_hold *h);

#endif /* WTIO_RLIMIT_FSIZE_H */
