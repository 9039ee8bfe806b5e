/* SPDX-License-Identifier: MIT */
/*
 * lease.h - the holder's write leases and the thread that hears them
 * broken (lease.c).
 */
#ifndef WTIO_HOLDER_LEASE_H
#define WTIO_HOLDER_LEASE_H

#include <signal.h>
#include <stdbool.h>

/* The lease-break signal, directed at the lease thread; blocked in every
 * thread of the holder (hlease_block, before any thread exists). */
#define HOLDER_LEASE_SIG	(SIGRTMIN + 11)

void hlease_block(void);
/* Start the thread: on a break signal, and every 200 ms, it calls
 * on_break, which looks for broken leases. 0 or -errno. */
int hlease_start(void (*on_break)(void));
/* F_SETLEASE F_WRLCK on fd, signalled to the thread: 0 or -errno
 * (-EAGAIN: the file is open elsewhere; -EACCES: not its owner). */
int hlease_take(int fd);
void hlease_drop(int fd);
/* True once a break of fd's lease has started (or it has none). */
bool hlease_broken(int fd);
/* Make the thread look now. */
void hlease_kick(void);

#endif
