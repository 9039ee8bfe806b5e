/* SPDX-License-Identifier: MIT */
/* progress.c - "\r[label] 3.0s/5.0s  ETA 1m02s  123.4 MiB/s" on stderr. */
#include <stdio.h>
#include <unistd.h>

#include "progress.h"

bool progress_wanted(int mode)
{
	if (mode >= 0)
		return mode > 0;
	return isatty(STDERR_FILENO);
}

void progress_show(const char *label, double elapsed, double total,
		   double rest_s, double mib_s)
{
	double left = (total > elapsed ? total - elapsed : 0) + rest_s;
	int eta = (int)(left + 0.5);
	char rate[32];

	if (mib_s < 0)
		snprintf(rate, sizeof(rate), "ramp");
	else
		snprintf(rate, sizeof(rate), "%.1f MiB/s", mib_s);
	if (total > 0)
		fprintf(stderr, "\r\033[K[%s] %.1fs/%.0fs  ETA %dm%02ds  %s",
			label, elapsed, total, eta / 60, eta % 60, rate);
	else
		fprintf(stderr, "\r\033[K[%s] %.1fs  %s", label, elapsed, rate);
	fflush(stderr);
}

void progress_clear(void)
{
	fprintf(stderr, "\r\033[K");
	fflush(stderr);
}
