/* SPDX-License-Identifier: MIT */
/*
 * test_fail_run_size - a run of extending writes in flight together that
 * fail leaves the size at the end of the last acknowledged one, whatever
 * order they complete in (the ENOSPC append defect: the undo used to
 * back off whenever a later append had moved the size, even one that
 * failed too, so a run that all failed left the file extended).
 *
 * Part 1, the fault backend's holds (wtio_fault_release_one), so the
 * order of completion and each write's outcome are chosen: three
 * appends (in separate folios, so none waits for another's I/O) of
 * write-through, write-through DSYNC, queued and queued DSYNC, every
 * one held in flight; then released one at a time in each of the six
 * orders with each outcome pattern (all fail with ENOSPC, one or two of
 * them succeed). The size (wtio, after fsync, after close) must be the
 * end of the furthest success (where the run started when none did),
 * every failed write must get its error, every acknowledged byte reads
 * back, the failed range below a success reads zeros. After a run that
 * all failed, a new append succeeds at the old end. A write-back write
 * landing in a failing run's range meanwhile keeps the size at its end.
 *
 * Part 2, the asynchronous fault backend (channels, the append plug):
 * queued DSYNC appends merged into one I/O by the plug, the merged I/O
 * failing (every write it merged fails, the size stays), succeeding
 * after the first failed (the size is the merged end), and an ENOSPC
 * storm from three threads' queues (the reproduction that found the
 * defect, in miniature): after it the size is the end of the last
 * acknowledged append.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"
#include "t_fault.h"

#define BS	4096
#define S0	(3 * BS + 100)		/* starting size, unaligned */
#define NA	3
#define TOTAL	(12 * BS)

/* Three appends, each in folios of its own (a writer waits for the I/O
 * of a folio it writes into), the last two ending unaligned; the first
 * past a gap at S0, where a write can land while all are held. */
static const off_t a_off[NA] = { 4 * BS, 5 * BS, 7 * BS };
static const size_t a_len[NA] = { BS, 2 * BS - 300, BS + 500 };

struct mode {
	const char *name;
	unsigned int flags;
	bool queued;
};

static const struct mode modes[] = {
	{ "write-through", WTIO_WRITETHROUGH, false },
	{ "write-through+dsync", WTIO_WRITETHROUGH | WTIO_DSYNC, false },
	{ "queued write-through", WTIO_WRITETHROUGH, true },
	{ "queued write-through+dsync", WTIO_WRITETHROUGH | WTIO_DSYNC, true },
};

struct appender {
	const struct mode *m;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	const uint8_t *buf;
	size_t len;
	off_t off;
	ssize_t res;
};

static ssize_t mode_write(const struct mode *m, struct wtio_ctx *ctx,
			  struct wtio_file *f, const void *buf, size_t len,
			  off_t off)
{
	struct wtio_queue *q;
	struct wtio_cqe cqe;
	int ret;

	if (!m->queued)
		return wtio_pwrite(f, buf, len, off, m->flags);
	CHECK_OK(wtio_queue_create(ctx, 4, &q));
	ret = wtio_queue_pwrite(q, f, buf, len, off, m->flags, 9);
	if (!ret) {
		CHECK_EQ(wtio_queue_reap(q, &cqe, 1, 1, -1), 1);
		CHECK_EQ(cqe.user_data, 9);
		ret = (int)cqe.res;
	}
	CHECK_OK(wtio_queue_destroy(q));
	return ret;
}

static void *append_thread(void *arg)
{
	struct appender *a = arg;

	a->res = mode_write(a->m, a->ctx, a->f, a->buf, a->len, a->off);
	return NULL;
}

static const int orders[6][NA] = {
	{ 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 },
	{ 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 },
};

/* Which appends succeed, as a bit mask: none, each alone, two. */
static const unsigned int patterns[] = { 0, 1, 2, 4, 5 };

static unsigned long long runs;

/*
 * One run: the appends held in flight, released in order[] with the
 * outcomes of ok (bit i: append i succeeds, else ENOSPC). With landed,
 * a write-back write lands inside the first append's range while all
 * are held (and every append fails).
 */
static void run_one(const struct mode *m, const int *order, unsigned int ok,
		    bool landed)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule hold = { .ops = WTIO_FAULT_WRITE, .hold = 1 };
	uint8_t *shadow = t_zalloc(TOTAL), *bufs[NA], mine[100];
	const char *path = t_tmpfile("failrun");
	struct appender a[NA];
	pthread_t th[NA];
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	int64_t want = S0;
	int i, k;

	CHECK(fault);
	t_fill(shadow, S0, 31, 0);
	t_write_disk(path, shadow, S0);
	t_fault_config(&cfg, BS, 256);
	ctx = t_fault_ctx_create_or_skip(&cfg, fault);
	f = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_fault_add_rule(fault, &hold));
	for (i = 0; i < NA; i++) {
		bufs[i] = t_malloc(a_len[i]);
		t_fill(bufs[i], a_len[i], 32 + (unsigned int)i,
		       (uint64_t)a_off[i]);
		a[i] = (struct appender){ .m = m, .ctx = ctx, .f = f,
			.buf = bufs[i], .len = a_len[i], .off = a_off[i] };
		CHECK_OK(pthread_create(&th[i], NULL, append_thread, &a[i]));
		/* Started in order: hold number i is append i's I/O. */
		CHECKF(wtio_fault_wait_held(fault, (uint64_t)i + 1, 10000) == 0,
		       "%s: append %d never reached its I/O", m->name, i);
		if (ok & (1u << i)) {
			memcpy(shadow + a_off[i], bufs[i], a_len[i]);
			if (a_off[i] + (int64_t)a_len[i] > want)
				want = a_off[i] + (int64_t)a_len[i];
		}
	}
	CHECK_EQ(wtio_file_size(f), a_off[NA - 1] + (off_t)a_len[NA - 1]);
	if (landed) {
		/* Acknowledged at once, inside what the first added (its
		 * gap folio, under no I/O). */
		t_fill(mine, sizeof(mine), 33, S0 + 10);
		CHECK_EQ(wtio_pwrite(f, mine, sizeof(mine), S0 + 10, 0),
			 sizeof(mine));
		memcpy(shadow + S0 + 10, mine, sizeof(mine));
		want = S0 + 10 + (int64_t)sizeof(mine);
	}
	for (k = 0; k < NA; k++) {
		i = order[k];
		CHECK_OK(wtio_fault_release_one(fault, (uint64_t)i,
						ok & (1u << i) ? 0 : ENOSPC));
		CHECK_OK(wtio_fault_wait_done(fault, (uint64_t)i, 10000));
	}
	for (i = 0; i < NA; i++) {
		CHECK_OK(pthread_join(th[i], NULL));
		if (ok & (1u << i))
			CHECKF(a[i].res == (ssize_t)a_len[i], "%s: append %d "
			       "returned %zd, want %zu", m->name, i, a[i].res,
			       a_len[i]);
		else
			CHECKF(a[i].res == -ENOSPC, "%s: failed append %d "
			       "returned %zd, want -ENOSPC", m->name, i,
			       a[i].res);
	}
	wtio_fault_clear_rules(fault);
	CHECKF(wtio_file_size(f) == want, "%s, order %d%d%d, ok %x%s: size "
	       "%lld after the run, want %lld (the end of the last "
	       "acknowledged write)", m->name, order[0], order[1], order[2],
	       ok, landed ? ", write landed" : "",
	       (long long)wtio_file_size(f), (long long)want);
	t_check_wtio_range(f, shadow, (size_t)want, 0, TOTAL);
	CHECK_OK(wtio_fsync(f));
	CHECKF(t_disk_size(path) == want, "%s: disk size %lld after fsync, "
	       "want %lld", m->name, (long long)t_disk_size(path),
	       (long long)want);
	if (!ok && !landed) {
		/* A new append at the old end after the failed run. */
		t_fill(bufs[1], 1000, 34, S0);
		CHECK_EQ(mode_write(m, ctx, f, bufs[1], 1000, S0), 1000);
		memcpy(shadow + S0, bufs[1], 1000);
		want = S0 + 1000;
		CHECK_EQ(wtio_file_size(f), want);
		t_check_wtio_range(f, shadow, (size_t)want, 0, TOTAL);
	}
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, (size_t)want);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	for (i = 0; i < NA; i++)
		free(bufs[i]);
	free(shadow);
	runs++;
}

/* ---- part 2: the append plug over the asynchronous backend ---- */

#define NP	8		/* appends: one alone, then the merged */
#define PBASE	(4 * BS)	/* the first's offset (past a gap) */
/* Each append a folio of its own (so none waits for another's I/O), the
 * last ending unaligned: they follow on, so the plug merges them. */
#define PLEN(i)	((i) == NP - 1 ? BS - 300 : BS)

static struct wtio_ctx *async_ctx(struct wtio_fault *fault)
{
	struct wtio_config cfg;

	t_fault_config(&cfg, BS, 256);
	return t_fault_async_ctx(&cfg, fault);
}

/* The longest write in the trace (a merged one is longer than any
 * single append's I/O). */
static uint64_t longest_write(struct wtio_fault *fault)
{
	uint64_t max;

	t_fault_trace_count(fault, WTIO_FAULT_WRITE, 0, false, false, &max);
	return max;
}

/*
 * NP queued DSYNC appends: the first goes alone (held), the others wait
 * in the plug and go as one merged I/O (held) when it completes. first,
 * merged: their outcomes (0, or the errno; merged -1: a short I/O of
 * three folios, after which the rest goes again and succeeds).
 */
static void run_plug(int first, int merged)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule hold = { .ops = WTIO_FAULT_WRITE, .hold = 1 };
	uint8_t *shadow = t_zalloc(TOTAL), *buf = t_malloc(NP * BS);
	const char *path = t_tmpfile("failrun-plug");
	int want_close = first == EIO || merged == EIO ? -EIO : 0;
	bool was_short;
	struct wtio_cqe cqe[NP];
	struct wtio_queue *q;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	int64_t want = S0;
	int i, got;

	CHECK(fault);
	t_fill(shadow, S0, 41, 0);
	t_write_disk(path, shadow, S0);
	ctx = async_ctx(fault);
	f = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_queue_create(ctx, NP, &q));
	if (merged < 0) {
		struct wtio_fault_rule shorter = { .ops = WTIO_FAULT_WRITE,
			.hold = 1, .count = 1, .short_bytes = 3 * BS };

		hold.count = 1;
		CHECK_OK(wtio_fault_add_rule(fault, &hold));
		CHECK_OK(wtio_fault_add_rule(fault, &shorter));
	} else {
		CHECK_OK(wtio_fault_add_rule(fault, &hold));
	}
	t_fill(buf, NP * BS, 42, PBASE);
	for (i = 0; i < NP; i++)
		CHECK_OK(wtio_queue_pwrite(q, f, buf + i * BS, PLEN(i),
					   PBASE + i * BS, WTIO_WRITETHROUGH |
					   WTIO_DSYNC, (uint64_t)i));
	CHECK_OK(wtio_fault_wait_held(fault, 1, 10000));
	CHECK_OK(wtio_fault_release_one(fault, 0, first));
	CHECKF(wtio_fault_wait_done(fault, 0, 10000) == 0 &&
	       wtio_fault_wait_held(fault, 1, 10000) == 0,
	       "the plugged appends never went");
	CHECK_OK(wtio_fault_release_one(fault, 1, merged));
	was_short = merged < 0;
	if (was_short)
		merged = 0;
	wtio_fault_clear_rules(fault);
	for (got = 0; got < NP;) {
		int n = wtio_queue_reap(q, cqe, NP, 1, -1);

		CHECK(n > 0);
		for (i = 0; i < n; i++) {
			int64_t res = cqe[i].res, u = (int64_t)cqe[i].user_data;
			int err = u == 0 ? first : merged;

			CHECKF(res == (err ? -err : PLEN(u)), "append %lld: "
			       "%lld, want %s", (long long)u, (long long)res,
			       err ? strerror(err) : "its length");
			if (err)
				continue;
			memcpy(shadow + PBASE + u * BS, buf + u * BS,
			       PLEN(u));
			if (PBASE + u * BS + PLEN(u) > want)
				want = PBASE + u * BS + PLEN(u);
		}
		got += n;
	}
	CHECKF(longest_write(fault) >= (NP - 1) * BS, "the plug merged "
	       "nothing (longest write %llu)",
	       (unsigned long long)longest_write(fault));
	CHECKF(wtio_file_size(f) == want, "plug, first %d merged %d: size "
	       "%lld, want %lld", first, merged,
	       (long long)wtio_file_size(f), (long long)want);
	t_check_wtio_range(f, shadow, (size_t)want, 0, TOTAL);
	CHECK_OK(wtio_queue_destroy(q));
	CHECK_EQ(wtio_close(f), want_close);
	t_check_disk_equals(path, shadow, (size_t)want);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(shadow);
	free(buf);
	printf("plug: first append %s, %d merged in one I/O %s: size %lld, "
	       "exact\n", first ? strerror(first) : "ok", NP - 1,
	       merged ? strerror(merged) : was_short ? "short, the rest "
	       "again" : "ok", (long long)want);
}

/* The ENOSPC storm: three threads, a queue each, appending records at
 * a shared tail; every write after the first 40 fails. */
#define STORM_THREADS	3
#define STORM_PER	150
#define STORM_MAX	(STORM_THREADS * STORM_PER * 3000)

struct storm {
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	_Atomic int64_t tail, acked_end;
	_Atomic long acked, failed;
	uint8_t *ok;			/* bytes acknowledged */
	pthread_mutex_t lock;
};

static void storm_done(struct storm *s, const struct wtio_cqe *c)
{
	int64_t off = (int64_t)(c->user_data >> 16);
	int64_t len = (int64_t)(c->user_data & 0xffff), e;

	if (c->res < 0) {
		CHECKF(c->res == -ENOSPC || c->res == -EIO,
		       "storm: append returned %lld", (long long)c->res);
		atomic_fetch_add(&s->failed, 1);
		return;
	}
	/* Short: the I/O that found no space came after the part counted,
	 * which is on disk (and the size's end, if furthest). */
	CHECKF(c->res > 0 && c->res <= len,
	       "storm: append of %lld returned %lld", (long long)len,
	       (long long)c->res);
	len = c->res;
	atomic_fetch_add(&s->acked, 1);
	pthread_mutex_lock(&s->lock);
	memset(s->ok + off, 1, (size_t)len);
	pthread_mutex_unlock(&s->lock);
	e = atomic_load(&s->acked_end);
	while (off + len > e &&
	       !atomic_compare_exchange_weak(&s->acked_end, &e, off + len))
		;
}

static void *storm_thread(void *arg)
{
	struct storm *s = arg;
	struct t_rng rng = { .s = (uint64_t)pthread_self() | 1 };
	uint8_t *bufs[16];
	struct wtio_cqe c[16];
	struct wtio_queue *q;
	int i, n, slot = 0;

	CHECK_OK(wtio_queue_create(s->ctx, 16, &q));
	for (i = 0; i < 16; i++)
		bufs[i] = t_malloc(3000);
	for (i = 0; i < STORM_PER; i++) {
		size_t len = 1 + t_rand_below(&rng, 2999);
		int64_t off = atomic_fetch_add(&s->tail, (int64_t)len);

		if (wtio_queue_inflight(q) == 16) {
			n = wtio_queue_reap(q, c, 16, 1, -1);
			CHECK(n > 0);
			while (n--)
				storm_done(s, &c[n]);
		}
		/* The queue is below its depth: the slot is free. */
		t_fill(bufs[slot], len, 51, (uint64_t)off);
		CHECK_OK(wtio_queue_pwrite(q, s->f, bufs[slot], len, off,
					   WTIO_WRITETHROUGH | WTIO_DSYNC,
					   ((uint64_t)off << 16) | len));
		slot = (slot + 1) % 16;
	}
	while (wtio_queue_inflight(q)) {
		n = wtio_queue_reap(q, c, 16, 1, -1);
		CHECK(n > 0);
		while (n--)
			storm_done(s, &c[n]);
	}
	CHECK_OK(wtio_queue_destroy(q));
	for (i = 0; i < 16; i++)
		free(bufs[i]);
	return NULL;
}

/* rules[0..nr): the faults; what: how the test names them. */
static void run_storm(const struct wtio_fault_rule *rules, int nr,
		      const char *what)
{
	struct wtio_fault *fault = wtio_fault_create();
	const char *path = t_tmpfile("failrun-storm");
	struct storm s = { .ok = t_zalloc(STORM_MAX) };
	pthread_t th[STORM_THREADS];
	uint8_t *d;
	size_t dlen;
	int64_t i, end;

	CHECK(fault);
	t_write_disk(path, NULL, 0);
	pthread_mutex_init(&s.lock, NULL);
	s.ctx = async_ctx(fault);
	s.f = t_open(s.ctx, path, O_RDWR);
	for (i = 0; i < nr; i++)
		CHECK_OK(wtio_fault_add_rule(fault, &rules[i]));
	for (i = 0; i < STORM_THREADS; i++)
		CHECK_OK(pthread_create(&th[i], NULL, storm_thread, &s));
	for (i = 0; i < STORM_THREADS; i++)
		CHECK_OK(pthread_join(th[i], NULL));
	end = atomic_load(&s.acked_end);
	CHECKF(atomic_load(&s.failed) > 0 && atomic_load(&s.acked) > 0,
	       "storm: %ld acknowledged, %ld failed: no storm",
	       atomic_load(&s.acked), atomic_load(&s.failed));
	CHECKF(wtio_file_size(s.f) == end, "storm (%s): size %lld at the "
	       "end, the last acknowledged append ends at %lld", what,
	       (long long)wtio_file_size(s.f), (long long)end);
	i = wtio_close(s.f);
	CHECKF(i == 0 || i == -EIO, "storm (%s): close %lld", what,
	       (long long)i);
	CHECK_OK(wtio_ctx_destroy(s.ctx));
	d = t_read_disk(path, &dlen);
	CHECKF((int64_t)dlen == end, "storm: disk size %zu after close, "
	       "want %lld", dlen, (long long)end);
	for (i = 0; i < end; i++)
		if (s.ok[i])
			CHECKF(d[i] == t_pattern_byte(51, (uint64_t)i),
			       "storm: acknowledged byte %lld lost",
			       (long long)i);
	printf("storm (%s): %ld appends acknowledged, %ld failed; size %lld "
	       "= end of the last acknowledged, on disk too\n", what,
	       atomic_load(&s.acked), atomic_load(&s.failed),
	       (long long)end);
	free(d);
	free(s.ok);
	pthread_mutex_destroy(&s.lock);
	wtio_fault_destroy(fault);
}

/*
 * Part 3: an append whose first I/O lands short (one block) and whose
 * rest then fails with ENOSPC: the write returns the block that landed
 * (a short count, as the kernel's buffered write returns what it copied
 * before the space ran out), and nothing past it stays: the size is the
 * end of that block in wtio and through the kernel (stat), and with
 * DSYNC also after a crash right then (every replay seed). (It used to
 * fail whole, the landed block cut away; a write-through write that
 * overwrote inside the file before its space ran out then reported
 * -ENOSPC with that part new on disk.)
 */
static void run_partial(const struct mode *m, bool async)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule part = { .ops = WTIO_FAULT_WRITE, .count = 1,
					.short_bytes = BS };
	struct wtio_fault_rule rest = { .ops = WTIO_FAULT_WRITE, .count = 1,
					.error = ENOSPC };
	const char *path = t_tmpfile("failrun-part");
	const char *dst = t_tmpfile("failrun-part-replay");
	uint8_t *old = t_malloc(S0), *buf = t_malloc(3 * BS);
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	char what[64];
	uint64_t ev;

	CHECK(fault);
	t_fill(old, S0, 35, 0);
	wtio_fault_set_async(fault, async);
	t_fault_config(&cfg, BS, 64);
	f = t_fault_durable_file(fault, &cfg, path, old, S0, &ctx);
	CHECK_OK(wtio_fault_add_rule(fault, &part));
	CHECK_OK(wtio_fault_add_rule(fault, &rest));
	t_fill(buf, 3 * BS, 36, 4 * BS);
	CHECK_EQ(mode_write(m, ctx, f, buf, 3 * BS - 100, 4 * BS), BS);
	ev = wtio_fault_nr_events(fault);
	CHECK_EQ(wtio_fault_injected(fault), 2);
	CHECK_EQ(wtio_file_size(f), 5 * BS);
	CHECKF(t_disk_size(path) == 5 * BS, "%s%s: an append cut short left "
	       "the backing file %lld bytes long, want %d",
	       m->name, async ? " (async)" : "",
	       (long long)t_disk_size(path), 5 * BS);
	wtio_ctx_crash(ctx);
	snprintf(what, sizeof(what), "%s%s: after the append cut short",
		 m->name, async ? " (async)" : "");
	if (m->flags & WTIO_DSYNC) {
		uint8_t *want = calloc(1, 5 * BS);

		CHECK(want);
		memcpy(want, old, S0);
		memcpy(want + 4 * BS, buf, BS);
		t_fault_check_crash_equals(fault, path, dst, ev, 4, want,
					   5 * BS, what);
		free(want);
	}
	wtio_fault_destroy(fault);
	free(old);
	free(buf);
}

int main(void)
{
	size_t mi, p;
	int o;

	t_require_odirect();
	t_watchdog(120, "a failing run hung");
	for (mi = 0; mi < sizeof(modes) / sizeof(modes[0]); mi++) {
		for (p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++)
			for (o = 0; o < 6; o++)
				run_one(&modes[mi], orders[o], patterns[p],
					false);
		run_one(&modes[mi], orders[0], 0, true);
		run_one(&modes[mi], orders[5], 0, true);
		printf("%-28s 3 appends in flight, 6 orders x 5 outcome "
		       "patterns: size exact, failures reported\n",
		       modes[mi].name);
	}
	run_plug(ENOSPC, ENOSPC);
	run_plug(0, ENOSPC);
	run_plug(ENOSPC, 0);
	run_plug(EIO, EIO);
	run_plug(0, -1);
	run_plug(ENOSPC, -1);
	{
		static const struct wtio_fault_rule nospc[1] = { {
			.ops = WTIO_FAULT_WRITE, .skip = 40,
			.error = ENOSPC } };
		/* Failures between successes, then all fail. */
		static const struct wtio_fault_rule mixed[4] = {
			{ .ops = WTIO_FAULT_WRITE, .skip = 20, .count = 30,
			  .error = ENOSPC },
			{ .ops = WTIO_FAULT_WRITE, .skip = 60, .count = 20,
			  .short_bytes = BS },
			{ .ops = WTIO_FAULT_WRITE, .skip = 90, .count = 25,
			  .error = EIO },
			{ .ops = WTIO_FAULT_WRITE, .skip = 250,
			  .error = ENOSPC } };

		run_storm(nospc, 1, "ENOSPC from the 41st write on");
		run_storm(mixed, 4, "ENOSPC, short writes, EIO between "
			  "successes, then ENOSPC");
	}
	for (mi = 0; mi < sizeof(modes) / sizeof(modes[0]); mi++) {
		run_partial(&modes[mi], false);
		run_partial(&modes[mi], true);
	}
	printf("an append landing one block then out of space: cut short to "
	       "that block, the size ends there (through the kernel; after a "
	       "crash with DSYNC), sync and queued, both fault modes\n");
	printf("%llu held runs; PASS\n", runs);
	return T_EXIT_PASS;
}
