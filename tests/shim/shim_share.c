/* SPDX-License-Identifier: MIT */
/*
 * shim_share - two processes on one file at once, each under the shim or
 * not (tests/shim-share.sh). Role A opens the file first, sizes it and
 * writes its blocks and some appends (in write-back mode: dirty in its
 * cache), then B opens it and both run together: each overwrites its own
 * blocks, appends records (RWF_APPEND), reads the other's blocks and the
 * file's size. Every write is acknowledged in a shared control page after
 * it returns. Checks, while running: a block of the other role holds at
 * least the sequence number acknowledged for it before the read (the
 * latest acknowledged write, or a newer one), its own block exactly what
 * it wrote last, fstat and lseek(SEEK_END) at least the end of every
 * acknowledged append. At the end (role "check", no shim): every block
 * holds its last acknowledged write, every acknowledged append is there
 * exactly once, and the size is exactly the data's.
 *
 *   shim_share A|B|check FILE CTL [OPS]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define BS		4096
#define NBLK		64		/* A: 0..31, B: 32..63 */
#define REC		256
#define BASE		((off_t)NBLK * BS)
#define MAX_APP		100000
#define MAGIC		0x5348415245524543ULL	/* "SHARERE C" */

struct ctl {
	_Atomic uint64_t phase;		/* 1: A wrote phase 1; 2: B opened */
	_Atomic uint64_t done[2];
	_Atomic uint64_t ack[NBLK];	/* last acknowledged seq per block */
	_Atomic uint64_t end_max;	/* end of the last acknowledged append */
	_Atomic uint64_t napp[2];	/* appends acknowledged per role */
	_Atomic uint64_t fails;
	_Atomic uint64_t seq;		/* write sequence, both roles */
};

struct rec {
	uint64_t magic, who, seq, pad[REC / 8 - 3];
};

static struct ctl *ctl;
static int role;			/* 0 = A, 1 = B */

#define FAIL(...) do {							\
		fprintf(stderr, "shim_share %c: FAIL: ", "AB"[role]);	\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		atomic_fetch_add(&ctl->fails, 1);			\
		exit(1);						\
	} while (0)

static uint64_t rnd(void)
{
	static uint64_t s = 88172645463325252ULL;

	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

static void write_block(int fd, int b)
{
	static uint64_t buf[BS / 8];
	/* one counter for both: A writes B's blocks first (phase 1) */
	uint64_t seq = atomic_fetch_add(&ctl->seq, 1) + 1;
	ssize_t n;

	for (int i = 0; i < BS / 8; i++)
		buf[i] = seq;
	n = pwrite(fd, buf, BS, (off_t)b * BS);
	if (n != BS)
		FAIL("pwrite block %d: %zd %s", b, n, strerror(errno));
	atomic_store(&ctl->ack[b], seq);
}

static void append_rec(int fd)
{
	struct rec r = { .magic = MAGIC, .who = (uint64_t)role };
	struct iovec iov = { &r, sizeof(r) };
	uint64_t e, cur;
	off_t end;

	r.seq = atomic_load(&ctl->napp[role]);
	if (r.seq >= MAX_APP)
		return;
	if (pwritev2(fd, &iov, 1, -1, RWF_APPEND) != (ssize_t)sizeof(r))
		FAIL("append: %s", strerror(errno));
	end = lseek(fd, 0, SEEK_CUR);
	if (end < BASE + REC || (end - BASE) % REC)
		FAIL("append ended at %lld", (long long)end);
	atomic_store(&ctl->napp[role], r.seq + 1);
	cur = atomic_load(&ctl->end_max);
	e = (uint64_t)end;
	while (e > cur && !atomic_compare_exchange_weak(&ctl->end_max, &cur, e))
		;
}

static void check_block(int fd, int b, bool own)
{
	static uint64_t buf[BS / 8];
	uint64_t want = atomic_load(&ctl->ack[b]);
	ssize_t n = pread(fd, buf, BS, (off_t)b * BS);

	if (n != BS)
		FAIL("pread block %d: %zd %s", b, n, strerror(errno));
	for (int i = 0; i < BS / 8; i++) {
		if (own ? buf[i] != want : buf[i] < want)
			FAIL("block %d word %d: %llu, acknowledged %llu (%s)", b,
			     i, (unsigned long long)buf[i],
			     (unsigned long long)want,
			     own ? "own write" : "the other's write");
	}
}

static void check_size(int fd)
{
	uint64_t want = atomic_load(&ctl->end_max);
	struct stat st;
	off_t cur = lseek(fd, 0, SEEK_CUR), end;

	if (want < (uint64_t)BASE)
		want = BASE;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < want)
		FAIL("fstat size %lld < acknowledged end %llu",
		     (long long)st.st_size, (unsigned long long)want);
	end = lseek(fd, 0, SEEK_END);
	if (end < 0 || (uint64_t)end < want)
		FAIL("SEEK_END %lld < acknowledged end %llu", (long long)end,
		     (unsigned long long)want);
	lseek(fd, cur, SEEK_SET);
}

static void step(int fd)
{
	int mine = role * (NBLK / 2), other = (1 - role) * (NBLK / 2);
	uint64_t r = rnd();

	switch (r % 10) {
	case 0: case 1: case 2: case 3:
		write_block(fd, mine + (int)((r >> 8) % (NBLK / 2)));
		break;
	case 4: case 5:
		append_rec(fd);
		break;
	case 6:
		check_block(fd, mine + (int)((r >> 8) % (NBLK / 2)), true);
		break;
	case 7:
		check_size(fd);
		break;
	default:
		check_block(fd, other + (int)((r >> 8) % (NBLK / 2)), false);
	}
}

static void wait_for(_Atomic uint64_t *v, uint64_t want)
{
	struct timespec ts = { 0, 1000 * 1000 };
	int i;

	for (i = 0; atomic_load(v) < want; i++) {
		if (atomic_load(&ctl->fails))
			exit(1);
		if (i > 60000)
			FAIL("timed out waiting for the other role");
		nanosleep(&ts, NULL);
	}
}

static int check(const char *path)
{
	int fd = open(path, O_RDONLY), fails = 0;
	uint64_t n = atomic_load(&ctl->napp[0]) + atomic_load(&ctl->napp[1]);
	uint8_t *seen[2];
	struct stat st;
	struct rec r;
	off_t off;

	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(path);
		return 1;
	}
	for (int b = 0; b < NBLK; b++) {
		uint64_t buf[BS / 8], want = atomic_load(&ctl->ack[b]);

		if (pread(fd, buf, BS, (off_t)b * BS) != BS) {
			fprintf(stderr, "check: FAIL: short block %d\n", b);
			return 1;
		}
		for (int i = 0; i < BS / 8; i++)
			if (buf[i] != want) {
				fprintf(stderr, "check: FAIL: block %d holds %llu, last acknowledged %llu\n",
					b, (unsigned long long)buf[i],
					(unsigned long long)want);
				fails++;
				break;
			}
	}
	if (st.st_size != BASE + (off_t)(n * REC)) {
		fprintf(stderr, "check: FAIL: size %lld, want %lld (%llu appends)\n",
			(long long)st.st_size, (long long)(BASE + (off_t)(n * REC)),
			(unsigned long long)n);
		fails++;
	}
	seen[0] = calloc(MAX_APP, 1);
	seen[1] = calloc(MAX_APP, 1);
	for (off = BASE; pread(fd, &r, REC, off) == REC; off += REC) {
		if (r.magic != MAGIC || r.who > 1 || r.seq >= MAX_APP ||
		    seen[r.who][r.seq]++) {
			fprintf(stderr, "check: FAIL: record at %lld: magic %llx who %llu seq %llu%s\n",
				(long long)off, (unsigned long long)r.magic,
				(unsigned long long)r.who,
				(unsigned long long)r.seq,
				r.magic == MAGIC ? " (twice)" : "");
			return 1;
		}
	}
	for (int w = 0; w < 2; w++)
		for (uint64_t s = 0; s < atomic_load(&ctl->napp[w]); s++)
			if (!seen[w][s]) {
				fprintf(stderr, "check: FAIL: append %c/%llu lost\n",
					"AB"[w], (unsigned long long)s);
				return 1;
			}
	if (fails)
		return 1;
	printf("shim_share: blocks, %llu appends and size %lld all as acknowledged\n",
	       (unsigned long long)n, (long long)st.st_size);
	return 0;
}

int main(int argc, char **argv)
{
	long ops = argc > 4 ? atol(argv[4]) : 4000;
	int cfd, fd;

	if (argc < 4) {
		fprintf(stderr, "usage: shim_share A|B|check FILE CTL [OPS]\n");
		return 2;
	}
	/* the control page lives outside the served paths (and is mapped:
	 * the shim never serves it) */
	cfd = open(argv[3], O_RDWR | O_CREAT, 0644);
	if (cfd < 0 || ftruncate(cfd, sizeof(struct ctl)) < 0) {
		perror(argv[3]);
		return 1;
	}
	ctl = mmap(NULL, sizeof(struct ctl), PROT_READ | PROT_WRITE,
		   MAP_SHARED, cfd, 0);
	if (ctl == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (!strcmp(argv[1], "check"))
		return check(argv[2]);
	role = argv[1][0] == 'B';
	if (!role) {
		fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || ftruncate(fd, BASE) < 0)
			FAIL("open %s: %s", argv[2], strerror(errno));
		for (int b = 0; b < NBLK; b++)
			write_block(fd, b);	/* B's too: sized, known */
		for (int i = 0; i < 20; i++)
			append_rec(fd);
		/* dirty in A's cache (write-back) when B opens */
		atomic_store(&ctl->phase, 1);
		wait_for(&ctl->phase, 2);
	} else {
		wait_for(&ctl->phase, 1);
		fd = open(argv[2], O_RDWR);
		if (fd < 0)
			FAIL("open %s: %s", argv[2], strerror(errno));
		/* right after the open: everything A acknowledged */
		for (int b = 0; b < NBLK; b++)
			check_block(fd, b, false);
		check_size(fd);
		atomic_store(&ctl->phase, 2);
	}
	rnd();
	for (long i = 0; i < ops; i++) {
		if (atomic_load(&ctl->fails))
			return 1;
		if (role)
			rnd();		/* a different sequence per role */
		step(fd);
	}
	/* the other's last writes, once it is done */
	atomic_store(&ctl->done[role], 1);
	wait_for(&ctl->done[1 - role], 1);
	for (int b = 0; b < NBLK; b++)
		check_block(fd, b, false);
	check_size(fd);
	if (close(fd) < 0)
		FAIL("close: %s", strerror(errno));
	printf("shim_share %c: %ld operations, every read as acknowledged\n",
	       "AB"[role], ops);
	return 0;
}
