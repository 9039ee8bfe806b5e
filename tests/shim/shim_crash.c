/* SPDX-License-Identifier: MIT */
/*
 * shim_crash - writes records to DATA and logs each acknowledged one to
 * LOG (outside the served paths, fsync'ed) until killed; "verify" mode
 * checks that every logged record is in DATA.
 *
 *   shim_crash write DATA LOG      (runs until SIGKILL)
 *   shim_crash verify DATA LOG
 *   shim_crash count DATA LOG      (tests/shim-death.sh: how many of the
 *                                   logged records DATA holds, and its size)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REC 1000	/* not a block multiple: partial blocks every time */

static void record(unsigned long i, unsigned char *b)
{
	unsigned long long x = i * 0x9E3779B97F4A7C15ULL + 1;

	for (int k = 0; k < REC; k++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		b[k] = (unsigned char)x;
	}
	memcpy(b, &i, sizeof(i));
}

int main(int argc, char **argv)
{
	unsigned char b[REC], g[REC];
	unsigned long i, n = 0;
	char line[64];

	if (argc != 4)
		return 2;
	if (!strcmp(argv[1], "write")) {
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int log = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);

		if (fd < 0 || log < 0)
			return 1;
		for (i = 0;; i++) {
			int len;

			record(i, b);
			if (pwrite(fd, b, REC, (off_t)(i * REC)) != REC) {
				perror("FAIL shim_crash: pwrite");
				return 1;
			}
			len = snprintf(line, sizeof(line), "%lu\n", i);
			if (write(log, line, (size_t)len) != len || fdatasync(log))
				return 1;
		}
	}
	FILE *lf = fopen(argv[3], "r");
	int fd = open(argv[2], O_RDONLY);

	if (!lf || fd < 0) {
		perror("FAIL shim_crash: open");
		return 1;
	}
	if (!strcmp(argv[1], "count")) {
		unsigned long logged = 0, kept = 0, last = 0;
		off_t size = lseek(fd, 0, SEEK_END);

		while (fgets(line, sizeof(line), lf)) {
			i = strtoul(line, NULL, 10);
			record(i, b);
			logged++;
			last = i;
			if (pread(fd, g, REC, (off_t)(i * REC)) == REC &&
			    !memcmp(b, g, REC))
				kept++;
		}
		/* logged kept size end-of-the-last-logged-record */
		printf("%lu %lu %lld %llu\n", logged, kept, (long long)size,
		       logged ? (unsigned long long)(last + 1) * REC : 0ULL);
		return 0;
	}
	while (fgets(line, sizeof(line), lf)) {
		i = strtoul(line, NULL, 10);
		record(i, b);
		if (pread(fd, g, REC, (off_t)(i * REC)) != REC ||
		    memcmp(b, g, REC)) {
			fprintf(stderr, "FAIL shim_crash: record %lu logged but not on disk\n", i);
			return 1;
		}
		n++;
	}
	printf("shim_crash: %lu acknowledged records all on disk\n", n);
	return n ? 0 : 1;
}
