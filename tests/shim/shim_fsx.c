/* SPDX-License-Identifier: MIT */
/*
 * shim_fsx - a small fsx-style POSIX exerciser, run unmodified under
 * wtio-run: random pread/pwrite/read/write/lseek/ftruncate/fsync/
 * fdatasync/close+reopen on one file, every read checked against an
 * in-memory model. At the end it writes the model to MODEL so that the
 * file can be compared (cmp) after the process is gone.
 *
 *   shim_fsx FILE MODEL [OPS [SEED [MAXLEN]]]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int main(int argc, char **argv)
{
	long ops = argc > 3 ? atol(argv[3]) : 20000, op;
	size_t maxlen = argc > 5 ? (size_t)atol(argv[5]) : 65536;
	struct stat st;
	FILE *mf;
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: shim_fsx FILE MODEL [OPS [SEED [MAXLEN]]]\n");
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
		unsigned long kind = rnd() % 100;
		ssize_t r;

		if (off + len > MAXSIZE)
			len = MAXSIZE - off;
		if (kind < 35) {			/* pwrite */
			for (size_t i = 0; i < len; i++)
				buf[i] = (unsigned char)rnd();
			if (pwrite(fd, buf, len, (off_t)off) != (ssize_t)len)
				die("pwrite", op);
			memcpy(model + off, buf, len);
			if (off + len > msize)
				msize = off + len;
		} else if (kind < 45) {			/* lseek + writev */
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
