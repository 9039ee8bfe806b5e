/* SPDX-License-Identifier: MIT */
/*
 * dirty.h - a folio's dirty and writeback state with its accounting,
 * and the throttling of writers that dirty data (balance_dirty_pages).
 */
#ifndef WTIO_DIRTY_H
#define WTIO_DIRTY_H

#include <stdbool.h>
#include <stdint.h>

struct wtio_ctx;
struct wtio_folio;
struct wtio_inode;

/* The folio became dirty: account it, queue inode for the flushers.
 * Folio locked. */
void wtio_folio_mark_dirty(struct wtio_inode *inode, struct wtio_folio *folio);
/* A write into a folio whose write-back failed (FOLIO_ERROR) makes it
 * ordinary dirty data again, queued for the flushers. Folio locked. */
void wtio_folio_clear_error(struct wtio_inode *inode, struct wtio_folio *folio);
/* Take a dirty folio off the dirty list (truncate); folio locked. */
void wtio_folio_cancel_dirty(struct wtio_inode *inode,
			     struct wtio_folio *folio);
/* Would wtio_balance_dirty put a writer to sleep now? (The adaptive
 * mode writes through instead.) One cheap look, no lock. */
bool wtio_dirty_would_throttle(struct wtio_ctx *ctx);
/* Is dirty data down where a throttled writer is let go again? */
bool wtio_dirty_throttle_released(struct wtio_ctx *ctx);
/* Throttle a writer that dirtied data (balance_dirty_pages); counted:
 * the caller counted this throttling already (throttle_waits). */
int wtio_balance_dirty(struct wtio_ctx *ctx, bool nowait, bool counted);
/* Cache full of data whose write-back failed: drop it (the error stays
 * recorded for fsync); returns how many folios left. */
uint64_t wtio_writeback_drop_failed(struct wtio_ctx *ctx);

/* Set and end WRITEBACK with its accounting and the inode's list of
 * folios under writeback (what fsync and sync_range wait for). */
void wtio_folio_set_writeback(struct wtio_inode *inode,
			      struct wtio_folio *folio);
void wtio_folio_finish_writeback(struct wtio_inode *inode,
				 struct wtio_folio *folio);
/* The same for n folios of inode at once (one I/O's): the list's lock
 * taken once. */
void wtio_folios_finish_writeback(struct wtio_inode *inode,
				  struct wtio_folio *const *v, int n);
/* Dirty (or write-through) folio, locked -> WRITEBACK: its dirty blocks
 * become wb_blocks, owned by the I/O. */
void wtio_folio_start_writeback(struct wtio_inode *inode,
				struct wtio_folio *folio);
/* The same for n (<= WTIO_WB_START_MAX) locked folios of inode at once:
 * each list's lock taken once for them all. */
#define WTIO_WB_START_MAX 256
void wtio_folios_start_writeback(struct wtio_inode *inode,
				 struct wtio_folio *const *v, int n);

#endif /* WTIO_DIRTY_H */
