/* SPDX-License-Identifier: MIT */
/*
 * table.h - the holder's served files (inodes) and the program's open
 * file descriptions of them (OFDs), with their reference counts.
 *
 * Locks, in the order they are taken:
 *   ofd->pos_lock     the OFD's position (f_pos_lock): position-using
 *                     read/write/lseek;
 *   ino->io_lock      rwlock, writer-preferring: shared by every request
 *                     on the file, exclusive while its handles change
 *                     (demotion, fallocate, the last close), so that those
 *                     wait for the requests in flight and no request sees
 *                     a handle going away;
 *   ino->size_lock    rwlock: exclusive for what moves the end (O_APPEND
 *                     writes, extending writes, ftruncate), shared by the
 *                     other writes, so that an append's size and its
 *                     write are one step for every process of the program;
 *   the table lock    (table.c, never held across a system call): the
 *                     hashes, reference counts, OFD lists and states.
 * The demotion takes no pos_lock: a position only moves under io_lock
 * shared, which it holds exclusive.
 */
#ifndef WTIO_HOLDER_TABLE_H
#define WTIO_HOLDER_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "wtio.h"

enum hino_state {
	HINO_OPENING,	/* being set up by one open; others wait */
	HINO_SERVED,
	HINO_BUSY,	/* being demoted or closed; opens wait */
	HINO_GONE,	/* out of the table (demoted, closed, failed) */
};

struct hofd;

struct hinode {
	dev_t dev;
	ino_t ino;
	int fd;			/* the one description, leased; -1 after */
	bool writable;		/* fd is O_RDWR (else O_RDONLY) */
	uint32_t block_size;
	struct wtio_file *wf;	/* the file's own handle: data, sizes */
	pthread_rwlock_t io_lock;
	pthread_rwlock_t size_lock;
	char *path;		/* as first opened, for messages */
	int rec;		/* its slot in the record (record.h), or -1 */
	int shm_slot;		/* its size in the shared page, or -1 */
	bool shm_closed;	/* demoted: no size published any more */
	/* table lock: */
	int state;
	int users;		/* OFDs (live or demoted) and holders */
	int nr_ofds;
	struct hofd *ofds;
	struct hinode *next;
};

struct hofd {
	uint64_t id;
	struct hinode *ino;
	pthread_mutex_t pos_lock;
	off_t pos;
	/* The program's flags: access mode, O_APPEND, O_NONBLOCK,
	 * O_NOATIME, O_DIRECT, O_DSYNC, O_SYNC, O_ASYNC (F_SETFL). */
	_Atomic int oflags;
	struct wtio_file *wf;	/* its own read-only handle: its errseq */
	int shm_slot;		/* its slot in the shared page, or -1 */
	/* A write-back error its handle reported when it was closed under
	 * it (demotion, fallocate): the next fsync or close reports it. */
	_Atomic int pending_err;
	/* io_lock exclusive to set: */
	bool demoted;
	int demoted_fd;		/* its own kernel description, once demoted */
	/* table lock: */
	long refs;		/* processes' fds, fork pins, requests */
	struct hofd *ino_next;
};

/* The served (or being set up) inode of (dev, ino), with a user
 * reference: a SERVED one (*claimed false), or, when there is none, a
 * new OPENING one that the caller sets up (*claimed true) and publishes.
 * Waits while the inode is OPENING or BUSY. NULL: no memory. */
struct hinode *hino_get_or_claim(dev_t dev, ino_t ino, const char *path,
				 bool *claimed);
/* OPENING -> SERVED (ok) or GONE. */
void hino_publish(struct hinode *ino, bool ok);
/* A SERVED inode of (dev, ino) with a user reference, or NULL. One
 * being demoted or closed (BUSY) is waited for first;
 * *moved is set when it was, or when the file left the holder a moment
 * ago (its write-back may have grown it after a kernel stat the caller
 * took before asking). */
struct hinode *hino_lookup(dev_t dev, ino_t ino, bool *moved);
void hino_put(struct hinode *ino);
/* Every SERVED inode, each with a user reference (hino_put each, free
 * the array). Returns the count, -ENOMEM. */
int hino_all(struct hinode ***out);
/* SERVED -> BUSY (demotion, the end); false if it was not SERVED. Its
 * OFD list (ino->ofds) is then walked under io_lock exclusive, where it
 * cannot change (table.c, ofd_free). */
bool hino_begin_busy(struct hinode *ino);
/* BUSY -> GONE: out of the table (a later open serves it afresh). */
void hino_end_busy(struct hinode *ino);
/* Until ino is not BUSY: a demotion or close another thread began has
 * ended (ino referenced by the caller). */
void hino_wait_not_busy(struct hinode *ino);

/* Wait until no inode is being set up, demoted or closed. */
void hino_wait_settled(void);

/* Did the holder close (dev, ino) for its last reference within the last
 * ms milliseconds? The client that closed it may not have closed its own
 * descriptor of the old description yet. */
bool hino_recently_closed(dev_t dev, ino_t ino, int ms);
/* How long ago (ms) the holder last closed or created (dev, ino), -1 if
 * not among the latest. */
long hino_closed_ago(dev_t dev, ino_t ino);
/* Note (dev, ino) as closed (or created) by the holder just now. */
void hino_note_recent(dev_t dev, ino_t ino);

/* A new OFD of a SERVED (or OPENING) inode, one reference, a new id;
 * NULL (*err -ENOMEM, or -EAGAIN: the inode is being demoted or closed,
 * look it up again). */
struct hofd *hofd_new(struct hinode *ino, int oflags, struct wtio_file *wf,
		      int *err);
/* (By id: only through the process that names it, proc.c's
 * hproc_ofd.) */
void hofd_ref(struct hofd *o, long n);
/* Drop n references. The last one frees the OFD, and the last OFD of a
 * served file closes it (write-back, exact size, lease dropped): that
 * close's result is returned (0 otherwise). Never with io_lock held. */
int hofd_put(struct hofd *o, long n);

/* Close the wtio handles of the file and of its OFDs: the file's own
 * writes everything back with the exact size; a failure is said and
 * counted, and returned, and each OFD keeps the error its handle had not
 * seen (pending_err). io_lock held exclusive. */
int hino_close_wtio(struct hinode *ino);
/* hino_close_wtio, then the lease and the description go. */
int hino_close_handles(struct hinode *ino);

#endif
