/* SPDX-License-Identifier: MIT */
/*
 * locks.c - keep the program's POSIX record locks alive across the shim's
 * own closes.
 *
 * Closing ANY descriptor of a file drops every classic POSIX record lock
 * (fcntl F_SETLK/F_SETLKW, lockf) the process holds on that file. The shim
 * closes descriptors of served files behind the program's back: wtio's
 * O_DIRECT descriptor whenever the handles are closed and reopened
 * (inode_around: mmap demotion, fallocate, truncate by path, copy into a
 * served file, a peer's announcement, a child's append), the shim's OFD
 * lock descriptor, and descriptors of its own (truncate by path).
 *
 * So: a file on which the program has taken a POSIX lock (noted before
 * each F_SETLK/F_SETLKW of a lock) is "locked". A descriptor of a locked
 * file that the shim itself would close is parked here, still open,
 * instead. When the program closes (or dup2s over) a descriptor of the
 * file, the kernel drops its locks anyway: the file stops being locked and
 * its parked descriptors are closed right before the program's close.
 * Identity is (dev, ino) from fstat. At most PARK_MAX descriptors are
 * parked per file: beyond that the oldest is closed (and logged).
 *
 * Lock order: reg_lock (fdtable.c) before park_lock; nothing is taken
 * under park_lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "shim.h"

#define PARK_MAX	16

struct lk_file {
	dev_t dev;
	ino_t ino;
};

struct lk_parked {
	dev_t dev;
	ino_t ino;
	int fd;
};

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lk_file *locked;		/* files the program may hold locks on */
static int nr_locked_files, cap_locked;
static struct lk_parked *parked;	/* oldest first */
static int nr_parked_fds, cap_parked;
/* Unlocked fast paths: nothing to do while both are 0. */
static atomic_int any_locked, any_parked;

static int locked_find(dev_t dev, ino_t ino)
{
	int i;

	for (i = 0; i < nr_locked_files; i++)
		if (locked[i].dev == dev && locked[i].ino == ino)
			return i;
	return -1;
}

static void parked_del(int i)
{
	for (; i + 1 < nr_parked_fds; i++)
		parked[i] = parked[i + 1];
	nr_parked_fds--;
	atomic_store(&any_parked, nr_parked_fds);
}

bool shim_lock_held_on(int fd)
{
	struct stat st;
	bool held;

	if (!atomic_load(&any_locked))
		return false;
	if (real.fstat(fd, &st) < 0)
		return true;
	pthread_mutex_lock(&park_lock);
	held = locked_find(st.st_dev, st.st_ino) >= 0;
	pthread_mutex_unlock(&park_lock);
	return held;
}

/* Anything noted or parked (unlocked: a hint for fast paths). */
bool shim_locks_any(void)
{
	return atomic_load(&any_locked) || atomic_load(&any_parked);
}

/* The program is about to take a POSIX record lock through fd. */
void shim_lock_note(int fd)
{
	struct stat st;

	if (shim_vfork_child() || real.fstat(fd, &st) < 0)
		return;
	pthread_mutex_lock(&park_lock);
	if (locked_find(st.st_dev, st.st_ino) < 0) {
		if (nr_locked_files == cap_locked) {
			int cap = cap_locked ? cap_locked * 2 : 8;
			struct lk_file *n = realloc(locked, sizeof(*n) * (size_t)cap);

			if (!n)
				goto out;
			locked = n;
			cap_locked = cap;
		}
		locked[nr_locked_files].dev = st.st_dev;
		locked[nr_locked_files].ino = st.st_ino;
		nr_locked_files++;
		atomic_store(&any_locked, nr_locked_files);
	}
out:
	pthread_mutex_unlock(&park_lock);
}

/* Close a descriptor the shim (or libwtio) opened itself; parked instead
 * while the program may hold POSIX locks on its file. */
int shim_close_own(int fd)
{
	struct stat st;
	int i, n = 0, oldest = -1;

	if (fd < 0 || !atomic_load(&any_locked) || shim_vfork_child() ||
	    real.fstat(fd, &st) < 0)
		return real.close(fd);
	pthread_mutex_lock(&park_lock);
	if (locked_find(st.st_dev, st.st_ino) < 0) {
		pthread_mutex_unlock(&park_lock);
		return real.close(fd);
	}
	for (i = 0; i < nr_parked_fds; i++)
		if (parked[i].dev == st.st_dev && parked[i].ino == st.st_ino) {
			if (oldest < 0)
				oldest = i;
			n++;
		}
	if (n >= PARK_MAX) {
		shim_debug("fd %d: %d descriptors parked for this file; closing fd %d (the program's record locks on it go)",
			   fd, n, parked[oldest].fd);
		real.close(parked[oldest].fd);
		parked_del(oldest);
	}
	if (nr_parked_fds == cap_parked) {
		int cap = cap_parked ? cap_parked * 2 : 8;
		struct lk_parked *p = realloc(parked, sizeof(*p) * (size_t)cap);

		if (!p) {
			pthread_mutex_unlock(&park_lock);
			return real.close(fd);
		}
		parked = p;
		cap_parked = cap;
	}
	parked[nr_parked_fds].dev = st.st_dev;
	parked[nr_parked_fds].ino = st.st_ino;
	parked[nr_parked_fds].fd = fd;
	nr_parked_fds++;
	atomic_store(&any_parked, nr_parked_fds);
	pthread_mutex_unlock(&park_lock);
	/* never handed to an exec'd program */
	real.fcntl(fd, F_SETFD, FD_CLOEXEC);
	shim_debug("fd %d: kept open, the program holds record locks on its file",
		   fd);
	return 0;
}

/* libwtio opens path again (handles reopened after a close, or its extra
 * descriptor on a second open): hand it a parked descriptor of the same
 * file with the same status flags instead, so that repeated closes and
 * reopens (fallocate after fallocate) do not pile up parked descriptors.
 * wtio does positional I/O only. Returns the descriptor, or -1. */
int shim_unpark(int dirfd, const char *path, int flags)
{
	const int mask = O_ACCMODE | O_APPEND | O_DIRECT | O_DSYNC | O_SYNC |
			 O_NOATIME | O_NONBLOCK;
	struct stat st;
	int i, fd = -1;

	if (!atomic_load(&any_parked) || !path ||
	    (flags & (O_EXCL | O_TRUNC | O_PATH | O_DIRECTORY)) ||
	    (path[0] != '/' && dirfd != AT_FDCWD) || !real.stat ||
	    real.stat(path, &st) < 0)
		return -1;
	pthread_mutex_lock(&park_lock);
	for (i = 0; i < nr_parked_fds; i++) {
		int fl;

		if (parked[i].dev != st.st_dev || parked[i].ino != st.st_ino)
			continue;
		fl = real.fcntl(parked[i].fd, F_GETFL);
		if (fl >= 0 && (fl & mask) == (flags & mask)) {
			fd = parked[i].fd;
			parked_del(i);
			break;
		}
	}
	pthread_mutex_unlock(&park_lock);
	if (fd >= 0) {
		real.fcntl(fd, F_SETFD, (flags & O_CLOEXEC) ? FD_CLOEXEC : 0);
		shim_debug("fd %d: parked descriptor reused", fd);
	}
	return fd;
}

/* The program is about to close fd (close, dup2/dup3 over it): the kernel
 * drops its POSIX locks on fd's file, so the file's parked descriptors
 * can go now. A parked number the program closes itself is forgotten. */
void shim_lock_prog_close(int fd)
{
	struct stat st;
	bool have_st;
	int i;

	if (!atomic_load(&any_locked) && !atomic_load(&any_parked))
		return;
	if (shim_vfork_child())
		return;
	have_st = real.fstat(fd, &st) == 0;
	pthread_mutex_lock(&park_lock);
	for (i = 0; i < nr_parked_fds; i++)
		if (parked[i].fd == fd) {
			parked_del(i);
			break;
		}
	if (have_st && (i = locked_find(st.st_dev, st.st_ino)) >= 0) {
		locked[i] = locked[--nr_locked_files];
		atomic_store(&any_locked, nr_locked_files);
		for (i = 0; i < nr_parked_fds;)
			if (parked[i].dev == st.st_dev &&
			    parked[i].ino == st.st_ino) {
				real.close(parked[i].fd);
				parked_del(i);
			} else {
				i++;
			}
	}
	pthread_mutex_unlock(&park_lock);
}

/* close_range over [first, last]: parked numbers in it are closed by it. */
void shim_lock_range_closed(unsigned int first, unsigned int last)
{
	int i;

	if (!atomic_load(&any_parked) || shim_vfork_child())
		return;
	pthread_mutex_lock(&park_lock);
	for (i = 0; i < nr_parked_fds;)
		if ((unsigned int)parked[i].fd >= first &&
		    (unsigned int)parked[i].fd <= last)
			parked_del(i);
		else
			i++;
	pthread_mutex_unlock(&park_lock);
}

/* fork: called with reg_lock held (see fdtable.c). */
void shim_locks_atfork_prepare(void)
{
	pthread_mutex_lock(&park_lock);
}

void shim_locks_atfork_parent(void)
{
	pthread_mutex_unlock(&park_lock);
}

/* The child holds no record locks (fork does not inherit them): its
 * copies of the parked descriptors are only leaks. */
void shim_locks_atfork_child(void)
{
	int i;

	pthread_mutex_init(&park_lock, NULL);
	for (i = 0; i < nr_parked_fds; i++)
		real.close(parked[i].fd);
	nr_parked_fds = 0;
	nr_locked_files = 0;
	atomic_store(&any_parked, 0);
	atomic_store(&any_locked, 0);
}
