/* SPDX-License-Identifier: MIT */
/*
 * shared_matrix - the fork/exec checker of one cache per program (issue
 * #14, `wtio-run --shared`; tests/shim-shared-matrix.sh runs it in every
 * mode). Parent, forked and exec'd children of ONE program work on the
 * same served files; the expected bytes live in a shadow in a MAP_SHARED
 * memfd (exec'd children map it by descriptor), and every operation runs
 * under a process-shared robust lock around the call and the shadow's
 * update, so every read must see exactly the latest acknowledged write.
 *
 *   shared_matrix overlap|position|append|kill|holderkill|execinherit SERVED OUT
 *   shared_matrix verify-append|verify-kill SERVED OUT   (after the program)
 *   shared_matrix write-pause FILE READY [fsync]         (shim-shared-kill.sh,
 *                                                         shim-holder-death.sh)
 *   shared_matrix pattern LEN                            (its bytes, stdout)
 *
 * SERVED is under wtio-run's --paths, OUT is not (results, models, ready
 * files). Each role prints "PASS: ..." or "FAIL: ..." and exits 0 or 1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shared_check.h"

extern char **environ;

#define NF	2			/* files of the overlap role */
#define FLEN	(256u << 10)		/* their largest size */
#define MAXOP	20000u			/* one read or write */
#define NOPS	1000			/* operations per overlap worker */
#define NWORK	5			/* parent, 2 forked, 1 exec'd, 1 spawned */
#define REC	1000			/* kill role: not a block multiple */
#define NAPP	250			/* appends per append writer */
#define NAPPW	4			/* append writers */
#define AMAGIC	0x4150504e44524543ull	/* "APPNDREC" */

struct shadow {
	pthread_mutex_t lock;		/* robust, process-shared */
	_Atomic int failed;		/* some process failed: stop */
	_Atomic int turn;		/* position role's ping-pong */
	_Atomic uint64_t acked;		/* kill role: records acknowledged */
	_Atomic int go;			/* holderkill role */
	uint64_t size[NF];
	uint8_t data[NF][FLEN];
};

static struct shadow *sh;
static const char *role = "?", *served, *out;
static int who;				/* worker number, for messages */

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL: shared_matrix %s (worker %d, pid %d): ", role,
		who, (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (sh)
		sh->failed = 1;
	exit(1);
}


static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rng;
static uint64_t below(uint64_t n)
{
	rng += 0x9e3779b97f4a7c15ull;
	return n ? mix(rng) % n : 0;
}

/* The byte a write (tag) puts at offset off: never the same for two
 * writes, so a stale block never matches by chance. */
static uint8_t pat(uint64_t tag, uint64_t off)
{
	return (uint8_t)(mix(tag * 0x100000001b3ull + off) % 251 + 1);
}

static void fill(uint8_t *b, size_t len, uint64_t tag, uint64_t off)
{
	for (size_t i = 0; i < len; i++)
		b[i] = pat(tag, off + i);
}

/* ---- the shadow: memfd, mapped shared; robust lock ---- */

static int shadow_create(void)
{
	pthread_mutexattr_t a;
	int fd = memfd_create("shared_matrix-shadow", 0);	/* inherited by exec */

	CHECK(fd >= 0);
	CHECK(ftruncate(fd, sizeof(*sh)) == 0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(sh != MAP_FAILED);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	CHECK(pthread_mutex_init(&sh->lock, &a) == 0);
	return fd;
}

static void shadow_attach(int fd)
{
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(sh != MAP_FAILED);
}

static void lock(void)
{
	int r = pthread_mutex_lock(&sh->lock);

	if (r == EOWNERDEAD) {
		pthread_mutex_consistent(&sh->lock);
		pthread_mutex_unlock(&sh->lock);
		die("another process died holding the shadow lock");
	}
	if (r)
		die("pthread_mutex_lock: %s", strerror(r));
	if (sh->failed) {
		pthread_mutex_unlock(&sh->lock);
		fprintf(stderr, "shared_matrix %s worker %d: stopping, another "
			"process failed\n", role, who);
		exit(1);
	}
}

static void unlock(void)
{
	pthread_mutex_unlock(&sh->lock);
}

/* ---- children ---- */

/* fork, the child with a deadline of its own (alarm is not inherited) */
static pid_t forked(void)
{
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (!pid)
		alarm(120);
	return pid;
}

/* Wait for pid; "what" failed unless it exited 0. */
static void reap(pid_t pid, const char *what)
{
	int st;

	CHECK(waitpid(pid, &st, 0) == pid);
	if (WIFSIGNALED(st))
		die("%s (pid %d) killed by signal %d", what, (int)pid,
		    WTERMSIG(st));
	if (WEXITSTATUS(st))
		die("%s (pid %d) exited %d", what, (int)pid, WEXITSTATUS(st));
}

static char self[4096];

/* This program again, in a new image: shared_matrix CHILD-ROLE served out
 * shadowfd worker [extra]. spawn: posix_spawn instead of fork + exec. */
static pid_t run_self(const char *child_role, int shadow_fd, int w,
		      const char *extra, int spawn)
{
	char fdstr[16], wstr[16];
	char *argv[] = { self, (char *)child_role, (char *)served, (char *)out,
			 fdstr, wstr, (char *)extra, NULL };
	pid_t pid;

	snprintf(fdstr, sizeof(fdstr), "%d", shadow_fd);
	snprintf(wstr, sizeof(wstr), "%d", w);
	if (spawn) {
		int r = posix_spawn(&pid, self, NULL, NULL, argv, environ);

		if (r)
			die("posix_spawn: %s", strerror(r));
		return pid;
	}
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		execv(self, argv);
		fprintf(stderr, "FAIL: exec %s: %s\n", self, strerror(errno));
		_exit(127);
	}
	return pid;
}

static int open_file(int i, int flags)
{
	char name[16];
	char *p;
	int fd;

	snprintf(name, sizeof(name), "f%d", i);
	p = P(served, name);
	fd = open(p, flags, 0644);
	if (fd < 0)
		die("open %s: %s", p, strerror(errno));
	free(p);
	return fd;
}

/* ---- overlap: random overlapping reads and writes from every kind of
 * process, each checked against the shadow under the lock ---- */

static uint8_t wbuf[65536 + 8], rbuf[FLEN + MAXOP];

static void check_range(int f, const uint8_t *got, ssize_t n, uint64_t off,
			size_t len, const char *how)
{
	uint64_t size = sh->size[f];
	size_t want = off >= size ? 0 : (size - off < len ? size - off : len);

	if (n != (ssize_t)want)
		die("f%d %s 0x%llx+%zu returned %zd (errno %s), want %zu", f,
		    how, (unsigned long long)off, len, n,
		    n < 0 ? strerror(errno) : "-", want);
	for (size_t i = 0; i < want; i++)
		if (got[i] != sh->data[f][off + i])
			die("f%d %s 0x%llx+%zu: byte at 0x%llx is %02x, the "
			    "latest acknowledged write left %02x (stale or "
			    "lost data)", f, how, (unsigned long long)off, len,
			    (unsigned long long)(off + i), got[i],
			    sh->data[f][off + i]);
}

static void check_size(int f, int fd, const char *when)
{
	struct stat st;
	char name[16];
	char *p;

	CHECK(fstat(fd, &st) == 0);
	if ((uint64_t)st.st_size != sh->size[f])
		die("f%d fstat size %lld after %s, want %llu", f,
		    (long long)st.st_size, when,
		    (unsigned long long)sh->size[f]);
	snprintf(name, sizeof(name), "f%d", f);
	p = P(served, name);
	CHECK(stat(p, &st) == 0);
	free(p);
	if ((uint64_t)st.st_size != sh->size[f])
		die("f%d stat(path) size %lld after %s, want %llu", f,
		    (long long)st.st_size, when,
		    (unsigned long long)sh->size[f]);
	if (lseek(fd, 0, SEEK_END) != (off_t)sh->size[f])
		die("f%d lseek SEEK_END after %s: not the size %llu", f, when,
		    (unsigned long long)sh->size[f]);
}

static void one_write(int f, int fd, uint64_t tag)
{
	size_t len = below(3) ? 1 + below(MAXOP) : (1 + below(8)) * 4096;
	uint64_t off = below(FLEN - len + 1);
	ssize_t n;
	int how = (int)below(3);

	if (below(3) == 0)
		off &= ~4095ull;
	fill(wbuf, len, tag, off);
	if (how == 0) {
		n = pwrite(fd, wbuf, len, (off_t)off);
	} else if (how == 1) {
		struct iovec v[2] = { { wbuf, len / 3 },
				      { wbuf + len / 3, len - len / 3 } };

		n = pwritev(fd, v, 2, (off_t)off);
	} else {
		CHECK(lseek(fd, (off_t)off, SEEK_SET) == (off_t)off);
		n = write(fd, wbuf, len);
	}
	if (n != (ssize_t)len)
		die("f%d write(%d) 0x%llx+%zu returned %zd (%s)", f, how,
		    (unsigned long long)off, len, n,
		    n < 0 ? strerror(errno) : "short");
	memcpy(sh->data[f] + off, wbuf, len);
	if (off + len > sh->size[f])
		sh->size[f] = off + len;
}

static void one_read(int f, int fd)
{
	size_t len = 1 + below(MAXOP);
	uint64_t off = below(sh->size[f] + 5000 < FLEN ? sh->size[f] + 5000 : FLEN);
	int how = (int)below(3);
	ssize_t n;

	if (how == 0) {
		n = pread(fd, rbuf, len, (off_t)off);
	} else if (how == 1) {
		struct iovec v[3] = { { rbuf, 1 + len / 5 },
				      { rbuf + 1 + len / 5, len / 2 },
				      { rbuf + 1 + len / 5 + len / 2,
					len - 1 - len / 5 - len / 2 } };

		n = preadv(fd, v, 3, (off_t)off);
	} else {
		CHECK(lseek(fd, (off_t)off, SEEK_SET) == (off_t)off);
		n = read(fd, rbuf, len);
	}
	check_range(f, rbuf, n, off, len, how == 0 ? "pread" :
		    how == 1 ? "preadv" : "read");
}

static void one_truncate(int f, int fd)
{
	uint64_t len = below(FLEN + 1), old = sh->size[f];

	if (below(2))
		len = len / 4;	/* keep files mostly non-empty */
	CHECK(ftruncate(fd, (off_t)len) == 0);
	if (len < old)
		memset(sh->data[f] + len, 0, old - len);
	sh->size[f] = len;
	check_size(f, fd, "ftruncate");
}

static void overlap_worker(int w, int fds[NF])
{
	who = w;
	rng = 0x1234567ull * (uint64_t)(w + 1);
	for (int op = 0; op < NOPS; op++) {
		int f = (int)below(NF), r = (int)below(100);

		lock();
		if (r < 45)
			one_write(f, fds[f], ((uint64_t)w << 32) | (uint64_t)op);
		else if (r < 85)
			one_read(f, fds[f]);
		else if (r < 90)
			check_size(f, fds[f], "a check");
		else if (r < 93)
			one_truncate(f, fds[f]);
		else if (r < 97)
			CHECK((r & 1 ? fsync(fds[f]) : fdatasync(fds[f])) == 0);
		else
			CHECK(sync_file_range(fds[f], (off_t)below(FLEN), 0,
					      SYNC_FILE_RANGE_WRITE) == 0);
		unlock();
		if (below(8) == 0)
			sched_yield();
	}
}

static void own_opens(int fds[NF])
{
	for (int f = 0; f < NF; f++)
		fds[f] = open_file(f, O_RDWR | O_CLOEXEC);
}

/* The whole of each file against the shadow, and the shadow written to
 * OUT/modelN for the check after the program (write-back, exact size). */
static void overlap_final(int fds[NF])
{
	for (int f = 0; f < NF; f++) {
		char name[16];
		char *p, *cmd;
		int m;

		lock();
		check_size(f, fds[f], "every worker");
		check_range(f, rbuf, pread(fds[f], rbuf, FLEN, 0), 0, FLEN,
			    "pread (final)");
		snprintf(name, sizeof(name), "model%d", f);
		p = P(out, name);
		m = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CHECK(m >= 0);
		CHECK(write(m, sh->data[f], sh->size[f]) == (ssize_t)sh->size[f]);
		CHECK(close(m) == 0);
		/* a shell and cat, exec'd by system(), read it through the
		 * holder: the parent's dirty blocks included */
		CHECK(asprintf(&cmd, "cat '%s/f%d' | cmp - '%s'", served, f,
			       p) > 0);
		if (system(cmd) != 0)
			die("f%d: cat (under system()) does not read what the "
			    "program wrote", f);
		free(cmd);
		free(p);
		unlock();
	}
}

static void overlap(int shadow_fd)
{
	int fds[NF];
	pid_t pids[NWORK];

	for (int f = 0; f < NF; f++) {
		fds[f] = open_file(f, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC);
		fill(wbuf, 65536 - 100 * f, 99 + f, 0);
		CHECK(write(fds[f], wbuf, 65536 - 100 * f) == 65536 - 100 * f);
		memcpy(sh->data[f], wbuf, 65536 - 100 * f);
		sh->size[f] = 65536 - 100 * f;
	}
	/* worker 1 forked, the parent's descriptors (fork-shared OFDs) */
	pids[1] = forked();
	if (!pids[1]) {
		overlap_worker(1, fds);
		exit(0);
	}
	/* worker 2 forked, opens of its own */
	pids[2] = forked();
	if (!pids[2]) {
		int own[NF];

		own_opens(own);
		overlap_worker(2, own);
		exit(0);
	}
	pids[3] = run_self("child-overlap", shadow_fd, 3, "", 0);
	pids[4] = run_self("child-overlap", shadow_fd, 4, "", 1);
	overlap_worker(0, fds);
	for (int w = 1; w < NWORK; w++)
		reap(pids[w], w == 3 ? "the exec'd worker" :
		     w == 4 ? "the spawned worker" : "a forked worker");
	overlap_final(fds);
	printf("PASS: overlap: %d workers (parent, 2 forked, exec'd, spawned) x "
	       "%d operations on %d files, every read the latest write\n",
	       NWORK, NOPS, NF);
}

/* ---- position: a fork-shared (and dup'd) description shares the
 * position and the flags; an open of one's own does not ---- */

static void wait_turn(int t)
{
	for (int i = 0; sh->turn != t; i++) {
		if (sh->failed)
			exit(1);
		if (i > 20000)
			die("waited 20 s for turn %d", t);
		usleep(1000);
	}
}

static void expect_bytes(int fd, size_t len, const char *want)
{
	char b[256];

	CHECK(len <= sizeof(b));
	ssize_t n = read(fd, b, len);

	if (n != (ssize_t)len || memcmp(b, want, len))
		die("read %zu at the shared position returned %zd, not the "
		    "expected bytes", len, n);
}

static void position(void)
{
	char a[100], b[50], c[10], all[160];
	int fd = open_file(0, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC), fd2, fd3;
	pid_t pid;

	memset(a, 'A', sizeof(a));
	memset(b, 'B', sizeof(b));
	memset(c, 'C', sizeof(c));
	memcpy(all, a, 100);
	memcpy(all + 100, b, 50);
	memcpy(all + 150, c, 10);
	fd2 = dup(fd);
	CHECK(fd2 >= 0);
	pid = forked();
	if (!pid) {
		who = 1;
		CHECK(write(fd, a, 100) == 100);
		CHECK(lseek(fd, 0, SEEK_CUR) == 100);
		sh->turn = 1;
		wait_turn(2);
		if (lseek(fd, 0, SEEK_CUR) != 150)
			die("child: position %lld after the parent's write "
			    "through the shared description, want 150",
			    (long long)lseek(fd, 0, SEEK_CUR));
		CHECK(lseek(fd, 0, SEEK_SET) == 0);
		expect_bytes(fd, 150, all);
		CHECK(fcntl(fd, F_SETFL, O_APPEND) == 0);
		sh->turn = 3;
		wait_turn(4);
		if (lseek(fd, 0, SEEK_CUR) != 160)
			die("child: position %lld after the parent's append, "
			    "want 160", (long long)lseek(fd, 0, SEEK_CUR));
		CHECK(lseek(fd, -10, SEEK_END) == 150);
		expect_bytes(fd, 10, c);
		exit(0);
	}
	wait_turn(1);
	if (lseek(fd, 0, SEEK_CUR) != 100)
		die("parent: position %lld after the child's write() of 100 "
		    "bytes through the fork-shared description, want 100",
		    (long long)lseek(fd, 0, SEEK_CUR));
	if (lseek(fd2, 0, SEEK_CUR) != 100)
		die("parent: the dup's position is not the description's");
	CHECK(write(fd2, b, 50) == 50);
	sh->turn = 2;
	wait_turn(3);
	if (!(fcntl(fd, F_GETFL) & O_APPEND))
		die("parent: O_APPEND set by the child (F_SETFL on the shared "
		    "description) is not seen by F_GETFL");
	CHECK(lseek(fd, 0, SEEK_SET) == 0);
	CHECK(write(fd, c, 10) == 10);	/* appends: at 150 */
	if (lseek(fd, 0, SEEK_CUR) != 160)
		die("parent: position %lld after an O_APPEND write, want 160",
		    (long long)lseek(fd, 0, SEEK_CUR));
	fd3 = open_file(0, O_RDWR | O_CLOEXEC);
	if (lseek(fd3, 0, SEEK_CUR) != 0 || (fcntl(fd3, F_GETFL) & O_APPEND))
		die("parent: a new open shares the other description's "
		    "position or flags");
	expect_bytes(fd3, 160, all);
	CHECK(fcntl(fd, F_SETFL, 0) == 0);
	sh->turn = 4;
	reap(pid, "the child");
	if (fcntl(fd2, F_GETFL) & O_APPEND)
		die("parent: F_SETFL(0) did not clear O_APPEND for the dup");
	CHECK(close(fd) == 0 && close(fd2) == 0 && close(fd3) == 0);
	printf("PASS: position: fork and dup share the position and flags, "
	       "a new open has its own\n");
}

/* ---- append: NAPPW processes append records with O_APPEND ---- */

struct arec {
	uint64_t magic, who, seq, len;
};

static void append_writer(int w, int fd)
{
	static uint8_t b[8192];

	who = w;
	rng = 777ull * (uint64_t)(w + 1);
	for (uint64_t s = 0; s < NAPP; s++) {
		size_t len = sizeof(struct arec) + 32 + below(6000);
		struct arec h = { AMAGIC, (uint64_t)w, s, len };
		ssize_t n;

		fill(b, len, ((uint64_t)w << 32) | s, 0);
		memcpy(b, &h, sizeof(h));
		n = write(fd, b, len);
		if (n != (ssize_t)len)
			die("append %llu of %zu bytes returned %zd (%s)",
			    (unsigned long long)s, len, n,
			    n < 0 ? strerror(errno) : "short");
		if (sh->failed)
			exit(1);
	}
}

/* Every record once, intact, each writer's in order; size = their sum. */
static int verify_append(const char *what)
{
	static uint8_t b[8192], want[8192];
	uint64_t next[NAPPW] = { 0 }, off = 0;
	int fd = open_file(0, O_RDONLY);
	struct stat st;

	for (;;) {
		struct arec h;
		ssize_t n = pread(fd, &h, sizeof(h), (off_t)off);

		if (n == 0)
			break;
		if (n != sizeof(h) || h.magic != AMAGIC || h.who >= NAPPW ||
		    h.len > sizeof(b) || h.len < sizeof(h))
			die("%s: no record header at offset %llu (a torn, "
			    "overlapped or lost append)", what,
			    (unsigned long long)off);
		if (h.seq != next[h.who])
			die("%s: writer %llu's record %llu at %llu, want its "
			    "record %llu (lost or doubled)", what,
			    (unsigned long long)h.who, (unsigned long long)h.seq,
			    (unsigned long long)off,
			    (unsigned long long)next[h.who]);
		CHECK(pread(fd, b, h.len, (off_t)off) == (ssize_t)h.len);
		fill(want, h.len, (h.who << 32) | h.seq, 0);
		if (memcmp(b + sizeof(h), want + sizeof(h), h.len - sizeof(h)))
			die("%s: record %llu of writer %llu at %llu: payload "
			    "overwritten", what, (unsigned long long)h.seq,
			    (unsigned long long)h.who, (unsigned long long)off);
		next[h.who]++;
		off += h.len;
	}
	for (int w = 0; w < NAPPW; w++)
		if (next[w] != NAPP)
			die("%s: writer %d has %llu records, want %d", what, w,
			    (unsigned long long)next[w], NAPP);
	CHECK(fstat(fd, &st) == 0);
	if ((uint64_t)st.st_size != off)
		die("%s: size %lld, the records end at %llu", what,
		    (long long)st.st_size, (unsigned long long)off);
	close(fd);
	printf("PASS: %s: %d writers x %d O_APPEND records, each once and "
	       "intact, size %llu\n", what, NAPPW, NAPP,
	       (unsigned long long)off);
	return 0;
}

static void append(int shadow_fd)
{
	int fd = open_file(0, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND |
			   O_CLOEXEC);
	pid_t p1, p2, p3;

	p1 = forked();		/* the parent's description */
	if (!p1) {
		append_writer(1, fd);
		exit(0);
	}
	p2 = forked();		/* a description of its own */
	if (!p2) {
		append_writer(2, open_file(0, O_WRONLY | O_APPEND));
		exit(0);
	}
	p3 = run_self("child-append", shadow_fd, 3, "", 0);
	append_writer(0, fd);
	reap(p1, "writer 1");
	reap(p2, "writer 2");
	reap(p3, "writer 3 (exec'd)");
	verify_append("append (in the program)");
}

/* ---- kill: a writer SIGKILLed loses nothing it was acknowledged ---- */

static void record(uint64_t i, uint8_t *b)
{
	fill(b, REC, 0xdead0000ull + i, i * REC);
}

static void kill_writer(void)
{
	uint8_t b[REC];
	int fd = open_file(0, O_WRONLY | O_CREAT | O_TRUNC);

	for (uint64_t i = 0; i < 200000; i++) {
		record(i, b);
		if (pwrite(fd, b, REC, (off_t)(i * REC)) != REC)
			die("writer: pwrite %llu: %s", (unsigned long long)i,
			    strerror(errno));
		sh->acked = i + 1;
	}
	die("writer: not killed");
}

static uint64_t verify_records(uint64_t n, const char *what)
{
	uint8_t b[REC], g[REC];
	int fd = open_file(0, O_RDONLY);

	for (uint64_t i = 0; i < n; i++) {
		record(i, b);
		if (pread(fd, g, REC, (off_t)(i * REC)) != REC ||
		    memcmp(b, g, REC))
			die("%s: acknowledged record %llu of %llu lost",
			    what, (unsigned long long)i, (unsigned long long)n);
	}
	close(fd);
	return n;
}

static void kill_one(int shadow_fd, int exec)
{
	uint64_t acked;
	pid_t pid;
	int st, i;

	sh->acked = 0;
	if (exec) {
		pid = run_self("child-kill", shadow_fd, 1, "", 0);
	} else {
		pid = forked();
		if (!pid)
			kill_writer();
	}
	for (i = 0; sh->acked < 300; i++) {
		if (i > 3000)
			die("the writer acknowledged %llu records in 30 s",
			    (unsigned long long)sh->acked);
		if (waitpid(pid, &st, WNOHANG) == pid)
			die("the writer died before it was killed (status %d)",
			    st);
		usleep(10000);
	}
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	acked = sh->acked;
	verify_records(acked, exec ? "kill (exec'd writer, read in the program)" :
		       "kill (forked writer, read in the program)");
	printf("ok: %s writer SIGKILLed after %llu acknowledged records: "
	       "all read back by another process\n", exec ? "exec'd" : "forked",
	       (unsigned long long)acked);
}

static void kill_role(int shadow_fd)
{
	char *p;
	FILE *f;

	kill_one(shadow_fd, 0);
	kill_one(shadow_fd, 1);
	p = P(out, "kill.acked");
	f = fopen(p, "w");
	CHECK(f);
	fprintf(f, "%llu\n", (unsigned long long)sh->acked);
	CHECK(fclose(f) == 0);
	free(p);
	printf("PASS: kill: nothing acknowledged lost by a SIGKILLed writer\n");
}

/* ---- holderkill: the holder SIGKILLed: EIO, never success ---- */

/* The holder's pid: from its address (@wtio-holder-<pid>-<random>), else
 * from the listening socket's peer credentials. */
static pid_t holder_pid(void)
{
	const char *h = getenv("WTIO_HOLDER");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	int s, n;

	if (!h || h[0] != '@')
		die("no WTIO_HOLDER=@... in the environment: not under "
		    "wtio-run --shared");
	if (sscanf(h, "@wtio-holder-%d-", &n) == 1 && n > 1)
		return n;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	strncpy(sa.sun_path + 1, h + 1, sizeof(sa.sun_path) - 2);
	CHECK(connect(s, (struct sockaddr *)&sa, (socklen_t)
		      (offsetof(struct sockaddr_un, sun_path) + strlen(h))) == 0);
	CHECK(getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0);
	close(s);
	return cr.pid;
}

static int gone(pid_t pid)
{
	char p[64], st[512];
	FILE *f;
	char *c;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	f = fopen(p, "r");
	if (!f)
		return 1;
	c = fgets(st, sizeof(st), f) ? strrchr(st, ')') : NULL;
	fclose(f);
	return c && (c[2] == 'Z' || c[2] == 'X');
}

/* Every call on a served descriptor after the holder died is EIO. */
static void expect_eio(int fd, const char *who_)
{
	char b[4096];
	struct iovec v = { b, sizeof(b) };

	memset(b, 'x', sizeof(b));
#define EIO_CHECK(call) do { errno = 0; long r_ = (long)(call);		\
	if (r_ != -1 || errno != EIO)					\
		die("%s: %s after the holder died returned %ld (errno %s), " \
		    "want -1 EIO", who_, #call, r_, strerror(errno));	\
	} while (0)
	/* first, before any call could tell the client: the ones a client
	 * answers from the holder's shared page (wtio-run marks it dead) */
	EIO_CHECK(lseek(fd, 5, SEEK_SET));
	EIO_CHECK(lseek(fd, 0, SEEK_END));
	{
		struct stat st;

		EIO_CHECK(fstat(fd, &st));
	}
	EIO_CHECK(pread(fd, b, sizeof(b), 0));
	EIO_CHECK(read(fd, b, sizeof(b)));
	EIO_CHECK(preadv(fd, &v, 1, 4096));
	EIO_CHECK(pwrite(fd, b, sizeof(b), 0));
	EIO_CHECK(write(fd, b, sizeof(b)));
	EIO_CHECK(fsync(fd));
	EIO_CHECK(fdatasync(fd));
	EIO_CHECK(ftruncate(fd, 100));
	EIO_CHECK(lseek(fd, 0, SEEK_END));
	EIO_CHECK(open(P(served, "f0"), O_RDONLY));
	EIO_CHECK(open(P(served, "new"), O_RDWR | O_CREAT, 0644));
#undef EIO_CHECK
}

static void holderkill(void)
{
	int fd = open_file(0, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC);
	pid_t h = holder_pid(), child;
	int i;

	fill(wbuf, 65536, 5, 0);
	CHECK(pwrite(fd, wbuf, 65536, 0) == 65536);
	CHECK(pread(fd, rbuf, 65536, 0) == 65536 && !memcmp(rbuf, wbuf, 65536));
	/* the shared page mapped (a seek answered from it) before the death */
	CHECK(lseek(fd, 0, SEEK_END) == 65536);
	child = forked();
	if (!child) {
		who = 1;
		CHECK(pread(fd, rbuf, 100, 0) == 100);	/* connected */
		CHECK(lseek(fd, 0, SEEK_END) == 65536);
		while (!sh->go)
			usleep(1000);
		expect_eio(fd, "forked child");
		exit(0);
	}
	usleep(100000);
	CHECK(kill(h, SIGKILL) == 0);
	for (i = 0; !gone(h); i++) {
		if (i > 1000)
			die("the holder (pid %d) is still alive 10 s after "
			    "SIGKILL", (int)h);
		usleep(10000);
	}
	/* reaped: wtio-run has marked the shared page dead before that */
	for (i = 0; kill(h, 0) == 0; i++) {
		if (i > 1000)
			die("the holder (pid %d) is not reaped 10 s after its "
			    "SIGKILL", (int)h);
		usleep(10000);
	}
	sh->go = 1;
	expect_eio(fd, "parent");
	reap(child, "the forked child");
	printf("PASS: holderkill: after the holder's SIGKILL every call on a "
	       "served descriptor and every open of a served path is EIO\n");
}

/* ---- execinherit: descriptors inherited by an exec'd image are handed
 * to the kernel first, positioned; the data stays coherent ---- */

static void execinherit(int shadow_fd)
{
	int fd = open_file(0, O_RDWR | O_CREAT | O_TRUNC);	/* inherited */
	int g = open_file(1, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC);
	char fdarg[16], *cmd, *model;
	pid_t pid;
	int m;

	fill(wbuf, 8000, 21, 0);
	CHECK(write(fd, wbuf, 8000) == 8000);
	CHECK(lseek(fd, 1000, SEEK_SET) == 1000);
	fill(wbuf, 9000, 22, 0);
	CHECK(pwrite(g, wbuf, 9000, 0) == 9000);
	snprintf(fdarg, sizeof(fdarg), "%d", fd);
	pid = run_self("child-execinherit", shadow_fd, 1, fdarg, 0);
	reap(pid, "the exec'd child");
	/* the child read 7000 and wrote 500 on the same description */
	if (lseek(fd, 0, SEEK_CUR) != 8500)
		die("parent: position %lld after the exec'd child's read and "
		    "write on the inherited descriptor, want 8500",
		    (long long)lseek(fd, 0, SEEK_CUR));
	fill(wbuf, 8000, 21, 0);
	fill(wbuf + 8000, 500, 23, 8000);
	CHECK(pread(fd, rbuf, 9000, 0) == 8500 && !memcmp(rbuf, wbuf, 8500));
	/* a shell's cat reading the inherited descriptor from its position */
	CHECK(lseek(fd, 2000, SEEK_SET) == 2000);
	model = P(out, "exec.model");
	m = open(model, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(m >= 0 && write(m, wbuf + 2000, 6500) == 6500 && close(m) == 0);
	CHECK(asprintf(&cmd, "cat <&%d | cmp - '%s'", fd, model) > 0);
	if (system(cmd))
		die("cat <&fd under system() did not read the file from the "
		    "inherited position");
	if (lseek(fd, 0, SEEK_CUR) != 8500)
		die("parent: position %lld after cat read to the end of the "
		    "shared description, want 8500",
		    (long long)lseek(fd, 0, SEEK_CUR));
	/* the close-on-exec file stayed served: its dirty data through a
	 * new image's open */
	fill(wbuf, 9000, 22, 0);
	m = open(model, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(m >= 0 && write(m, wbuf, 9000) == 9000 && close(m) == 0);
	free(cmd);
	CHECK(asprintf(&cmd, "cmp '%s/f1' '%s'", served, model) > 0);
	if (system(cmd))
		die("cmp (exec'd) does not read the close-on-exec file's data");
	free(cmd);
	free(model);
	CHECK(close(fd) == 0 && close(g) == 0);
	printf("PASS: execinherit: an inherited descriptor is the kernel's, "
	       "positioned, shared with the new image; the other file stays "
	       "coherent\n");
}

static void child_execinherit(int fd)
{
	uint8_t want[8000];

	who = 1;
	fill(want, 8000, 21, 0);
	if (lseek(fd, 0, SEEK_CUR) != 1000)
		die("exec'd child: inherited position %lld, want 1000",
		    (long long)lseek(fd, 0, SEEK_CUR));
	CHECK(read(fd, rbuf, 7000) == 7000);
	if (memcmp(rbuf, want + 1000, 7000))
		die("exec'd child: the inherited descriptor reads stale data "
		    "(the parent's write-back data lost at exec)");
	fill(wbuf, 500, 23, 8000);
	CHECK(write(fd, wbuf, 500) == 500);
	exit(0);
}

/* ---- write-pause: 1 MiB with write() (and fsync), then wait to be
 * killed ---- */

static void write_pause(const char *file, const char *ready, bool sync)
{
	const char *h = getenv("WTIO_HOLDER");
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	FILE *r;

	CHECK(fd >= 0);
	for (int i = 0; i < 16; i++) {
		fill(wbuf, 65536, 1, (uint64_t)i * 65536);
		CHECK(write(fd, wbuf, 65536) == 65536);
	}
	if (sync)
		CHECK(fsync(fd) == 0);
	r = fopen(ready, "w");
	CHECK(r);
	fprintf(r, "%d %s\n", (int)getpid(), h ? h : "-");
	CHECK(fclose(r) == 0);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	int shadow_fd = -1;
	ssize_t n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(180);	/* nothing waits forever */
	if (argc == 3 && !strcmp(argv[1], "pattern")) {
		uint64_t len = strtoull(argv[2], NULL, 0);

		for (uint64_t off = 0; off < len; off += 65536) {
			size_t l = len - off < 65536 ? len - off : 65536;

			fill(wbuf, l, 1, off);
			CHECK(fwrite(wbuf, 1, l, stdout) == l);
		}
		return 0;
	}
	if ((argc == 4 || (argc == 5 && !strcmp(argv[4], "fsync"))) &&
	    !strcmp(argv[1], "write-pause"))
		write_pause(argv[2], argv[3], argc == 5);
	if (argc < 4) {
		fprintf(stderr, "usage: shared_matrix ROLE SERVED OUT\n");
		return 2;
	}
	role = argv[1];
	served = argv[2];
	out = argv[3];
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(n > 0);
	self[n] = 0;
	if (!strncmp(role, "child-", 6)) {
		/* an exec'd image: shadow descriptor and worker number */
		CHECK(argc >= 6);
		shadow_attach(atoi(argv[4]));
		who = atoi(argv[5]);
		if (!strcmp(role, "child-overlap")) {
			int fds[NF];

			own_opens(fds);
			overlap_worker(who, fds);
		} else if (!strcmp(role, "child-append")) {
			append_writer(who, open_file(0, O_WRONLY | O_APPEND));
		} else if (!strcmp(role, "child-kill")) {
			kill_writer();
		} else if (!strcmp(role, "child-execinherit")) {
			CHECK(argc == 7);
			child_execinherit(atoi(argv[6]));
		} else {
			die("unknown child role");
		}
		return 0;
	}
	if (!strcmp(role, "verify-append"))
		return verify_append("append (on disk, after the program)");
	if (!strcmp(role, "verify-kill")) {
		char *p = P(out, "kill.acked");
		FILE *f = fopen(p, "r");
		unsigned long long a;

		CHECK(f && fscanf(f, "%llu", &a) == 1);
		verify_records(a, "kill (on disk, after the program)");
		printf("PASS: kill: %llu acknowledged records on disk after the "
		       "program\n", a);
		return 0;
	}
	shadow_fd = shadow_create();
	if (!strcmp(role, "overlap"))
		overlap(shadow_fd);
	else if (!strcmp(role, "position"))
		position();
	else if (!strcmp(role, "append"))
		append(shadow_fd);
	else if (!strcmp(role, "kill"))
		kill_role(shadow_fd);
	else if (!strcmp(role, "holderkill"))
		holderkill();
	else if (!strcmp(role, "execinherit"))
		execinherit(shadow_fd);
	else
		die("unknown role");
	return 0;
}
