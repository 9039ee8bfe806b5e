/* SPDX-License-Identifier: MIT */
/* perfrec.h - --perf: perf record -g of this process around one trial. */
#ifndef WTIO_BENCH_PERFREC_H
#define WTIO_BENCH_PERFREC_H

#include <sys/types.h>

/*
 * Start perf record -g -p <this process> -o out. Returns its pid, or -1
 * where perf is missing (the command is printed once instead).
 */
pid_t perfrec_start(const char *out);
/* Stop it (SIGINT, as perf expects) and wait for it to write its file. */
void perfrec_stop(pid_t pid);

#endif
