/* SPDX-License-Identifier: MIT */
/*
 * append_plug.c - queued write-through I/O that extends a file goes to
 * the disk one merged I/O at a time, each starting at the end the last
 * one left.
 *
 * XFS handles a direct write that starts past its file's end by draining
 * all direct I/O of the file under its exclusive lock (to zero the gap),
 * and one that must allocate is punted from io_uring to a worker, where
 * writes to one file run one after the other: with dozens of appends in
 * flight from several queues, most start past the end and the writers
 * run no faster than one. The kernel's own writeback never issues those.
 * So extending I/O of one file waits here while one is in flight, and
 * when it completes the waiting ones that follow on from the lowest go
 * as one I/O (the block layer's plugging, across queues): it starts at
 * the file's end, and a DSYNC batch pays one flush for all its writes.
 *
 * Nothing changes for sizes and ordering: each merged write was counted
 * at the disk-size gate before it came here, is completed with its own
 * byte count (on the context's completion channel, which outlives every
 * queue), and a write acknowledged means its bytes and size are durable
 * as before. The first waiting write goes even when it does not follow
 * on (a hole, or a write still being copied): never waiting for a write
 * that may not come.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "append_plug.h"
#include "iov_iter.h"
#include "reaper.h"
#include "io/io.h"

#define PLUG_BUCKETS	64

struct plug;

/* The merged I/O; a plug has one in flight at most. */
struct plug_batch {
	struct wtio_io_req req;
	struct plug *plug;
	unsigned int nr;
	struct wtio_io_req *parts[WTIO_IO_MAX_IOVECS];
	size_t lens[WTIO_IO_MAX_IOVECS];
	struct iovec iov[WTIO_IO_MAX_IOVECS];
};

/* One file's extending I/O: the batch in flight and those waiting.
 * Exists while either does. */
struct plug {
	const void *key;
	struct plug *hnext;
	struct wtio_reaper *r;
	uint32_t max_io;
	bool busy;			/* batch in flight */
	/* Waiting, lowest offset first, linked through req->next (free
	 * here: the backend never saw these requests). */
	struct wtio_io_req *pending, *tail;
	struct plug_batch b;
};

static struct {
	pthread_mutex_t lock;
	struct plug *head;
} buckets[PLUG_BUCKETS] = {
	[0 ... PLUG_BUCKETS - 1] = { PTHREAD_MUTEX_INITIALIZER, NULL },
};

static unsigned int bucket_of(const void *key)
{
	uintptr_t k = (uintptr_t)key;

	return (unsigned int)((k >> 6) ^ (k >> 14)) % PLUG_BUCKETS;
}

/* Into the waiting list, by offset; appends arrive mostly in order. */
static void plug_insert(struct plug *pl, struct wtio_io_req *req)
{
	struct wtio_io_req **pp;

	if (!pl->pending || req->off >= pl->tail->off) {
		req->next = NULL;
		if (pl->pending)
			pl->tail->next = req;
		else
			pl->pending = req;
		pl->tail = req;
		return;
	}
	for (pp = &pl->pending; *pp && (*pp)->off <= req->off;
	     pp = &(*pp)->next)
		;
	req->next = *pp;
	*pp = req;
}

static void batch_end_io(struct wtio_io_req *req, ssize_t res);

/* Build the next batch from the waiting list: the lowest write and those
 * that follow on from it, as far as one I/O may go. Bucket lock held. */
static void plug_take(struct plug *pl)
{
	struct plug_batch *b = &pl->b;
	struct wtio_io_req *first = pl->pending, *p;
	int64_t end = first->off;
	size_t size = 0, len;
	int niov = 0, i;

	b->nr = 0;
	for (p = first; p; p = p->next) {
		len = wtio_iov_length(p->iov, p->iovcnt);
		if (p != first &&
		    (p->off != end || p->fd != first->fd ||
		     p->rw_flags != first->rw_flags ||
		     niov + p->iovcnt > WTIO_IO_MAX_IOVECS ||
		     size + len > pl->max_io))
			break;
		for (i = 0; i < p->iovcnt; i++)
			b->iov[niov++] = p->iov[i];
		b->parts[b->nr] = p;
		b->lens[b->nr++] = len;
		size += len;
		end += (int64_t)len;
	}
	pl->pending = p;
	if (!p)
		pl->tail = NULL;
	b->plug = pl;
	b->req.op = WTIO_IO_WRITE;
	b->req.fd = first->fd;
	b->req.off = first->off;
	b->req.iov = b->iov;
	b->req.iovcnt = niov;
	b->req.rw_flags = first->rw_flags;
	b->req.end_io = batch_end_io;
	b->req.private = pl;
	pl->busy = true;
	if (pl->r->users)
		atomic_fetch_add(pl->r->users, 1);
}

static void plug_go(struct wtio_reaper *r, struct plug *pl)
{
	struct wtio_io_req *req = &pl->b.req;

	/* Never refused once well formed (a failure completes it). */
	wtio_io_chan_submit(r->chan, &req, 1);
}

/*
 * The merged I/O is over: the next one goes first, to keep the disk
 * busy, then each write gets its share of the count in file order. A
 * short count leaves the writes it did not reach waiting for the next
 * batch; the one it stopped inside resubmits its rest itself, as after
 * any short write.
 */
static void batch_end_io(struct wtio_io_req *req, ssize_t res)
{
	struct plug *pl = req->private;
	struct wtio_reaper *r = pl->r;
	struct wtio_io_req *parts[WTIO_IO_MAX_IOVECS];
	ssize_t got[WTIO_IO_MAX_IOVECS];
	unsigned int nr = pl->b.nr, i, b = bucket_of(pl->key);
	size_t left = res > 0 ? (size_t)res : 0;
	bool next = false, gone = false;

	for (i = 0; i < nr; i++) {
		parts[i] = pl->b.parts[i];
		if (res <= 0) {
			/* Zero bytes: a device that makes no progress
			 * fails them all, as it would each alone. */
			got[i] = res;
		} else {
			got[i] = (ssize_t)(left < pl->b.lens[i] ?
					   left : pl->b.lens[i]);
			left -= (size_t)got[i];
		}
	}
	pthread_mutex_lock(&buckets[b].lock);
	for (i = 0; i < nr; i++)
		if (res > 0 && !got[i])
			plug_insert(pl, parts[i]);
	pl->busy = false;
	if (pl->pending) {
		plug_take(pl);
		next = true;
	} else {
		struct plug **pp = &buckets[b].head;

		while (*pp != pl)
			pp = &(*pp)->hnext;
		*pp = pl->hnext;
		gone = true;
	}
	pthread_mutex_unlock(&buckets[b].lock);
	if (next)
		plug_go(r, pl);
	else if (gone)
		free(pl);
	/* pl may be gone from here on. */
	for (i = 0; i < nr; i++)
		if (res <= 0 || got[i])
			parts[i]->end_io(parts[i], got[i]);
	if (r->users)
		atomic_fetch_sub(r->users, 1);
}

void wtio_plug_submit(struct wtio_reaper *r, const void *key,
		      struct wtio_io_req *req, uint32_t max_io)
{
	unsigned int b = bucket_of(key);
	struct plug *pl;
	bool go = false;

	pthread_mutex_lock(&buckets[b].lock);
	for (pl = buckets[b].head; pl && pl->key != key; pl = pl->hnext)
		;
	if (!pl) {
		pl = malloc(sizeof(*pl));
		if (!pl) {
			/* Unmerged is slower, never wrong. */
			pthread_mutex_unlock(&buckets[b].lock);
			wtio_io_chan_submit(r->chan, &req, 1);
			return;
		}
		pl->key = key;
		pl->r = r;
		pl->max_io = max_io;
		pl->busy = false;
		pl->pending = pl->tail = NULL;
		pl->hnext = buckets[b].head;
		buckets[b].head = pl;
	}
	plug_insert(pl, req);
	if (!pl->busy) {
		plug_take(pl);
		go = true;
	}
	pthread_mutex_unlock(&buckets[b].lock);
	if (go)
		plug_go(r, pl);
}
