/* SPDX-License-Identifier: MIT */
/*
 * size_undo.c - the undo of a failed write's extension of i_size.
 *
 * i_size moves when a write's data is in the cache, before its I/O (or
 * its DSYNC step) is done, so a write that then fails must put it back:
 * a failed call changes nothing it did not report. Several extending
 * writes can be in flight at once (queues, several writers), complete in
 * any order, and writes that are acknowledged at once (write-back) can
 * land in the range an extension added. So the inode keeps, under
 * tail_lock, the writes in flight since the first extension (a "run",
 * which ends when the last one ends and no writer copying now may join
 * it), the lowest size the run started from (the guard) and the
 * furthest end of what was acknowledged past the guard since (the
 * floor: writes of the run that succeeded, write-back writes there).
 * Once one of the run fails, each end of one puts i_size back to the
 * furthest of: the guard, the floor, the ends of the writes still in
 * flight and of an exclusive writer copying now. When all of a run
 * failed, that is where the run started.
 *
 * The put-back runs from completion threads, which must not wait for
 * the file lock (its holder may wait for a completion only they
 * deliver), so it is an exchange on i_size that never goes below what a
 * writer holding the lock may be writing: every writer notes its end
 * (wtio_inode_tail_note) before it looks at i_size, under tail_lock when
 * it reaches past the guard. Either its note comes first and the
 * put-back stays above its end, or the put-back comes first and the
 * writer sees the smaller size. A NOSERIAL writer (the lock shared,
 * inside i_size) noting past the guard is one of the run's writes in
 * flight from then on: its end counts as acknowledged only once it
 * succeeds. A write ending at or below the guard can never be cut. What
 * the failed writes left past the new size is cut: the backing file at
 * once where that needs no wait, else by the holder of the file lock
 * that was in the way, as it leaves (wtio_inode_cut_pending); the cache
 * (and the file otherwise) by wtio_inode_prepare_extend before i_size
 * next moves up.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "size.h"
#include "inode.h"

static void tail_unlink(struct wtio_inode *inode, struct wtio_size_undo *u)
{
	if (u->prev)
		u->prev->next = u->next;
	else
		inode->tail_head = u->next;
	if (u->next)
		u->next->prev = u->prev;
	else
		inode->tail_tail = u->prev;
	u->prev = u->next = NULL;
	u->listed = false;
}

/* The end of the run's data that must stay: tail_lock held. */
static int64_t tail_keep(struct wtio_inode *inode)
{
	int64_t keep = atomic_load(&inode->tail_guard);
	int64_t pending = atomic_load(&inode->tail_pending);
	struct wtio_size_undo *u;

	if (inode->tail_floor > keep)
		keep = inode->tail_floor;
	if (pending > keep)
		keep = pending;
	for (u = inode->tail_head; u; u = u->next)
		if (u->after > keep)
			keep = u->after;
	return keep;
}

/* Put i_size back to what must stay, if it is past it: tail_lock held.
 * Returns whether it moved (what lies past it is then stale). */
static bool tail_shrink(struct wtio_inode *inode)
{
	int64_t keep = tail_keep(inode);
	int64_t cur = atomic_load(&inode->i_size);

	while (cur > keep) {
		if (atomic_compare_exchange_weak(&inode->i_size, &cur, keep)) {
			atomic_store(&inode->eof_stale, true);
			return true;
		}
	}
	return false;
}

/* The run is over (nothing of it in flight, nobody copying who may
 * join it): every note goes the fast way again. tail_lock held. */
static void tail_run_over(struct wtio_inode *inode)
{
	atomic_store(&inode->tail_guard, INT64_MAX);
	inode->tail_failed = false;
}

/* Into the list of writes in flight: tail_lock held. */
static void tail_link(struct wtio_inode *inode, struct wtio_size_undo *u)
{
	u->next = NULL;
	u->prev = inode->tail_tail;
	if (u->prev)
		u->prev->next = u;
	else
		inode->tail_head = u;
	inode->tail_tail = u;
	u->listed = true;
}

void wtio_inode_tail_note(struct wtio_inode *inode, struct wtio_size_undo *u,
			  int64_t end, bool excl)
{
	if (end <= atomic_load(&inode->tail_guard))
		return;
	pthread_mutex_lock(&inode->tail_lock);
	if (end > atomic_load(&inode->tail_guard)) {
		/* An exclusive writer's end counts while it copies, and
		 * what it copied counts from its claim on. A shared one
		 * (inside i_size, NOSERIAL write-through) is in flight
		 * from now on: its end stays while it is, and counts as
		 * acknowledged only once it succeeds, or a failed
		 * overwrite would keep a failed append's extension. */
		if (excl) {
			atomic_store(&inode->tail_pending, end);
		} else {
			u->before = u->after = end;
			tail_link(inode, u);
		}
	}
	pthread_mutex_unlock(&inode->tail_lock);
}

void wtio_inode_tail_drop(struct wtio_inode *inode, struct wtio_size_undo *u)
{
	pthread_mutex_lock(&inode->tail_lock);
	if (u->listed) {
		tail_unlink(inode, u);
		if (!inode->tail_head &&
		    atomic_load(&inode->tail_pending) < 0) {
			/* What it held up may go now; the writer, going
			 * exclusive past i_size, cleans what lies past. */
			if (inode->tail_failed)
				tail_shrink(inode);
			tail_run_over(inode);
		}
	}
	pthread_mutex_unlock(&inode->tail_lock);
}

void wtio_inode_tail_claim(struct wtio_inode *inode, struct wtio_size_undo *u,
			   bool claim, int64_t written)
{
	/* tail_pending is only ever set by the exclusive holder: us. */
	bool noted = atomic_load(&inode->tail_pending) >= 0;
	bool extends = claim && u->after > u->before;
	/* A claimed write that copied past the run's start joins the run
	 * even when it did not extend (an append that found the size
	 * already moved by a later one): its bytes count once it
	 * succeeds, not before. */
	bool join = extends || (claim && noted && written > 0);

	if (!noted && !join)
		return;
	pthread_mutex_lock(&inode->tail_lock);
	if (noted) {
		/* Copied into the cache and acknowledged (write-back). */
		if (!claim && written > inode->tail_floor)
			inode->tail_floor = written;
		atomic_store(&inode->tail_pending, -1);
		/* The run waited for us to end: now it may. */
		if (!join && !inode->tail_head) {
			if (inode->tail_failed)
				tail_shrink(inode);
			tail_run_over(inode);
		}
	}
	if (join) {
		if (!extends)
			u->after = written;
		if (atomic_load(&inode->tail_guard) == INT64_MAX) {
			/* A new run. */
			atomic_store(&inode->tail_guard, u->before);
			inode->tail_floor = u->before;
			inode->tail_failed = false;
		} else if (u->before < atomic_load(&inode->tail_guard)) {
			atomic_store(&inode->tail_guard, u->before);
		}
		tail_link(inode, u);
	}
	pthread_mutex_unlock(&inode->tail_lock);
}

/* acked: where what the write acknowledged ends: u->after when it
 * succeeded, less when it was cut short, INT64_MIN when it failed. */
static void tail_end(struct wtio_inode *inode, struct wtio_size_undo *u,
		     int64_t acked, bool in_reaper)
{
	bool cut = false;

	pthread_mutex_lock(&inode->tail_lock);
	if (!u->listed) {
		/* Never claimed an extension, or a truncate decided the
		 * size since. */
		pthread_mutex_unlock(&inode->tail_lock);
		return;
	}
	tail_unlink(inode, u);
	if (acked > inode->tail_floor)
		inode->tail_floor = acked;
	if (acked < u->after)
		inode->tail_failed = true;
	if (inode->tail_failed)
		cut = tail_shrink(inode);
	/* A writer copying now may join the run: it ends with it. */
	if (!inode->tail_head && atomic_load(&inode->tail_pending) < 0)
		tail_run_over(inode);
	pthread_mutex_unlock(&inode->tail_lock);
	if (cut && !in_reaper) {
		wtio_rwsem_lock(inode, false, false);
		/* A failure of the cut leaves the flag set for the next. */
		wtio_inode_prepare_extend(inode, false);
		wtio_rwsem_unlock(inode);
		/* Another undo's, which our hold kept from its cut. */
		wtio_inode_cut_pending(inode);
	} else if (cut) {
		/* The backing file at once, if it can be had without
		 * waiting (else the holder of the lock does it as it
		 * leaves); the cache when i_size next moves up. */
		wtio_inode_cut_pending(inode);
	}
}

void wtio_inode_tail_end(struct wtio_inode *inode, struct wtio_size_undo *u,
			 bool failed, bool in_reaper)
{
	tail_end(inode, u, failed ? INT64_MIN : u->after, in_reaper);
}

void wtio_inode_tail_end_short(struct wtio_inode *inode,
			       struct wtio_size_undo *u, int64_t acked,
			       bool in_reaper)
{
	tail_end(inode, u, acked < u->after ? acked : u->after, in_reaper);
}

void wtio_inode_tail_reset(struct wtio_inode *inode)
{
	pthread_mutex_lock(&inode->tail_lock);
	while (inode->tail_head)
		tail_unlink(inode, inode->tail_head);
	atomic_store(&inode->tail_pending, -1);
	tail_run_over(inode);
	pthread_mutex_unlock(&inode->tail_lock);
}
