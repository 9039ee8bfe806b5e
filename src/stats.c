/* SPDX-License-Identifier: MIT */
/* stats.c - which of the context's counter slots a thread counts in. */
#include <stdatomic.h>

#include "stats.h"

unsigned int wtio_stat_slot(void)
{
	static _Atomic unsigned int next;
	/* Initial-exec: a read counts a hit on every call, and the general
	 * model would make each count a __tls_get_addr call (the library
	 * is linked at start-up, by programs and by the shim alike). */
	static __thread unsigned int slot
		__attribute__((tls_model("initial-exec"))) = ~0u;

	if (slot == ~0u)
		slot = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) %
		       WTIO_STAT_SLOTS;
	return slot;
}
