/* SPDX-License-Identifier: MIT */
/*
 * forked.h - whether a context is used in a child of fork(): a context
 * belongs to the process that created it. The child has a copy of its
 * memory but not its threads (flushers, reapers), and shares its kernel
 * objects: the io_uring rings (shared SQ and CQ: a child's submission
 * lands in the parent's ring, its reap may take the parent's completion),
 * AIO contexts (per mm: the child's io_submit is EINVAL), the backing
 * descriptors (a child's write-back would write the parent's dirty data
 * behind the parent's cache, or its own behind it). Every call on such a
 * context, its files and queues is -ECHILD (forked.c), and touches
 * nothing.
 */
#ifndef WTIO_FORKED_H
#define WTIO_FORKED_H

#include <stdatomic.h>
#include <stdbool.h>

/* Bumped in every child of fork() (an atfork child handler). */
extern _Atomic unsigned int wtio_fork_gen;

/* The generation a context made now belongs to. */
static inline unsigned int wtio_fork_gen_now(void)
{
	return atomic_load_explicit(&wtio_fork_gen, memory_order_relaxed);
}

/* Whether a context of generation gen is used in a child of fork(). */
static inline bool wtio_forked(unsigned int gen)
{
	return gen != wtio_fork_gen_now();
}

#endif /* WTIO_FORKED_H */
