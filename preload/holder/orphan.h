/* SPDX-License-Identifier: MIT */
/*
 * orphan.h - the processes that may be the child of a fork whose parent
 * died before it told the holder the child's pid.
 */
#ifndef WTIO_HOLDER_ORPHAN_H
#define WTIO_HOLDER_ORPHAN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* CLOCK_BOOTTIME in ns: the clock of the kernel's process start times. */
uint64_t horphan_now(void);
/* The live processes of the program (descendants of the holder) but dead,
 * started at since_ns or later: up to max pids, their count; -1 when
 * /proc cannot be read or there are more than max. */
int horphan_candidates(uint64_t since_ns, pid_t dead, pid_t *pids, int max);

#endif
