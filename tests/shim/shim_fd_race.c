/* SPDX-License-Identifier: MIT */
/*
 * shim_fd_race.c - under wtio-run (the per-process shim), threads doing
 * pread/pwrite on a descriptor number while another thread closes it and
 * opens something else that lands on the same number: a served file
 * (O_TRUNC, then new data through the cache), a file outside the paths,
 * a pipe, /dev/zero (REVIEW A7). Every result must be one the kernel
 * could give: the old file's (the call came before the close), EBADF
 * (between the close and the next open), or the new one's (ESPIPE on the
 * pipe); never EINVAL from the served description's O_DIRECT (the shim's
 * close left the number naming it, unserved, while it wrote the file
 * back; an open set O_DIRECT before it served the number), never the
 * I/O of the shim's own hidden descriptors, and every byte read from a
 * file the number named at some point during the call, in the version
 * it had then (or the one before, which the shim's own O_TRUNC open
 * shows until it serves the number: a known limit).
 *
 * "high" first opens 110 descriptors, so that the numbers raced on sit
 * among the shim's own (SHIM_FD_BASE = 100 and up).
 *
 * Usage: shim_fd_race SERVED_DIR OUTSIDE_FILE SECONDS [high]
 * Exit 0 pass, 1 fail.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NSERVED	3
#define WORKERS	3
#define REC	8		/* bytes of a record of a served file */
#define DATA	(64 * 1024)	/* records from 0 */
#define RD_OFF	8		/* reads: 12 records, not aligned */
#define RD_LEN	96
#define WR_OFF	100003		/* writes: past the records */

static const char *dir, *outside;
static atomic_int cur = -1;		/* the number raced on */
/* and a pipe's write end, left stale after its close: among the shim's
 * own numbers ("high") the next served open's hidden descriptors would
 * take it */
static atomic_int cur2 = -1;
static atomic_uint gen[NSERVED];	/* the data version of each file */
/* The closer's writes of a served file's new data, numbered k = 0, 1...:
 * odd (2k + 1) while write k is under way. Before it goes odd, write k's
 * record and whether the kernel makes it (the description not served:
 * its lease broken) are in slot k % WSLOTS. */
#define WSLOTS 4
static atomic_uint writing;
static _Atomic uint64_t wrec[WSLOTS];
static atomic_bool wkernel[WSLOTS];
static atomic_bool stop;
/* Rounds of the closer: a call that took longer than STALE_ROUNDS of
 * them (a thread kept off the CPU) used a number closed long before, past
 * the 64 closes the shim keeps its own descriptors off: not counted. */
#define STALE_ROUNDS 16
static atomic_long round_no, stale;
static atomic_long ops, bad, results[8];
static char first_bad[256];
static pthread_mutex_t bad_lock = PTHREAD_MUTEX_INITIALIZER;

enum { R_DATA, R_EBADF, R_ESPIPE, R_EOF, R_ZERO, R_OUT, R_WROTE, R_TORN };

static void report(const char *fmt, long a, long b, long c)
{
	pthread_mutex_lock(&bad_lock);
	if (!atomic_fetch_add(&bad, 1))
		snprintf(first_bad, sizeof(first_bad), fmt, a, b, c);
	pthread_mutex_unlock(&bad_lock);
}

/* What the number names now, for the message (a few of them). */
static void say(int n, const char *call, int err)
{
	static atomic_int said;
	char pp[64], link[256] = "?";
	ssize_t l;

	if (atomic_fetch_add(&said, 1) >= 5)
		return;
	snprintf(pp, sizeof(pp), "/proc/self/fd/%d", n);
	l = readlink(pp, link, sizeof(link) - 1);
	if (l > 0)
		link[l] = 0;
	fprintf(stderr, "shim_fd_race: %s on fd %d: %s; it names %s now, flags %#x\n",
		call, n, strerror(err), link, fcntl(n, F_GETFL));
}

static uint64_t rec(int i, unsigned int g)
{
	return (0x53ULL << 56) | ((uint64_t)i << 40) | g;
}

/*
 * The description's own flags, past the shim: it interposes every libc
 * way to fcntl (syscall(2) included) and hides the O_DIRECT it sets on
 * what wtio serves; and an open of /proc/self/fdinfo would land on a
 * number the workers race on. -1 where this architecture has no raw
 * call here.
 */
static long raw_getfl(int fd)
{
	long r = -1;

#if defined(__x86_64__)
	__asm__ volatile("syscall" : "=a"(r)
			 : "a"(72L /* fcntl */), "D"((long)fd), "S"((long)F_GETFL)
			 : "rcx", "r11", "memory");
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = 25;	/* fcntl */
	register long x0 __asm__("x0") = fd;
	register long x1 __asm__("x1") = F_GETFL;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1) : "memory");
	r = x0;
#else
	(void)fd;
#endif
	return r;
}

/* Whether the kernel serves fd's I/O itself: its description has no
 * O_DIRECT, which wtio sets on every description it serves. Unknown
 * (no raw call, an error): not the kernel's, and no tear is allowed. */
static bool fd_kernel(int fd)
{
	long fl = raw_getfl(fd);

	return fl >= 0 && !(fl & O_DIRECT);
}

/* Every word of a wrong read, the versions around it and what the
 * number names now: what the one-line report cannot tell. */
static void say_words(int n, const uint64_t *w, const unsigned int *g0,
		      const unsigned int *g1)
{
	char line[512];
	int k, len = 0;

	for (k = 0; k < RD_LEN / REC && len < (int)sizeof(line) - 20; k++)
		len += snprintf(line + len, sizeof(line) - (size_t)len,
				" %#llx", (unsigned long long)w[k]);
	fprintf(stderr, "shim_fd_race: words:%s\n", line);
	for (k = 0; k < NSERVED; k++)
		fprintf(stderr, "shim_fd_race: file %d: version %u before the call, %u after\n",
			k, g0[k], g1[k]);
	fprintf(stderr, "shim_fd_race: fd %d's description now: flags %#lx (O_DIRECT: wtio serves it)\n",
		n, raw_getfl(n));
	say(n, "pread (wrong data)", 0);
}

/*
 * A read that overlapped the closer's write of a file the kernel serves
 * (the shim passed it through: its lease broken) may see that write's
 * data in part and the zeros it replaces in part: on ext4 a read copies
 * an uptodate page while a write copies into it, with no lock between
 * them, so a read of 96 bytes can end in zeros part way (seen here on
 * Linux 6.18 with no shim at all; XFS and tmpfs never do it). That one
 * mix is allowed, and only there: exactly one write overlapped the call
 * (ws0..ws1), the kernel made it, and every word is its record or zero,
 * both present.
 * A mix on a description wtio serves still fails: wtio's cache never
 * tears a read so.
 */
static bool torn_by_write(const uint64_t *w, unsigned int ws0,
			  unsigned int ws1)
{
	unsigned int k = ws0 / 2;	/* the write under way at ws0, or
					 * the next one */
	uint64_t want;
	bool nonzero = false, zero = false;
	int i;

	if ((ws0 & 1) ? ws1 - ws0 > 1 : ws1 - ws0 - 1 > 1)
		return false;
	want = atomic_load(&wrec[k % WSLOTS]);
	if (!atomic_load(&wkernel[k % WSLOTS]) ||
	    atomic_load(&writing) >= 2 * (k + WSLOTS))	/* slot reused */
		return false;
	for (i = 0; i < RD_LEN / REC; i++) {
		if (w[i] && w[i] != want)
			return false;
		nonzero |= w[i] != 0;
		zero |= w[i] == 0;
	}
	return nonzero && zero;
}

static void check_read(int n, ssize_t r, int err, const uint64_t *w,
		       const unsigned int *g0, const unsigned int *g1,
		       unsigned int ws0, unsigned int ws1)
{
	int i, k;

	if (r < 0) {
		if (err == EBADF)
			atomic_fetch_add(&results[R_EBADF], 1);
		else if (err == ESPIPE)
			atomic_fetch_add(&results[R_ESPIPE], 1);
		else
			report("pread on fd %ld: errno %ld", n, err, 0);
		if (err != EBADF && err != ESPIPE)
			say(n, "pread", err);
		return;
	}
	if (r == 0) {		/* a served file between O_TRUNC and data */
		atomic_fetch_add(&results[R_EOF], 1);
		return;
	}
	if (r != RD_LEN) {
		report("pread on fd %ld: %ld bytes, want %ld", n, (long)r,
		       RD_LEN);
		return;
	}
	if (torn_by_write(w, ws0, ws1)) {
		atomic_fetch_add(&results[R_TORN], 1);
		return;
	}
	for (k = 1; k < RD_LEN / REC; k++)
		if (w[k] != w[0]) {
			report("pread on fd %ld: a mix of two files' data (word %ld is %#lx)",
			       n, k, (long)w[k]);
			say_words(n, w, g0, g1);
			return;
		}
	if (w[0] == 0) {
		atomic_fetch_add(&results[R_ZERO], 1);
		return;
	}
	if (w[0] == 0x5a5a5a5a5a5a5a5aULL) {
		atomic_fetch_add(&results[R_OUT], 1);
		return;
	}
	i = (int)((w[0] >> 40) & 0xffff);
	if ((w[0] >> 56) != 0x53 || i >= NSERVED) {
		report("pread on fd %ld: bytes from no file (%#lx)", n,
		       (long)w[0], 0);
		return;
	}
	/* g0 - 1: the shim opens without O_TRUNC and truncates when it
	 * serves the number; a call racing that window sees the file as the
	 * kernel has it (docs/SHIM.md, Limits) */
	if ((unsigned int)(w[0] & 0xffffffffu) + 1 < g0[i] ||
	    (unsigned int)(w[0] & 0xffffffffu) > g1[i]) {
		report("pread on fd %ld: file %ld's data of version %ld, which an O_TRUNC open threw away before the call (read past the cache)",
		       n, i, (long)(w[0] & 0xffffffffu));
		return;
	}
	atomic_fetch_add(&results[R_DATA], 1);
}

static void *worker(void *arg)
{
	long id = (long)arg, n_ops = 0;
	char wbuf[64];
	union {
		uint64_t w[RD_LEN / REC + 1];
		char c[RD_LEN + 16];
	} u;

	memset(wbuf, 'W', sizeof(wbuf));
	while (!atomic_load(&stop)) {
		unsigned int g0[NSERVED], g1[NSERVED], ws0, ws1;
		long rd = atomic_load(&round_no);
		int n = atomic_load(&cur), i, err;
		ssize_t r;

		if ((n_ops & 1) && atomic_load(&cur2) >= 0)
			n = atomic_load(&cur2);
		if (n < 0)
			continue;
		if ((n_ops + id) % 3 == 2) {
			r = pwrite(n, wbuf + 1, 50, WR_OFF);
			err = errno;
			if (atomic_load(&round_no) > rd + STALE_ROUNDS)
				atomic_fetch_add(&stale, 1);
			else if (r == 50)
				atomic_fetch_add(&results[R_WROTE], 1);
			else if (r < 0 && err == EBADF)
				atomic_fetch_add(&results[R_EBADF], 1);
			else if (r < 0 && err == ESPIPE)
				atomic_fetch_add(&results[R_ESPIPE], 1);
			else
				report("pwrite on fd %ld: %ld, errno %ld", n,
				       (long)r, r < 0 ? err : 0);
			if (r < 0 && err != EBADF && err != ESPIPE)
				say(n, "pwrite", err);
		} else {
			for (i = 0; i < NSERVED; i++)
				g0[i] = atomic_load(&gen[i]);
			ws0 = atomic_load(&writing);
			/* the buffer misaligned too: O_DIRECT refuses it */
			r = pread(n, (char *)u.w, RD_LEN, RD_OFF);
			err = errno;
			ws1 = atomic_load(&writing);
			for (i = 0; i < NSERVED; i++)
				g1[i] = atomic_load(&gen[i]);
			if (atomic_load(&round_no) > rd + STALE_ROUNDS)
				atomic_fetch_add(&stale, 1);
			else
				check_read(n, r, err, u.w, g0, g1, ws0, ws1);
		}
		n_ops++;
		atomic_fetch_add(&ops, 1);
	}
	return NULL;
}

static int die(const char *what)
{
	fprintf(stderr, "FAIL: shim_fd_race: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Let the workers make a few calls on the number. */
static void hammer(void)
{
	long start = atomic_load(&ops);
	int spins = 0;

	while (atomic_load(&ops) < start + 4 && spins++ < 20000)
		sched_yield();
}

int main(int argc, char **argv)
{
	pthread_t t[WORKERS];
	uint64_t *data = malloc(DATA);
	char path[4096];
	long rounds = 0, i, k;
	time_t end;
	int fd, pfd[2];

	if (argc < 4 || !data) {
		fprintf(stderr, "usage: shim_fd_race SERVED_DIR OUTSIDE_FILE SECONDS [high]\n");
		return 1;
	}
	dir = argv[1];
	outside = argv[2];
	end = time(NULL) + atoi(argv[3]);
	if (argc > 4 && !strcmp(argv[4], "high"))
		for (i = 0; i < 110; i++)
			if (open("/dev/null", O_RDONLY) < 0)
				die("open /dev/null");
	for (i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	while (time(NULL) < end) {
		int kind = (int)(rounds % 6);

		switch (kind) {
		case 0: case 2: case 4:		/* a served file */
			i = (rounds / 2) % NSERVED;
			snprintf(path, sizeof(path), "%s/f%ld", dir, i);
			atomic_fetch_add(&gen[i], 1);
			fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
			if (fd < 0)
				die(path);
			for (k = 0; k < DATA / REC; k++)
				data[k] = rec((int)i, atomic_load(&gen[i]));
			k = atomic_load(&writing) / 2;
			atomic_store(&wrec[k % WSLOTS], data[0]);
			atomic_store(&wkernel[k % WSLOTS], fd_kernel(fd));
			atomic_fetch_add(&writing, 1);
			if (pwrite(fd, data, DATA, 0) != DATA)
				die("pwrite of a served file");
			atomic_fetch_add(&writing, 1);
			atomic_store(&cur, fd);
			hammer();
			break;
		case 1:
			fd = open(outside, O_RDWR);
			if (fd < 0)
				die(outside);
			atomic_store(&cur, fd);
			hammer();
			break;
		case 3:
			if (pipe(pfd) < 0)
				die("pipe");
			fd = pfd[0];
			atomic_store(&cur, fd);
			atomic_store(&cur2, pfd[1]);
			hammer();
			close(pfd[1]);
			break;
		default:
			fd = open("/dev/zero", O_RDWR);
			if (fd < 0)
				die("/dev/zero");
			atomic_store(&cur, fd);
			hammer();
			break;
		}
		/* the workers keep the number: it is closed under them */
		if (close(fd) < 0)
			die("close");
		rounds++;
		atomic_fetch_add(&round_no, 1);
	}
	atomic_store(&stop, true);
	for (i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	printf("%ld rounds, %ld calls (%ld too slow to count): %ld served data, %ld EBADF, %ld ESPIPE, %ld empty, %ld /dev/zero, %ld outside, %ld writes, %ld torn by a write (the kernel's); %ld wrong\n",
	       rounds, atomic_load(&ops), atomic_load(&stale),
	       atomic_load(&results[R_DATA]),
	       atomic_load(&results[R_EBADF]), atomic_load(&results[R_ESPIPE]),
	       atomic_load(&results[R_EOF]), atomic_load(&results[R_ZERO]),
	       atomic_load(&results[R_OUT]), atomic_load(&results[R_WROTE]),
	       atomic_load(&results[R_TORN]),
	       atomic_load(&bad));
	if (atomic_load(&bad)) {
		printf("FAIL: %s\n", first_bad);
		return 1;
	}
	return 0;
}
