/* SPDX-License-Identifier: MIT */
/* engine.c - which engine runs a mode at a job's iodepth and --ioengine. */
#include <stddef.h>

#include "engine.h"
#include "raidtarget.h"

const struct engine_ops *engine_pick(const struct mode_def *m,
				     const struct job_opts *job,
				     const char **why)
{
	*why = NULL;
	if (job->ioengine == IOENGINE_NULL)
		return &engine_null;
	if (m->family == FAMILY_KERNEL && bench_raid_active()) {
		*why = "kernel modes cannot run on --raid (a user-space RAID the kernel cannot see; "
		       "--md-raid runs them where md works)";
		return NULL;
	}
	if (m->family == FAMILY_WTIO) {
		if (job->iodepth <= 1 || job->rw == RW_CREATE)
			return &engine_wtio_sync;
		if (engine_wtio_queue.available &&
		    !engine_wtio_queue.available(why))
			return NULL;
		return &engine_wtio_queue;
	}

	enum ioengine e = job->ioengine;
	if (job->rw == RW_CREATE)
		return &engine_kernel_psync;
	if (e == IOENGINE_AUTO) {
		if (job->iodepth <= 1)
			return &engine_kernel_psync;
#if WTIO_BENCH_HAVE_LIBAIO
		return &engine_kernel_libaio;
#elif WTIO_BENCH_HAVE_URING
		return &engine_kernel_uring;
#else
		return &engine_kernel_psync;
#endif
	}
	switch (e) {
	case IOENGINE_PSYNC:
		return &engine_kernel_psync;
	case IOENGINE_LIBAIO:
#if WTIO_BENCH_HAVE_LIBAIO
		return &engine_kernel_libaio;
#else
		*why = "built without libaio";
		return NULL;
#endif
	case IOENGINE_IO_URING:
#if WTIO_BENCH_HAVE_URING
		return &engine_kernel_uring;
#else
		*why = "built without liburing";
		return NULL;
#endif
	default:
		return &engine_kernel_psync;
	}
}
