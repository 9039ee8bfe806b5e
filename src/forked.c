/* SPDX-License-Identifier: MIT */
/*
 * forked.c - the fork generation of forked.h: one counter, bumped in the
 * child of each fork() by an atfork handler, so that every entry point
 * tells a context of this process from an inherited one with one relaxed
 * load (getpid() is a system call; a pid may also come back). A child
 * made without glibc's fork() (a raw clone, _Fork) runs no handler and is
 * not told: that is not supported.
 */
#include <pthread.h>

#include "forked.h"

_Atomic unsigned int wtio_fork_gen;

/* Only the child's thread runs, and nothing else reads the counter yet. */
static void fork_child(void)
{
	atomic_fetch_add_explicit(&wtio_fork_gen, 1, memory_order_relaxed);
}

/* At load, so that no fork can come between a context's creation and
 * the handler's registration. */
__attribute__((constructor)) static void forked_ctor(void)
{
	pthread_atfork(NULL, NULL, fork_child);
}
