/* SPDX-License-Identifier: MIT */
/* bench_util.h - the clock and the prepared file of the read benchmarks
 * (wtio-microbench, wtio-abread). */
#ifndef WTIO_BENCH_UTIL_H
#define WTIO_BENCH_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Create path, size bytes of 0xa5 written and fsync'd (chunk: a 1 MiB
 * buffer); the descriptor, or -1 with the reason printed. */
static inline int bench_make_file(const char *path, uint64_t size, char *chunk)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (fd < 0) {
		perror(path);
		return -1;
	}
	memset(chunk, 0xa5, 1 << 20);
	for (uint64_t o = 0; o < size; o += 1 << 20)
		if (pwrite(fd, chunk, 1 << 20, (off_t)o) != 1 << 20) {
			perror("prepare");
			close(fd);
			return -1;
		}
	fsync(fd);
	return fd;
}

#endif
