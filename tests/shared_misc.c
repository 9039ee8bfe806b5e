/* SPDX-License-Identifier: MIT */
/*
 * shared_misc - descriptor calls between the processes of one program
 * under one cache (issue #14, `wtio-run --shared`; run by
 * tests/shim-shared-matrix.sh as its "misc" role): dup2, F_DUPFD and
 * close_range of served descriptors; another process's O_TRUNC open and
 * truncate() by path over dirty data; the passing through that mmap,
 * flock and copy_file_range ask for, seen by the other processes with
 * the data they wrote; POSIX record locks between processes; a child of
 * syscall(SYS_fork) and one of vfork + exec on the parent's served
 * descriptor; threads, each with its connection, on one file, and forks
 * while they are in calls.
 *
 *   shared_misc SERVED OUT
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shared_check.h"

static const char *served, *out, *step = "?";

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL: shared_misc %s (pid %d): ", step, (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}


static int openf(const char *name, int flags)
{
	int fd = open(P(served, name), flags, 0644);

	if (fd < 0)
		die("open %s: %s", name, strerror(errno));
	return fd;
}

static off_t fsize(int fd)
{
	struct stat st;

	CHECK(fstat(fd, &st) == 0);
	return st.st_size;
}

/* Run fn in a forked child; it must exit 0. */
static void in_child(void (*fn)(void *), void *arg)
{
	int st;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (!pid) {
		alarm(60);
		fn(arg);
		exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("the child failed (status 0x%x)", st);
}

static void expect_fill(int fd, off_t off, size_t len, char c, const char *what)
{
	static char b[65536];
	ssize_t n;

	CHECK(len <= sizeof(b));
	n = pread(fd, b, len, off);
	if (n != (ssize_t)len)
		die("%s: pread %zu at %lld returned %zd", what, len,
		    (long long)off, n);
	for (size_t i = 0; i < len; i++)
		if (b[i] != c)
			die("%s: byte %lld is 0x%02x, want '%c'", what,
			    (long long)(off + (off_t)i), (unsigned char)b[i], c);
}

static void put(int fd, off_t off, size_t len, char c)
{
	static char b[65536];

	CHECK(len <= sizeof(b));
	memset(b, c, len);
	CHECK(pwrite(fd, b, len, off) == (ssize_t)len);
}

/* dup2, F_DUPFD_CLOEXEC and close_range of a served descriptor */
static void t_dup(void)
{
	int fd = openf("dup", O_RDWR | O_CREAT | O_TRUNC), fd2, fd3;

	step = "dup";
	put(fd, 0, 4096, 'a');
	CHECK(dup2(fd, 50) == 50);
	fd2 = 50;
	CHECK(close(fd) == 0);
	expect_fill(fd2, 0, 4096, 'a', "after dup2 and close of the first");
	fd3 = fcntl(fd2, F_DUPFD_CLOEXEC, 60);
	CHECK(fd3 >= 60);
	CHECK(fcntl(fd3, F_GETFD) & FD_CLOEXEC);
	CHECK(lseek(fd2, 100, SEEK_SET) == 100);
	if (lseek(fd3, 0, SEEK_CUR) != 100)
		die("F_DUPFD's copy does not share the position");
	put(fd3, 4096, 100, 'b');
	CHECK(syscall(SYS_close_range, 50, 70, 0) == 0);
	CHECK(fcntl(fd2, F_GETFD) == -1 && errno == EBADF);
	fd = openf("dup", O_RDONLY);
	if (fsize(fd) != 4196)
		die("size %lld after close_range, want 4196",
		    (long long)fsize(fd));
	expect_fill(fd, 0, 4096, 'a', "reopened");
	expect_fill(fd, 4096, 100, 'b', "reopened");
	CHECK(close(fd) == 0);
}

static int g_fd;

static void child_trunc_open(void *a)
{
	int fd = openf("trunc", O_RDWR | O_TRUNC);

	put(fd, 0, 10, 'c');
}

static void child_truncate_path(void *a)
{
	if (truncate(P(served, "tpath"), 1000))
		die("truncate(path): %s", strerror(errno));
}

/* another process's O_TRUNC open, and truncate() by path, over dirty data */
static void t_trunc(void)
{
	int fd;

	step = "O_TRUNC open by another process";
	g_fd = fd = openf("trunc", O_RDWR | O_CREAT | O_TRUNC);
	put(fd, 0, 8192, 'b');
	in_child(child_trunc_open, NULL);
	if (fsize(fd) != 10)
		die("size %lld after the other process's O_TRUNC open and "
		    "10-byte write, want 10", (long long)fsize(fd));
	expect_fill(fd, 0, 10, 'c', "after the other's O_TRUNC");
	CHECK(close(fd) == 0);

	step = "truncate(path) by another process";
	fd = openf("tpath", O_RDWR | O_CREAT | O_TRUNC);
	put(fd, 0, 65536, 'd');
	in_child(child_truncate_path, NULL);
	if (fsize(fd) != 1000)
		die("size %lld after the other process's truncate(path, 1000)",
		    (long long)fsize(fd));
	expect_fill(fd, 0, 1000, 'd', "after truncate(path)");
	put(fd, 2000, 10, 'e');	/* a hole after the cut reads zeros */
	expect_fill(fd, 1000, 1000, 0, "the hole after the cut");
	CHECK(close(fd) == 0);
}

static void child_mmap(void *a)
{
	char *m = mmap(NULL, 8192, PROT_READ, MAP_SHARED, g_fd, 0);
	volatile char *v = m;
	int i;

	CHECK(m != MAP_FAILED);
	for (i = 0; i < 8192; i++)
		if (m[i] != 'f')
			die("the child's mapping byte %d is 0x%02x, want 'f' (the "
			    "parent's dirty data)", i, (unsigned char)m[i]);
	/* the parent writes 'g' at 0 through its descriptor: the mapping,
	 * the kernel's page cache, must see it */
	kill(getppid(), SIGUSR1);
	for (i = 0; i < 5000 && v[0] != 'g'; i++)
		usleep(1000);
	if (v[0] != 'g')
		die("the child's mapping does not see the parent's write after "
		    "the mmap");
}

static volatile sig_atomic_t got_usr1;
static void on_usr1(int s)
{
	got_usr1 = 1;
}

/* a child's mmap: the file goes to the kernel for every process, the
 * parent's data first */
static void t_mmap(void)
{
	pid_t pid;
	int st, i;

	step = "mmap in another process";
	signal(SIGUSR1, on_usr1);
	g_fd = openf("mmap", O_RDWR | O_CREAT | O_TRUNC);
	put(g_fd, 0, 8192, 'f');
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		alarm(60);
		child_mmap(NULL);
		exit(0);
	}
	for (i = 0; i < 10000 && !got_usr1; i++)
		usleep(1000);
	CHECK(got_usr1);
	put(g_fd, 0, 1, 'g');
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("the mapping child failed");
	expect_fill(g_fd, 1, 8191, 'f', "after the mapping");
	CHECK(close(g_fd) == 0);
}

static void child_flock(void *a)
{
	int fd = openf("flock", O_RDWR);

	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		die("flock(LOCK_EX) on an open of its own succeeded while the "
		    "parent holds one (one description for both?)");
	CHECK(errno == EWOULDBLOCK);
	expect_fill(fd, 0, 4096, 'h', "the child's read of the locked file");
	/* the parent's own lock is on the parent's description */
	if (flock(g_fd, LOCK_EX | LOCK_NB))
		die("flock on the inherited (shared) description: %s",
		    strerror(errno));
}

static void child_posix_lock(void *a)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = 0, .l_len = 100 };
	int fd = openf("flock", O_RDWR);

	if (fcntl(fd, F_SETLK, &fl) == 0)
		die("F_SETLK on a range the parent holds succeeded");
	CHECK(errno == EAGAIN || errno == EACCES);
	fl.l_start = 200;
	CHECK(fcntl(fd, F_SETLK, &fl) == 0);
}

/* flock is per description: two opens are two descriptions */
static void t_locks(void)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = 0, .l_len = 100 };

	step = "flock between two opens";
	g_fd = openf("flock", O_RDWR | O_CREAT | O_TRUNC);
	put(g_fd, 0, 4096, 'h');
	CHECK(flock(g_fd, LOCK_EX) == 0);
	in_child(child_flock, NULL);
	step = "POSIX record locks between processes";
	CHECK(fcntl(g_fd, F_SETLK, &fl) == 0);
	in_child(child_posix_lock, NULL);
	CHECK(close(g_fd) == 0);
}

/* copy_file_range from a served file: its dirty data, to a file outside */
static void t_copy(void)
{
	int in, o;
	char *p = P(out, "copy");

	step = "copy_file_range";
	in = openf("copy", O_RDWR | O_CREAT | O_TRUNC);
	put(in, 0, 12288, 'i');
	o = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(o >= 0);
	loff_t a = 0, b = 0;
	ssize_t n = copy_file_range(in, &a, o, &b, 12288, 0);

	if (n != 12288)
		die("copy_file_range copied %zd of 12288 (%s)", n,
		    n < 0 ? strerror(errno) : "short");
	expect_fill(o, 0, 12288, 'i', "the copy");
	put(in, 0, 10, 'j');	/* the source still works, now the kernel's */
	expect_fill(in, 0, 10, 'j', "the source after the copy");
	CHECK(close(in) == 0 && close(o) == 0);
}

/* the raw fork system call (no atfork handler runs) and vfork + exec:
 * the children share the parent's served description */
static void t_raw_fork(void)
{
	int fd = openf("rawfork", O_RDWR | O_CREAT | O_TRUNC), st;
	pid_t pid;
	char *cmd;

	step = "syscall(SYS_fork)";
	put(fd, 0, 8192, 'k');
	CHECK(lseek(fd, 8192, SEEK_SET) == 8192);
#ifdef SYS_fork
	pid = (pid_t)syscall(SYS_fork);
	CHECK(pid >= 0);
	if (!pid) {
		char b[4096];

		if (pread(fd, b, 4096, 4096) != 4096 || b[0] != 'k' || b[4095] != 'k')
			_exit(3);
		memset(b, 'l', sizeof(b));
		if (write(fd, b, 4096) != 4096)	/* at the shared position */
			_exit(4);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("the SYS_fork child failed (status 0x%x)", st);
	if (lseek(fd, 0, SEEK_CUR) != 12288)
		die("position %lld after the SYS_fork child's write, want 12288",
		    (long long)lseek(fd, 0, SEEK_CUR));
	expect_fill(fd, 8192, 4096, 'l', "the SYS_fork child's write");
#endif
	step = "vfork + exec";
	CHECK(asprintf(&cmd, "head -c 8192 '%s/rawfork' | tr -d k | wc -c | "
		       "grep -qx 0", served) > 0);
	pid = vfork();
	CHECK(pid >= 0);
	if (!pid) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("a shell from vfork + exec does not read the parent's data "
		    "(status 0x%x)", st);
	free(cmd);
	CHECK(close(fd) == 0);
}

#define NTHREADS 4
static int t_fd;

static void *thread_main(void *arg)
{
	long t = (long)arg;
	static __thread char b[16384];
	off_t off = (off_t)t * 16384;

	for (int i = 0; i < 50; i++) {
		char c = (char)('A' + t * 8 + i % 8);

		memset(b, c, sizeof(b));
		if (pwrite(t_fd, b, sizeof(b), off) != (ssize_t)sizeof(b))
			return "pwrite";
		memset(b, 0, sizeof(b));
		if (pread(t_fd, b, sizeof(b), off) != (ssize_t)sizeof(b) ||
		    b[0] != c || b[sizeof(b) - 1] != c || memchr(b, 0, sizeof(b)))
			return "its own write read back wrong";
	}
	return NULL;
}

/* threads of one process on one file, each through its own connection */
static void t_threads(void)
{
	pthread_t th[NTHREADS];
	void *r;
	long t;

	step = "threads";
	t_fd = openf("threads", O_RDWR | O_CREAT | O_TRUNC);
	for (t = 0; t < NTHREADS; t++)
		CHECK(pthread_create(&th[t], NULL, thread_main, (void *)t) == 0);
	for (t = 0; t < NTHREADS; t++) {
		CHECK(pthread_join(th[t], &r) == 0);
		if (r)
			die("thread %ld: %s", t, (char *)r);
	}
	for (t = 0; t < NTHREADS; t++)
		expect_fill(t_fd, t * 16384, 16384, (char)('A' + t * 8 + 49 % 8),
			    "a thread's last write");
	CHECK(close(t_fd) == 0);
}

static volatile int ft_stop;

static void *ft_thread(void *arg)
{
	long t = (long)arg;
	char b[4096];

	while (!ft_stop) {
		memset(b, (char)('a' + t), sizeof(b));
		if (pwrite(t_fd, b, sizeof(b), (off_t)t * 4096) != (ssize_t)sizeof(b))
			return "pwrite";
		if (pread(t_fd, b, sizeof(b), (off_t)t * 4096) != (ssize_t)sizeof(b) ||
		    b[0] != (char)('a' + t))
			return "pread";
	}
	return NULL;
}

/* fork while other threads are in calls to the holder: no hang, and the
 * children see the data (each child's first call has a connection of
 * its own, never its parent's threads' half-used ones) */
static void t_fork_threads(void)
{
	pthread_t th[2];
	void *r;
	long t;

	step = "fork while threads call the holder";
	t_fd = openf("forkthreads", O_RDWR | O_CREAT | O_TRUNC);
	put(t_fd, 0, 8192, 'a');
	for (t = 0; t < 2; t++)
		CHECK(pthread_create(&th[t], NULL, ft_thread, (void *)t) == 0);
	for (int i = 0; i < 20; i++) {
		int st;
		pid_t pid = fork();

		CHECK(pid >= 0);
		if (!pid) {
			char b[4096];

			alarm(20);
			if (pread(t_fd, b, 4096, 0) != 4096 || b[0] != 'a')
				_exit(3);
			_exit(0);
		}
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			die("child %d of a forking multithreaded parent failed "
			    "(status 0x%x)", i, st);
	}
	ft_stop = 1;
	for (t = 0; t < 2; t++) {
		CHECK(pthread_join(th[t], &r) == 0);
		if (r)
			die("thread %ld: %s", t, (char *)r);
	}
	CHECK(close(t_fd) == 0);
}

/* A parent SIGKILLed by its child right after the fork, often before its
 * HOP_FORK_DONE reached the holder: the child, handed the parent's pins
 * by the holder (orphan.c), writes through its inherited descriptor at
 * once, racing that hand-off; its write must succeed (REVIEW-B B4: it
 * was EBADF when its claim came while the holder was looking for the
 * dead parent's child). */
static void t_fork_orphan(void)
{
	int pfd[2], i, bad = 0;
	char r;

	step = "a parent killed right after its fork";
	CHECK(pipe(pfd) == 0);
	for (i = 0; i < 100; i++) {
		int st;
		pid_t mid = fork();

		CHECK(mid >= 0);
		if (!mid) {
			int fd = openf("orphan", O_RDWR | O_CREAT);
			pid_t c;

			put(fd, 0, 1, 'm');
			c = fork();
			if (c < 0)
				_exit(1);
			if (!c) {
				char b[16];

				alarm(20);
				kill(getppid(), SIGKILL);
				memset(b, 'c', sizeof(b));
				r = pwrite(fd, b, sizeof(b), 100) == (ssize_t)sizeof(b) &&
				    pread(fd, b, 1, 0) == 1 && b[0] == 'm' ? 'y' : 'n';
				_exit(write(pfd[1], &r, 1) == 1 ? 0 : 1);
			}
			pause();
			_exit(1);
		}
		CHECK(waitpid(mid, &st, 0) == mid);
		CHECK(read(pfd[0], &r, 1) == 1);
		if (r != 'y')
			bad++;
	}
	close(pfd[0]);
	close(pfd[1]);
	if (bad)
		die("%d of 100 children of a parent killed after the fork could not "
		    "use their inherited descriptor", bad);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(120);
	if (argc != 3) {
		fprintf(stderr, "usage: shared_misc SERVED OUT\n");
		return 2;
	}
	served = argv[1];
	out = argv[2];
	t_dup();
	t_trunc();
	t_mmap();
	t_locks();
	t_copy();
	t_raw_fork();
	t_threads();
	t_fork_threads();
	t_fork_orphan();
	printf("PASS: misc: dup2/F_DUPFD/close_range, another process's O_TRUNC "
	       "and truncate(path), mmap, flock, record locks, copy_file_range, "
	       "SYS_fork and vfork children, threads, forks beside threads, "
	       "a child whose parent was killed at its fork\n");
	return 0;
}
