/* SPDX-License-Identifier: MIT */
/*
 * cleanup.h - every temporary file and directory wtio-bench makes is
 * registered here and removed at the end, also after Ctrl-C or an error.
 */
#ifndef WTIO_BENCH_CLEANUP_H
#define WTIO_BENCH_CLEANUP_H

#include <stdbool.h>

void cleanup_add_file(const char *path);
/* Remove one registered file now. */
void cleanup_remove_file(const char *path);
/* Remove a directory and the files f0..f(count-1) in it (RW_CREATE). */
void cleanup_remove_created(const char *dir, unsigned long long count);
/* Remove everything registered (idempotent); keep files if keep. */
void cleanup_all(bool keep);
/*
 * A function to call after the files are gone (the XFS loop and cgroup
 * teardowns); the last one added runs first.
 */
void cleanup_add_final(void (*fn)(void));

#endif
