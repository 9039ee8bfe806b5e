/* SPDX-License-Identifier: MIT */
/*
 * holder_client.c - the cache holder's own test (wtio-run --shared): a
 * client that speaks holder_proto.h directly, without the preload shim,
 * run by tests/shim-holder.sh as the program of `wtio-run --shared`.
 *
 *   holder_client DIR
 *
 * It checks, in DIR (a directory where O_DIRECT works): open with the
 * kernel's answers (O_CREAT, O_EXCL, ENOENT, a directory not served);
 * write/read at the OFD's position and at offsets; a second OFD of the
 * file seeing the first one's writes; access modes per OFD (EBADF);
 * O_APPEND at the end; lseek, size, ftruncate, fsync; dup and close
 * references; a fork token (the child's claim, the position shared);
 * a child SIGKILLed after a 1 MiB write-back write losing nothing; the
 * death of a process releasing its files; an explicit demotion, and a
 * demotion by another open of the file (the lease), after which the OFD
 * gets a kernel description of its own at its position; a truncate by
 * path while another thread writes (no deadlock, no write after it);
 * the counters.
 * It leaves DIR/kept and DIR/data (written, never closed) and their
 * expected contents (DIR/NAME.expect) for the script to compare after
 * the holder's end. Exit 0 pass, 1 fail.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "holder_call.h"

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "FAIL %s:%d (pid %d): %s\n", __FILE__,	\
			__LINE__, (int)getpid(), #cond);		\
		exit(1);						\
	}								\
} while (0)


struct conn {
	int sock;
	char *buf;
	size_t size;
};

static const char *dir;

static int64_t call(struct conn *c, uint32_t op, uint64_t ofd, int64_t a0,
		    int64_t a1, int64_t a2, int64_t a3, int fd_in,
		    struct holder_reply *out, int *fd_out)
{
	struct holder_req req = { .op = op, .ofd = ofd,
				  .arg = { a0, a1, a2, a3 } };

	return holder_call(c->sock, &req, fd_in, out, fd_out);
}

#define CALL(c, op, ofd, a0, a1, a2) \
	call(c, op, ofd, a0, a1, a2, 0, -1, NULL, NULL)

static void connect_holder(struct conn *c, unsigned int flags, uint64_t token)
{
	const char *name = getenv(HOLDER_ENV);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t len;
	int memfd;

	CHECKF(name && name[0] == '@', "%s=%s", HOLDER_ENV, name ? name : "");
	strncpy(a.sun_path + 1, name + 1, sizeof(a.sun_path) - 2);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
	c->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(c->sock >= 0);
	CHECKF(connect(c->sock, (struct sockaddr *)&a, len) == 0, "connect: %s",
	       strerror(errno));
	c->size = HOLDER_BUF_MIN;
	memfd = memfd_create("holder-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK(memfd >= 0);
	CHECK(ftruncate(memfd, (off_t)c->size) == 0);
	c->buf = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	CHECK(c->buf != MAP_FAILED);
	CHECK(call(c, HOP_HELLO, 0, HOLDER_PROTO_VERSION, (int64_t)c->size,
		   flags, (int64_t)token, memfd, NULL, NULL) == 0);
	close(memfd);
}

/* HOP_OPEN of DIR/name: the status; *ofd and *fd when served. */
static int64_t hopen(struct conn *c, const char *name, int flags, int mode,
		     uint64_t *ofd, int *fd)
{
	struct holder_reply rep;
	int64_t st;
	int got;

	snprintf(c->buf, c->size, "%s/%s", dir, name);
	st = call(c, HOP_OPEN, 0, flags, mode, 0, 0, -1, &rep, &got);
	if (st == HOLDER_SERVED) {
		CHECK(got >= 0);
		CHECK(rep.val > 0 && rep.val2 >= 512);
		if (ofd)
			*ofd = (uint64_t)rep.val;
		if (fd)
			*fd = got;
		else
			close(got);
	} else {
		CHECK(got < 0);
	}
	return st;
}

static void fill(char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (char)((i * 31 + seed * 7 + (i >> 12)) & 0xff);
}

static int64_t hwrite(struct conn *c, uint64_t ofd, int64_t off, size_t n,
		      unsigned int seed)
{
	fill(c->buf, n, seed);
	return CALL(c, HOP_WRITE, ofd, off, (int64_t)n, 0);
}

/* Read n bytes at off through ofd; they must be seed's pattern. */
static void expect_read(struct conn *c, uint64_t ofd, int64_t off, size_t n,
			unsigned int seed)
{
	char *want = malloc(n);
	int64_t r = CALL(c, HOP_READ, ofd, off, (int64_t)n, 0);

	CHECKF(r == (int64_t)n, "read %lld of %zu", (long long)r, n);
	fill(want, n, seed);
	CHECK(memcmp(c->buf, want, n) == 0);
	free(want);
}

/* The kernel's view of DIR/name (an open of it breaks the holder's lease
 * and waits for its write-back): n bytes of seed's pattern. */
static void expect_file(const char *name, size_t n, unsigned int seed)
{
	char path[4096], *got = malloc(n + 1), *want = malloc(n);
	struct stat st;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	CHECKF(fd >= 0, "%s: %s", path, strerror(errno));
	CHECK(fstat(fd, &st) == 0);
	CHECKF(st.st_size == (off_t)n, "%s: size %lld, want %zu", name,
	       (long long)st.st_size, n);
	r = pread(fd, got, n + 1, 0);
	CHECK(r == (ssize_t)n);
	fill(want, n, seed);
	CHECKF(memcmp(got, want, n) == 0, "%s: other bytes", name);
	close(fd);
	free(got);
	free(want);
}

/* DIR/name.expect: what DIR/name must hold once the holder has ended
 * (written by the kernel: a file the holder never sees). */
static void expect_copy(const char *name, size_t n, unsigned int seed)
{
	char path[4096], *want = malloc(n);
	int fd;

	snprintf(path, sizeof(path), "%s/%s.expect", dir, name);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	CHECK(fd >= 0);
	fill(want, n, seed);
	CHECK(write(fd, want, n) == (ssize_t)n);
	CHECK(close(fd) == 0);
	free(want);
}

static void test_opens(struct conn *c)
{
	uint64_t ofd;

	CHECK(hopen(c, "none", O_RDONLY, 0, NULL, NULL) == -ENOENT);
	CHECK(hopen(c, "a", O_CREAT | O_EXCL | O_RDWR, 0644, &ofd, NULL) ==
	      HOLDER_SERVED);
	CHECK(hopen(c, "a", O_CREAT | O_EXCL | O_RDWR, 0644, NULL, NULL) ==
	      -EEXIST);
	CHECK(CALL(c, HOP_UNREF, ofd, 0, 0, 0) == 0);
	CHECK(CALL(c, HOP_UNREF, ofd, 0, 0, 0) == -EBADF);
	/* a directory: the client's own open answers */
	CHECK(hopen(c, "", O_RDONLY, 0, NULL, NULL) == HOLDER_NOT_SERVED);
	/* a relative path needs a directory descriptor */
	strcpy(c->buf, "a");
	CHECK(CALL(c, HOP_OPEN, 0, O_RDONLY, 0, 0) == -EINVAL);
}

static void test_data(struct conn *c)
{
	uint64_t w, r, ap;
	struct holder_reply rep;
	int fd, fl;

	CHECK(hopen(c, "data", O_CREAT | O_TRUNC | O_RDWR, 0644, &w, &fd) ==
	      HOLDER_SERVED);
	fl = fcntl(fd, F_GETFL);
	CHECK(fl >= 0 && (fl & O_DIRECT));	/* the holder's description */
	close(fd);
	/* at the position, then at an offset */
	CHECK(hwrite(c, w, -1, 100000, 1) == 100000);
	CHECK(CALL(c, HOP_LSEEK, w, 0, SEEK_CUR, 0) == 100000);
	expect_read(c, w, 0, 100000, 1);
	CHECK(CALL(c, HOP_LSEEK, w, 0, SEEK_CUR, 0) == 100000);
	CHECK(hwrite(c, w, 100000, 5000, 2) == 5000);
	CHECK(call(c, HOP_SIZE, w, 0, 0, 0, 0, -1, &rep, NULL) == 0);
	CHECK(rep.val == 105000);
	/* another OFD: its own position, the same data, read-only */
	CHECK(hopen(c, "data", O_RDONLY, 0, &r, NULL) == HOLDER_SERVED);
	CHECK(r != w);
	expect_read(c, r, -1, 100000, 1);
	CHECK(CALL(c, HOP_LSEEK, r, 0, SEEK_CUR, 0) == 100000);
	CHECK(hwrite(c, r, 0, 10, 3) == -EBADF);
	CHECK(CALL(c, HOP_FTRUNCATE, r, 0, 0, 0) == -EINVAL);
	/* O_APPEND: at the end whatever the offset, position after it */
	CHECK(hopen(c, "data", O_WRONLY | O_APPEND, 0, &ap, NULL) ==
	      HOLDER_SERVED);
	CHECK(CALL(c, HOP_READ, ap, 0, 10, 0) == -EBADF);
	CHECK(hwrite(c, ap, 0, 1000, 4) == 1000);	/* pwrite: appends */
	CHECK(CALL(c, HOP_LSEEK, ap, 0, SEEK_CUR, 0) == 0);
	CHECK(hwrite(c, ap, -1, 1000, 13) == 1000);	/* write: moves it */
	CHECK(CALL(c, HOP_LSEEK, ap, 0, SEEK_CUR, 0) == 107000);
	expect_read(c, r, 105000, 1000, 4);
	expect_read(c, r, 106000, 1000, 13);
	CHECK(call(c, HOP_GETFL, ap, 0, 0, 0, 0, -1, &rep, NULL) == 0);
	CHECK((rep.val & O_ACCMODE) == O_WRONLY && (rep.val & O_APPEND));
	CHECK(CALL(c, HOP_SETFL, ap, 0, 0, 0) == 0);
	CHECK(hwrite(c, ap, 0, 1000, 5) == 1000);	/* no longer appends */
	expect_read(c, r, 0, 1000, 5);
	/* truncate, size, fsync */
	CHECK(CALL(c, HOP_FTRUNCATE, w, 50000, 0, 0) == 0);
	CHECK(call(c, HOP_SIZE, r, 0, 0, 0, 0, -1, &rep, NULL) == 0);
	CHECK(rep.val == 50000);
	CHECK(CALL(c, HOP_READ, r, 49000, 4096, 0) == 1000);
	CHECK(CALL(c, HOP_FSYNC, w, 0, 0, 0) == 0);
	CHECK(CALL(c, HOP_FDATASYNC, r, 0, 0, 0) == 0);
	CHECK(CALL(c, HOP_SYNC_RANGE, w, 0, 0, 7) == 0);
	CHECK(CALL(c, HOP_SYNC_RANGE, w, -1, 0, 2) == -EINVAL);
	/* a dup and its close */
	CHECK(CALL(c, HOP_REF, w, 0, 0, 0) == 0);
	CHECK(CALL(c, HOP_UNREF, w, 0, 0, 0) == 0);
	CHECK(CALL(c, HOP_UNREF, ap, 0, 0, 0) == 0);
	CHECK(CALL(c, HOP_UNREF, r, 0, 0, 0) == 0);
	CHECK(CALL(c, HOP_READ, r, 0, 10, 0) == -EBADF);
	/* w stays open: the script compares it after the holder's end */
	CHECK(CALL(c, HOP_LSEEK, w, 0, SEEK_SET, 0) == 0);
	CHECK(hwrite(c, w, -1, 50000, 6) == 50000);
	expect_copy("data", 50000, 6);
}

/* fork: the token's claim gives the child the parent's OFD; the
 * position is shared. */
static void test_fork(struct conn *c)
{
	uint64_t ofd;
	int64_t token;
	int st;
	pid_t pid;

	CHECK(hopen(c, "forked", O_CREAT | O_RDWR, 0644, &ofd, NULL) ==
	      HOLDER_SERVED);
	CHECK(hwrite(c, ofd, -1, 4096, 7) == 4096);
	token = CALL(c, HOP_FORK_PREPARE, 0, 0, 0, 0);
	CHECK(token > 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct conn cc;

		close(c->sock);
		connect_holder(&cc, HELLO_CLAIM, (uint64_t)token);
		CHECK(CALL(&cc, HOP_LSEEK, ofd, 0, SEEK_CUR, 0) == 4096);
		CHECK(hwrite(&cc, ofd, -1, 4096, 8) == 4096);
		_exit(0);
	}
	CHECK(CALL(c, HOP_FORK_DONE, 0, token, pid, 0) == 0);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0);
	CHECK(CALL(c, HOP_LSEEK, ofd, 0, SEEK_CUR, 0) == 8192);
	expect_read(c, ofd, 4096, 4096, 8);
	/* a failed fork drops the pins */
	token = CALL(c, HOP_FORK_PREPARE, 0, 0, 0, 0);
	CHECK(token > 0);
	CHECK(CALL(c, HOP_FORK_DONE, 0, token, -EAGAIN, 0) == 0);
	CHECK(CALL(c, HOP_UNREF, ofd, 0, 0, 0) == 0);
}

/* A process reaches only the opens it was given: another process of the
 * program naming an OFD id it never got (no fork token claimed) gets
 * EBADF for every call on it, never the other process's file. */
static void test_foreign_ofd(struct conn *c)
{
	uint64_t ofd;
	int st;
	pid_t pid;

	CHECK(hopen(c, "mine", O_CREAT | O_TRUNC | O_RDWR, 0644, &ofd, NULL) ==
	      HOLDER_SERVED);
	CHECK(hwrite(c, ofd, 0, 4096, 14) == 4096);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct conn cc;

		close(c->sock);
		connect_holder(&cc, 0, 0);
		CHECK(CALL(&cc, HOP_READ, ofd, 0, 4096, 0) == -EBADF);
		CHECK(hwrite(&cc, ofd, 0, 4096, 15) == -EBADF);
		CHECK(CALL(&cc, HOP_LSEEK, ofd, 0, SEEK_END, 0) == -EBADF);
		CHECK(CALL(&cc, HOP_SIZE, ofd, 0, 0, 0) == -EBADF);
		CHECK(CALL(&cc, HOP_FTRUNCATE, ofd, 0, 0, 0) == -EBADF);
		CHECK(CALL(&cc, HOP_FSYNC, ofd, 0, 0, 0) == -EBADF);
		CHECK(CALL(&cc, HOP_SETFL, ofd, O_APPEND, 0, 0) == -EBADF);
		CHECK(CALL(&cc, HOP_DEMOTE, ofd, HDEMOTE_PROGRAM, 0, 0) == -EBADF);
		CHECK(CALL(&cc, HOP_REF, ofd, 0, 0, 0) == -EBADF);
		CHECK(CALL(&cc, HOP_UNREF, ofd, 0, 0, 0) == -EBADF);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0);
	/* the owner's open is untouched */
	expect_read(c, ofd, 0, 4096, 14);
	CHECK(CALL(c, HOP_UNREF, ofd, 0, 0, 0) == 0);
}

/* A child writes len bytes of seed's pattern to DIR/name in write-back
 * mode (and asks for a fork token, when prepare says so) and is
 * SIGKILLed: its death must release the file (the holder writes it back
 * and closes it), with every byte it was acknowledged. */
static void killed_writer(struct conn *c, const char *name, int len,
			  unsigned int seed, bool prepare, const char *what)
{
	int pfd[2], st, i;
	struct stat sb;
	char path[4096], ok;
	pid_t pid;

	CHECK(pipe(pfd) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct conn cc;
		uint64_t ofd;

		close(c->sock);
		connect_holder(&cc, 0, 0);
		CHECK(hopen(&cc, name, O_CREAT | O_TRUNC | O_RDWR, 0644,
			    &ofd, NULL) == HOLDER_SERVED);
		CHECK(hwrite(&cc, ofd, -1, (size_t)len, seed) == len);
		if (prepare)
			CHECK(CALL(&cc, HOP_FORK_PREPARE, 0, 0, 0, 0) > 0);
		CHECK(write(pfd[1], "w", 1) == 1);
		pause();
		_exit(1);
	}
	close(pfd[1]);
	CHECK(read(pfd[0], &ok, 1) == 1);
	close(pfd[0]);
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	CHECK(stat(path, &sb) == 0);
	for (i = 0; i < 500; i++) {
		struct holder_reply rep;

		if (call(c, HOP_SIZE_INO, 0, (int64_t)sb.st_dev,
			 (int64_t)sb.st_ino, 0, 0, -1, &rep, NULL) ==
		    HOLDER_NOT_SERVED)
			break;
		usleep(10000);
	}
	CHECKF(i < 500, "%s", what);
	expect_file(name, (size_t)len, seed);
}

/* A child writes 1 MiB in write-back mode and is killed: nothing it was
 * acknowledged is lost, and its death closes the file. */
static void test_kill(struct conn *c)
{
	killed_writer(c, "killed", 1 << 20, 9, false,
		      "the dead process's file is still served");
}

/* A parent that asked for a fork token and died before HOP_FORK_DONE
 * (no child was forked): the pins go with it, and the file it wrote is
 * written back and closed, not kept served until the holder's end. */
static void test_fork_orphan(struct conn *c)
{
	killed_writer(c, "orphan", 65536, 16, true,
		      "a token whose parent died unforked still pins the file");
}

/* Demotion: asked, and by another open of the file (the lease). */
static void test_demote(struct conn *c)
{
	uint64_t a, b;
	struct holder_reply rep;
	int fd, fl;
	char path[4096];

	CHECK(hopen(c, "dem", O_CREAT | O_RDWR, 0644, &a, NULL) ==
	      HOLDER_SERVED);
	CHECK(hwrite(c, a, -1, 30000, 10) == 30000);
	CHECK(hopen(c, "dem", O_RDONLY, 0, &b, NULL) == HOLDER_SERVED);
	CHECK(CALL(c, HOP_LSEEK, b, 123, SEEK_SET, 0) == 123);
	CHECK(call(c, HOP_DEMOTE, a, HDEMOTE_PROGRAM, 0, 0, 0, -1, &rep, &fd) ==
	      HOLDER_DEMOTED);
	fl = fcntl(fd, F_GETFL);
	CHECK(fl >= 0 && !(fl & O_DIRECT) && (fl & O_ACCMODE) == O_RDWR);
	CHECK(lseek(fd, 0, SEEK_CUR) == 30000);
	close(fd);
	/* the other OFD: its own description, at its own position */
	CHECK(call(c, HOP_READ, b, -1, 10, 0, 0, -1, &rep, &fd) ==
	      HOLDER_DEMOTED);
	fl = fcntl(fd, F_GETFL);
	CHECK(fl >= 0 && (fl & O_ACCMODE) == O_RDONLY);
	CHECK(lseek(fd, 0, SEEK_CUR) == 123);
	close(fd);
	expect_file("dem", 30000, 10);
	CHECK(CALL(c, HOP_UNREF, a, 0, 0, 0) == 0);
	CHECK(CALL(c, HOP_UNREF, b, 0, 0, 0) == 0);
	/* served again once nothing else has it open */
	CHECK(hopen(c, "dem", O_RDWR, 0, &a, NULL) == HOLDER_SERVED);
	/* an open of our own (the kernel's) breaks the lease */
	CHECK(hwrite(c, a, 0, 20000, 11) == 20000);
	snprintf(path, sizeof(path), "%s/dem", dir);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	{
		char buf[20000], want[20000];

		CHECK(pread(fd, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf));
		fill(want, sizeof(want), 11);
		CHECK(memcmp(buf, want, sizeof(buf)) == 0);
	}
	CHECK(call(c, HOP_SIZE, a, 0, 0, 0, 0, -1, &rep, &fl) == HOLDER_DEMOTED);
	CHECK(fl >= 0);
	close(fl);
	/* and the file is not served while that description is open */
	CHECK(hopen(c, "dem", O_RDWR, 0, NULL, NULL) == HOLDER_NOT_SERVED);
	close(fd);
	CHECK(CALL(c, HOP_UNREF, a, 0, 0, 0) == 0);
}

static void *close_later(void *arg)
{
	usleep(30000);
	close((int)(long)arg);
	return NULL;
}

/* The last close of a file whose closer still has its descriptor of the
 * old description for a moment (a client closes it after the holder's
 * answer): the next open waits for that, and is served. */
static void test_reopen_race(struct conn *c)
{
	uint64_t ofd;
	pthread_t t;
	int fd;

	CHECK(hopen(c, "reopen", O_CREAT | O_RDWR, 0644, &ofd, &fd) ==
	      HOLDER_SERVED);
	CHECK(hwrite(c, ofd, -1, 4096, 15) == 4096);
	CHECK(CALL(c, HOP_UNREF, ofd, 0, 0, 0) == 0);
	CHECK(pthread_create(&t, NULL, close_later, (void *)(long)fd) == 0);
	CHECK(hopen(c, "reopen", O_RDWR, 0, &ofd, NULL) == HOLDER_SERVED);
	CHECK(pthread_join(t, NULL) == 0);
	expect_read(c, ofd, 0, 4096, 15);
	CHECK(CALL(c, HOP_UNREF, ofd, 0, 0, 0) == 0);
}

struct writer {
	uint64_t ofd;
	long writes;
	int64_t last;
};

/* Another thread of this process, its own connection: writes until the
 * file is demoted. */
static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	struct conn cc;
	struct holder_reply rep;
	int fd;

	connect_holder(&cc, 0, 0);
	for (;;) {
		fill(cc.buf, 65536, 14);
		w->last = call(&cc, HOP_WRITE, w->ofd,
			       (__atomic_load_n(&w->writes, __ATOMIC_RELAXED) % 64) * 65536,
			       65536, 0, 0, -1, &rep, &fd);
		if (w->last != 65536)
			break;
		__atomic_fetch_add(&w->writes, 1, __ATOMIC_RELAXED);
	}
	if (fd >= 0)
		close(fd);
	close(cc.sock);
	return NULL;
}

/* A truncate by path (the kernel's) while another thread writes: the
 * demotion waits for the write in flight, the truncate for the demotion,
 * and no write lands after it. */
static void test_demote_busy(struct conn *c)
{
	struct writer w = { 0 };
	char path[4096];
	pthread_t t;
	struct stat st;

	CHECK(hopen(c, "busy", O_CREAT | O_RDWR, 0644, &w.ofd, NULL) ==
	      HOLDER_SERVED);
	CHECK(pthread_create(&t, NULL, writer_thread, &w) == 0);
	while (__atomic_load_n(&w.writes, __ATOMIC_RELAXED) < 20)
		usleep(1000);
	snprintf(path, sizeof(path), "%s/busy", dir);
	alarm(60);	/* a deadlock fails, never hangs */
	CHECK(truncate(path, 4096) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	alarm(0);
	CHECKF(w.last == HOLDER_DEMOTED, "the writer ended with %lld",
	       (long long)w.last);
	CHECK(stat(path, &st) == 0);
	CHECKF(st.st_size == 4096, "size %lld after the truncate",
	       (long long)st.st_size);
	CHECK(CALL(c, HOP_UNREF, w.ofd, 0, 0, 0) == 0);
}

int main(int argc, char **argv)
{
	struct conn c;
	struct holder_stats st;
	uint64_t kept;

	if (argc != 2) {
		fprintf(stderr, "usage: holder_client DIR\n");
		return 1;
	}
	dir = argv[1];
	CHECK(chdir(dir) == 0);
	connect_holder(&c, 0, 0);
	test_opens(&c);
	test_data(&c);
	test_fork(&c);
	test_foreign_ofd(&c);
	test_fork_orphan(&c);
	test_kill(&c);
	test_demote(&c);
	test_demote_busy(&c);
	test_reopen_race(&c);
	/* written, never closed: the holder's end writes it back */
	CHECK(hopen(&c, "kept", O_CREAT | O_TRUNC | O_RDWR, 0644, &kept, NULL) ==
	      HOLDER_SERVED);
	CHECK(hwrite(&c, kept, -1, 300000, 12) == 300000);
	expect_copy("kept", 300000, 12);
	CHECK(CALL(&c, HOP_STATS, 0, 0, 0, 0) == (int64_t)sizeof(st));
	memcpy(&st, c.buf, sizeof(st));
	CHECKF(st.opens_served >= 10 && st.clients >= 3 && st.clients_died >= 1 &&
	       st.demoted[HDEMOTE_LEASE] >= 1 && st.demoted[HDEMOTE_PROGRAM] >= 1,
	       "served %llu clients %llu died %llu demoted %llu/%llu",
	       (unsigned long long)st.opens_served,
	       (unsigned long long)st.clients,
	       (unsigned long long)st.clients_died,
	       (unsigned long long)st.demoted[HDEMOTE_LEASE],
	       (unsigned long long)st.demoted[HDEMOTE_PROGRAM]);
	printf("holder_client: all checks passed\n");
	return 0;
}
