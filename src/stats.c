/* SPDX-License-Identifier: MIT */
/* stats.c - which of the context's counter slots a thread counts in. */
#include <stdatomic.h>

#include "stats.h"

unsigned int wtio_stat_slot(void)
{
	static _Atomic unsigned int next;
	static __thread unsigned int slot = ~0u;

	if (slot == ~0u)
		slot = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) %
		       WTIO_STAT_SLOTS;
	return slot;
}
