/* SPDX-License-Identifier: MIT */
/*
 * shared_buf - a connection's buffer to the holder gives back what a
 * large call grew it by (REVIEW B10; tests/shim-shared-buffer.sh, under
 * `wtio-run --shared`). Large and small pwrite/pread/readv calls
 * alternate on one served file, every byte checked against a copy kept
 * here; once a large call is followed by 16 small ones (the shim keeps
 * the pages through a run of large calls) the memory of the buffer (a
 * memfd this process and the holder both map) must be back to about
 * 1 MiB: its
 * allocated blocks (fstat of the memfd through /proc/self/map_files,
 * where that can be opened) and this process's resident pages of it
 * (/proc/self/smaps). Sizes, not times.
 *
 *   shared_buf SERVED_DIR
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shared_check.h"

#define MIB (1024L * 1024)
/* HOLDER_BUF_MIN, and some slack for page rounding */
#define BUF_KEEP (MIB + 64 * 1024)
#define FILE_MAX (80 * MIB)
/* preload/remote.h's RC_TRIM_AFTER: small data calls after a large one
 * before its pages go back */
#define SMALL_CALLS 16

static const char *step = "?";

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL: shared_buf %s: ", step);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* The holder's buffers mapped here: how many, their resident bytes here
 * (*rss) and the bytes allocated to their memfds (*alloc, -1 if no
 * map_files entry could be opened). */
static int buf_mem(long *rss, long *alloc)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false;
	int n = 0;

	CHECK(f);
	*rss = 0;
	*alloc = -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		long kb;

		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '/')) {
			in = strstr(line, "wtio-holder-buf") != NULL;
			if (in) {
				char pp[96];
				struct stat st;
				int fd;

				n++;
				snprintf(pp, sizeof(pp),
					 "/proc/self/map_files/%lx-%lx", a, b);
				fd = open(pp, O_RDONLY);
				if (fd >= 0 && fstat(fd, &st) == 0)
					*alloc = (*alloc < 0 ? 0 : *alloc) +
						 (long)st.st_blocks * 512;
				if (fd >= 0)
					close(fd);
			}
			continue;
		}
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2) {
			in = false;
			continue;
		}
		if (in && sscanf(line, "Rss: %ld kB", &kb) == 1)
			*rss += kb * 1024;
	}
	fclose(f);
	return n;
}

static unsigned char *shadow;
static long file_len;

static unsigned char pat(long off, int gen)
{
	return (unsigned char)(off * 7 + gen * 13 + (off >> 12) + (off >> 20));
}

static void do_write(int fd, long off, long len, int gen)
{
	unsigned char *b = malloc((size_t)len + 1);
	long i;
	ssize_t r;

	CHECK(b);
	for (i = 0; i < len; i++)
		b[i] = pat(off + i, gen);
	r = pwrite(fd, b, (size_t)len, off);
	if (r != len)
		die("pwrite %ld at %ld: %zd (%s)", len, off, r, strerror(errno));
	memcpy(shadow + off, b, (size_t)len);
	if (off + len > file_len)
		file_len = off + len;
	free(b);
}

/* pread (or a readv in three pieces) of len at off, checked */
static void do_read(int fd, long off, long len, bool vec)
{
	unsigned char *b = malloc((size_t)len + 1);
	long want = off >= file_len ? 0 :
		    (off + len > file_len ? file_len - off : len), i;
	ssize_t r;

	CHECK(b);
	memset(b, 0xee, (size_t)len);
	if (vec) {
		long a = len / 3, c = len / 5;
		struct iovec iov[3] = {
			{ b, (size_t)a }, { b + a, (size_t)c },
			{ b + a + c, (size_t)(len - a - c) },
		};

		CHECK(lseek(fd, off, SEEK_SET) == off);
		r = readv(fd, iov, 3);
	} else {
		r = pread(fd, b, (size_t)len, off);
	}
	if (r != want)
		die("read %ld at %ld: %zd, want %ld (%s)", len, off, r, want,
		    strerror(errno));
	for (i = 0; i < want; i++)
		if (b[i] != shadow[off + i])
			die("read %ld at %ld: byte %ld is %#x, want %#x", len,
			    off, off + i, b[i], shadow[off + i]);
	free(b);
}

static long max_alloc = -1, max_rss;

static void check_mem(const char *after)
{
	long rss, alloc;
	int n = buf_mem(&rss, &alloc);

	if (n < 1)
		die("after %s: no buffer of the holder mapped (not under wtio-run --shared?)",
		    after);
	if (rss > BUF_KEEP * n)
		die("after %s: the buffer keeps %ld KiB resident here (%d mapped), want at most %ld KiB each",
		    after, rss / 1024, n, BUF_KEEP / 1024);
	if (alloc > BUF_KEEP * n)
		die("after %s: the buffer's memfd keeps %ld KiB allocated (%d mapped), want at most %ld KiB each",
		    after, alloc / 1024, n, BUF_KEEP / 1024);
	if (rss > max_rss)
		max_rss = rss;
	if (alloc > max_alloc)
		max_alloc = alloc;
}

int main(int argc, char **argv)
{
	static const struct { long off, len; bool vec; } calls[] = {
		{ 0, 4096, false },
		{ 0, 64 * MIB, false },		/* the largest buffer */
		{ 100, 100, false },
		{ 5 * MIB + 17, 3 * MIB + 5, true },
		{ 4095, 8193, false },
		{ 1 * MIB, 69 * MIB, false },	/* split: 64 MiB + 5 MiB */
		{ 70 * MIB - 3, 1 * MIB, true },	/* exactly the small size */
		{ 12345, 20 * MIB, true },
		{ 3 * MIB, 512, false },
	};
	char *path;
	long rss, alloc;
	int fd, gen, k;
	size_t i;

	if (argc != 2)
		die("usage: shared_buf SERVED_DIR");
	shadow = calloc(1, FILE_MAX);
	CHECK(shadow);
	path = P(argv[1], "buf");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	gen = 0;
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		char what[64];

		snprintf(what, sizeof(what), "call %zu (%ld bytes at %ld)", i,
			 calls[i].len, calls[i].off);
		step = what;
		do_write(fd, calls[i].off, calls[i].len, ++gen);
		do_read(fd, calls[i].off, calls[i].len, calls[i].vec);
		/* small calls: reads elsewhere, across the range's end, and
		 * writes; after SMALL_CALLS of them the buffer is small */
		for (k = 0; k < SMALL_CALLS; k += 4) {
			do_read(fd, calls[i].off / 2 + k * 4096, 4096, false);
			do_read(fd, calls[i].off + calls[i].len - 10, 300, false);
			do_write(fd, calls[i].off + k * 1000, 100, ++gen);
			do_read(fd, calls[i].off + k * 1000 + 50, 200, k & 4);
		}
		check_mem("small calls");
	}
	step = "the whole file";
	for (long off = 0; off < file_len; off += 7 * MIB)
		do_read(fd, off, 7 * MIB, false);
	CHECK(close(fd) == 0);
	/* and what the disk has, after the last close */
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	for (long off = 0; off < file_len; off += 16 * MIB)
		do_read(fd, off, 16 * MIB, false);
	close(fd);
	step = "the end";
	buf_mem(&rss, &alloc);
	printf("ok: %ld bytes in %zu large and small calls; the buffer afterwards at most %ld KiB resident here, %s%ld KiB allocated\n",
	       file_len, sizeof(calls) / sizeof(calls[0]), max_rss / 1024,
	       max_alloc < 0 ? "unknown (no map_files) " : "",
	       max_alloc < 0 ? 0 : max_alloc / 1024);
	return 0;
}
