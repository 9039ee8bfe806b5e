/* SPDX-License-Identifier: MIT */
/*
 * fsize_limit.c - RLIMIT_FSIZE as the kernel's generic_write_check_limits
 * and inode_newsize_ok apply it, at the call, in the caller's thread.
 *
 * wtio's backing writes are its own: a write-back runs later, in a
 * flusher, where the kernel would send SIGXFSZ to that thread (killing
 * the process by default) for data the caller was told was written. So
 * the caller's call is checked here instead, and wtio's threads block
 * the signal (wtio_sys_block_xfsz). Only calls that end past the file's
 * end are checked, and the limit is read at most every 10 ms: an
 * overwrite inside a file already longer than the limit is not checked,
 * and its write-back fails with EFBIG (docs/DESIGN.md).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>

#include "fsize_limit.h"
#include "rlimit_fsize.h"
#include "sync.h"

/*
 * SIGXFSZ to this thread, as the kernel sends it. Where it kills the
 * process (the default action, not blocked), the file's cache is written
 * back first: the kernel's page cache outlives the process it kills,
 * wtio's does not, and what the caller was told was written must not go
 * with it (dd under ulimit -f stops with the limit's bytes on disk).
 */
static void send_xfsz(struct wtio_inode *inode)
{
	struct sigaction sa;
	sigset_t mask;

	if (sigaction(SIGXFSZ, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL &&
	    pthread_sigmask(SIG_BLOCK, NULL, &mask) == 0 &&
	    !sigismember(&mask, SIGXFSZ))
		wtio_make_durable(inode, 0, -1, 0);
	raise(SIGXFSZ);
}

int wtio_fsize_check_write(struct wtio_inode *inode, int64_t off,
			   ssize_t *len, bool atomic)
{
	int64_t limit = wtio_rlimit_fsize();

	if (limit < 0)
		return 0;
	if (off >= limit) {
		send_xfsz(inode);
		return -EFBIG;
	}
	if (*len > limit - off) {
		if (atomic)
			return -EINVAL;
		*len = (ssize_t)(limit - off);
	}
	return 0;
}

int wtio_fsize_check_grow(struct wtio_inode *inode, int64_t size)
{
	int64_t limit = wtio_rlimit_fsize();

	if (limit < 0 || size <= limit)
		return 0;
	send_xfsz(inode);
	return -EFBIG;
}
