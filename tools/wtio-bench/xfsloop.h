/* SPDX-License-Identifier: MIT */
/*
 * xfsloop.h - --xfs-loop: a fresh XFS image in /dev/shm on a loop device
 * with direct I/O on, mounted in a temporary directory; torn down at exit.
 */
#ifndef WTIO_BENCH_XFSLOOP_H
#define WTIO_BENCH_XFSLOOP_H

#include <stddef.h>
#include <stdint.h>

/* Set up; the mount point goes to dir. Returns 0 or -1 (message printed). */
int xfsloop_setup(uint64_t size, uint64_t su, unsigned int sw, char *dir,
		  size_t dirlen);
/* Run a shell command; its stdout (first line) to out if given. Returns
 * its exit status, -1 if it could not run. (mdraid.c uses it too.) */
int xfsloop_sh(const char *cmd, char *out, size_t outlen);
/* umount, and umount -l a second later if that failed. */
void xfsloop_umount(const char *dir);
/* Unmount, detach, remove (idempotent). */
void xfsloop_teardown(void);

#endif
