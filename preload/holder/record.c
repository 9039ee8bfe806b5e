/* SPDX-License-Identifier: MIT */
/*
 * record.c - the holder's side of the record of unwritten data (record.h):
 * a slot per served file, the bytes of acknowledged writes and how many
 * of them are known written back, kept cheaply: one atomic add per write
 * (none for a write-through one); the mark moves when a full write-back
 * of the file succeeds (fsync, a close of its handle), and when a thread
 * that looks every 100 ms (while something is counted) finds no dirty
 * data in the whole cache, up to what was counted before it looked. No
 * acknowledged byte is missed: it is counted before the write's answer,
 * and marked only by a write-back or a look that began after it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../memfd_size.h"
#include "ctx.h"
#include "record.h"

#define HREC_MAGIC	0x7774696f72656331ull	/* "wtiorec1" */
#define HREC_OTHER	(-2)	/* a file without a slot, counted apart */
#define LOOK_MS		100

static struct hrec *rec;
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static int free_slots[HREC_SLOTS], nr_free = -1;
static int high;		/* slots [0, high) have been used (slots_lock) */
static _Atomic uint64_t counted;	/* writes counted since the last look */

struct hrec *hrec_create(void)
{
	struct hrec *r;
	int fd = memfd_create("wtio-holder-record", MFD_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (memfd_size(fd, sizeof(*r), ftruncate) < 0) {
		close(fd);
		return NULL;
	}
	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (r == MAP_FAILED)
		return NULL;
	r->magic = HREC_MAGIC;
	return r;
}

void hrec_use(struct hrec *r)
{
	rec = r;
}

/* The slot of s (HREC_OTHER: the files without one), or NULL. */
static struct hrec_slot *slot_of(int s)
{
	if (!rec || s == -1)
		return NULL;
	return s == HREC_OTHER ? &rec->other : &rec->slot[s];
}

int hrec_add(const char *path, uint64_t dev, uint64_t ino)
{
	int s;

	if (!rec)
		return -1;
	pthread_mutex_lock(&slots_lock);
	if (nr_free < 0) {
		for (nr_free = 0; nr_free < HREC_SLOTS; nr_free++)
			free_slots[nr_free] = HREC_SLOTS - 1 - nr_free;
	}
	s = nr_free ? free_slots[--nr_free] : HREC_OTHER;
	if (s == HREC_OTHER) {
		atomic_fetch_add(&rec->other_files, 1);
	} else {
		atomic_store(&rec->slot[s].written, 0);
		atomic_store(&rec->slot[s].clean, 0);
		atomic_store(&rec->slot[s].size, -1);
		rec->slot[s].dev = dev;
		rec->slot[s].ino = ino;
		snprintf(rec->slot[s].path, HREC_PATH, "%s", path);
		atomic_store_explicit(&rec->slot[s].used, 1,
				      memory_order_release);
		if (high <= s)
			high = s + 1;
	}
	pthread_mutex_unlock(&slots_lock);
	return s;
}

void hrec_drop(int s)
{
	if (!rec || s == -1)
		return;
	pthread_mutex_lock(&slots_lock);
	if (s == HREC_OTHER) {
		atomic_fetch_sub(&rec->other_files, 1);
	} else {
		atomic_store(&rec->slot[s].used, 0);
		atomic_store(&rec->slot[s].clean,
			     atomic_load(&rec->slot[s].written));
		free_slots[nr_free++] = s;
	}
	pthread_mutex_unlock(&slots_lock);
}

void hrec_wrote(int s, uint64_t n, unsigned int flags)
{
	struct hrec_slot *sl = slot_of(s);

	/* on disk at return: nothing left in the cache to lose */
	if (!sl || !n ||
	    (flags & (WTIO_WRITETHROUGH | WTIO_DSYNC | WTIO_ATOMIC)))
		return;
	atomic_fetch_add(&sl->written, n);
	atomic_fetch_add(&counted, 1);
}

void hrec_size(int s, int64_t size)
{
	struct hrec_slot *sl = slot_of(s);

	if (sl && s != HREC_OTHER)
		atomic_store(&sl->size, size < 0 ? -1 : size);
}

uint64_t hrec_snap(int s)
{
	struct hrec_slot *sl = slot_of(s);

	return sl ? atomic_load(&sl->written) : 0;
}

/* clean = max(clean, snap): two who saw the file clean agree. */
static void mark_clean(struct hrec_slot *sl, uint64_t snap)
{
	uint64_t c = atomic_load(&sl->clean);

	while (c < snap && !atomic_compare_exchange_weak(&sl->clean, &c, snap))
		;
}

void hrec_clean(int s, uint64_t snap)
{
	struct hrec_slot *sl = slot_of(s);

	if (sl)
		mark_clean(sl, snap);
}

void hrec_ended(void)
{
	if (rec)
		atomic_store(&rec->state, HREC_ENDED);
}

/* One look (slots_lock held: no slot changes files meanwhile): what was
 * written before it is clean if the cache then holds no dirty data and
 * none under write-back. true if something may be left unwritten. */
static bool look(uint64_t *snap, int n)
{
	struct wtio_stats st;
	bool left = false;
	int i;

	for (i = 0; i < n; i++)
		snap[i] = atomic_load(&rec->slot[i].written);
	snap[n] = atomic_load(&rec->other.written);
	if (wtio_stats(hctx(), &st) || st.dirty_folios || st.writeback_folios) {
		for (i = 0; i < n && !left; i++)
			left = hrec_unwritten(&rec->slot[i]) != 0;
		return left || hrec_unwritten(&rec->other);
	}
	for (i = 0; i < n; i++)
		mark_clean(&rec->slot[i], snap[i]);
	mark_clean(&rec->other, snap[n]);
	return false;
}

static void *looker(void *arg)
{
	static uint64_t snap[HREC_SLOTS + 1];
	struct timespec nap = { 0, LOOK_MS * 1000000L };
	bool left = false;

	(void)arg;
	for (;;) {
		nanosleep(&nap, NULL);
		/* nothing counted since the last look, which left nothing:
		 * nothing to note */
		if (atomic_exchange(&counted, 0) || left) {
			pthread_mutex_lock(&slots_lock);
			left = look(snap, high);
			pthread_mutex_unlock(&slots_lock);
		}
	}
	return NULL;
}

int hrec_start(void)
{
	pthread_attr_t attr;
	pthread_t t;
	int err;

	if (!rec)
		return 0;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, looker, NULL);
	pthread_attr_destroy(&attr);
	return -err;
}
