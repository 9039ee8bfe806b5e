// SPDX-License-Identifier: MIT
/*
 * shim_client.c - calls of one program on files a cache holder serves
 * (wtio-run --shared, or tests/holder_fake.py), each checked against what
 * the kernel would answer: tests/shim-client.sh.
 *
 *   shim_client basic DIR    every check below; exit 0, or 1 with FAIL lines
 *   shim_client wberr DIR    a demotion's write-back error (stand-in holder)
 *   shim_client dead FILE    open and write FILE, wait for a line on stdin
 *                            (the holder is killed meanwhile), then every
 *                            call on it must fail with EIO
 *   shim_client exec-read FD EXPECT   (internal: the exec'd image)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			printf("FAIL line %d: ", __LINE__);		\
			printf(__VA_ARGS__);				\
			printf(" (errno %s)\n", strerror(errno));	\
			failures++;					\
		}							\
	} while (0)

static char path_buf[4096];

static const char *at(const char *dir, const char *name)
{
	snprintf(path_buf, sizeof(path_buf), "%s/%s", dir, name);
	return path_buf;
}

static void wait_ok(pid_t pid, const char *what)
{
	int st;

	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "%s: child status %#x", what, st);
}

static void basic_rw(const char *dir)
{
	char buf[64] = { 0 };
	struct stat st;
	int fd, fd2;

	fd = open(at(dir, "f1"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	CHECK(fd >= 3, "open f1 = %d", fd);
	CHECK(write(fd, "hello world", 11) == 11, "write");
	CHECK(lseek(fd, 0, SEEK_CUR) == 11, "position after write");
	CHECK(pread(fd, buf, sizeof(buf), 0) == 11 &&
	      !memcmp(buf, "hello world", 11), "pread: '%s'", buf);
	CHECK(fstat(fd, &st) == 0 && st.st_size == 11, "fstat size %lld",
	      (long long)st.st_size);
	CHECK(stat(at(dir, "f1"), &st) == 0 && st.st_size == 11,
	      "stat size %lld", (long long)st.st_size);
	/* dup shares the position */
	fd2 = dup(fd);
	CHECK(fd2 > fd, "dup = %d", fd2);
	CHECK(lseek(fd2, 0, SEEK_SET) == 0, "lseek dup");
	CHECK(read(fd, buf, 5) == 5 && !memcmp(buf, "hello", 5), "read after dup's lseek");
	CHECK(close(fd2) == 0, "close dup");
	CHECK(dup2(fd, 20) == 20, "dup2");
	CHECK(write(20, "X", 1) == 1, "write dup2");
	CHECK(pread(fd, buf, 1, 5) == 1 && buf[0] == 'X', "dup2's write at the shared position");
	CHECK(close(20) == 0, "close 20");
	CHECK(ftruncate(fd, 3) == 0 && fstat(fd, &st) == 0 && st.st_size == 3,
	      "ftruncate");
	CHECK(lseek(fd, 0, SEEK_END) == 3, "SEEK_END");
	CHECK(fsync(fd) == 0 && fdatasync(fd) == 0, "fsync");
	CHECK(close(fd) == 0, "close");
	CHECK(read(fd, buf, 1) < 0 && errno == EBADF, "read after close");
}

static void basic_flags(const char *dir)
{
	char buf[16];
	int fd, fl;

	fd = open(at(dir, "f2"), O_CREAT | O_WRONLY | O_APPEND | O_TRUNC, 0600);
	CHECK(fd >= 3, "open f2");
	fl = fcntl(fd, F_GETFL);
	CHECK(fl >= 0 && (fl & O_ACCMODE) == O_WRONLY && (fl & O_APPEND) &&
	      !(fl & O_DIRECT), "F_GETFL %#x", fl);
	/* the holder's lease sets FASYNC on the description: not the
	 * program's; F_SETFL(F_GETFL | O_NONBLOCK) would pass it through */
	CHECK(!(fl & O_ASYNC), "F_GETFL shows the lease's O_ASYNC: %#x", fl);
	CHECK(read(fd, buf, 1) < 0 && errno == EBADF, "read on O_WRONLY");
	CHECK(write(fd, "a", 1) == 1, "append a");
	if (fork() == 0) {
		_exit(write(fd, "b", 1) == 1 ? 0 : 1);
	}
	wait(NULL);
	CHECK(write(fd, "c", 1) == 1, "append c");
	CHECK(fcntl(fd, F_SETFL, 0) == 0, "F_SETFL clears O_APPEND");
	fl = fcntl(fd, F_GETFL);
	CHECK(fl >= 0 && !(fl & O_APPEND), "F_GETFL after F_SETFL %#x", fl);
	close(fd);
	fd = open(at(dir, "f2"), O_RDONLY);
	memset(buf, 0, sizeof(buf));
	CHECK(read(fd, buf, sizeof(buf)) == 3 && !strcmp(buf, "abc"),
	      "appends of parent and child: '%s'", buf);
	close(fd);
}

/* fork: the child shares the OFD (position) and sees the parent's data */
static void basic_fork(const char *dir)
{
	char buf[16] = { 0 };
	pid_t pid;
	int fd;

	fd = open(at(dir, "f3"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	CHECK(write(fd, "parent", 6) == 6, "write parent");
	pid = fork();
	if (pid == 0) {
		char b[8] = { 0 };

		if (pread(fd, b, 6, 0) != 6 || memcmp(b, "parent", 6))
			_exit(2);
		_exit(write(fd, "CHILD", 5) == 5 ? 0 : 1);
	}
	wait_ok(pid, "fork child");
	CHECK(lseek(fd, 0, SEEK_CUR) == 11, "the child moved the shared position");
	CHECK(pread(fd, buf, 11, 0) == 11 && !memcmp(buf, "parentCHILD", 11),
	      "the child's write: '%s'", buf);
	close(fd);
}

static void fill(char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(seed + i * 7 + i / 4096);
}

/* bigger than the first buffer (it grows), and than the largest (split) */
static void basic_big(const char *dir)
{
	size_t sizes[] = { 3u << 20, (65u << 20) + 123 };

	for (int k = 0; k < 2; k++) {
		size_t n = sizes[k];
		char *a = malloc(n), *b = malloc(n);
		int fd = open(at(dir, "big"), O_CREAT | O_RDWR | O_TRUNC, 0644);

		fill(a, n, (unsigned int)k);
		CHECK(write(fd, a, n) == (ssize_t)n, "big write %zu", n);
		memset(b, 0, n);
		CHECK(pread(fd, b, n, 0) == (ssize_t)n && !memcmp(a, b, n),
		      "big read back %zu", n);
		CHECK(lseek(fd, 0, SEEK_CUR) == (off_t)n, "big position");
		close(fd);
		free(a);
		free(b);
	}
	unlink(at(dir, "big"));
}

static void basic_mmap_exec(const char *dir, const char *self)
{
	char buf[16] = { 0 }, arg[16];
	pid_t pid;
	char *m;
	int fd;

	fd = open(at(dir, "f4"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	CHECK(write(fd, "mapped data", 11) == 11, "write f4");
	m = mmap(NULL, 11, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED && !memcmp(m, "mapped data", 11),
	      "mmap sees what was written");
	CHECK(write(fd, "!", 1) == 1 && m != MAP_FAILED && m[11 - 11] == 'm',
	      "write after demotion");
	CHECK(pread(fd, buf, 12, 0) == 12 && !memcmp(buf, "mapped data!", 12),
	      "pread after demotion: '%s'", buf);
	if (m != MAP_FAILED)
		munmap(m, 11);
	close(fd);

	/* exec: an inherited served descriptor reaches the new image with
	 * the data and the position */
	fd = open(at(dir, "f5"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	CHECK(write(fd, "for the new image", 17) == 17, "write f5");
	CHECK(lseek(fd, 4, SEEK_SET) == 4, "lseek f5");
	snprintf(arg, sizeof(arg), "%d", fd);
	pid = fork();
	if (pid == 0) {
		execl(self, self, "exec-read", arg, "the new image", (char *)NULL);
		_exit(3);
	}
	wait_ok(pid, "exec'd child");
	close(fd);
}

static void basic_misc(const char *dir)
{
	char buf[16] = { 0 };
	FILE *f;
	int fd;

	fd = open(at(dir, "notserved"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, "kernel", 6) == 6 &&
	      pread(fd, buf, 6, 0) == 6, "a file the holder does not serve");
	close(fd);
	f = fopen(at(dir, "f6"), "w");
	CHECK(f && fprintf(f, "stdio %d", 42) > 0 && fclose(f) == 0, "fopen w");
	f = fopen(at(dir, "f6"), "r");
	memset(buf, 0, sizeof(buf));
	CHECK(f && fgets(buf, sizeof(buf), f) && !strcmp(buf, "stdio 42"),
	      "fopen r: '%s'", buf);
	if (f)
		fclose(f);
	/* relative path, openat with a directory descriptor */
	{
		int dfd = open(dir, O_RDONLY | O_DIRECTORY);

		fd = openat(dfd, "f6", O_RDONLY | O_CLOEXEC);
		CHECK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC) &&
		      read(fd, buf, 5) == 5 && !memcmp(buf, "stdio", 5),
		      "openat dirfd, O_CLOEXEC");
		close(fd);
		close(dfd);
	}
	CHECK(open(at(dir, "f6"), O_CREAT | O_EXCL | O_RDWR, 0644) < 0 &&
	      errno == EEXIST, "O_EXCL on an existing file");
	CHECK(open(at(dir, "missing"), O_RDONLY) < 0 && errno == ENOENT,
	      "ENOENT");
}

/* A signal handler's own call on a served file in the middle of the
 * thread's call (it gets a connection of its own). */
static int sig_fd = -1;
static volatile sig_atomic_t sig_calls, sig_bad;

static void on_alarm(int sig)
{
	char b[8];
	int e = errno;

	(void)sig;
	if (pread(sig_fd, b, 8, 0) != 8 || memcmp(b, "HEADER!!", 8))
		sig_bad++;
	sig_calls++;
	errno = e;
}

static void basic_signal(const char *dir)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } }, off = { 0 };
	size_t n = 1u << 20;
	char *a = malloc(n), *b = malloc(n);
	int fd;

	sig_fd = open(at(dir, "sig"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	CHECK(pwrite(sig_fd, "HEADER!!", 8, 0) == 8, "sig header");
	fd = open(at(dir, "sig2"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (int i = 0; i < 40; i++) {
		fill(a, n, (unsigned int)i);
		CHECK(pwrite(fd, a, n, 0) == (ssize_t)n, "write under signals");
		CHECK(pread(fd, b, n, 0) == (ssize_t)n && !memcmp(a, b, n),
		      "read back under signals");
	}
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_DFL);
	CHECK(sig_calls > 0 && !sig_bad, "%d handler calls, %d wrong",
	      (int)sig_calls, (int)sig_bad);
	close(fd);
	close(sig_fd);
	free(a);
	free(b);
}

/* A write-back error the holder's demotion hit comes back once, at the
 * next fsync (the stand-in holder reports EIO for "wberr" files). */
static int wberr(const char *dir)
{
	int fd = open(at(dir, "wberr"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	void *m;

	CHECK(fd >= 0 && write(fd, "data", 4) == 4, "wberr write");
	m = mmap(NULL, 4, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED, "wberr mmap");
	CHECK(fsync(fd) < 0 && errno == EIO, "the demotion's write-back error at fsync");
	CHECK(fsync(fd) == 0, "reported once");
	if (m != MAP_FAILED)
		munmap(m, 4);
	close(fd);
	return failures ? 1 : 0;
}

static int dead(const char *file)
{
	char line[8], buf[4];
	int fd = open(file, O_CREAT | O_RDWR | O_TRUNC, 0644);

	if (fd < 0 || write(fd, "data", 4) != 4) {
		printf("FAIL: open/write before the kill: %s\n", strerror(errno));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	CHECK(write(fd, "more", 4) < 0 && errno == EIO, "write after the holder died");
	CHECK(pread(fd, buf, 4, 0) < 0 && errno == EIO, "read after the holder died");
	CHECK(fsync(fd) < 0 && errno == EIO, "fsync after the holder died");
	CHECK(open(file, O_RDONLY) < 0 && errno == EIO, "open after the holder died");
	{
		struct stat st;

		CHECK(stat(file, &st) < 0 && errno == EIO,
		      "stat (its size died with the holder)");
	}
	CHECK(write(fd, "more", 4) < 0 && errno == EIO, "write again");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "exec-read")) {
		char buf[32] = { 0 };
		size_t n = strlen(argv[3]);
		int fd = atoi(argv[2]);

		CHECK(read(fd, buf, n) == (ssize_t)n && !memcmp(buf, argv[3], n),
		      "exec'd image reads '%s'", buf);
		return failures ? 1 : 0;
	}
	if (argc == 3 && !strcmp(argv[1], "dead"))
		return dead(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "wberr"))
		return wberr(argv[2]);
	if (argc != 3 || strcmp(argv[1], "basic")) {
		fprintf(stderr, "usage: shim_client basic DIR | dead FILE\n");
		return 2;
	}
	basic_rw(argv[2]);
	basic_flags(argv[2]);
	basic_fork(argv[2]);
	basic_big(argv[2]);
	basic_mmap_exec(argv[2], argv[0]);
	basic_misc(argv[2]);
	basic_signal(argv[2]);
	if (!failures)
		printf("all checks passed\n");
	return failures ? 1 : 0;
}
