/* SPDX-License-Identifier: MIT */
/*
 * shim_raw - the ways around the shim's libc interposers, each issued on a
 * served file and checked for coherent data and size: raw syscall() numbers
 * (read/write family, lseek, stat, truncate, fallocate, copy_file_range,
 * sendfile, splice, fsync family, open family, dup family, close, mmap,
 * ioctl, exit_group), libaio's io_submit, POSIX AIO, open_by_handle_at,
 * the reflink ioctls (FICLONE, FICLONERANGE, FIDEDUPERANGE), FIONREAD,
 * FIEMAP, the XFS space ioctls, an unknown ioctl, and io_uring (a ring set
 * up with raw syscall() and one with liburing).
 *
 * "Kernel view" reads use the system call instruction itself (kpread),
 * which no preload can see: what another process would read.
 *
 *   shim_raw DIR CASE...     (cases: see main; "all" = all but the rings,
 *                             which pass every file through for good)
 * Exit: 0 all passed, 1 a failure, 77 a case could not run here (reason
 * printed), 2 usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef SHIM_RAW_LIBURING
#include <liburing.h>
#endif

static const char *dir;
static int failed, skipped;
static const char *cur;

#define FAILF(...) do { printf("FAIL %s: ", cur); printf(__VA_ARGS__); \
			printf("\n"); failed = 1; return; } while (0)
#define CHECK(c, ...) do { if (!(c)) FAILF(__VA_ARGS__); } while (0)
#define SKIPF(...) do { printf("skipped part %s: ", cur); \
			printf(__VA_ARGS__); printf("\n"); skipped = 1; \
			return; } while (0)

/* ---- the kernel's view, past any interposer ---- */
#if defined(__x86_64__)
static long ksys(long n, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long ret;

	__asm__ volatile("syscall" : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}
#define HAVE_KSYS 1
#elif defined(__aarch64__)
static long ksys(long n, long a, long b, long c, long d)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;

	__asm__ volatile("svc 0" : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
	return x0;
}
#define HAVE_KSYS 1
#else
#define HAVE_KSYS 0
static long ksys(long n, long a, long b, long c, long d)
{
	(void)n; (void)a; (void)b; (void)c; (void)d;
	return -ENOSYS;
}
#endif

/* pread through the kernel on a descriptor (ours: the program's fd is a
 * real one, and the kernel's page cache is what others see). */
static long kpread(int fd, void *buf, size_t n, off_t off)
{
	return ksys(SYS_pread64, fd, (long)buf, (long)n, off);
}

/* The file's bytes and size as the kernel has them, on a fresh fd. */
static long kread_path(const char *path, void *buf, size_t n)
{
	long fd = ksys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY, 0), r;

	if (fd < 0)
		return fd;
	r = kpread((int)fd, buf, n, 0);
	ksys(SYS_close, fd, 0, 0, 0);
	return r;
}

/* ---- helpers ---- */
#define BS 4096
#define FSZ (3 * BS + 100)
/* aligned, and kpread always asks for whole blocks at 0: the program's
 * descriptor of a served file may carry the shim's O_DIRECT */
static unsigned char pa[8 * BS], pb[8 * BS], got[8 * BS]
	__attribute__((aligned(BS)));

static void fill(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 9));
}

static char pathbuf[4096];
static const char *fpath(const char *name)
{
	snprintf(pathbuf, sizeof(pathbuf), "%s/%s", dir, name);
	return pathbuf;
}

/* A served file holding pa[0..FSZ), written through libc (in write-back
 * mode only in the shim's cache), and read once so it is cached. */
static int mkfile(const char *name, unsigned seed)
{
	int fd = open(fpath(name), O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -1;
	fill(pa, sizeof(pa), seed);
	if (pwrite(fd, pa, FSZ, 0) != FSZ || pread(fd, got, FSZ, 0) != FSZ) {
		close(fd);
		return -1;
	}
	return fd;
}

static off_t libc_size(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? -1 : st.st_size;
}

/* got[0..n) == want[0..n) through libc (served) pread */
static int libc_equals(int fd, const unsigned char *want, size_t n, off_t off)
{
	memset(got, 0xee, n);
	return pread(fd, got, n, off) == (ssize_t)n && !memcmp(got, want, n);
}

/* ---- raw read family ----
 * (a variadic int is not sign-extended to long: -1 is passed as (long)-1,
 * as a program must with glibc's syscall() too) */
static void c_readers(void)
{
	struct iovec v[2];
	int fd;
	long r;

	cur = "raw-read";
	for (int k = 0; k < 6; k++) {
		fd = mkfile("r", (unsigned)k + 1);
		CHECK(fd >= 0, "mkfile: %s", strerror(errno));
		memset(got, 0, sizeof(got));
		v[0] = (struct iovec){ got, 1000 };
		v[1] = (struct iovec){ got + 1000, FSZ + 50 - 1000 };
		switch (k) {
		case 0:
			lseek(fd, 0, SEEK_SET);
			r = syscall(SYS_read, fd, got, FSZ + 50);
			break;
		case 1:
			r = syscall(SYS_pread64, fd, got, FSZ + 50, 0);
			break;
		case 2:
			lseek(fd, 0, SEEK_SET);
			r = syscall(SYS_readv, fd, v, 2);
			break;
		case 3:
			r = syscall(SYS_preadv, fd, v, 2, 0, 0);
			break;
		case 4:
			r = syscall(SYS_preadv2, fd, v, 2, 0, 0, 0);
			break;
		default:
			lseek(fd, 0, SEEK_SET);
			r = syscall(SYS_preadv2, fd, v, 2, (long)-1, 0, 0);
			break;
		}
		CHECK(r == FSZ, "reader %d returned %ld (%s), want %d", k, r,
		      strerror(errno), FSZ);
		CHECK(!memcmp(got, pa, FSZ), "reader %d: data differs", k);
		if (k == 0 || k == 2 || k == 5)
			CHECK(lseek(fd, 0, SEEK_CUR) == FSZ,
			      "reader %d: position %lld after, want %d", k,
			      (long long)lseek(fd, 0, SEEK_CUR), FSZ);
		close(fd);
	}
	printf("ok: %s\n", cur);
}

/* ---- raw write family ---- */
static void c_writers(void)
{
	struct iovec v[2];
	int fd;
	long r;

	cur = "raw-write";
	for (int k = 0; k < 6; k++) {
		fd = mkfile("w", (unsigned)k + 10);
		CHECK(fd >= 0, "mkfile: %s", strerror(errno));
		fill(pb, sizeof(pb), (unsigned)k + 50);
		/* 1000..FSZ+1000: overwrites cached blocks and extends */
		v[0] = (struct iovec){ pb, 700 };
		v[1] = (struct iovec){ pb + 700, FSZ - 700 };
		switch (k) {
		case 0:
			lseek(fd, 1000, SEEK_SET);
			r = syscall(SYS_write, fd, pb, FSZ);
			break;
		case 1:
			r = syscall(SYS_pwrite64, fd, pb, FSZ, 1000);
			break;
		case 2:
			lseek(fd, 1000, SEEK_SET);
			r = syscall(SYS_writev, fd, v, 2);
			break;
		case 3:
			r = syscall(SYS_pwritev, fd, v, 2, 1000, 0);
			break;
		case 4:
			r = syscall(SYS_pwritev2, fd, v, 2, 1000, 0, 0);
			break;
		default:
			lseek(fd, 1000, SEEK_SET);
			r = syscall(SYS_pwritev2, fd, v, 2, (long)-1, 0, RWF_DSYNC);
			break;
		}
		CHECK(r == FSZ, "writer %d returned %ld (%s)", k, r,
		      strerror(errno));
		memcpy(pa + 1000, pb, FSZ);
		CHECK(libc_size(fd) == FSZ + 1000, "writer %d: size %lld, want %d",
		      k, (long long)libc_size(fd), FSZ + 1000);
		CHECK(libc_equals(fd, pa, FSZ + 1000, 0),
		      "writer %d: libc pread does not see the raw write", k);
		if (k == 0 || k == 2 || k == 5)
			CHECK(lseek(fd, 0, SEEK_CUR) == FSZ + 1000,
			      "writer %d: position after", k);
		close(fd);
		/* and after close, the kernel has it all */
		memset(got, 0, sizeof(got));
		CHECK(kread_path(fpath("w"), got, sizeof(got)) == FSZ + 1000 &&
		      !memcmp(got, pa, FSZ + 1000),
		      "writer %d: file after close differs", k);
	}
	printf("ok: %s\n", cur);
}

/* ---- sizes: lseek, stat family ---- */
static void c_sizes(void)
{
	struct stat st;
	struct statx stx;
	int fd = mkfile("s", 3);

	cur = "raw-size";
	CHECK(fd >= 0, "mkfile");
	CHECK(syscall(SYS_lseek, fd, 0, SEEK_END) == FSZ, "SYS_lseek END %ld",
	      syscall(SYS_lseek, fd, 0, SEEK_END));
#ifdef SYS_fstat
	CHECK(syscall(SYS_fstat, fd, &st) == 0 && st.st_size == FSZ,
	      "SYS_fstat size %lld", (long long)st.st_size);
#endif
#ifdef SYS_stat
	CHECK(syscall(SYS_stat, fpath("s"), &st) == 0 && st.st_size == FSZ,
	      "SYS_stat size %lld", (long long)st.st_size);
#endif
	CHECK(syscall(SYS_newfstatat, AT_FDCWD, fpath("s"), &st, 0) == 0 &&
	      st.st_size == FSZ, "SYS_newfstatat size %lld",
	      (long long)st.st_size);
	CHECK(syscall(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH) == 0 &&
	      st.st_size == FSZ, "SYS_newfstatat(fd, \"\") size %lld",
	      (long long)st.st_size);
	CHECK(syscall(SYS_statx, AT_FDCWD, fpath("s"), 0, STATX_SIZE, &stx) == 0 &&
	      stx.stx_size == FSZ, "SYS_statx size %llu",
	      (unsigned long long)stx.stx_size);
	CHECK(syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_SIZE, &stx) == 0 &&
	      stx.stx_size == FSZ, "SYS_statx(fd) size %llu",
	      (unsigned long long)stx.stx_size);
	close(fd);
	printf("ok: %s\n", cur);
}

/* ---- truncate, fallocate ---- */
static void c_truncate(void)
{
	int fd = mkfile("t", 4);

	cur = "raw-truncate";
	CHECK(fd >= 0, "mkfile");
	CHECK(syscall(SYS_ftruncate, fd, 5000) == 0, "SYS_ftruncate: %s",
	      strerror(errno));
	CHECK(libc_size(fd) == 5000, "size %lld after shrink",
	      (long long)libc_size(fd));
	CHECK(pread(fd, got, sizeof(got), 0) == 5000 && !memcmp(got, pa, 5000),
	      "data after shrink");
	CHECK(syscall(SYS_ftruncate, fd, 3 * BS) == 0, "SYS_ftruncate grow");
	memset(pa + 5000, 0, 3 * BS - 5000);
	CHECK(libc_equals(fd, pa, 3 * BS, 0), "data after grow (zeros)");
	CHECK(syscall(SYS_truncate, fpath("t"), 1000) == 0, "SYS_truncate: %s",
	      strerror(errno));
	CHECK(libc_size(fd) == 1000, "size %lld after SYS_truncate",
	      (long long)libc_size(fd));
	CHECK(pread(fd, got, sizeof(got), 0) == 1000 && !memcmp(got, pa, 1000),
	      "data after SYS_truncate");
	close(fd);
	CHECK(kread_path(fpath("t"), got, sizeof(got)) == 1000,
	      "kernel size after close");
	printf("ok: %s\n", cur);
}

static void c_fallocate(void)
{
	int fd = mkfile("f", 5);

	cur = "raw-fallocate";
	CHECK(fd >= 0, "mkfile");
	if (syscall(SYS_fallocate, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		    BS, BS) < 0) {
		if (errno == EOPNOTSUPP)
			SKIPF("punch hole: %s", strerror(errno));
		FAILF("SYS_fallocate punch: %s", strerror(errno));
	}
	memset(pa + BS, 0, BS);
	CHECK(libc_size(fd) == FSZ, "size after punch");
	CHECK(libc_equals(fd, pa, FSZ, 0), "data after punch");
	CHECK(syscall(SYS_fallocate, fd, 0, 0, 5 * BS) == 0,
	      "SYS_fallocate grow: %s", strerror(errno));
	CHECK(libc_size(fd) == 5 * BS, "size %lld after allocating past EOF",
	      (long long)libc_size(fd));
	memset(pa + FSZ, 0, 5 * BS - FSZ);
	CHECK(libc_equals(fd, pa, 5 * BS, 0), "data after grow");
	close(fd);
	printf("ok: %s\n", cur);
}

/* ---- data movers ---- */
static void c_movers(void)
{
	loff_t oi, oo;
	off_t so;
	int src, dst, p[2];
	long r;

	cur = "raw-copy";
	src = mkfile("cs", 6);
	memcpy(pb, pa, sizeof(pb));		/* pb: the source's bytes */
	dst = mkfile("cd", 7);			/* pa: the destination's */
	CHECK(src >= 0 && dst >= 0, "mkfile");
	oi = 0;
	oo = BS;
	r = syscall(SYS_copy_file_range, src, &oi, dst, &oo, 2 * BS, 0);
	CHECK(r == 2 * BS, "SYS_copy_file_range: %ld %s", r, strerror(errno));
	memcpy(pa + BS, pb, 2 * BS);
	CHECK(libc_size(dst) == FSZ, "size after copy");
	CHECK(libc_equals(dst, pa, FSZ, 0), "data after copy_file_range");
	/* at the descriptors' (served) positions */
	lseek(src, 100, SEEK_SET);
	lseek(dst, FSZ, SEEK_SET);
	r = syscall(SYS_copy_file_range, src, NULL, dst, NULL, 1000, 0);
	CHECK(r == 1000, "copy at positions: %ld %s", r, strerror(errno));
	memcpy(pa + FSZ, pb + 100, 1000);
	CHECK(lseek(src, 0, SEEK_CUR) == 1100 && lseek(dst, 0, SEEK_CUR) == FSZ + 1000,
	      "positions after copy: %lld %lld", (long long)lseek(src, 0, SEEK_CUR),
	      (long long)lseek(dst, 0, SEEK_CUR));
	CHECK(libc_equals(dst, pa, FSZ + 1000, 0), "data after positioned copy");

	so = 5;
	r = syscall(SYS_sendfile, dst, src, &so, 3000);
	CHECK(r == 3000 && so == 3005, "SYS_sendfile: %ld %s", r, strerror(errno));
	memcpy(pa + FSZ + 1000, pb + 5, 3000);
	CHECK(libc_equals(dst, pa, FSZ + 4000, 0), "data after sendfile");

	CHECK(pipe(p) == 0, "pipe");
	oi = 2 * BS;
	r = syscall(SYS_splice, src, &oi, p[1], NULL, 1500, 0);
	CHECK(r == 1500, "SYS_splice in: %ld %s", r, strerror(errno));
	oo = 10;
	r = syscall(SYS_splice, p[0], NULL, dst, &oo, 1500, 0);
	CHECK(r == 1500, "SYS_splice out: %ld %s", r, strerror(errno));
	memcpy(pa + 10, pb + 2 * BS, 1500);
	CHECK(libc_equals(dst, pa, FSZ + 4000, 0), "data after splice");
	close(p[0]);
	close(p[1]);
	close(src);
	close(dst);
	printf("ok: %s\n", cur);
}

/* ---- sync family: the kernel has the data after each ---- */
static void c_sync(void)
{
	cur = "raw-sync";
	for (int k = 0; k < 5; k++) {
		int fd = mkfile("y", (unsigned)k + 20);
		long r;

		CHECK(fd >= 0, "mkfile");
		switch (k) {
		case 0: r = syscall(SYS_fsync, fd); break;
		case 1: r = syscall(SYS_fdatasync, fd); break;
		case 2: r = syscall(SYS_sync_file_range, fd, 0, 0, 7); break;
		case 3: r = syscall(SYS_syncfs, fd); break;
		default: r = syscall(SYS_sync); break;
		}
		CHECK(r == 0, "sync %d: %s", k, strerror(errno));
		memset(got, 0, sizeof(got));
		r = kpread(fd, got, sizeof(got), 0);
		/* sync_file_range makes no promise on the size: the shim's
		 * last block may be whole on disk until fsync or close */
		CHECK((k == 2 ? r >= FSZ : r == FSZ) && !memcmp(got, pa, FSZ),
		      "sync %d: the kernel does not have the data (%ld bytes)",
		      k, r);
		close(fd);
	}
	printf("ok: %s\n", cur);
}

/* ---- open family: a second descriptor shares the cache ---- */
struct how { uint64_t flags, mode, resolve; };

static void c_open(void)
{
	struct how h = { .flags = O_RDWR };
	int fd = mkfile("o", 8), fd2;

	cur = "raw-open";
	CHECK(fd >= 0, "mkfile");
	for (int k = 0; k < 3; k++) {
		switch (k) {
		case 0:
			fd2 = (int)syscall(SYS_openat, AT_FDCWD, fpath("o"), O_RDWR, 0);
			break;
#ifdef SYS_open
		case 1:
			fd2 = (int)syscall(SYS_open, fpath("o"), O_RDWR, 0);
			break;
#endif
		default:
			fd2 = (int)syscall(SYS_openat2, AT_FDCWD, fpath("o"), &h,
					   sizeof(h));
			if (fd2 < 0 && errno == ENOSYS)
				SKIPF("openat2: %s", strerror(errno));
			break;
		}
		CHECK(fd2 >= 0, "open %d: %s", k, strerror(errno));
		CHECK(libc_equals(fd2, pa, FSZ, 0), "open %d: stale data", k);
		fill(pb, 100, (unsigned)k + 60);
		CHECK(pwrite(fd2, pb, 100, 50) == 100, "write on the second fd");
		memcpy(pa + 50, pb, 100);
		CHECK(libc_equals(fd, pa, FSZ, 0),
		      "open %d: the first fd does not see the second's write", k);
		close(fd2);
	}
	/* O_TRUNC through the raw call empties the cache too */
	fd2 = (int)syscall(SYS_openat, AT_FDCWD, fpath("o"), O_RDWR | O_TRUNC, 0);
	CHECK(fd2 >= 0, "open O_TRUNC");
	CHECK(libc_size(fd) == 0, "size %lld after a raw O_TRUNC open",
	      (long long)libc_size(fd));
	close(fd2);
	close(fd);
	CHECK(kread_path(fpath("o"), got, sizeof(got)) == 0,
	      "data came back after a raw O_TRUNC");
	printf("ok: %s\n", cur);
}

static void c_handle(void)
{
	struct { struct file_handle h; unsigned char b[128]; } fh;
	int fd = mkfile("h", 9), mfd, fd2, mnt;

	cur = "open-by-handle";
	CHECK(fd >= 0, "mkfile");
	fh.h.handle_bytes = 128;
	if (name_to_handle_at(AT_FDCWD, fpath("h"), &fh.h, &mnt, 0) < 0)
		SKIPF("name_to_handle_at: %s", strerror(errno));
	mfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(mfd >= 0, "open dir");
	for (int k = 0; k < 2; k++) {
		fd2 = k ? (int)syscall(SYS_open_by_handle_at, mfd, &fh.h, O_RDWR) :
			  open_by_handle_at(mfd, &fh.h, O_RDWR);
		if (fd2 < 0 && errno == EPERM)
			SKIPF("open_by_handle_at needs CAP_DAC_READ_SEARCH");
		CHECK(fd2 >= 0, "open_by_handle_at %d: %s", k, strerror(errno));
		CHECK(libc_equals(fd2, pa, FSZ, 0), "handle open %d: stale data", k);
		close(fd2);
	}
	close(mfd);
	close(fd);
	printf("ok: %s\n", cur);
}

/* ---- dup family and close ---- */
static void c_dup(void)
{
	int fd = mkfile("d", 11), fd2;

	cur = "raw-dup";
	CHECK(fd >= 0, "mkfile");
	for (int k = 0; k < 4; k++) {
		switch (k) {
		case 0: fd2 = (int)syscall(SYS_dup, fd); break;
		case 1: fd2 = (int)syscall(SYS_dup3, fd, 50, 0); break;
#ifdef SYS_dup2
		case 2: fd2 = (int)syscall(SYS_dup2, fd, 51); break;
#endif
		default: fd2 = (int)syscall(SYS_fcntl, fd, F_DUPFD, 60); break;
		}
		CHECK(fd2 >= 0, "dup %d: %s", k, strerror(errno));
		CHECK(libc_equals(fd2, pa, FSZ, 0), "dup %d: stale data", k);
		/* the position is shared */
		lseek(fd, 123, SEEK_SET);
		CHECK(lseek(fd2, 0, SEEK_CUR) == 123, "dup %d: position not shared", k);
		CHECK(syscall(SYS_close, fd2) == 0, "SYS_close: %s", strerror(errno));
	}
	/* the last close (raw) writes everything back */
	fill(pb, 500, 77);
	CHECK(pwrite(fd, pb, 500, FSZ) == 500, "pwrite");
	memcpy(pa + FSZ, pb, 500);
	CHECK(syscall(SYS_close, fd) == 0, "SYS_close last: %s", strerror(errno));
	memset(got, 0, sizeof(got));
	CHECK(kread_path(fpath("d"), got, sizeof(got)) == FSZ + 500 &&
	      !memcmp(got, pa, FSZ + 500), "file after a raw close");
	printf("ok: %s\n", cur);
}

/* ---- mmap ---- */
static sigjmp_buf bus_jmp;
static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

static void c_mmap(void)
{
	int fd = mkfile("m", 12);
	unsigned char *m;

	cur = "raw-mmap";
	CHECK(fd >= 0, "mkfile");
	m = (void *)syscall(SYS_mmap, NULL, FSZ, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED, "SYS_mmap: %s", strerror(errno));
	signal(SIGBUS, on_bus);
	if (sigsetjmp(bus_jmp, 1)) {
		signal(SIGBUS, SIG_DFL);
		FAILF("SIGBUS reading the mapping (the kernel's size is stale)");
	}
	CHECK(!memcmp(m, pa, FSZ), "the mapping does not show the data");
	signal(SIGBUS, SIG_DFL);
	munmap(m, FSZ);
	close(fd);
	printf("ok: %s\n", cur);
}

/* ---- libaio (raw io_setup/io_submit/io_getevents) ---- */
static void c_libaio(void)
{
	aio_context_t ctx = 0;
	struct iocb cb, *cbp = &cb;
	struct io_event ev;
	int fd = mkfile("a", 13);

	cur = "libaio";
	CHECK(fd >= 0, "mkfile");
	if (syscall(SYS_io_setup, 4, &ctx) < 0)
		SKIPF("io_setup: %s", strerror(errno));
	memset(&cb, 0, sizeof(cb));
	cb.aio_lio_opcode = IOCB_CMD_PREAD;
	cb.aio_fildes = (uint32_t)fd;
	cb.aio_buf = (uint64_t)(uintptr_t)got;
	cb.aio_nbytes = sizeof(got);
	memset(got, 0, sizeof(got));
	CHECK(syscall(SYS_io_submit, ctx, 1, &cbp) == 1, "io_submit: %s",
	      strerror(errno));
	CHECK(syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) == 1, "io_getevents");
	CHECK(ev.res == FSZ && !memcmp(got, pa, FSZ), "aio read: res %lld",
	      (long long)ev.res);
	fill(pb, 2000, 88);
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_buf = (uint64_t)(uintptr_t)pb;
	cb.aio_nbytes = 2000;
	cb.aio_offset = FSZ;
	CHECK(syscall(SYS_io_submit, ctx, 1, &cbp) == 1, "io_submit write");
	CHECK(syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) == 1 && ev.res == 2000,
	      "aio write");
	memcpy(pa + FSZ, pb, 2000);
	CHECK(libc_size(fd) == FSZ + 2000, "size after aio write");
	CHECK(libc_equals(fd, pa, FSZ + 2000, 0), "data after aio write");
	syscall(SYS_io_destroy, ctx);
	close(fd);
	printf("ok: %s\n", cur);
}

/* ---- POSIX AIO (glibc's threads use its internal pread/pwrite) ---- */
static void c_posix_aio(void)
{
	struct aiocb cb;
	const struct aiocb *l[1] = { &cb };
	int fd = mkfile("p", 14);

	cur = "posix-aio";
	CHECK(fd >= 0, "mkfile");
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = fd;
	cb.aio_buf = got;
	cb.aio_nbytes = sizeof(got);
	memset(got, 0, sizeof(got));
	CHECK(aio_read(&cb) == 0, "aio_read: %s", strerror(errno));
	while (aio_error(&cb) == EINPROGRESS)
		aio_suspend(l, 1, NULL);
	CHECK(aio_return(&cb) == FSZ && !memcmp(got, pa, FSZ), "aio_read data");
	fill(pb, 3000, 99);
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = fd;
	cb.aio_buf = pb;
	cb.aio_nbytes = 3000;
	cb.aio_offset = 100;
	CHECK(aio_write(&cb) == 0, "aio_write: %s", strerror(errno));
	while (aio_error(&cb) == EINPROGRESS)
		aio_suspend(l, 1, NULL);
	CHECK(aio_return(&cb) == 3000, "aio_write");
	memcpy(pa + 100, pb, 3000);
	CHECK(libc_equals(fd, pa, FSZ, 0), "data after aio_write");
	close(fd);
	printf("ok: %s\n", cur);
}

/* ---- ioctls ---- */
static void c_fionread(void)
{
	int fd = mkfile("n", 15), n = -1;

	cur = "ioctl-fionread";
	CHECK(fd >= 0, "mkfile");
	lseek(fd, 1000, SEEK_SET);
	CHECK(ioctl(fd, FIONREAD, &n) == 0 && n == FSZ - 1000,
	      "FIONREAD %d, want %d", n, FSZ - 1000);
	CHECK(syscall(SYS_ioctl, fd, FIONREAD, &n) == 0 && n == FSZ - 1000,
	      "SYS_ioctl FIONREAD %d", n);
	close(fd);
	printf("ok: %s\n", cur);
}

static void c_clone(void)
{
	struct file_clone_range cr;
	int src, dst;

	cur = "ioctl-clone";
	src = mkfile("ks", 16);
	memcpy(pb, pa, sizeof(pb));
	dst = mkfile("kd", 17);
	CHECK(src >= 0 && dst >= 0, "mkfile");
	if (ioctl(dst, FICLONE, src) < 0) {
		if (errno == EOPNOTSUPP || errno == EXDEV || errno == EINVAL)
			SKIPF("FICLONE: %s (not XFS with reflink?)", strerror(errno));
		FAILF("FICLONE: %s", strerror(errno));
	}
	CHECK(libc_size(dst) == FSZ, "size %lld after FICLONE",
	      (long long)libc_size(dst));
	CHECK(libc_equals(dst, pb, FSZ, 0), "data after FICLONE");
	/* a range, through the raw syscall(SYS_ioctl), into a cached dst */
	fill(pa, sizeof(pa), 18);
	CHECK(pwrite(dst, pa, FSZ, 0) == FSZ && libc_equals(dst, pa, FSZ, 0),
	      "rewrite dst");
	fill(pb, 3 * BS, 19);
	CHECK(pwrite(src, pb, 3 * BS, 0) == 3 * BS, "rewrite src");
	cr = (struct file_clone_range){ .src_fd = src, .src_offset = BS,
					.src_length = BS, .dest_offset = 2 * BS };
	CHECK(syscall(SYS_ioctl, dst, FICLONERANGE, &cr) == 0,
	      "FICLONERANGE: %s", strerror(errno));
	memcpy(pa + 2 * BS, pb + BS, BS);
	CHECK(libc_size(dst) == FSZ, "size after FICLONERANGE");
	CHECK(libc_equals(dst, pa, FSZ, 0), "data after FICLONERANGE");
	close(src);
	close(dst);
	CHECK(kread_path(fpath("kd"), got, sizeof(got)) == FSZ &&
	      !memcmp(got, pa, FSZ), "file after close");
	printf("ok: %s\n", cur);
}

static void c_dedupe(void)
{
	struct { struct file_dedupe_range r; struct file_dedupe_range_info i; } d;
	int src, dst;

	cur = "ioctl-dedupe";
	src = mkfile("es", 21);
	memcpy(pb, pa, sizeof(pb));
	dst = mkfile("ed", 22);
	CHECK(src >= 0 && dst >= 0, "mkfile");
	/* dst on disk differs; then (in the cache) the source's bytes */
	CHECK(fsync(dst) == 0, "fsync");
	CHECK(pwrite(dst, pb, 2 * BS, 0) == 2 * BS, "pwrite");
	memset(&d, 0, sizeof(d));
	d.r.src_offset = 0;
	d.r.src_length = 2 * BS;
	d.r.dest_count = 1;
	d.i.dest_fd = dst;
	d.i.dest_offset = 0;
	if (ioctl(src, FIDEDUPERANGE, &d) < 0) {
		if (errno == EOPNOTSUPP || errno == EXDEV)
			SKIPF("FIDEDUPERANGE: %s", strerror(errno));
		FAILF("FIDEDUPERANGE: %s", strerror(errno));
	}
	CHECK(d.i.status == FILE_DEDUPE_RANGE_SAME && d.i.bytes_deduped == 2 * BS,
	      "dedupe status %d, %llu bytes (the kernel compared stale data)",
	      d.i.status, (unsigned long long)d.i.bytes_deduped);
	memcpy(pa, pb, 2 * BS);
	CHECK(libc_equals(dst, pa, FSZ, 0), "data after dedupe");
	close(src);
	close(dst);
	printf("ok: %s\n", cur);
}

static void c_fiemap(void)
{
	struct { struct fiemap f; struct fiemap_extent e[16]; } m;
	uint64_t end = 0;
	int fd = mkfile("x", 23);

	cur = "ioctl-fiemap";
	CHECK(fd >= 0, "mkfile");
	memset(&m, 0, sizeof(m));
	m.f.fm_length = ~0ULL;
	m.f.fm_extent_count = 16;
	CHECK(ioctl(fd, FS_IOC_FIEMAP, &m) == 0, "FIEMAP: %s", strerror(errno));
	for (unsigned i = 0; i < m.f.fm_mapped_extents; i++)
		if (m.e[i].fe_logical + m.e[i].fe_length > end)
			end = m.e[i].fe_logical + m.e[i].fe_length;
	CHECK(end >= FSZ, "FIEMAP maps %llu bytes of %d: data not written back",
	      (unsigned long long)end, FSZ);
	close(fd);
	printf("ok: %s\n", cur);
}

/* xfs_flock64 (the FS_IOC_RESVSP family) */
struct xflock { int16_t t, w; int64_t start, len; int32_t sysid; uint32_t pid;
		int32_t pad[4]; };
#define X_UNRESVSP64	_IOW('X', 43, struct xflock)
#define X_ZERO_RANGE	_IOW('X', 57, struct xflock)
#define X_RESVSP64	_IOW('X', 42, struct xflock)

static void c_xfs_space(void)
{
	struct xflock fl;
	int fd = mkfile("z", 24);

	cur = "ioctl-xfs-space";
	CHECK(fd >= 0, "mkfile");
	memset(&fl, 0, sizeof(fl));
	fl.w = SEEK_SET;
	fl.start = BS;
	fl.len = BS;
	if (ioctl(fd, X_ZERO_RANGE, &fl) < 0) {
		if (errno == ENOTTY || errno == EOPNOTSUPP)
			SKIPF("XFS_IOC_ZERO_RANGE: %s (not XFS?)", strerror(errno));
		FAILF("XFS_IOC_ZERO_RANGE: %s", strerror(errno));
	}
	memset(pa + BS, 0, BS);
	CHECK(libc_equals(fd, pa, FSZ, 0), "data after ZERO_RANGE");
	/* SEEK_CUR: relative to the (served) position */
	lseek(fd, 2 * BS, SEEK_SET);
	fl.w = SEEK_CUR;
	fl.start = 0;
	fl.len = BS;
	CHECK(ioctl(fd, X_UNRESVSP64, &fl) == 0, "UNRESVSP64: %s", strerror(errno));
	memset(pa + 2 * BS, 0, BS);
	CHECK(libc_equals(fd, pa, FSZ, 0), "data after UNRESVSP64 (punch)");
	fl.w = SEEK_SET;
	fl.start = 0;
	fl.len = 8 * BS;
	CHECK(ioctl(fd, X_RESVSP64, &fl) == 0, "RESVSP64: %s", strerror(errno));
	CHECK(libc_size(fd) == FSZ, "size after RESVSP64");
	CHECK(libc_equals(fd, pa, FSZ, 0), "data after RESVSP64");
	close(fd);
	printf("ok: %s\n", cur);
}

static void c_unknown_ioctl(void)
{
	int fd = mkfile("u", 25), r;

	cur = "ioctl-unknown";
	CHECK(fd >= 0, "mkfile");
	r = ioctl(fd, _IOW('Z', 0x42, int), &r);
	CHECK(r < 0, "unknown ioctl succeeded?");
	/* the file passes through now: the kernel has everything */
	memset(got, 0, sizeof(got));
	CHECK(kpread(fd, got, sizeof(got), 0) == FSZ && !memcmp(got, pa, FSZ),
	      "the kernel does not have the data after an unknown ioctl");
	fill(pb, 100, 26);
	CHECK(pwrite(fd, pb, 100, 0) == 100, "pwrite");
	memcpy(pa, pb, 100);
	CHECK(kpread(fd, got, sizeof(got), 0) == FSZ && !memcmp(got, pa, FSZ),
	      "writes after the unknown ioctl do not reach the kernel");
	close(fd);
	printf("ok: %s\n", cur);
}

/* ---- exit_group through syscall(): the cache is written back ---- */
static void c_exit(void)
{
	pid_t pid;
	int st;

	cur = "raw-exit";
	fill(pa, sizeof(pa), 27);
	pid = fork();
	if (pid == 0) {
		int fd = open(fpath("q"), O_RDWR | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || pwrite(fd, pa, FSZ, 0) != FSZ)
			_exit(3);
		syscall(SYS_exit_group, 0);
		_exit(4);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "child");
	memset(got, 0, sizeof(got));
	CHECK(kread_path(fpath("q"), got, sizeof(got)) == FSZ &&
	      !memcmp(got, pa, FSZ), "data lost at a raw exit_group");
	printf("ok: %s\n", cur);
}

/* ---- glibc's public second names (libc.so.6 exports them) ---- */
extern ssize_t __read(int, void *, size_t);
extern ssize_t __write(int, const void *, size_t);
extern ssize_t __pread64(int, void *, size_t, off_t);
extern ssize_t __pwrite64(int, const void *, size_t, off_t);
extern off_t __lseek(int, off_t, int);
extern int __close(int);
extern int __open64(const char *, int, ...);

static void c_aliases(void)
{
	int fd = mkfile("l", 35), fd2;

	cur = "libc-aliases";
	CHECK(fd >= 0, "mkfile");
	memset(got, 0, sizeof(got));
	CHECK(__pread64(fd, got, sizeof(got), 0) == FSZ && !memcmp(got, pa, FSZ),
	      "__pread64: stale data");
	CHECK(__lseek(fd, 0, SEEK_END) == FSZ, "__lseek SEEK_END");
	fill(pb, 400, 36);
	CHECK(__write(fd, pb, 400) == 400, "__write");
	memcpy(pa + FSZ, pb, 400);
	CHECK(libc_size(fd) == FSZ + 400 && libc_equals(fd, pa, FSZ + 400, 0),
	      "data after __write");
	CHECK(__pwrite64(fd, pb, 100, 7) == 100, "__pwrite64");
	memcpy(pa + 7, pb, 100);
	CHECK(libc_equals(fd, pa, FSZ + 400, 0), "data after __pwrite64");
	fd2 = __open64(fpath("l"), O_RDWR);
	CHECK(fd2 >= 0, "__open64");
	memset(got, 0, sizeof(got));
	CHECK(__read(fd2, got, sizeof(got)) == FSZ + 400 &&
	      !memcmp(got, pa, FSZ + 400), "__read on an __open64 fd: stale data");
	CHECK(__close(fd2) == 0 && __close(fd) == 0, "__close");
	CHECK(kread_path(fpath("l"), got, sizeof(got)) == FSZ + 400 &&
	      !memcmp(got, pa, FSZ + 400), "file after __close");
	printf("ok: %s\n", cur);
}

/* ---- a raw fork: the child sees what the parent wrote ---- */
static void c_fork(void)
{
	int fd = mkfile("k", 28), st;
	long pid;

	cur = "raw-fork";
	CHECK(fd >= 0, "mkfile");
#ifdef SYS_fork
	pid = syscall(SYS_fork);
#else
	pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
	if (pid == 0) {
		/* the kernel's view, in the child */
		memset(got, 0, sizeof(got));
		_exit(kpread(fd, got, sizeof(got), 0) == FSZ &&
		      !memcmp(got, pa, FSZ) ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid((pid_t)pid, &st, 0) == pid, "fork: %s",
	      strerror(errno));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the child of a raw fork does not see the parent's data");
	/* the parent still serves the file, coherently */
	fill(pb, 300, 29);
	CHECK(pwrite(fd, pb, 300, 10) == 300, "pwrite");
	memcpy(pa + 10, pb, 300);
	CHECK(libc_equals(fd, pa, FSZ, 0), "the parent's data after the fork");
	close(fd);
	CHECK(kread_path(fpath("k"), got, sizeof(got)) == FSZ &&
	      !memcmp(got, pa, FSZ), "file after close");
	printf("ok: %s\n", cur);
}

/* ---- a raw clone3 with fork's semantics: a fork, the child's tables
 * reset (before, the child used the parent's cache and tables: its calls
 * on the inherited descriptor failed, ECHILD) ---- */
static void c_clone3(void)
{
#ifdef SYS_clone3
	uint64_t args[11] = { 0 };
	int fd = mkfile("c3", 33), st;
	long pid;

	cur = "raw-clone3";
	CHECK(fd >= 0, "mkfile");
	args[4] = SIGCHLD;		/* exit_signal */
	pid = syscall(SYS_clone3, args, sizeof(args));
	if (pid < 0 && errno == ENOSYS) {
		close(fd);
		printf("skipped part %s: no clone3 here\n", cur);
		skipped = 1;
		return;
	}
	if (pid == 0) {
		char b[300];

		/* through the shim, on the inherited descriptor */
		memset(b, 'c', sizeof(b));
		if (pwrite(fd, b, sizeof(b), 50) != (ssize_t)sizeof(b))
			_exit(2);
		memset(got, 0, sizeof(got));
		_exit(pread(fd, got, sizeof(got), 0) == FSZ &&
		      !memcmp(got, pa, 50) && got[50] == 'c' && got[349] == 'c' ?
		      0 : 1);
	}
	CHECK(pid > 0 && waitpid((pid_t)pid, &st, 0) == pid, "clone3: %s",
	      strerror(errno));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the child of a raw clone3 could not use its inherited descriptor (status %#x)",
	      st);
	memset(pa + 50, 'c', 300);
	CHECK(libc_equals(fd, pa, FSZ, 0), "the child's write, in the parent");
	fill(pb, 100, 34);
	CHECK(pwrite(fd, pb, 100, 1000) == 100, "pwrite");
	memcpy(pa + 1000, pb, 100);
	close(fd);
	CHECK(kread_path(fpath("c3"), got, sizeof(got)) == FSZ &&
	      !memcmp(got, pa, FSZ), "file after close");
	printf("ok: %s\n", cur);
#else
	cur = "raw-clone3";
	printf("skipped part %s: no SYS_clone3 in these headers\n", cur);
	skipped = 1;
#endif
}

/* ---- io_uring: a ring makes every file pass through ---- */
#ifdef SHIM_RAW_LIBURING
static void ring_read_write(struct io_uring *ring, int fd)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;

	memset(got, 0, sizeof(got));
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_read(sqe, fd, got, sizeof(got), 0);
	CHECK(io_uring_submit(ring) == 1, "io_uring_submit");
	CHECK(io_uring_wait_cqe(ring, &cqe) == 0, "wait");
	CHECK(cqe->res == FSZ && !memcmp(got, pa, FSZ),
	      "ring read: res %d: stale data", cqe->res);
	io_uring_cqe_seen(ring, cqe);
	fill(pb, 1000, 31);
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_write(sqe, fd, pb, 1000, FSZ);
	CHECK(io_uring_submit(ring) == 1, "submit write");
	CHECK(io_uring_wait_cqe(ring, &cqe) == 0, "wait write");
	CHECK(cqe->res == 1000, "ring write: res %d", cqe->res);
	io_uring_cqe_seen(ring, cqe);
	memcpy(pa + FSZ, pb, 1000);
	CHECK(libc_size(fd) == FSZ + 1000, "size after ring write: %lld",
	      (long long)libc_size(fd));
	CHECK(libc_equals(fd, pa, FSZ + 1000, 0), "data after ring write");
}

static void c_uring(bool raw)
{
	struct io_uring ring;
	struct io_uring_params p;
	int fd, rfd;

	cur = raw ? "io_uring-raw" : "io_uring-liburing";
	fd = mkfile("g", raw ? 32 : 33);
	CHECK(fd >= 0, "mkfile");
	memset(&p, 0, sizeof(p));
	if (raw) {
		rfd = (int)syscall(SYS_io_uring_setup, 8, &p);
		if (rfd < 0)
			SKIPF("io_uring_setup: %s", strerror(errno));
		CHECK(io_uring_queue_mmap(rfd, &p, &ring) == 0, "queue_mmap");
		/* as io_uring_queue_init does: SQ slot i is SQE i */
		for (unsigned i = 0; i < p.sq_entries; i++)
			ring.sq.array[i] = i;
	} else {
		int r = io_uring_queue_init(8, &ring, 0);

		if (r < 0)
			SKIPF("io_uring_queue_init: %s", strerror(-r));
	}
	ring_read_write(&ring, fd);
	if (failed)
		return;
	io_uring_queue_exit(&ring);
	/* opened after the ring: passed through as well */
	close(fd);
	fd = open(fpath("g"), O_RDWR);
	CHECK(fd >= 0, "reopen");
	fill(pb, 500, 34);
	CHECK(pwrite(fd, pb, 500, 0) == 500, "pwrite");
	memcpy(pa, pb, 500);
	CHECK(kpread(fd, got, sizeof(got), 0) == FSZ + 1000 &&
	      !memcmp(got, pa, FSZ + 1000), "a file opened after the ring is cached");
	close(fd);
	printf("ok: %s\n", cur);
}
#endif

int main(int argc, char **argv)
{
	static const struct { const char *name; void (*fn)(void); } cases[] = {
		{ "read", c_readers }, { "write", c_writers },
		{ "size", c_sizes }, { "truncate", c_truncate },
		{ "fallocate", c_fallocate }, { "copy", c_movers },
		{ "sync", c_sync }, { "open", c_open }, { "handle", c_handle },
		{ "dup", c_dup }, { "mmap", c_mmap }, { "libaio", c_libaio },
		{ "posix-aio", c_posix_aio }, { "exit", c_exit },
		{ "fork", c_fork }, { "clone3", c_clone3 },
		{ "aliases", c_aliases },
		{ "fionread", c_fionread }, { "fiemap", c_fiemap },
		{ "unknown-ioctl", c_unknown_ioctl },
		{ "clone", c_clone }, { "dedupe", c_dedupe },
		{ "xfs-space", c_xfs_space },
	};
	size_t nc = sizeof(cases) / sizeof(cases[0]);

	if (argc < 3) {
		fprintf(stderr, "usage: shim_raw DIR CASE... (all, uring-raw, uring-lib, or one of the cases)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!HAVE_KSYS) {
		printf("SKIP: no raw system call instruction for this architecture in the test\n");
		return 77;
	}
	dir = argv[1];
	for (int a = 2; a < argc; a++) {
		bool found = false;

		if (!strcmp(argv[a], "uring-raw") || !strcmp(argv[a], "uring-lib")) {
#ifdef SHIM_RAW_LIBURING
			c_uring(!strcmp(argv[a], "uring-raw"));
#else
			cur = argv[a];
			printf("skipped part %s: built without liburing\n", cur);
			skipped = 1;
#endif
			continue;
		}
		for (size_t i = 0; i < nc; i++)
			if (!strcmp(argv[a], "all") || !strcmp(argv[a], cases[i].name)) {
				cases[i].fn();
				found = true;
			}
		if (!found) {
			fprintf(stderr, "shim_raw: unknown case %s\n", argv[a]);
			return 2;
		}
	}
	if (failed)
		return 1;
	return skipped ? 77 : 0;
}
