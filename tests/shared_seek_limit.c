/* SPDX-License-Identifier: MIT */
/*
 * shared_seek_limit.c - lseek at and past the filesystem's largest file
 * size (s_maxbytes: ext4 16 TiB - 4 KiB, XFS and tmpfs the largest
 * off_t) and past the largest off_t, printed one line per call (result,
 * errno, then the position SEEK_CUR reports) for tests/shim-shared-seek-
 * limit.sh to compare: run bare, under the per-process shim and under
 * --shared on the same file system, every line must be the same.
 *
 *   shared_seek_limit DIR
 *
 * DIR/a is written first (a served file with I/O behind it), DIR/b is
 * only opened (the shared page's local seeks before the first I/O). What
 * the limit is, the bare run's lines say: nothing here assumes one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void seek(int fd, const char *what, off_t off, int whence)
{
	off_t r, cur;
	int e;

	errno = 0;
	r = lseek(fd, off, whence);
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
		lseek(fd, 5, SEEK_SET);
		seek(fd, what, big[i] - 5, SEEK_CUR);
		seek(fd, what, big[i] - 4, SEEK_CUR);
		snprintf(what, sizeof(what), "%s END", name);
		seek(fd, what, big[i] - size, SEEK_END);
		seek(fd, what, add(big[i] - size, 1), SEEK_END);
		seek(fd, what, big[i], SEEK_END);
	}
	/* from a position near the limit: SEEK_CUR by 0, +1, and past off_t */
	snprintf(what, sizeof(what), "%s near, CUR", name);
	lseek(fd, (16ll << 40) - 4096, SEEK_SET);
	seek(fd, what, 0, SEEK_CUR);
	seek(fd, what, 1, SEEK_CUR);
	seek(fd, what, INT64_MAX, SEEK_CUR);
	seek(fd, what, -1, SEEK_CUR);
	lseek(fd, 1ll << 62, SEEK_SET);
	seek(fd, what, INT64_MAX, SEEK_CUR);
	seek(fd, what, 0, SEEK_CUR);
	snprintf(what, sizeof(what), "%s END", name);
	seek(fd, what, INT64_MAX, SEEK_END);
	seek(fd, what, -size - 1, SEEK_END);
	snprintf(what, sizeof(what), "%s SET", name);
	seek(fd, what, -1, SEEK_SET);
	seek(fd, what, 3, SEEK_SET);
}

int main(int argc, char **argv)
{
	char a[4096], b[4096];
	char buf[10];
	int fa, fb;

	if (argc != 2) {
		fprintf(stderr, "usage: shared_seek_limit DIR\n");
		return 2;
	}
	snprintf(a, sizeof(a), "%s/a", argv[1]);
	snprintf(b, sizeof(b), "%s/b", argv[1]);
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
	if (fsync(fa) || close(fa) || close(fb)) {
		perror("fsync/close");
		return 1;
	}
	printf("done\n");
	return 0;
}
