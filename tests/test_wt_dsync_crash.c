/* SPDX-License-Identifier: MIT */
/*
 * test_wt_dsync_crash - WTIO_WRITETHROUGH|WTIO_DSYNC writes (extending and
 * overwriting) on the fault backend with a recorder, then a crash. For
 * every prefix of the record and several seeds, the replayed file holds
 * every write acknowledged within that prefix byte for byte, and its size
 * covers them.
 *
 * A write acknowledged returned after its I/O (and its FUA/flush) were
 * recorded, so nr_events read right after the ack is the prefix from which
 * it must be durable. Writes are issued by one thread, so at any prefix at
 * most one write is partly recorded; its bytes may or may not be there.
 * The replay tears writes it has no flush or FUA for (the one in flight:
 * its I/O recorded, its FUA not yet): only some blocks land. The test
 * counts the torn replays and fails if there were none.
 */
#include "helpers.h"
#include "t_fault.h"

#define NWRITES	80
#define MAXSZ	(512 * 1024)

struct wrec {
	off_t off;
	size_t len;
	uint64_t seed;
	uint64_t start_ev, ack_ev;
};

static struct wrec wr[NWRITES];

int main(void)
{
	struct wtio_fault *fault;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	struct t_rng rng = { 42 };
	const char *path, *dst;
	uint8_t *buf = t_malloc(MAXSZ), *exp = t_malloc(MAXSZ),
		*got = t_malloc(MAXSZ);
	size_t size = 0;
	uint64_t total, n, points = 0, replays = 0, torn = 0;
	int i, s;

	t_require_odirect();
	path = t_tmpfile("wtdsync");
	dst = t_tmpfile("wtdsync-replay");
	fault = wtio_fault_create();
	CHECK(fault);
	t_fault_config(&cfg, 4096, 256);
	ctx = t_fault_ctx_create_or_skip(&cfg, fault);
	f = t_open(ctx, path, O_RDWR);

	for (i = 0; i < NWRITES; i++) {
		struct wrec *w = &wr[i];

		if (size == 0 || t_rand_below(&rng, 3) == 0) {
			/* extending, sometimes with a hole */
			w->off = size + (t_rand_below(&rng, 2) ?
					 t_rand_below(&rng, 9000) : 0);
			w->len = 1 + t_rand_below(&rng, 12000);
		} else {
			w->off = t_rand_below(&rng, size);
			w->len = 1 + t_rand_below(&rng, 9000);
		}
		if (w->off + w->len > MAXSZ) {
			w->off = t_rand_below(&rng, size);
			w->len = 1 + t_rand_below(&rng, 3000);
			if (w->off + w->len > MAXSZ)
				w->len = MAXSZ - w->off;
		}
		w->seed = 1000 + i;
		t_fill(buf, w->len, w->seed, w->off);
		w->start_ev = wtio_fault_nr_events(fault);
		CHECK_EQ(wtio_pwrite(f, buf, w->len, w->off,
				     WTIO_WRITETHROUGH | WTIO_DSYNC), w->len);
		w->ack_ev = wtio_fault_nr_events(fault);
		CHECKF(w->ack_ev > w->start_ev, "write %d recorded no event", i);
		if (w->off + w->len > size)
			size = w->off + w->len;
	}
	wtio_ctx_crash(ctx);
	total = wtio_fault_nr_events(fault);
	printf("%d DSYNC write-through writes acknowledged, %llu events, "
	       "final size %zu\n", NWRITES, (unsigned long long)total, size);

	for (n = 0; n <= total; n++) {
		size_t esize = 0;
		int inflight = -1;

		/* Expected content from the writes acknowledged by n. */
		memset(exp, 0, MAXSZ);
		for (i = 0; i < NWRITES; i++) {
			if (wr[i].ack_ev <= n) {
				t_fill(exp + wr[i].off, wr[i].len, wr[i].seed,
				       wr[i].off);
				if (wr[i].off + wr[i].len > esize)
					esize = wr[i].off + wr[i].len;
			} else if (wr[i].start_ev < n) {
				CHECK(inflight < 0);
				inflight = i;
			}
		}
		for (s = 0; s < 5; s++) {
			int fd = open(dst, O_RDWR | O_TRUNC);
			struct wtio_fault_replay_info ri;
			struct stat st;
			ssize_t got_n;
			size_t b;

			CHECK(fd >= 0);
			CHECK_OK(wtio_fault_replay_ex(fault, path, n, s, fd,
						      &ri));
			torn += ri.writes_torn > 0;
			CHECK_OK(fstat(fd, &st));
			CHECKF((size_t)st.st_size >= esize,
			       "prefix %llu seed %d: size %lld < acked end %zu",
			       (unsigned long long)n, s,
			       (long long)st.st_size, esize);
			got_n = pread(fd, got, esize, 0);
			CHECK_EQ(got_n, esize);
			for (b = 0; b < esize; b++) {
				if (got[b] == exp[b])
					continue;
				/* only the one partly recorded write may
				 * have changed acknowledged bytes */
				if (inflight >= 0 && (off_t)b >= wr[inflight].off &&
				    b < wr[inflight].off + wr[inflight].len &&
				    got[b] == t_pattern_byte(wr[inflight].seed, b))
					continue;
				CHECKF(0, "prefix %llu seed %d: byte %zu is %02x, "
				       "want %02x (acked data lost)",
				       (unsigned long long)n, s, b, got[b],
				       exp[b]);
			}
			close(fd);
			replays++;
		}
		points++;
	}
	printf("crash points tried: %llu (every prefix 0..%llu) x 5 seeds = "
	       "%llu replays (%llu tore the write in flight), all acknowledged "
	       "writes present\n", (unsigned long long)points,
	       (unsigned long long)total, (unsigned long long)replays,
	       (unsigned long long)torn);
	CHECKF(torn > 0, "no replay tore a write: the torn-write checks never "
	       "ran");
	wtio_fault_destroy(fault);
	free(buf);
	free(exp);
	free(got);
	printf("PASS\n");
	return T_EXIT_PASS;
}
