/* SPDX-License-Identifier: MIT */
/*
 * test_plug_crash - queued WTIO_WRITETHROUGH | WTIO_DSYNC appends merged
 * by the append plug survive a crash at every point with their exact
 * size, on the asynchronous fault backend (channels and the plug, as
 * io_uring has them) and its crash replay.
 *
 * Groups of appends are submitted back to back through a queue, each in
 * folios of its own so that none waits for another's I/O: the first of
 * a group goes alone (held by the fault backend until the group is
 * submitted) and the rest wait in the plug and go as one merged I/O.
 * After each completion the record's length is noted, so a replay
 * of that prefix is a crash right after the application was told. At
 * every event prefix x 4 seeds (unflushed writes torn, dropped, whole):
 * every acknowledged append's bytes are there, the size covers the
 * furthest acknowledged end and is never past the tail block of the
 * group in flight; where a group is wholly acknowledged the size is
 * exact (its end, unaligned). One group's merged I/O fails with ENOSPC:
 * every append it merged fails, and at that report the size is exact
 * at the group's one success. Fails unless every group merged.
 */
#include "helpers.h"
#include "t_fault.h"

#define BS	4096
#define G	6		/* appends a group */
#define NG	8
#define SEEDS	4
#define MAXLEN	(NG * (G + 1) * BS)

#define FAILG	3		/* this group's merged I/O fails: ENOSPC */

struct rec {
	int64_t off, len;
	uint64_t ack;		/* record length when it was reported */
	bool ok;		/* acknowledged (else it failed) */
};

static struct rec recs[NG * G];
static uint64_t gack[NG];	/* the last report of each group */
static int64_t gend[NG];	/* the acknowledged end after each group */
static int64_t gtop[NG];	/* the end of all each group submitted */

static uint8_t *replay(struct wtio_fault *fault, const char *path,
		       const char *dst, uint64_t nr, uint64_t seed,
		       size_t *len, uint64_t *torn)
{
	struct wtio_fault_replay_info ri;
	uint8_t *d = t_fault_replay_read(fault, path, dst, nr, seed, len, &ri);

	*torn += ri.writes_torn > 0;
	return d;
}

int main(void)
{
	const char *dst = t_tmpfile("plugcrash-replay");
	struct wtio_fault *fault = wtio_fault_create();
	uint8_t *log = t_zalloc(MAXLEN);
	struct wtio_config cfg;
	struct wtio_queue *q;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	uint64_t n, last, s, torn = 0, replays = 0, exact = 0, merged = 0;
	const char *path = t_tmpfile("plugcrash");
	int64_t end = 0;
	int g, i, k;

	t_require_odirect();
	t_watchdog(120, "plug crash test hung");
	CHECK(fault);
	t_fault_config(&cfg, BS, 512);
	ctx = t_fault_async_ctx(&cfg, fault);
	/* A new, empty file: the replay starts from an empty file. */
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0, &f));
	CHECK_OK(wtio_queue_create(ctx, G, &q));
	t_fill(log, MAXLEN, 61, 0);
	for (g = 0; g < NG; g++) {
		struct wtio_fault_rule hold = { .ops = WTIO_FAULT_WRITE,
						.count = 1, .hold = 1 };
		struct wtio_fault_rule nospc = { .ops = WTIO_FAULT_WRITE,
						 .count = 1, .error = ENOSPC };
		struct wtio_cqe cqe[G];
		int got = 0;

		/* The group's first I/O waits until all are submitted, so
		 * the others wait in the plug and go merged. */
		CHECK_OK(wtio_fault_add_rule(fault, &hold));
		if (g == FAILG)
			CHECK_OK(wtio_fault_add_rule(fault, &nospc));

		for (i = 0; i < G; i++) {
			struct rec *r = &recs[g * G + i];

			r->off = end;
			/* To the next folio boundary and one folio more; the
			 * last one ends unaligned. */
			r->len = i == G - 1 ? 100 + 37 * g :
				 ((end + BS) & ~(int64_t)(BS - 1)) - end +
				 (i ? 0 : BS);
			end += r->len;
			CHECK_OK(wtio_queue_pwrite(q, f, log + r->off,
						   (size_t)r->len, r->off,
						   WTIO_WRITETHROUGH |
						   WTIO_DSYNC,
						   (uint64_t)(g * G + i)));
		}
		CHECK_OK(wtio_fault_wait_held(fault, 1, 10000));
		wtio_fault_release(fault);
		while (got < G) {
			int m = wtio_queue_reap(q, cqe, G, 1, -1);
			uint64_t nr = wtio_fault_nr_events(fault);

			CHECK(m > 0);
			for (k = 0; k < m; k++) {
				struct rec *r = &recs[cqe[k].user_data];
				bool fail = g == FAILG &&
					    cqe[k].user_data % G;

				CHECKF(cqe[k].res == (fail ? -ENOSPC : r->len),
				       "append %llu: %lld, want %lld",
				       (unsigned long long)cqe[k].user_data,
				       (long long)cqe[k].res,
				       fail ? -ENOSPC : (long long)r->len);
				r->ack = nr;
				r->ok = !fail;
			}
			got += m;
		}
		/* Not before: the merged I/O is submitted after the
		 * release, from the completion thread. */
		wtio_fault_clear_rules(fault);
		gtop[g] = end;
		if (g == FAILG)
			/* The next group goes on where the last success
			 * ended. */
			end = recs[g * G].off + recs[g * G].len;
		gend[g] = end;
		CHECK_EQ(wtio_file_size(f), end);
	}
	CHECK_OK(wtio_queue_destroy(q));
	merged = t_fault_trace_count(fault, WTIO_FAULT_WRITE, 2 * BS, false,
				     false, NULL);
	CHECKF(merged >= NG, "the plug merged %llu times, want every group",
	       (unsigned long long)merged);
	/* A crash: no close, no size fixing after the last completion. */
	wtio_ctx_crash(ctx);
	last = 0;
	for (i = 0; i < NG * G; i++)
		if (recs[i].ack > last)
			last = recs[i].ack;

	for (g = 0; g < NG; g++)
		for (i = 0; i < G; i++)
			if (recs[g * G + i].ack > gack[g])
				gack[g] = recs[g * G + i].ack;
	for (n = 0; n <= last; n++) {
		int64_t lo = 0, hi;

		/* Acknowledged by n: covered. */
		for (i = 0; i < NG * G; i++)
			if (recs[i].ok && recs[i].ack <= n &&
			    recs[i].off + recs[i].len > lo)
				lo = recs[i].off + recs[i].len;
		for (g = 0; g < NG && gack[g] <= n; g++)
			;
		if (g > 0 && n == gack[g - 1]) {
			/* Group g - 1 just wholly acknowledged, nothing of
			 * the next one issued: exact. */
			hi = gend[g - 1];
			CHECK_EQ(lo, hi);
			exact++;
		} else {
			/* Group g in flight: its tail block at most. */
			hi = (gtop[g] + BS - 1) & ~(int64_t)(BS - 1);
		}
		for (s = 0; s < SEEDS; s++) {
			size_t len;
			uint8_t *d = replay(fault, path, dst, n, s, &len,
					    &torn);

			replays++;
			CHECKF((int64_t)len >= lo && (int64_t)len <= hi,
			       "crash after %llu events, seed %llu: %zu "
			       "bytes, want %lld..%lld", (unsigned long long)n,
			       (unsigned long long)s, len, (long long)lo,
			       (long long)hi);
			for (i = 0; i < NG * G; i++) {
				struct rec *r = &recs[i];

				if (!r->ok || r->ack > n)
					continue;
				CHECKF(t_memdiff(d + r->off, log + r->off,
						 (size_t)r->len) < 0,
				       "crash after %llu events, seed %llu: "
				       "acknowledged append %d lost",
				       (unsigned long long)n,
				       (unsigned long long)s, i);
			}
			free(d);
		}
	}
	CHECK_EQ(exact, NG);
	wtio_fault_destroy(fault);
	free(log);
	printf("%d queued DSYNC appends in %d groups, %llu merged I/Os; %llu "
	       "replays (%llu torn), exact at %llu points: PASS\n", NG * G,
	       NG, (unsigned long long)merged, (unsigned long long)replays,
	       (unsigned long long)torn, (unsigned long long)exact);
	return T_EXIT_PASS;
}
