/* SPDX-License-Identifier: MIT */
/*
 * record.h - what the holder has not written back yet, kept where its
 * death cannot take it: a shared memory record that wtio-run's front
 * maps before it forks the holder, and reads when the holder has died
 * (report.c), to say which files had unwritten data, and how much.
 */
#ifndef WTIO_HOLDER_RECORD_H
#define WTIO_HOLDER_RECORD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define HREC_SLOTS	1024
#define HREC_PATH	240

enum { HREC_RUNNING = 0, HREC_ENDED };

/* One served file: the bytes of writes acknowledged to the program
 * (written, growing), and how many of them a full write-back, or a look
 * that found nothing dirty in the cache, has covered (clean). What its
 * death would lose is at most written - clean (a byte written twice
 * counts twice). */
/* size: the file's size as the program was last answered it (-1: not
 * known, or the kernel's own since a demotion), with the file's identity,
 * so that wtio-run can set the size back where the holder's whole-block
 * writes had left it longer, or had not yet made an extension. */
struct hrec_slot {
	_Atomic uint32_t used;
	uint32_t pad;
	_Atomic uint64_t written, clean;
	_Atomic int64_t size;
	uint64_t dev, ino;
	char path[HREC_PATH];
};

struct hrec {
	uint64_t magic;
	_Atomic uint32_t state;		/* HREC_ENDED: the holder ended well */
	uint32_t pad;
	/* served files that found no slot: their count, and their bytes as
	 * a slot's */
	_Atomic uint64_t other_files;
	struct hrec_slot other;
	struct hrec_slot slot[HREC_SLOTS];
};

/* written - clean of a slot. */
static inline uint64_t hrec_unwritten(struct hrec_slot *s)
{
	uint64_t c = atomic_load(&s->clean), w = atomic_load(&s->written);

	return w > c ? w - c : 0;
}

/* The front: map a new record (shared with the holder it forks next).
 * NULL if it cannot (nothing is then known at the holder's death). */
struct hrec *hrec_create(void);
/* The holder: the record it writes to (the front's, inherited). */
void hrec_use(struct hrec *r);
/* Start the thread that notes files seen clean. 0 or -errno. */
int hrec_start(void);
/* A newly served file: its slot (-1: none left, counted apart). */
int hrec_add(const char *path, uint64_t dev, uint64_t ino);
/* The size the program is answered from now on (before the answer), or
 * -1: the kernel's (a demotion). */
void hrec_size(int slot, int64_t size);
/* The file's last close (its data written back, or its loss said). */
void hrec_drop(int slot);
/* A write of n bytes acknowledged to the program with flags (wtio's,
 * the context's defaults included): counted unless written through. */
void hrec_wrote(int slot, uint64_t n, unsigned int flags);
/* Around a full write-back of the file (fsync, a close of its handle):
 * what it covers (taken before it), noted once it succeeded. */
uint64_t hrec_snap(int slot);
void hrec_clean(int slot, uint64_t snap);
/* The holder has closed every file: nothing to report at its end. */
void hrec_ended(void);

#endif
