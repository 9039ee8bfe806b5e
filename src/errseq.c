/* SPDX-License-Identifier: MIT */
/*
 * errseq.c - the record of write-back errors, and their report to each
 * handle once.
 *
The kernel's errseq_t (lib/errseq.c), so that handles learn of errors
 * exactly as Linux file descriptors do:
 *  - an error is reported once to every handle open when it happened;
 *  - a handle opened later reports it too, as long as no handle has
 *    reported it yet (errseq_sample gives 0 for an unseen error), and not
 *    once some handle has (the word then has WTIO_ERRSEQ_SEEN set);
 *  - errors that come while the last one is unseen replace its errno and
 *    are reported together, once (the counter moves only past a seen
 *    error).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

#include "errseq.h"
#include "inode.h"

#define WTIO_ERRSEQ_ERRNO	0xfffull
#define WTIO_ERRSEQ_SEEN	(1ull << 12)
#define WTIO_ERRSEQ_CTR_INC	(1ull << 13)

uint64_t wtio_errseq_sample(struct wtio_inode *inode)
{
	uint64_t old = atomic_load(&inode->wb_err);

	return (old & WTIO_ERRSEQ_SEEN) ? old : 0;
}

static void errseq_set(_Atomic uint64_t *eseq, int err)
{
	uint64_t old = atomic_load(eseq), new;

	if (err >= 0 || (uint64_t)-err > WTIO_ERRSEQ_ERRNO)
		err = -EIO;
	do {
		new = (old & ~(WTIO_ERRSEQ_ERRNO | WTIO_ERRSEQ_SEEN)) |
		      (uint64_t)-err;
		if (old & WTIO_ERRSEQ_SEEN)
			new += WTIO_ERRSEQ_CTR_INC;
		if (new == old)
			return;
	} while (!atomic_compare_exchange_weak(eseq, &old, new));
}

int wtio_errseq_unseen(struct wtio_inode *inode)
{
	uint64_t v = atomic_load(&inode->wb_err);

	if (v & WTIO_ERRSEQ_SEEN)
		return 0;
	return -(int)(v & WTIO_ERRSEQ_ERRNO);
}

void wtio_inode_record_error(struct wtio_inode *inode, int err)
{
	atomic_store(&inode->err_last, err);
	atomic_fetch_add(&inode->err_seq, 1);
	errseq_set(&inode->wb_err, err);
}

/* errseq_check_and_advance, with the handle's sample advanced by a
 * compare-exchange, so that of two callers on one handle (fsync racing
 * close) only one reports a given error. */
int wtio_file_check_error(struct wtio_file *file)
{
	_Atomic uint64_t *eseq = &file->inode->wb_err;
	uint64_t since = atomic_load(&file->err_seen);

	for (;;) {
		uint64_t old = atomic_load(eseq), new;

		if (old == since)
			return 0;
		new = old | WTIO_ERRSEQ_SEEN;
		/* A failed exchange means a newer error came: we report
		 * this one, the next check reports that one. */
		if (new != old)
			atomic_compare_exchange_strong(eseq, &old, new);
		if (atomic_compare_exchange_strong(&file->err_seen, &since,
						   new))
			return -(int)(new & WTIO_ERRSEQ_ERRNO);
	}
}
