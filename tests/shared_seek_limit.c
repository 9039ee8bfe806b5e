/* SPDX-License-Identifier: MIT */
/*
 * shared_seek_limit.c - lseek at and past the largest file size (the
 * filesystem's s_maxbytes: ext4 16 TiB - 4 KiB, XFS and tmpfs the
 * largest off_t; under wtio at most 2^62) and past the largest off_t,
 * then writes, ftruncate and fallocate at that limit, printed one line
 * per call (result, errno, then the position SEEK_CUR reports or the
 * size) for tests/shim-shared-seek-limit.sh to compare: run bare, under
 * the per-process shim and under --shared on the same file system, every
 * line must be the same.
 *
 *   shared_seek_limit DIR LIMIT [bare]
 *
 * DIR/a is written first (a served file with I/O behind it), DIR/b is
 * only opened (the shared page's local seeks before the first I/O), DIR/c
 * takes the writes at the limits: ext4's, 2^62 and LIMIT, wtio's limit
 * for the files (wtio_file_max_size). With "bare" (the run without a
 * shim) LIMIT is applied over the kernel's limit as the
 * kernel applies s_maxbytes (a position past it EINVAL and nothing moves,
 * a write at it EFBIG, one across it cut short, ftruncate or fallocate
 * past it EFBIG): the one rule a served file must follow. What the
 * kernel's limit is, the bare run's lines say: nothing assumes one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static off_t cap;	/* 0: none (the kernel's limit alone) */

/* lseek with cap applied over the kernel's limit */
static off_t cseek(int fd, off_t off, int whence)
{
	off_t old = lseek(fd, 0, SEEK_CUR), r = lseek(fd, off, whence);

	if (cap && r > cap && !(whence == SEEK_CUR && off == 0)) {
		lseek(fd, old, SEEK_SET);
		errno = EINVAL;
		return -1;
	}
	return r;
}

static void seek(int fd, const char *what, off_t off, int whence)
{
	off_t r, cur;
	int e;

	errno = 0;
	r = cseek(fd, off, whence);
	e = r < 0 ? errno : 0;
	cur = lseek(fd, 0, SEEK_CUR);
	printf("%s %lld: %lld errno %d (%s), now %lld\n", what, (long long)off,
	       (long long)r, e, e ? strerror(e) : "-", (long long)cur);
}

/* a + b wrapped as the kernel's arithmetic wraps (no overflow here) */
static off_t add(int64_t a, int64_t b)
{
	return (off_t)((uint64_t)a + (uint64_t)b);
}

/* every line of one descriptor of a file of size bytes */
static void cases(int fd, const char *name, off_t size)
{
	static const int64_t big[] = {
		1ll << 40, (16ll << 40) - 4096, (16ll << 40) - 4095,
		17ll << 40, 1ll << 48, 1ll << 62, INT64_MAX - 1, INT64_MAX,
	};
	char what[64];
	size_t i;

	for (i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		snprintf(what, sizeof(what), "%s SET", name);
		seek(fd, what, big[i], SEEK_SET);
		snprintf(what, sizeof(what), "%s SET 5, CUR", name);
		cseek(fd, 5, SEEK_SET);
		seek(fd, what, big[i] - 5, SEEK_CUR);
		seek(fd, what, big[i] - 4, SEEK_CUR);
		snprintf(what, sizeof(what), "%s END", name);
		seek(fd, what, big[i] - size, SEEK_END);
		seek(fd, what, add(big[i] - size, 1), SEEK_END);
		seek(fd, what, big[i], SEEK_END);
	}
	/* from a position near the limit: SEEK_CUR by 0, +1, and past off_t */
	snprintf(what, sizeof(what), "%s near, CUR", name);
	cseek(fd, (16ll << 40) - 4096, SEEK_SET);
	seek(fd, what, 0, SEEK_CUR);
	seek(fd, what, 1, SEEK_CUR);
	seek(fd, what, INT64_MAX, SEEK_CUR);
	seek(fd, what, -1, SEEK_CUR);
	cseek(fd, 1ll << 62, SEEK_SET);
	seek(fd, what, INT64_MAX, SEEK_CUR);
	seek(fd, what, 0, SEEK_CUR);
	snprintf(what, sizeof(what), "%s END", name);
	seek(fd, what, INT64_MAX, SEEK_END);
	seek(fd, what, -size - 1, SEEK_END);
	snprintf(what, sizeof(what), "%s SET", name);
	seek(fd, what, -1, SEEK_SET);
	seek(fd, what, 3, SEEK_SET);
}

/* pwrite, write (at the position), ftruncate, fallocate with cap applied
 * over the kernel's limit; pos < 0: pwrite at off */
static ssize_t cwrite(int fd, size_t len, off_t off, bool pos)
{
	if (pos)
		off = lseek(fd, 0, SEEK_CUR);
	if (cap && off >= cap) {
		errno = EFBIG;
		return -1;
	}
	if (cap && (off_t)len > cap - off)
		len = (size_t)(cap - off);
	return pos ? write(fd, "wxyz", len) : pwrite(fd, "wxyz", len, off);
}

static int ctrunc(int fd, off_t len)
{
	if (cap && len > cap) {
		errno = EFBIG;
		return -1;
	}
	return ftruncate(fd, len);
}

static int cfalloc(int fd, int mode, off_t off, off_t len)
{
	if (cap && off >= 0 && len > 0 && len > cap - off) {
		errno = EFBIG;
		return -1;
	}
	return fallocate(fd, mode, off, len);
}

/* posix_fallocate's error number, as cfalloc */
static int cpfalloc(int fd, off_t off, off_t len)
{
	if (cap && off >= 0 && len > 0 && len > cap - off)
		return EFBIG;
	return posix_fallocate(fd, off, len);
}

static void said(const char *what, long long off, long long r, int fd)
{
	struct stat st;
	int e = r < 0 ? errno : 0;

	st.st_size = -1;
	fstat(fd, &st);
	printf("%s %lld: %lld errno %d (%s), now %lld, size %lld\n", what, off,
	       r, e, e ? strerror(e) : "-", (long long)lseek(fd, 0, SEEK_CUR),
	       (long long)st.st_size);
}

/* the writes at and across limit lim, on an empty file */
static void writes(int fd, off_t lim)
{
	errno = 0;
	said("c pwrite 4 at", lim - 2, cwrite(fd, 4, lim - 2, false), fd);
	errno = 0;
	said("c pwrite 4 at", lim, cwrite(fd, 4, lim, false), fd);
	errno = 0;
	said("c SET", lim, cseek(fd, lim, SEEK_SET), fd);
	errno = 0;
	said("c write 4 at", lim, cwrite(fd, 4, 0, true), fd);
	errno = 0;
	said("c SET", lim + 1, cseek(fd, lim + 1, SEEK_SET), fd);
	errno = 0;
	said("c END", 1, cseek(fd, 1, SEEK_END), fd);
	errno = 0;
	said("c SET", lim - 3, cseek(fd, lim - 3, SEEK_SET), fd);
	errno = 0;
	said("c write 4 at", lim - 3, cwrite(fd, 4, 0, true), fd);
	errno = 0;
	said("c CUR", 2, cseek(fd, 2, SEEK_CUR), fd);
	errno = 0;
	said("c ftruncate", lim + 1, ctrunc(fd, lim + 1), fd);
	errno = 0;
	said("c ftruncate", lim, ctrunc(fd, lim), fd);
	errno = 0;
	said("c fallocate 8192 at", lim - 4096,
	     cfalloc(fd, 0, lim - 4096, 8192), fd);
	errno = 0;
	said("c fallocate keep 8192 at", lim - 4096,
	     cfalloc(fd, FALLOC_FL_KEEP_SIZE, lim - 4096, 8192), fd);
	errno = 0;
	said("c fallocate keep 4096 at", lim - 4096,
	     cfalloc(fd, FALLOC_FL_KEEP_SIZE, lim - 4096, 4096), fd);
	errno = cpfalloc(fd, lim - 4096, 8192);
	said("c posix_fallocate 8192 at", lim - 4096, errno ? -1 : 0, fd);
	errno = 0;
	said("c ftruncate", 0, ctrunc(fd, 0), fd);
}

int main(int argc, char **argv)
{
	char a[4096], b[4096], c[4096];
	char buf[10];
	int fa, fb, fc;

	off_t lim;

	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "bare"))) {
		fprintf(stderr, "usage: shared_seek_limit DIR LIMIT [bare]\n");
		return 2;
	}
	lim = (off_t)strtoll(argv[2], NULL, 0);
	if (lim <= 0) {
		fprintf(stderr, "shared_seek_limit: bad LIMIT %s\n", argv[2]);
		return 2;
	}
	cap = argc == 4 ? lim : 0;
	snprintf(a, sizeof(a), "%s/a", argv[1]);
	snprintf(b, sizeof(b), "%s/b", argv[1]);
	snprintf(c, sizeof(c), "%s/c", argv[1]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	fa = open(a, O_RDWR | O_CREAT | O_TRUNC, 0644);
	fb = open(b, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fa < 0 || fb < 0) {
		perror("open");
		return 1;
	}
	/* b first: no I/O on it before its seeks */
	cases(fb, "b", 0);
	if (write(fa, "0123456789", 10) != 10) {
		perror("write");
		return 1;
	}
	cases(fa, "a", 10);
	/* the data where it was written, the size unchanged by the seeks */
	if (pread(fa, buf, 10, 0) != 10 || memcmp(buf, "0123456789", 10)) {
		printf("a: the data read back is not what was written\n");
		return 1;
	}
	printf("a END: %lld, b END: %lld\n", (long long)lseek(fa, 0, SEEK_END),
	       (long long)lseek(fb, 0, SEEK_END));
	fc = open(c, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fc < 0) {
		perror("open c");
		return 1;
	}
	/* ext4's limit (16 TiB - 4 KiB), wtio's cap; past both on ext4 */
	writes(fc, (16ll << 40) - 4096);
	writes(fc, 1ll << 62);
	if (lim != (16ll << 40) - 4096 && lim != 1ll << 62)
		writes(fc, lim);
	if (fsync(fa) || close(fa) || close(fb) || close(fc)) {
		perror("fsync/close");
		return 1;
	}
	printf("done\n");
	return 0;
}
