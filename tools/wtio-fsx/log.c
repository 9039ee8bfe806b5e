/* SPDX-License-Identifier: MIT */
/* log.c - a ring of the last FSX_LOG_LEN operations, for failure reports. */
#include <stdarg.h>
#include <stdio.h>

#include "fsx.h"

static struct {
	uint64_t opnum;
	char text[120];
} ring[FSX_LOG_LEN];
static uint64_t nr_logged;

void fsx_log(uint64_t opnum, const char *fmt, ...)
{
	unsigned i = (unsigned)(nr_logged % FSX_LOG_LEN);
	va_list ap;

	ring[i].opnum = opnum;
	va_start(ap, fmt);
	vsnprintf(ring[i].text, sizeof(ring[i].text), fmt, ap);
	va_end(ap);
	nr_logged++;
}

void fsx_log_dump(void)
{
	uint64_t first = nr_logged > FSX_LOG_LEN ? nr_logged - FSX_LOG_LEN : 0;
	uint64_t k;

	fprintf(stderr, "last %llu operations:\n",
		(unsigned long long)(nr_logged - first));
	for (k = first; k < nr_logged; k++) {
		unsigned i = (unsigned)(k % FSX_LOG_LEN);

		fprintf(stderr, "  %8llu %s\n", (unsigned long long)ring[i].opnum,
			ring[i].text);
	}
}
