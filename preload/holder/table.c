/* SPDX-License-Identifier: MIT */
/*
 * table.c - the holder's table of served inodes and of the program's
 * open file descriptions (OFDs), their reference counts and the last
 * close of a file. One mutex guards the hashes, the counts, the lists
 * and the states; it is never held across a system call or a wtio call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"
#include "lease.h"
#include "log.h"
#include "record.h"
#include "shm.h"
#include "table.h"

#define INO_BUCKETS 1024

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tab_cond = PTHREAD_COND_INITIALIZER;
static struct hinode *ino_hash[INO_BUCKETS];
static uint64_t next_id = 1;
/* The files whose last close was the holder's latest (ring): a client's
 * descriptor of the old description may still be open for a moment
 * (it closes it after the holder's answer), see hino_recently_closed. */
#define RECENT 64
struct ring {
	struct {
		dev_t dev;
		ino_t ino;
		struct timespec t;
	} e[RECENT];
	unsigned int next;
};
static struct ring recent;
/* Every file that left the holder (its end of BUSY: a last close, a
 * demotion, the program's end), for a stat's "ask the kernel again"
 * (hino_lookup); not the ring above, whose files an open waits for. */
static struct ring left;

static unsigned int ino_bucket(dev_t dev, ino_t ino)
{
	return (unsigned int)((ino * 0x9E3779B97F4A7C15ull) ^ dev) % INO_BUCKETS;
}

static struct hinode *ino_find(dev_t dev, ino_t ino)
{
	struct hinode *i;

	for (i = ino_hash[ino_bucket(dev, ino)]; i; i = i->next)
		if (i->dev == dev && i->ino == ino)
			return i;
	return NULL;
}

/* Out of the table: no longer served (its record slot goes too). */
static void ino_unhash(struct hinode *ino)
{
	struct hinode **p = &ino_hash[ino_bucket(ino->dev, ino->ino)];

	hrec_drop(ino->rec);
	ino->rec = -1;
	for (; *p; p = &(*p)->next)
		if (*p == ino) {
			*p = ino->next;
			break;
		}
}

static void ino_free(struct hinode *ino)
{
	hshm_ino_release(ino);
	pthread_rwlock_destroy(&ino->io_lock);
	pthread_rwlock_destroy(&ino->size_lock);
	free(ino->path);
	free(ino);
}

static struct hinode *ino_alloc(dev_t dev, ino_t inum, const char *path)
{
	struct hinode *ino = calloc(1, sizeof(*ino));
	pthread_rwlockattr_t a;

	if (!ino || !(ino->path = strdup(path))) {
		free(ino);
		return NULL;
	}
	/* writer-preferring: a demotion is not starved by a stream of
	 * requests (no thread ever takes io_lock shared twice) */
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a,
		PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&ino->io_lock, &a);
	pthread_rwlock_init(&ino->size_lock, &a);
	pthread_rwlockattr_destroy(&a);
	ino->dev = dev;
	ino->ino = inum;
	ino->fd = -1;
	ino->rec = -1;
	ino->shm_slot = -1;
	ino->state = HINO_OPENING;
	ino->users = 1;
	return ino;
}

struct hinode *hino_get_or_claim(dev_t dev, ino_t inum, const char *path,
				 bool *claimed)
{
	struct hinode *ino;

	pthread_mutex_lock(&tab_lock);
	for (;;) {
		ino = ino_find(dev, inum);
		if (!ino || ino->state == HINO_SERVED)
			break;
		/* OPENING or BUSY: its end is near (no wait of theirs is on
		 * us: the table lock is released here) */
		pthread_cond_wait(&tab_cond, &tab_lock);
	}
	if (ino) {
		ino->users++;
		*claimed = false;
	} else if ((ino = ino_alloc(dev, inum, path))) {
		unsigned int b = ino_bucket(dev, inum);

		ino->next = ino_hash[b];
		ino_hash[b] = ino;
		*claimed = true;
	}
	pthread_mutex_unlock(&tab_lock);
	return ino;
}

/* users-- with the table lock held; frees a GONE inode nobody uses. */
static void ino_put_locked(struct hinode *ino)
{
	if (--ino->users == 0 && ino->state == HINO_GONE)
		ino_free(ino);
}

void hino_publish(struct hinode *ino, bool ok)
{
	pthread_mutex_lock(&tab_lock);
	if (ok) {
		ino->state = HINO_SERVED;
	} else {
		ino->state = HINO_GONE;
		ino_unhash(ino);
	}
	pthread_cond_broadcast(&tab_cond);
	pthread_mutex_unlock(&tab_lock);
}

/* A file left the holder within this many ms: a stat's kernel answer
 * taken before it asked may be from the middle of that write-back. */
#define MOVED_MS 2000

static long ring_ago(struct ring *r, dev_t dev, ino_t inum);

struct hinode *hino_lookup(dev_t dev, ino_t inum, bool *moved)
{
	struct hinode *ino;

	*moved = false;
	pthread_mutex_lock(&tab_lock);
	/* Being closed (a process's exit dropped its last reference) or
	 * demoted: the write-back is still growing the file, so "not
	 * served" now would leave a stat the size from the middle of it.
	 * Wait for the end, as an open waits (no lock that the closer
	 * needs is held here). One being set up (OPENING) has no data of
	 * the program's yet: the kernel's answer stands, and its open may
	 * wait long (a lease). */
	while ((ino = ino_find(dev, inum)) && ino->state == HINO_BUSY) {
		*moved = true;
		pthread_cond_wait(&tab_cond, &tab_lock);
	}
	if (ino && ino->state == HINO_SERVED)
		ino->users++;
	else
		ino = NULL;
	pthread_mutex_unlock(&tab_lock);
	if (!ino && !*moved) {
		long ago = ring_ago(&left, dev, inum);

		*moved = ago >= 0 && ago < MOVED_MS;
	}
	return ino;
}

void hino_put(struct hinode *ino)
{
	pthread_mutex_lock(&tab_lock);
	ino_put_locked(ino);
	pthread_mutex_unlock(&tab_lock);
}

int hino_all(struct hinode ***out)
{
	struct hinode **arr = NULL, *ino;
	int n = 0, cap = 0, b;

	pthread_mutex_lock(&tab_lock);
	for (b = 0; b < INO_BUCKETS; b++)
		for (ino = ino_hash[b]; ino; ino = ino->next) {
			if (ino->state != HINO_SERVED)
				continue;
			if (n == cap) {
				struct hinode **bigger;

				cap = cap ? cap * 2 : 64;
				bigger = realloc(arr, (size_t)cap * sizeof(*arr));
				if (!bigger) {
					while (n)
						ino_put_locked(arr[--n]);
					pthread_mutex_unlock(&tab_lock);
					free(arr);
					return -ENOMEM;
				}
				arr = bigger;
			}
			ino->users++;
			arr[n++] = ino;
		}
	pthread_mutex_unlock(&tab_lock);
	*out = arr;
	return n;
}

bool hino_begin_busy(struct hinode *ino)
{
	bool ok;

	pthread_mutex_lock(&tab_lock);
	ok = ino->state == HINO_SERVED;
	if (ok) {
		ino->state = HINO_BUSY;
		ino->users++;
	}
	pthread_mutex_unlock(&tab_lock);
	return ok;
}

void hino_wait_not_busy(struct hinode *ino)
{
	pthread_mutex_lock(&tab_lock);
	while (ino->state == HINO_BUSY)
		pthread_cond_wait(&tab_cond, &tab_lock);
	pthread_mutex_unlock(&tab_lock);
}

static void ring_note_locked(struct ring *r, dev_t dev, ino_t inum);

void hino_end_busy(struct hinode *ino)
{
	pthread_mutex_lock(&tab_lock);
	ring_note_locked(&left, ino->dev, ino->ino);
	ino->state = HINO_GONE;
	ino_unhash(ino);
	pthread_cond_broadcast(&tab_cond);
	ino_put_locked(ino);
	pthread_mutex_unlock(&tab_lock);
}

void hino_wait_settled(void)
{
	struct hinode *ino;
	int b;

	pthread_mutex_lock(&tab_lock);
again:
	for (b = 0; b < INO_BUCKETS; b++)
		for (ino = ino_hash[b]; ino; ino = ino->next)
			if (ino->state == HINO_OPENING ||
			    ino->state == HINO_BUSY) {
				pthread_cond_wait(&tab_cond, &tab_lock);
				goto again;
			}
	pthread_mutex_unlock(&tab_lock);
}

struct hofd *hofd_new(struct hinode *ino, int oflags, struct wtio_file *wf,
		      int *err)
{
	struct hofd *o = calloc(1, sizeof(*o));

	*err = -ENOMEM;
	if (!o)
		return NULL;
	pthread_mutex_init(&o->pos_lock, NULL);
	atomic_init(&o->oflags, oflags);
	o->wf = wf;
	o->ino = ino;
	o->demoted_fd = -1;
	o->refs = 1;
	pthread_mutex_lock(&tab_lock);
	/* a demotion or close that began has its list of OFDs already */
	if (ino->state != HINO_SERVED && ino->state != HINO_OPENING) {
		pthread_mutex_unlock(&tab_lock);
		pthread_mutex_destroy(&o->pos_lock);
		free(o);
		*err = -EAGAIN;
		return NULL;
	}
	o->id = next_id++;
	o->ino_next = ino->ofds;
	ino->ofds = o;
	ino->nr_ofds++;
	ino->users++;
	pthread_mutex_unlock(&tab_lock);
	hshm_attach(o);
	*err = 0;
	return o;
}

void hofd_ref(struct hofd *o, long n)
{
	pthread_mutex_lock(&tab_lock);
	o->refs += n;
	pthread_mutex_unlock(&tab_lock);
}

int hino_close_wtio(struct hinode *ino)
{
	struct wtio_stats s0, s1;
	struct hofd *o;
	int ret = 0, r;

	/* The file's handle first: it writes everything back with the exact
	 * size, and an error lands in every handle's errseq. Then the OFDs'
	 * own (read-only: they write nothing): each reports an error its
	 * description had not seen, kept for its next fsync or close, as the
	 * kernel keeps it in the file's errseq; the last drops the cache. */
	wtio_stats(hctx(), &s0);
	if (ino->wf) {
		uint64_t snap = hrec_snap(ino->rec);

		ret = wtio_close(ino->wf);
		ino->wf = NULL;
		if (!ret)	/* all written back, with the exact size */
			hrec_clean(ino->rec, snap);
	}
	for (o = ino->ofds; o; o = o->ino_next)
		if (o->wf) {
			r = wtio_close(o->wf);
			o->wf = NULL;
			if (r && !atomic_load(&o->pending_err))
				atomic_store(&o->pending_err, r);
		}
	if (ret) {
		/* what the failed close dropped: the context's dirty folios
		 * before and after (an upper bound: a flusher may clean
		 * another file's folios meanwhile) */
		uint64_t lost = 1;	/* a failure lost a block at least */

		wtio_stats(hctx(), &s1);
		hlog("%s: write-back failed: %s", ino->path, strerror(-ret));
		if (s0.dirty_folios > s1.dirty_folios)
			lost = s0.dirty_folios - s1.dirty_folios;
		HSTAT_ADD(dirty_lost_bytes, lost * hctx_folio_size());
	}
	return ret;
}

int hino_close_handles(struct hinode *ino)
{
	int ret = hino_close_wtio(ino), r;

	if (ino->fd >= 0) {
		hlease_drop(ino->fd);
		r = close(ino->fd);
		(void)r;
		ino->fd = -1;
	}
	return ret;
}

/*
 * Last reference of o gone (table lock held on entry, released). It
 * leaves the file's list under io_lock shared, with its handle closed:
 * so a holder of io_lock exclusive sees every OFD of the list alive and
 * the list unchanging (none added: an open takes io_lock shared too).
 */
static int ofd_free(struct hofd *o)
{
	struct hinode *ino = o->ino;
	struct hofd **p;
	bool close_file = false;
	int ret = 0;

	pthread_mutex_unlock(&tab_lock);
	pthread_rwlock_rdlock(&ino->io_lock);
	pthread_mutex_lock(&tab_lock);
	for (p = &ino->ofds; *p; p = &(*p)->ino_next)
		if (*p == o) {
			*p = o->ino_next;
			break;
		}
	if (--ino->nr_ofds == 0 && ino->state == HINO_SERVED) {
		ino->state = HINO_BUSY;
		close_file = true;
	}
	pthread_mutex_unlock(&tab_lock);
	if (o->wf)
		ret = wtio_close(o->wf);
	if (!ret)
		ret = atomic_load(&o->pending_err);
	if (o->demoted_fd >= 0)
		close(o->demoted_fd);
	pthread_rwlock_unlock(&ino->io_lock);
	hshm_detach(o);
	pthread_mutex_destroy(&o->pos_lock);
	free(o);
	if (close_file) {
		int r;

		pthread_rwlock_wrlock(&ino->io_lock);
		r = hino_close_handles(ino);
		pthread_rwlock_unlock(&ino->io_lock);
		hdebug("%s: closed (last reference)%s", ino->path,
		       r ? ", write-back failed" : "");
		if (r && !ret)
			ret = r;
		hino_note_recent(ino->dev, ino->ino);
		hino_end_busy(ino);
		return ret;
	}
	hino_put(ino);
	return ret;
}

int hofd_put(struct hofd *o, long n)
{
	pthread_mutex_lock(&tab_lock);
	o->refs -= n;
	if (o->refs > 0) {
		pthread_mutex_unlock(&tab_lock);
		return 0;
	}
	return ofd_free(o);
}

static void ring_note_locked(struct ring *r, dev_t dev, ino_t inum)
{
	r->e[r->next % RECENT].dev = dev;
	r->e[r->next % RECENT].ino = inum;
	clock_gettime(CLOCK_MONOTONIC, &r->e[r->next % RECENT].t);
	r->next++;
}

void hino_note_recent(dev_t dev, ino_t inum)
{
	pthread_mutex_lock(&tab_lock);
	ring_note_locked(&recent, dev, inum);
	pthread_mutex_unlock(&tab_lock);
}

/* ms since (dev, inum) was last noted in r, -1 if not there */
static long ring_ago(struct ring *r, dev_t dev, ino_t inum)
{
	struct timespec now;
	long ago = -1, a;
	unsigned int i;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&tab_lock);
	for (i = 0; i < RECENT; i++) {
		if (r->e[i].dev != dev || r->e[i].ino != inum ||
		    (!r->e[i].t.tv_sec && !r->e[i].t.tv_nsec))
			continue;
		a = (now.tv_sec - r->e[i].t.tv_sec) * 1000 +
		    (now.tv_nsec - r->e[i].t.tv_nsec) / 1000000;
		if (ago < 0 || a < ago)
			ago = a;
	}
	pthread_mutex_unlock(&tab_lock);
	return ago;
}

long hino_closed_ago(dev_t dev, ino_t inum)
{
	return ring_ago(&recent, dev, inum);
}

bool hino_recently_closed(dev_t dev, ino_t inum, int ms)
{
	long ago = hino_closed_ago(dev, inum);

	return ago >= 0 && ago < ms;
}
