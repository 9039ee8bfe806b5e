/* SPDX-License-Identifier: MIT */
/*
 * test_fault_queue - write-through I/O on the asynchronous fault backend
 * under injected EIO, ENOSPC and short writes: queued writes completed
 * on the queue's channel while the reap that waits for them reaps the
 * ring itself (the helping reap), and synchronous write-through writes,
 * which submit and wait in one go (plugged).
 *
 * Rounds of 16 disjoint unaligned overwrites and appends (queued:
 * submitted together, then one reap waiting for all 16; synchronous: one
 * after the other), one I/O of each round faulted: every write gets its
 * full count or the error, never a short count for a failed I/O and
 * never success for one; a short I/O is finished and succeeds. After
 * each round the file read through wtio and the disk (after fsync) hold
 * every acknowledged write and the old bytes of every failed one (the
 * fault backend writes nothing for a failed I/O); the size is the end of
 * the last acknowledged append; fsync reports an EIO once, never an
 * ENOSPC the writer already got.
 */
#include "helpers.h"
#include "t_fault.h"

#define BS	4096
#define SLOT	(64 << 10)
#define NW	16
#define FSIZE	(NW * SLOT)
#define ROUNDS	18
#define MAXSZ	(FSIZE + ROUNDS * NW * 3000)

static unsigned long long acked, failed;

static void round_one(struct wtio_fault *fault, struct wtio_queue *q,
		      struct wtio_file *f, const char *path, uint8_t *shadow,
		      int64_t *size, unsigned int flags, int round,
		      struct t_rng *rng)
{
	static const int errs[3] = { EIO, ENOSPC, 0 };
	int err = errs[round % 3];
	struct wtio_fault_rule r = { .ops = WTIO_FAULT_WRITE, .count = 1,
		.skip = t_rand_below(rng, NW), .error = err,
		.short_bytes = err ? 0 : BS };
	struct wtio_cqe cqe[NW];
	uint8_t *bufs[NW];
	off_t off[NW];
	size_t len[NW];
	int64_t res[NW], end = *size;
	bool any_eio = false;
	int i, n, got;

	for (i = 0; i < NW; i++) {
		if (i % 4 == 3) {
			/* An append, past a gap so that it shares no folio
			 * with the one before (which it would wait for). */
			off[i] = ((end + 2 * BS) & ~(off_t)(BS - 1)) + 7;
			len[i] = 1 + t_rand_below(rng, 3000);
			end = off[i] + (off_t)len[i];
		} else {
			off[i] = (off_t)i * SLOT + 1 +
				 (off_t)t_rand_below(rng, SLOT / 2);
			len[i] = 1 + t_rand_below(rng, SLOT / 2 - 2);
		}
		bufs[i] = t_malloc(len[i]);
		t_fill(bufs[i], len[i], 80 + (uint64_t)round, (uint64_t)off[i]);
	}
	CHECK_OK(wtio_fault_add_rule(fault, &r));
	for (i = 0; i < NW; i++) {
		if (!q) {
			res[i] = wtio_pwrite(f, bufs[i], len[i], off[i], flags);
			continue;
		}
		CHECK_OK(wtio_queue_pwrite(q, f, bufs[i], len[i], off[i],
					   flags, (uint64_t)i));
	}
	for (got = 0; q && got < NW; got += n) {
		/* Waits for all: the helping reap. */
		n = wtio_queue_reap(q, cqe, NW, NW - (unsigned int)got, -1);
		CHECK(n > 0);
		for (i = 0; i < n; i++)
			res[cqe[i].user_data] = cqe[i].res;
	}
	wtio_fault_clear_rules(fault);
	for (i = 0; i < NW; i++) {
		if (res[i] == (int64_t)len[i]) {
			memcpy(shadow + off[i], bufs[i], len[i]);
			if (off[i] + (int64_t)len[i] > *size)
				*size = off[i] + (int64_t)len[i];
			acked++;
		} else {
			CHECKF(err && res[i] == -err, "round %d: write %d of "
			       "%zu at %lld returned %lld (fault: %s)", round,
			       i, len[i], (long long)off[i],
			       (long long)res[i], err ? strerror(err) :
			       "short I/O");
			any_eio |= err == EIO;
			failed++;
		}
		free(bufs[i]);
	}
	CHECKF(wtio_file_size(f) == *size, "round %d: size %lld, want %lld",
	       round, (long long)wtio_file_size(f), (long long)*size);
	t_check_wtio_range(f, shadow, (size_t)*size, 0, (size_t)*size + BS);
	CHECK_EQ(wtio_fsync(f), any_eio ? -EIO : 0);
	CHECK_OK(wtio_fsync(f));
	t_check_disk_equals(path, shadow, (size_t)*size);
}

static void run(bool queued, unsigned int flags, const char *name)
{
	struct wtio_fault *fault = wtio_fault_create();
	const char *path = t_tmpfile("fault-queue");
	uint8_t *shadow = t_zalloc(MAXSZ);
	struct t_rng rng = { 91 + flags };
	struct wtio_queue *q = NULL;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	int64_t size = FSIZE;
	unsigned long long a0 = acked, f0 = failed;
	int round;

	CHECK(fault);
	t_fill(shadow, FSIZE, 90, 0);
	t_write_disk(path, shadow, FSIZE);
	t_fault_config(&cfg, BS, 1024);
	ctx = t_fault_async_ctx(&cfg, fault);
	f = t_open(ctx, path, O_RDWR);
	if (queued)
		CHECK_OK(wtio_queue_create(ctx, NW, &q));
	for (round = 0; round < ROUNDS; round++)
		round_one(fault, q, f, path, shadow, &size, flags, round, &rng);
	if (q)
		CHECK_OK(wtio_queue_destroy(q));
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, (size_t)size);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(shadow);
	printf("%-30s %d rounds: %llu writes acknowledged, %llu failed with "
	       "their error; cache, disk and size exact\n", name, ROUNDS,
	       acked - a0, failed - f0);
}

int main(void)
{
	t_require_odirect();
	t_watchdog(120, "queue fault test hung");
	run(true, WTIO_WRITETHROUGH, "queued write-through");
	run(true, WTIO_WRITETHROUGH | WTIO_DSYNC, "queued write-through+dsync");
	run(false, WTIO_WRITETHROUGH, "write-through (plugged)");
	run(false, WTIO_WRITETHROUGH | WTIO_DSYNC,
	    "write-through+dsync (plugged)");
	printf("PASS\n");
	return T_EXIT_PASS;
}
