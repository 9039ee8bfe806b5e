/* SPDX-License-Identifier: MIT */
/*
 * demote.h - passing a served file through for good (every process of the
 * program), and running a kernel call on it with its cache empty.
 */
#ifndef WTIO_HOLDER_DEMOTE_H
#define WTIO_HOLDER_DEMOTE_H

#include "table.h"

/* Write the file back (exact size), close its wtio handles, give up the
 * lease and give each OFD a kernel description of its own (the
 * program's flags, at the OFD's position). reason: HDEMOTE_*. Waits for
 * the requests in flight on the file; call it holding none of its locks.
 * Nothing done if the file is no longer served. */
void hdemote(struct hinode *ino, int reason);
/* wtio-run's test hook WTIO_RUN_TEST_DEMOTE_DELAY_US (read once at the
 * holder's start, then unset): a pause between a demotion's claim of the
 * file and its io_lock, the window tests/shim-shared-lock-race.sh needs
 * open to show that a second demotion waits for the first. */
void hdemote_test_init(void);
/* The lease thread's look (lease.c): demote every file whose lease a
 * break has begun on. */
void hdemote_broken(void);
/* With every request on the file done and its cache written back and
 * dropped, run fn(description, arg), then serve it again (or demote it
 * if that fails). Returns fn's result, or HOLDER_DEMOTED if the file was
 * demoted before (the caller answers with the OFD's description). */
long hino_around(struct hinode *ino, long (*fn)(int fd, void *arg),
		 void *arg);

#endif
