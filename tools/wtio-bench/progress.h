/* SPDX-License-Identifier: MIT */
/* progress.h - the live progress line on a terminal (stderr). */
#ifndef WTIO_BENCH_PROGRESS_H
#define WTIO_BENCH_PROGRESS_H

#include <stdbool.h>

/* Whether to show it: mode -1 = auto (stderr is a TTY), 0 off, 1 on. */
bool progress_wanted(int mode);
/* elapsed/total of this run, rest_s after it; mib_s < 0: ramping. */
void progress_show(const char *label, double elapsed, double total,
		   double rest_s, double mib_s);
void progress_clear(void);

#endif
