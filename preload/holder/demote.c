/* SPDX-License-Identifier: MIT */
/*
 * demote.c - demotion: a served file passed through for good, for every
 * process of the program, because another process opened or truncated it
 * (its lease is being broken), or because a client asked (mmap, a lock on
 * the description, an unknown ioctl, an inherited descriptor at exec).
 *
 * The order matters: the requests in flight end first (io_lock
 * exclusive); then the write-back with the exact size (the breaker of the
 * lease is still waiting in its open); then the lease goes (the breaker
 * goes on, seeing every byte); only then does each OFD get its own
 * description of the file (an open of it while the lease is held would
 * break the holder's own lease and wait for itself).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctx.h"
#include "demote.h"
#include "lease.h"
#include "log.h"
#include "record.h"
#include "shm.h"

static const char *reason_name(int reason)
{
	static const char *const names[] = {
		"asked by the program (mmap, ioctl, ...)",
		"inherited by an exec'd image",
		"a lock on the description",
		"another process opened or truncated it",
	};

	return reason >= 0 && reason < 4 ? names[reason] : "demoted";
}

/* o's own kernel description: the program's flags, at its position. */
static void ofd_own_description(struct hinode *ino, struct hofd *o)
{
	int fl = atomic_load(&o->oflags), fd;
	int want = (fl & (O_ACCMODE | O_APPEND | O_NONBLOCK | O_NOATIME |
			  O_DIRECT | O_DSYNC | O_SYNC)) |
		   O_CLOEXEC | O_NOCTTY;
	char pp[64];

	snprintf(pp, sizeof(pp), "/proc/self/fd/%d", ino->fd);
	fd = open(pp, want);
	if (fd < 0 && (want & O_NOATIME))
		fd = open(pp, want & ~O_NOATIME);
	if (fd < 0) {
		/* the holder's own description then, shared (positions are
		 * no longer each OFD's): said, since it is a departure */
		hlog("%s: a description of its own: %s; sharing the holder's",
		     ino->path, strerror(errno));
		fd = fcntl(ino->fd, F_DUPFD_CLOEXEC, 3);
	}
	if (fd >= 0)
		lseek(fd, o->pos, SEEK_SET);
	o->demoted_fd = fd;
	o->demoted = true;
}

/* The demotion proper: io_lock held exclusive, the inode BUSY. */
static void demote_locked(struct hinode *ino, int reason)
{
	struct hofd *o;
	int fl;

	/* positions clients set go into the OFDs first */
	hshm_close_ino(ino);
	hino_close_wtio(ino);
	/* written back with its exact size: the kernel's from now on */
	hrec_size(ino->rec, -1);
	if (ino->fd >= 0) {
		/* a client's descriptor is a dup of it until it switches */
		fl = fcntl(ino->fd, F_GETFL);
		if (fl >= 0)
			fcntl(ino->fd, F_SETFL, fl & ~O_DIRECT);
		hlease_drop(ino->fd);
		for (o = ino->ofds; o; o = o->ino_next)
			if (!o->demoted)
				ofd_own_description(ino, o);
		close(ino->fd);
		ino->fd = -1;
	}
	if (reason >= 0 && reason < 4)
		HSTAT_INC(demoted[reason]);
	hdebug("%s: demoted (%s): passed through from now on", ino->path,
	       reason_name(reason));
}

static unsigned int test_delay_us;

void hdemote_test_init(void)
{
	const char *v = getenv("WTIO_RUN_TEST_DEMOTE_DELAY_US");

	if (v)
		test_delay_us = (unsigned int)strtoul(v, NULL, 10);
	unsetenv("WTIO_RUN_TEST_DEMOTE_DELAY_US");
}

void hdemote(struct hinode *ino, int reason)
{
	if (!hino_begin_busy(ino))
		return;
	if (test_delay_us)
		usleep(test_delay_us);
	pthread_rwlock_wrlock(&ino->io_lock);
	demote_locked(ino, reason);
	pthread_rwlock_unlock(&ino->io_lock);
	hino_end_busy(ino);
}

void hdemote_broken(void)
{
	struct hinode **all;
	int n, i;

	n = hino_all(&all);
	for (i = 0; i < n; i++) {
		struct hinode *ino = all[i];
		bool broken = false;

		/* a file busy with a request is looked at on the next poll:
		 * the lease thread never waits behind a request here */
		if (pthread_rwlock_tryrdlock(&ino->io_lock) == 0) {
			broken = ino->wf && ino->fd >= 0 &&
				 hlease_broken(ino->fd);
			pthread_rwlock_unlock(&ino->io_lock);
		}
		if (broken)
			hdemote(ino, HDEMOTE_LEASE);
		hino_put(ino);
	}
	free(n > 0 ? all : NULL);
}

/* Serve the file again after hino_around: its handle and each OFD's.
 * io_lock held exclusive. */
static int reopen_handles(struct hinode *ino)
{
	struct hofd *o;
	int ret;

	ret = hctx_open(ino->fd, ino->writable ? O_RDWR : O_RDONLY, &ino->wf);
	if (ret) {
		ino->wf = NULL;
		return ret;
	}
	for (o = ino->ofds; o; o = o->ino_next) {
		if (o->demoted)
			continue;
		ret = hctx_open(ino->fd, O_RDONLY, &o->wf);
		if (ret) {
			o->wf = NULL;
			return ret;
		}
	}
	return 0;
}

long hino_around(struct hinode *ino, long (*fn)(int fd, void *arg),
		 void *arg)
{
	long ret;

	pthread_rwlock_wrlock(&ino->io_lock);
	if (!ino->wf) {
		/* demoted (or closed) while this request waited */
		pthread_rwlock_unlock(&ino->io_lock);
		return HOLDER_DEMOTED;
	}
	/* every handle closed: the file written back, its cache dropped */
	hino_close_wtio(ino);
	ret = fn(ino->fd, arg);
	if (reopen_handles(ino)) {
		hlog("%s: serving it again failed; passing it through",
		     ino->path);
		if (hino_begin_busy(ino)) {
			demote_locked(ino, HDEMOTE_PROGRAM);
			pthread_rwlock_unlock(&ino->io_lock);
			hino_end_busy(ino);
			return ret;
		}
		/* a demotion waits for io_lock: it comes next, and a request
		 * meanwhile waits for it (ops.c, enter) */
	}
	pthread_rwlock_unlock(&ino->io_lock);
	return ret;
}
