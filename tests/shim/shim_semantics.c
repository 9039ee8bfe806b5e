/* SPDX-License-Identifier: MIT */
/*
 * shim_semantics - POSIX semantics the shim must keep, checked by an
 * unmodified program run under wtio-run: O_APPEND and F_SETFL, dup'd
 * positions, stat sizes, stdio, fork, exit without close, mmap,
 * fallocate, truncate, copy_file_range, SEEK_DATA/SEEK_HOLE,
 * pwritev2 flags, a second process on the same file, and O_TRUNC on a
 * file the open creates, one with data and one empty (whose mtime the
 * truncation moves).
 *
 *   shim_semantics DIR          (DIR is served)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RWF_DSYNC
#define RWF_DSYNC 0x02
#endif
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x80
#endif
#define RWF_WRITETHROUGH 0x200
#define RWF_NOSERIAL 0x400

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s (errno %s)\n", \
	__FILE__, __LINE__, #c, strerror(errno)); failures++; } } while (0)

static char path[4096];
static const char *P(const char *dir, const char *name)
{
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static off_t fsize(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? -1 : st.st_size;
}

static void t_append(const char *d)
{
	int fd = open(P(d, "append"), O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644);
	char b[16] = { 0 };

	CHECK(fd >= 0);
	CHECK(write(fd, "abc", 3) == 3);
	CHECK(pwrite(fd, "def", 3, 0) == 3);	/* appends, as on Linux */
	CHECK(fsize(fd) == 6);
	CHECK(pread(fd, b, 6, 0) == 6 && !memcmp(b, "abcdef", 6));
	CHECK(fcntl(fd, F_GETFL) & O_APPEND);
	/* the shim's lease sets FASYNC on the description: not the
	 * program's, and F_SETFL(F_GETFL | x) must not send it back */
	CHECK(!(fcntl(fd, F_GETFL) & O_ASYNC));
	CHECK(fcntl(fd, F_SETFL, 0) == 0);
	CHECK(!(fcntl(fd, F_GETFL) & O_APPEND));
	CHECK(lseek(fd, 1, SEEK_SET) == 1);
	CHECK(write(fd, "X", 1) == 1);
	CHECK(pread(fd, b, 6, 0) == 6 && !memcmp(b, "aXcdef", 6));
	CHECK(fcntl(fd, F_SETFL, O_APPEND) == 0);
	CHECK(write(fd, "Z", 1) == 1 && fsize(fd) == 7);
	close(fd);
}

static void t_dup(const char *d)
{
	int fd = open(P(d, "dup"), O_RDWR | O_CREAT | O_TRUNC, 0644), fd2, fd3;

	CHECK(fd >= 0);
	fd2 = dup(fd);
	fd3 = fcntl(fd, F_DUPFD_CLOEXEC, 100);
	CHECK(fd2 >= 0 && fd3 >= 100);
	CHECK(write(fd, "hello", 5) == 5);
	CHECK(lseek(fd2, 0, SEEK_CUR) == 5);
	CHECK(write(fd3, "world", 5) == 5);
	CHECK(lseek(fd, 0, SEEK_CUR) == 10);
	close(fd);	/* the others keep the description */
	CHECK(dup2(fd2, 50) == 50);
	CHECK(lseek(50, 0, SEEK_SET) == 0);
	{
		char b[10];

		CHECK(read(fd3, b, 10) == 10 && !memcmp(b, "helloworld", 10));
	}
	close(fd2);
	close(fd3);
	close(50);
}

static void t_stat(const char *d)
{
	int fd = open(P(d, "stat"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	struct stat st;
	struct statx sx;

	CHECK(fd >= 0);
	CHECK(pwrite(fd, "x", 1, 12345) == 1);
	CHECK(fsize(fd) == 12346);
	CHECK(stat(P(d, "stat"), &st) == 0 && st.st_size == 12346);
	CHECK(lstat(P(d, "stat"), &st) == 0 && st.st_size == 12346);
	CHECK(fstatat(AT_FDCWD, P(d, "stat"), &st, 0) == 0 && st.st_size == 12346);
	CHECK(statx(AT_FDCWD, P(d, "stat"), 0, STATX_SIZE, &sx) == 0 &&
	      sx.stx_size == 12346);
	CHECK(lseek(fd, 0, SEEK_DATA) == 0);
	CHECK(lseek(fd, 0, SEEK_HOLE) == 12346);
	CHECK(lseek(fd, 12346, SEEK_DATA) == -1 && errno == ENXIO);
	CHECK(ftruncate(fd, 100) == 0 && fsize(fd) == 100);
	CHECK(truncate(P(d, "stat"), 50) == 0 && fsize(fd) == 50);
	{
		char b[100];

		CHECK(pread(fd, b, 100, 0) == 50);
	}
	close(fd);
	/* not open for writing: the kernel says EINVAL, and nothing moves */
	fd = open(P(d, "stat"), O_RDONLY);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, 10) == -1 && errno == EINVAL && fsize(fd) == 50);
	close(fd);
}

static void t_stdio(const char *d)
{
	FILE *f = fopen(P(d, "stdio"), "w+");
	char b[64] = { 0 };
	struct stat st;

	CHECK(f != NULL);
	if (!f)
		return;
	CHECK(fileno(f) >= 0);
	CHECK(fprintf(f, "line one\nline two\n") == 18);
	CHECK(fflush(f) == 0);
	CHECK(fstat(fileno(f), &st) == 0 && st.st_size == 18);
	CHECK(ftell(f) == 18);
	CHECK(fseek(f, 5, SEEK_SET) == 0);
	CHECK(fread(b, 1, 3, f) == 3 && !memcmp(b, "one", 3));
	CHECK(fclose(f) == 0);
	f = fopen(P(d, "stdio"), "a");
	CHECK(f && fputs("three\n", f) >= 0 && fclose(f) == 0);
	f = fopen(P(d, "stdio"), "r");
	CHECK(f && fread(b, 1, sizeof(b), f) == 24 && !memcmp(b + 18, "three\n", 6));
	if (f)
		fclose(f);
}

static void t_fork_exit(const char *d)
{
	int fd = open(P(d, "fork"), O_RDWR | O_CREAT | O_TRUNC, 0644), st;
	char b[8];
	pid_t pid;

	CHECK(fd >= 0);
	CHECK(pwrite(fd, "parent", 6, 0) == 6);
	pid = fork();
	if (pid == 0) {
		/* the child sees the parent's write, inherited and new fds */
		int fd2 = open(P(d, "fork"), O_RDWR);
		int ok = pread(fd, b, 6, 0) == 6 && !memcmp(b, "parent", 6) &&
			 fd2 >= 0 && pread(fd2, b, 6, 0) == 6 &&
			 !memcmp(b, "parent", 6) &&
			 pwrite(fd2, "child", 5, 1 << 20) == 5;
		/* a new served file in the child, left for exit to write */
		int fd3 = open(P(d, "fork-child"), O_WRONLY | O_CREAT | O_TRUNC, 0644);

		ok = ok && fd3 >= 0 && write(fd3, "exit writes me", 14) == 14;
		_exit(ok ? 0 : 1);	/* _exit: no handlers, still written */
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0);
	/* the child wrote through the kernel; the parent's cache did not hold
	 * that block (see docs/SHIM.md on fork) */
	CHECK(pread(fd, b, 5, 1 << 20) == 5 && !memcmp(b, "child", 5));
	close(fd);
	fd = open(P(d, "fork-child"), O_RDONLY);
	CHECK(fd >= 0 && read(fd, b, 8) == 8 && !memcmp(b, "exit wri", 8));
	close(fd);
}

static void t_mmap(const char *d)
{
	int fd = open(P(d, "mmap"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	char b[8], *m;

	CHECK(fd >= 0);
	CHECK(pwrite(fd, "mapped!", 7, 4096) == 7);
	m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED);
	if (m == MAP_FAILED)
		return;
	CHECK(!memcmp(m + 4096, "mapped!", 7));
	memcpy(m, "via map", 7);
	CHECK(pread(fd, b, 7, 0) == 7 && !memcmp(b, "via map", 7));
	CHECK(pwrite(fd, "by call", 7, 100) == 7 && !memcmp(m + 100, "by call", 7));
	munmap(m, 8192);
	close(fd);
}

static void t_fallocate_copy(const char *d)
{
	int fd = open(P(d, "falloc"), O_RDWR | O_CREAT | O_TRUNC, 0644), out;
	static char b[65536], c[65536];
	off_t oin = 0, oout = 0;

	CHECK(fd >= 0);
	memset(b, 'a', sizeof(b));
	CHECK(pwrite(fd, b, sizeof(b), 0) == sizeof(b));
	CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 8192, 8192) == 0);
	CHECK(pread(fd, c, sizeof(c), 0) == sizeof(c));
	memset(b + 8192, 0, 8192);
	CHECK(!memcmp(b, c, sizeof(b)));
	CHECK(posix_fallocate(fd, 0, 1 << 20) == 0 && fsize(fd) == 1 << 20);
	CHECK(pwrite(fd, "tail", 4, (1 << 20) - 4) == 4);
	out = open(P(d, "copy"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(out >= 0);
	CHECK(write(out, "12345678", 8) == 8);	/* position 8 */
	CHECK(copy_file_range(fd, &oin, out, NULL, 65536, 0) == 65536);
	CHECK(lseek(out, 0, SEEK_CUR) == 8 + 65536);
	CHECK(pread(out, c, 65536, 8) == 65536 && !memcmp(b, c, 65536));
	(void)oout;
	close(out);
	close(fd);
}

static void t_rwf(const char *d)
{
	int fd = open(P(d, "rwf"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	int flags[] = { 0, RWF_DSYNC, RWF_WRITETHROUGH, RWF_NOSERIAL,
			RWF_DONTCACHE, RWF_WRITETHROUGH | RWF_DSYNC };
	char b[4096], c[4096];

	CHECK(fd >= 0);
	for (unsigned i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct iovec v = { b, sizeof(b) };

		memset(b, 'A' + (int)i, sizeof(b));
		CHECK(pwritev2(fd, &v, 1, (off_t)(i * 4096 + 7), flags[i]) == 4096);
		v.iov_base = c;
		CHECK(preadv2(fd, &v, 1, (off_t)(i * 4096 + 7), 0) == 4096 &&
		      !memcmp(b, c, 4096));
	}
	{
		struct iovec v = { (void *)"app", 3 };

		CHECK(pwritev2(fd, &v, 1, 0, RWF_APPEND) == 3);
		CHECK(fsize(fd) == 6 * 4096 + 7 + 3);
		CHECK(pwritev2(fd, &v, 1, -1, 0) == 3);	/* at the position: 0 */
		CHECK(lseek(fd, 0, SEEK_CUR) == 3);
	}
	close(fd);
}

/* A second process on the same file: it passes through; the first stops
 * caching when it next takes a record lock. */
static void t_trunc(const char *d)
{
	struct timeval old[2] = { { 946684800, 0 }, { 946684800, 0 } };
	struct stat st;
	int fd;

	unlink(P(d, "trunc"));
	fd = open(P(d, "trunc"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && fsize(fd) == 0);
	CHECK(write(fd, "abcdef", 6) == 6);
	close(fd);
	CHECK(stat(P(d, "trunc"), &st) == 0 && st.st_size == 6);
	fd = open(P(d, "trunc"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && fsize(fd) == 0);
	CHECK(write(fd, "xy", 2) == 2);
	close(fd);
	CHECK(stat(P(d, "trunc"), &st) == 0 && st.st_size == 2);
	CHECK(truncate(P(d, "trunc"), 0) == 0);
	CHECK(utimes(P(d, "trunc"), old) == 0);
	fd = open(P(d, "trunc"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	close(fd);
	CHECK(stat(P(d, "trunc"), &st) == 0 && st.st_size == 0 &&
	      st.st_mtime > 946684800);
	fd = open(P(d, "trunc"), O_RDWR | O_CREAT | O_EXCL | O_TRUNC, 0644);
	CHECK(fd < 0 && errno == EEXIST);
}

static void t_peer(const char *d, const char *self)
{
	int fd = open(P(d, "peer"), O_RDWR | O_CREAT | O_TRUNC, 0644), p[2], st;
	char b[8], file[4096];
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	pid_t pid;

	CHECK(fd >= 0 && pipe(p) == 0);
	snprintf(file, sizeof(file), "%s", P(d, "peer"));
	CHECK(pwrite(fd, "first", 5, 0) == 5);
	CHECK(fsync(fd) == 0);
	CHECK(pread(fd, b, 5, 4096) == 0);
	pid = fork();
	if (pid == 0) {
		char fdarg[16];

		snprintf(fdarg, sizeof(fdarg), "%d", p[1]);
		close(p[0]);
		execl(self, self, "--peer", file, fdarg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	CHECK(read(p[0], b, 1) == 1 && b[0] == 'k');	/* peer wrote */
	CHECK(fcntl(fd, F_SETLK, &fl) == 0);		/* whole file */
	CHECK(pread(fd, b, 5, 8192) == 5 && !memcmp(b, "peer!", 5));
	fl.l_type = F_UNLCK;
	CHECK(fcntl(fd, F_SETLK, &fl) == 0);
	close(p[0]);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fd);
}

static int peer(const char *file, int wfd)
{
	int fd = open(file, O_RDWR);
	char b[8];

	if (fd < 0 || pread(fd, b, 5, 0) != 5 || memcmp(b, "first", 5))
		return 1;
	if (pwrite(fd, "peer!", 5, 8192) != 5 || write(wfd, "k", 1) != 1)
		return 1;
	read(wfd, b, 1);	/* wait for the parent to close the pipe */
	sleep(1);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--peer"))
		return peer(argv[2], atoi(argv[3]));
	if (argc != 2) {
		fprintf(stderr, "usage: shim_semantics DIR\n");
		return 2;
	}
	t_append(argv[1]);
	t_dup(argv[1]);
	t_stat(argv[1]);
	t_stdio(argv[1]);
	t_fork_exit(argv[1]);
	t_mmap(argv[1]);
	t_fallocate_copy(argv[1]);
	t_rwf(argv[1]);
	t_trunc(argv[1]);
	t_peer(argv[1], argv[0]);
	if (failures) {
		fprintf(stderr, "shim_semantics: %d failures\n", failures);
		return 1;
	}
	printf("shim_semantics: all checks passed\n");
	return 0;
}
