/* SPDX-License-Identifier: MIT */
/*
 * memcg.h - equal memory for the kernel's modes: a memory cgroup (v1
 * memory controller, or v2 memory.max) that wtio-bench moves itself into
 * for a kernel mode's trial, limited to wtio's cache budget plus a stated
 * allowance, and out of again afterwards; removed at exit and on Ctrl-C.
 */
#ifndef WTIO_BENCH_MEMCG_H
#define WTIO_BENCH_MEMCG_H

#include <stddef.h>
#include <stdint.h>

/*
 * Make the cgroup (a child of this process's own memory cgroup). Returns 0,
 * or a negative errno with why it cannot in why.
 */
int memcg_setup(char *why, size_t len);
/* "v1" or "v2" once set up, else NULL. */
const char *memcg_version(void);
/* The cgroup's directory (for the tests and the header), or "". */
const char *memcg_path(void);
/* Set the limit, empty the cgroup's old charges and move the process in. */
int memcg_enter(uint64_t limit);
/* Move the process back where it was. Returns 0 or a negative errno. */
int memcg_leave(void);
/* Move the calling process alone (a helper just forked, such as perf)
 * back where wtio-bench came from, so the cgroup charges only the trial.
 * Async-signal-safe; 0 or a negative errno. */
int memcg_expel_self(void);
/* Peak use since the last memcg_enter (0 if unknown). */
uint64_t memcg_peak(void);
/* Leave and remove the cgroup (idempotent). */
void memcg_teardown(void);
/* The same with async-signal-safe calls only (a second Ctrl-C). */
void memcg_teardown_from_signal(void);

#endif
