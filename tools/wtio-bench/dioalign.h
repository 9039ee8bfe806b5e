/* SPDX-License-Identifier: MIT */
/* dioalign.h - --bs against the target's direct I/O alignment, before the run. */
#ifndef WTIO_BENCH_DIOALIGN_H
#define WTIO_BENCH_DIOALIGN_H

#include <stddef.h>

#include "options.h"

/*
 * When a job's mode does direct I/O (kernel-direct), its --bs (and so its
 * offsets) must be a multiple of dir's direct I/O alignment (statx
 * STATX_DIOALIGN of a probe file there). Returns 0, or -1 with a message.
 * Where the alignment cannot be learnt, 0: the run itself will tell.
 */
int dioalign_check(const struct job_opts *job, const char *dir, char *err, size_t errlen);

#endif
