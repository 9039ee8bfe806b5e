/* SPDX-License-Identifier: MIT */
/*
 * shim_fsx - a small fsx-style POSIX exerciser, run unmodified under
 * wtio-run: random pread/pwrite/read/write/lseek/ftruncate/fsync/
 * fdatasync/close+reopen on one file, every read checked against an
 * in-memory model. At the end it writes the model to MODEL so that the
 * file can be compared (cmp) after the process is gone.
 *
 * With FLAGS "r" it also issues, like xfstests' fsx, CLONE
 * (ioctl(FICLONERANGE)), DEDUPE (ioctl(FIDEDUPERANGE), half the time over
 * a range just written with the source's bytes, so that the kernel must
 * find them equal) and COPY (the raw syscall(__NR_copy_file_range)), all
 * within the file: the calls that change a file behind a cache. They need
 * XFS (or another filesystem) with reflink; without, exit 77.
 *
 *   shim_fsx FILE MODEL [OPS [SEED [MAXLEN [FLAGS]]]]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static unsigned long long rng;
static unsigned long rnd(void)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned long)(rng >> 33);
}

#define MAXSIZE (4u << 20)
static unsigned char *model, *buf, *got;
static size_t msize;

/* SHIM_FSX_LOG=1: one line per operation on stderr, to find the one
 * that went wrong */
static bool oplog;
#define LOG(...) do { if (oplog) fprintf(stderr, __VA_ARGS__); } while (0)

static void die(const char *what, long op)
{
	fprintf(stderr, "FAIL shim_fsx: op %ld: %s: %s\n", op, what, strerror(errno));
	exit(1);
}

static void check(const unsigned char *data, size_t off, size_t n, long op,
		  const char *what)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char want = off + i < msize ? model[off + i] : 0;

		if (data[i] != want) {
			fprintf(stderr, "FAIL shim_fsx: op %ld (%s): byte %zu: got %#x want %#x (size %zu)\n",
				op, what, off + i, data[i], want, msize);
			exit(1);
		}
	}
}

#define RBS 4096	/* clone/dedupe granularity (XFS block) */

static void skip_reflink(const char *what)
{
	printf("SKIP: shim_fsx: %s: %s (needs a filesystem with reflink)\n",
	       what, strerror(errno));
	exit(77);
}

/* Two non-overlapping block-aligned ranges: src inside the file, dst at
 * or before EOF (so that a clone may extend the file). 0: none fits. */
static int pick_ranges(size_t *src, size_t *dst, size_t *len, bool dst_inside)
{
	size_t blocks = msize / RBS;

	if (blocks < 2)
		return 0;
	*len = (1 + rnd() % 16) * RBS;
	if (*len > (blocks / 2) * RBS)
		*len = (blocks / 2) * RBS;
	*src = (rnd() % (blocks - *len / RBS + 1)) * RBS;
	*dst = (rnd() % (blocks + 1)) * RBS;
	if (dst_inside && *dst + *len > blocks * RBS)
		*dst = blocks * RBS - *len;
	if (*dst + *len > MAXSIZE)
		return 0;
	if (*src < *dst + *len && *dst < *src + *len)
		return 0;
	return 1;
}

static void op_clone(int fd, long op)
{
	struct file_clone_range cr;
	size_t src, dst, len;

	if (!pick_ranges(&src, &dst, &len, false))
		return;
	cr = (struct file_clone_range){ .src_fd = fd, .src_offset = src,
					.src_length = len, .dest_offset = dst };
	if (ioctl(fd, FICLONERANGE, &cr) < 0) {
		if (errno == EOPNOTSUPP || errno == EXDEV || errno == ENOTTY)
			skip_reflink("FICLONERANGE");
		fprintf(stderr, "FAIL shim_fsx: op %ld: FICLONERANGE %zu@%zu -> %zu (size %zu): %s\n",
			op, len, src, dst, msize, strerror(errno));
		exit(1);
	}
	LOG("%ld clone %zu@%zu -> %zu (size %zu)\n", op, len, src, dst, msize);
	memmove(model + dst, model + src, len);
	if (dst + len > msize)
		msize = dst + len;
}

static void op_dedupe(int fd, long op)
{
	struct {
		struct file_dedupe_range r;
		struct file_dedupe_range_info i;
	} d;
	size_t src, dst, len;
	bool same;

	if (!pick_ranges(&src, &dst, &len, true))
		return;
	if (rnd() % 2) {
		/* the source's bytes, just written (cached, maybe dirty) */
		if (pwrite(fd, model + src, len, (off_t)dst) != (ssize_t)len)
			die("pwrite before dedupe", op);
		memcpy(model + dst, model + src, len);
	}
	same = !memcmp(model + src, model + dst, len);
	LOG("%ld dedupe %zu@%zu -> %zu (size %zu, %s)\n", op, len, src, dst,
	    msize, same ? "same" : "differs");
	memset(&d, 0, sizeof(d));
	d.r.src_offset = src;
	d.r.src_length = len;
	d.r.dest_count = 1;
	d.i.dest_fd = fd;
	d.i.dest_offset = dst;
	if (ioctl(fd, FIDEDUPERANGE, &d) < 0) {
		if (errno == EOPNOTSUPP || errno == EXDEV || errno == ENOTTY)
			skip_reflink("FIDEDUPERANGE");
		fprintf(stderr, "FAIL shim_fsx: op %ld: FIDEDUPERANGE %zu@%zu -> %zu (size %zu): %s\n",
			op, len, src, dst, msize, strerror(errno));
		exit(1);
	}
	if (same ? (d.i.status != FILE_DEDUPE_RANGE_SAME ||
		    d.i.bytes_deduped != len) :
		   d.i.status != FILE_DEDUPE_RANGE_DIFFERS) {
		fprintf(stderr, "FAIL shim_fsx: op %ld: FIDEDUPERANGE %zu@%zu -> %zu: status %d, %llu bytes; the data %s\n",
			op, len, src, dst, d.i.status,
			(unsigned long long)d.i.bytes_deduped,
			same ? "is equal" : "differs");
		exit(1);
	}
}

static void op_copy(int fd, long op)
{
	loff_t in, out;
	size_t src, dst, len;
	long r;

	if (!msize)
		return;
	src = rnd() % msize;
	len = 1 + rnd() % 65536;
	if (src + len > msize)
		len = msize - src;
	dst = rnd() % (msize + 1);
	if (dst + len > MAXSIZE)
		return;
	if (src < dst + len && dst < src + len)
		return;
	in = (loff_t)src;
	out = (loff_t)dst;
	r = syscall(__NR_copy_file_range, fd, &in, fd, &out, len, 0);
	if (r != (long)len) {
		fprintf(stderr, "FAIL shim_fsx: op %ld: copy_file_range %zu@%zu -> %zu (size %zu) returned %ld: %s\n",
			op, len, src, dst, msize, r, strerror(errno));
		exit(1);
	}
	LOG("%ld copy %zu@%zu -> %zu (size %zu)\n", op, len, src, dst, msize);
	memmove(model + dst, model + src, len);
	if (dst + len > msize)
		msize = dst + len;
}

int main(int argc, char **argv)
{
	long ops = argc > 3 ? atol(argv[3]) : 20000, op;
	size_t maxlen = argc > 5 ? (size_t)atol(argv[5]) : 65536;
	bool reflink = argc > 6 && strchr(argv[6], 'r');

	oplog = getenv("SHIM_FSX_LOG") && *getenv("SHIM_FSX_LOG") == '1';
	struct stat st;
	FILE *mf;
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: shim_fsx FILE MODEL [OPS [SEED [MAXLEN [FLAGS]]]]\n");
		return 2;
	}
	rng = argc > 4 ? strtoull(argv[4], NULL, 0) : 1;
	model = calloc(MAXSIZE, 1);
	buf = malloc(MAXSIZE);
	got = malloc(MAXSIZE);
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open", -1);
	for (op = 0; op < ops; op++) {
		size_t off = rnd() % MAXSIZE, len = 1 + rnd() % maxlen;
		unsigned long kind = rnd() % (reflink ? 115 : 100);
		ssize_t r;

		if (off + len > MAXSIZE)
			len = MAXSIZE - off;
		if (kind >= 110) {
			op_copy(fd, op);
		} else if (kind >= 105) {
			op_dedupe(fd, op);
		} else if (kind >= 100) {
			op_clone(fd, op);
		} else if (kind < 35) {			/* pwrite */
			LOG("%ld pwrite %zu@%zu\n", op, len, off);
			for (size_t i = 0; i < len; i++)
				buf[i] = (unsigned char)rnd();
			if (pwrite(fd, buf, len, (off_t)off) != (ssize_t)len)
				die("pwrite", op);
			memcpy(model + off, buf, len);
			if (off + len > msize)
				msize = off + len;
		} else if (kind < 45) {			/* lseek + writev */
			LOG("%ld writev %zu@%zu\n", op, len, off);
			struct iovec v[2] = { { buf, len / 2 },
					      { buf + len / 2, len - len / 2 } };
			for (size_t i = 0; i < len; i++)
				buf[i] = (unsigned char)rnd();
			if (lseek(fd, (off_t)off, SEEK_SET) != (off_t)off)
				die("lseek", op);
			if (writev(fd, v, 2) != (ssize_t)len)
				die("writev", op);
			if (lseek(fd, 0, SEEK_CUR) != (off_t)(off + len))
				die("lseek cur after writev", op);
			memcpy(model + off, buf, len);
			if (off + len > msize)
				msize = off + len;
		} else if (kind < 75) {			/* pread */
			r = pread(fd, got, len, (off_t)off);
			if (r < 0)
				die("pread", op);
			if ((size_t)r != (off >= msize ? 0 : (off + len > msize ? msize - off : len))) {
				fprintf(stderr, "FAIL shim_fsx: op %ld: pread %zu@%zu returned %zd, size %zu\n",
					op, len, off, r, msize);
				return 1;
			}
			check(got, off, (size_t)r, op, "pread");
		} else if (kind < 82) {			/* lseek + read */
			if (lseek(fd, (off_t)off, SEEK_SET) != (off_t)off)
				die("lseek", op);
			r = read(fd, got, len);
			if (r < 0)
				die("read", op);
			check(got, off, (size_t)r, op, "read");
		} else if (kind < 88) {			/* ftruncate */
			size_t ns = rnd() % MAXSIZE;

			if (rnd() % 2)
				ns = msize ? rnd() % msize : 0;
			LOG("%ld ftruncate %zu (size %zu)\n", op, ns, msize);
			if (ftruncate(fd, (off_t)ns) < 0)
				die("ftruncate", op);
			if (ns < msize)
				memset(model + ns, 0, msize - ns);
			msize = ns;
		} else if (kind < 92) {			/* size checks */
			if (fstat(fd, &st) < 0)
				die("fstat", op);
			if ((size_t)st.st_size != msize) {
				fprintf(stderr, "FAIL shim_fsx: op %ld: fstat size %lld, want %zu\n",
					op, (long long)st.st_size, msize);
				return 1;
			}
			if (lseek(fd, 0, SEEK_END) != (off_t)msize)
				die("lseek end", op);
		} else if (kind < 95) {
			if ((rnd() % 2 ? fsync(fd) : fdatasync(fd)) < 0)
				die("fsync", op);
		} else {				/* close + reopen */
			LOG("%ld reopen\n", op);
			if (close(fd) < 0)
				die("close", op);
			fd = open(argv[1], O_RDWR);
			if (fd < 0)
				die("reopen", op);
		}
	}
	/* whole-file check, then the model for a check after exit */
	{
		ssize_t r = pread(fd, got, MAXSIZE, 0);

		if (r != (ssize_t)msize) {
			fprintf(stderr, "FAIL shim_fsx: final read %zd, want %zu\n", r, msize);
			return 1;
		}
		check(got, 0, msize, ops, "final");
	}
	mf = fopen(argv[2], "w");
	if (!mf || fwrite(model, 1, msize, mf) != msize || fclose(mf))
		die("model", ops);
	/* no close: exit must write everything back */
	printf("shim_fsx: %ld ops, final size %zu, ok\n", ops, msize);
	return 0;
}
