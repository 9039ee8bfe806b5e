/* SPDX-License-Identifier: MIT */
/*
 * fdrace.c - a descriptor number under threads that use it while another
 * closes it, or opens a file that lands on it (REVIEW A7). The kernel
 * gives such a call the old file's result, EBADF, or the new file's; the
 * shim must give the same, and never let the call reach a served
 * description's O_DIRECT (EINVAL on an unaligned buffer, or I/O past the
 * cache) or one of the shim's own hidden descriptors:
 *
 * - A close (or a dup2 onto it, or close_range) of a served number first
 *   points the number at a placeholder, an O_PATH descriptor (every read,
 *   write and seek on it is EBADF), then forgets the number in the table
 *   and writes the file back, then closes the placeholder. Before, the
 *   number named the served O_DIRECT description, unserved, for as long
 *   as the write-back took: a racing call made the real call on it.
 * - An open marks the number "adopting" before it sets O_DIRECT on the
 *   new description, until the number is served (or the flags are back),
 *   and counts its adoptions: a real call that met EINVAL while one was
 *   in progress or began waits for its end and is made again, through
 *   the shim if the number is served by then, else on whatever it names
 *   (rw.c): the call then acts on the new file, as the kernel's may.
 * - A number the program closed lately is not taken for the shim's own
 *   descriptors (shim_dupfd_own; an io_uring ring, which the kernel
 *   makes at the lowest free number, is made while those numbers are
 *   held by placeholders): a call still racing on the closed number gets
 *   EBADF or the program's next file, not the shim's.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "shim.h"

static atomic_int placeholder = -1;

/* The placeholder (one of the shim's own), or -1. */
static int placeholder_fd(void)
{
	int fd = atomic_load(&placeholder), p, want = -1;

	if (fd >= 0)
		return fd;
	p = real.open("/", O_PATH | O_CLOEXEC | O_DIRECTORY);
	if (p < 0)
		return -1;
	/* harmless wherever it lands (O_PATH): not shim_dupfd_own */
	fd = real.fcntl(p, F_DUPFD_CLOEXEC, SHIM_FD_BASE);
	if (fd < 0)
		fd = real.fcntl(p, F_DUPFD_CLOEXEC, 3);
	real.close(p);
	if (fd < 0)
		return -1;
	if (!atomic_compare_exchange_strong(&placeholder, &want, fd)) {
		real.close(fd);
		fd = want;
	}
	return fd;
}

bool fd_shield(int fd)
{
	int p, tries;

	if (real.fcntl(fd, F_GETFD) < 0)	/* closed behind our back */
		return false;
	for (tries = 0; tries < 2; tries++) {
		p = placeholder_fd();
		if (p < 0 || p == fd)
			return false;
		if (real.dup3(p, fd, O_CLOEXEC) >= 0)
			return true;
		if (errno != EBADF)
			return false;
		/* the program closed the placeholder (a loop over every
		 * number): make another */
		atomic_compare_exchange_strong(&placeholder, &p, -1);
	}
	return false;
}

/* ---- opens ---- */

static _Atomic unsigned char adopting[1 << 16];
static _Atomic unsigned short adopt_gen[1 << 16];
static __thread int adopting_here = -1;

void fd_adopting(int fd, bool on)
{
	if (fd < 0 || fd >= (1 << 16))
		return;
	/* marked before counted: a call that read the new count then
	 * reads the mark (fd_adopt_gen reads them the other way round) */
	atomic_store(&adopting[fd], on);
	if (on)
		atomic_fetch_add(&adopt_gen[fd], 1);
	adopting_here = on ? fd : -1;
}

unsigned int fd_adopt_gen(int fd)
{
	if (fd < 0 || fd >= (1 << 16))
		return 0;
	unsigned int gen = atomic_load(&adopt_gen[fd]);

	return gen | (atomic_load(&adopting[fd]) ? 1u << 16 : 0);
}

bool fd_adopted_since(int fd, unsigned int gen)
{
	int spins = 0;

	if (fd < 0 || fd >= (1 << 16))
		return false;
	/* a signal handler's call in the middle of its thread's open of
	 * that very number waits for nothing */
	while (atomic_load(&adopting[fd]) && adopting_here != fd) {
		if (++spins > 64)
			usleep(100);
		else
			sched_yield();
	}
	/* adopting when the call began, or an adoption began since: the
	 * EINVAL may be its O_DIRECT */
	return gen != atomic_load(&adopt_gen[fd]);
}

/* ---- numbers closed lately ---- */

#define RECENT 64
static atomic_int recent[RECENT] = { [0 ... RECENT - 1] = -1 };
static atomic_uint recent_next;

void fd_not_placeholder(int fd)
{
	int p = fd;

	/* the program closed or replaced it (a loop over every number):
	 * that number may soon be one of its files; make another. A load
	 * first: every close comes here */
	if (fd >= 0 && atomic_load_explicit(&placeholder,
					    memory_order_relaxed) == fd)
		atomic_compare_exchange_strong(&placeholder, &p, -1);
}

void fd_range_closed(unsigned int first, unsigned int last)
{
	int p = atomic_load(&placeholder);

	if (p >= 0 && (unsigned int)p >= first && (unsigned int)p <= last)
		fd_not_placeholder(p);
}

void fd_note_closed(int fd)
{
	fd_not_placeholder(fd);
	if (fd >= 0)
		atomic_store_explicit(&recent[atomic_fetch_add_explicit(
			&recent_next, 1, memory_order_relaxed) % RECENT], fd,
			memory_order_relaxed);
}

bool fd_closed_lately(int fd)
{
	int i;

	for (i = 0; i < RECENT; i++)
		if (atomic_load_explicit(&recent[i], memory_order_relaxed) == fd)
			return true;
	return false;
}

int fd_block_lately(int *blk)
{
	int p = placeholder_fd(), seen[RECENT], i, n = 0, ns = 0;

	if (p < 0)
		return 0;
	for (i = 0; i < RECENT; i++) {
		int fd = atomic_load_explicit(&recent[i], memory_order_relaxed);
		int t, k;

		if (fd < 0)
			continue;
		for (k = 0; k < ns && seen[k] != fd; k++)
			;
		if (k < ns)
			continue;
		seen[ns++] = fd;
		/* the lowest free number from fd up: fd itself if it is
		 * free, never one the program holds (no dup3 over it) */
		t = real.fcntl(p, F_DUPFD_CLOEXEC, fd);
		if (t == fd)
			blk[n++] = t;
		else if (t >= 0)
			real.close(t);
	}
	return n;
}

/* A number at base or above among those closed lately. */
static bool closed_lately_above(int base)
{
	int i;

	for (i = 0; i < RECENT; i++)
		if (atomic_load_explicit(&recent[i], memory_order_relaxed) >= base)
			return true;
	return false;
}

int fd_dup_avoiding(int fd, int base)
{
	int p, blk[RECENT], n = 0, t, r;

	/* the usual case: the program's numbers are below the shim's */
	if (!closed_lately_above(base) || (p = placeholder_fd()) < 0)
		return real.fcntl(fd, F_DUPFD_CLOEXEC, base);
	/* The number is taken with a placeholder first, and the dup put
	 * there with dup3: a number closed lately never names fd, not even
	 * for a moment; those met on the way are held meanwhile. */
	t = real.fcntl(p, F_DUPFD_CLOEXEC, base);
	while (t >= 0 && n < RECENT && fd_closed_lately(t)) {
		blk[n++] = t;
		t = real.fcntl(p, F_DUPFD_CLOEXEC, t + 1);
	}
	if (t < 0) {
		r = real.fcntl(fd, F_DUPFD_CLOEXEC, base);
	} else {
		r = real.dup3(fd, t, O_CLOEXEC);
		if (r < 0)
			real.close(t);
	}
	fd_unblock(blk, n);
	return r;
}

void fd_unblock(const int *blk, int n)
{
	while (n > 0)
		real.close(blk[--n]);
}
