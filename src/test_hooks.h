/* SPDX-License-Identifier: MIT */
/*
 * test_hooks.h - the points where a test build widens or counts a race.
 *
 * Test builds of the library (tests/meson.build, -DWTIO_TEST_HOOKS)
 * call a test's hook where a race window is to be widened or counted;
 * other builds compile the points away.
 */
#ifndef WTIO_TEST_HOOKS_H
#define WTIO_TEST_HOOKS_H

enum wtio_test_point {
	WTIO_TP_ALLOC_WINDOW,	/* folio_alloc: off the free list, not yet out */
	WTIO_TP_SCAN,		/* CLOCK looks at a folio */
	WTIO_TP_SCAN_LOCKED,	/* CLOCK holds the lock of a folio */
	WTIO_TP_HIT_COPIED,	/* lockless hit: copied, seq not re-checked */
	WTIO_TP_HIT_RETRY,	/* lockless hit: copy thrown away */
	WTIO_TP_HIT_OK,		/* lockless hit: copy kept */
	WTIO_TP_WSEQ_SKIP,	/* read without the file lock: nonzero
				 * skips the i_wseq checks (f is NULL) */
	WTIO_TP_WSEQ_RETRY,	/* read without the file lock: i_wseq moved,
				 * the copy thrown away (f is NULL) */
	WTIO_TP_WSEQ_OK,	/* read without the file lock: kept (NULL) */
	WTIO_TP_HIT_SPAN,	/* read without the file lock: a folio's span
				 * taken from the file's folio size, the
				 * folio not yet looked up (f is NULL) */
	WTIO_TP_HIT_IDENTITY,	/* lockless hit: nonzero skips the check of
				 * the folio's inode and index */
	WTIO_TP_SLOT_HIT,	/* the inode's slot named the folio wanted */
	WTIO_TP_SLOT_STALE,	/* the inode's slot named another folio */
	WTIO_TP_SLOT_KEEP,	/* unhash: nonzero leaves the slot set */
	WTIO_TP_LOOKUP_SLOT,	/* lockless lookup: referenced, the slot not
				 * yet checked again; nonzero skips that
				 * check */
	WTIO_TP_LOOKUP_STALE,	/* lockless lookup: the slot no longer named
				 * the folio, or it was another's: put back */
	WTIO_TP_READ_IDENTITY,	/* locked read: nonzero skips the check of
				 * the folio's inode and index */
	WTIO_TP_WB_FAILED,	/* a write-back I/O failed: its error is
				 * recorded, its folios not yet given back
				 * dirty (f is NULL) */
	WTIO_TP_EVICT_FROZEN,	/* eviction: the count frozen at 0, the
				 * folio still in the index and the inode's
				 * list (bucket lock held) */
};
struct wtio_folio;
#ifdef WTIO_TEST_HOOKS
/* Returns nonzero at WTIO_TP_HIT_COPIED to skip the re-check, at
 * WTIO_TP_WSEQ_SKIP to skip the file's, at WTIO_TP_HIT_IDENTITY,
 * WTIO_TP_SLOT_KEEP, WTIO_TP_LOOKUP_SLOT and WTIO_TP_READ_IDENTITY to
 * skip the checks named there. */
extern int (*wtio_test_hook)(enum wtio_test_point tp, struct wtio_folio *f);
#define WTIO_TEST_HOOK(tp, f) (wtio_test_hook ? wtio_test_hook(tp, f) : 0)
#else
static inline int wtio_test_hook_none(enum wtio_test_point tp,
				      struct wtio_folio *f)
{
	return 0;
}
#define WTIO_TEST_HOOK(tp, f) wtio_test_hook_none(tp, f)
#endif

#endif /* WTIO_TEST_HOOKS_H */
