/* SPDX-License-Identifier: MIT */
/*
 * report.c - checks against the shadow and the failure report: seed,
 * operation number, the last operations and a hex diff of the bad range.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsx.h"

uint64_t fsx_seed;

static void fsx_reproduce_line(void)
{
	if (fsx_nprocs > 1)
		fprintf(stderr, "reproduce with: -S %llu --procs=%d (the "
			"processes' interleaving differs from run to run)\n",
			(unsigned long long)fsx_seed, fsx_nprocs);
	else
		fprintf(stderr, "reproduce with: -S %llu\n",
			(unsigned long long)fsx_seed);
}

static void header(uint64_t opnum)
{
	fprintf(stderr, "\nwtio-fsx: FAILURE at operation %llu (seed %llu)",
		(unsigned long long)opnum, (unsigned long long)fsx_seed);
	if (fsx_nprocs > 1)
		fprintf(stderr, " in process %d of %d (pid %d)", fsx_proc_index,
			fsx_nprocs, (int)getpid());
	fprintf(stderr, "\n");
}

void fsx_fail(uint64_t opnum, const char *fmt, ...)
{
	va_list ap;

	header(opnum);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	fsx_log_dump();
	fsx_reproduce_line();
	exit(1);
}

static void hex_row(const char *tag, const uint8_t *p, size_t n,
		    const uint8_t *other)
{
	size_t i;

	fprintf(stderr, "  %s", tag);
	for (i = 0; i < n; i++)
		fprintf(stderr, p[i] != other[i] ? "[%02x]" : " %02x ", p[i]);
	fprintf(stderr, "\n");
}

void fsx_fail_diff(uint64_t opnum, const char *what, const uint8_t *got,
		   const uint8_t *want, size_t len, uint64_t off)
{
	size_t first = 0, last = 0, i, row, rows = 0, nbad = 0;

	header(opnum);
	for (i = 0; i < len; i++) {
		if (got[i] != want[i]) {
			if (!nbad)
				first = i;
			last = i;
			nbad++;
		}
	}
	fprintf(stderr, "%s: %zu bytes differ in [0x%llx, 0x%llx), first at 0x%llx, "
		"last at 0x%llx\n", what, nbad, (unsigned long long)off,
		(unsigned long long)(off + len), (unsigned long long)(off + first),
		(unsigned long long)(off + last));
	fprintf(stderr, "hex diff (got / want; [..] differs):\n");
	for (row = first & ~(size_t)15; row <= last && rows < 32; row += 16) {
		size_t n = len - row < 16 ? len - row : 16;

		if (!memcmp(got + row, want + row, n))
			continue;
		fprintf(stderr, " 0x%08llx\n", (unsigned long long)(off + row));
		hex_row("got ", got + row, n, want + row);
		hex_row("want", want + row, n, got + row);
		rows++;
	}
	if (rows == 32)
		fprintf(stderr, "  ... (more rows differ)\n");
	fsx_log_dump();
	fsx_reproduce_line();
	exit(1);
}

void fsx_check_bytes(uint64_t opnum, const char *what, const uint8_t *got,
		     const uint8_t *want, size_t len, uint64_t off)
{
	if (memcmp(got, want, len))
		fsx_fail_diff(opnum, what, got, want, len, off);
}

void fsx_check_disk(uint64_t opnum, const char *path,
		    const struct fsx_shadow *s, bool exact_size,
		    uint64_t off, uint64_t len)
{
	int fd = open(path, O_RDONLY | O_DIRECT);
	off_t dsize;
	size_t alloc, done = 0;
	void *buf;

	if (fd < 0)
		fsx_fail(opnum, "open(%s, O_DIRECT): %s", path, strerror(errno));
	dsize = lseek(fd, 0, SEEK_END);
	if (dsize < 0)
		fsx_fail(opnum, "lseek: %s", strerror(errno));
	if (exact_size && (uint64_t)dsize != s->size)
		fsx_fail(opnum, "backing file size %lld, want %llu",
			 (long long)dsize, (unsigned long long)s->size);
	if (!len) {
		off = 0;
		len = s->size;
	}
	/* Past the backing file's end it reads as zeros (a hole). */
	alloc = (size_t)dsize > off + len ? (size_t)dsize : off + len;
	alloc = (alloc + 4095) & ~(size_t)4095;
	if (posix_memalign(&buf, 4096, alloc ? alloc : 4096))
		fsx_fail(opnum, "out of memory");
	memset(buf, 0, alloc);
	while (done < (size_t)dsize) {
		ssize_t n = pread(fd, (char *)buf + done, alloc - done,
				  (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fsx_fail(opnum, "O_DIRECT pread: %s", strerror(errno));
		if (n == 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	memset((char *)buf + dsize, 0, alloc - (size_t)dsize);
	fsx_check_bytes(opnum, exact_size ?
			"backing file (O_DIRECT read) vs shadow after fsync/close" :
			"backing file range (O_DIRECT read) vs shadow",
			(uint8_t *)buf + off, s->data + off, len, off);
	free(buf);
}
