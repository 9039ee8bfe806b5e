/* SPDX-License-Identifier: MIT */
/*
 * test_undo_races - the size undo of failed extensions (src/size_undo.c)
 * against the writes that may run beside it, each order fixed with the
 * fault backend's holds.
 *
 * A NOSERIAL write-through overwrite (the file lock shared) lands inside
 * what an extending write-through append added, while the append's I/O
 * is held; then both I/Os are released in either order, each failing or
 * not. The size must end at the furthest acknowledged end: where the
 * append started when both failed (a failed overwrite must not keep the
 * failed append's extension), the overwrite's end when only it
 * succeeded, the append's when it did. Failed writes get their error,
 * and every acknowledged byte reads back, before and after close.
 */
#include <pthread.h>

#include "helpers.h"
#include "t_fault.h"

#define BS	4096
#define S0	(3 * BS + 100)		/* starting size, unaligned */
#define A_OFF	(4 * BS)		/* the append, past a gap */
#define A_LEN	BS
#define B_OFF	(S0 + 10)		/* the overwrite, in the gap */
#define B_LEN	100
#define TOTAL	(8 * BS)

struct writer {
	struct wtio_file *f;
	const uint8_t *buf;
	size_t len;
	off_t off;
	unsigned int flags;
	ssize_t res;
};

static void *write_thread(void *arg)
{
	struct writer *w = arg;

	w->res = wtio_pwrite(w->f, w->buf, w->len, w->off, w->flags);
	return NULL;
}

/* order_b_first: the overwrite's I/O completes first; a_ok, b_ok: the
 * outcomes (else ENOSPC, EIO). */
static void run_noserial(bool b_first, bool a_ok, bool b_ok)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule hold = { .ops = WTIO_FAULT_WRITE, .hold = 1 };
	uint8_t *shadow = t_zalloc(TOTAL), abuf[A_LEN], bbuf[B_LEN];
	const char *path = t_tmpfile("undo-noserial");
	struct writer a, b;
	pthread_t ta, tb;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	int64_t want = S0;

	CHECK(fault);
	t_fill(shadow, S0, 61, 0);
	t_write_disk(path, shadow, S0);
	t_fault_config(&cfg, BS, 64);
	ctx = t_fault_ctx_create_or_skip(&cfg, fault);
	f = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_fault_add_rule(fault, &hold));
	t_fill(abuf, A_LEN, 62, A_OFF);
	t_fill(bbuf, B_LEN, 63, B_OFF);
	a = (struct writer){ f, abuf, A_LEN, A_OFF, WTIO_WRITETHROUGH, 0 };
	b = (struct writer){ f, bbuf, B_LEN, B_OFF,
			     WTIO_WRITETHROUGH | WTIO_NOSERIAL, 0 };
	CHECK_OK(pthread_create(&ta, NULL, write_thread, &a));
	CHECK_OK(wtio_fault_wait_held(fault, 1, 10000));
	CHECK_EQ(wtio_file_size(f), A_OFF + A_LEN);
	CHECK_OK(pthread_create(&tb, NULL, write_thread, &b));
	CHECKF(wtio_fault_wait_held(fault, 2, 10000) == 0,
	       "the overwrite never reached its I/O");
	if (b_ok) {
		memcpy(shadow + B_OFF, bbuf, B_LEN);
		want = B_OFF + B_LEN;
	}
	if (a_ok) {
		memcpy(shadow + A_OFF, abuf, A_LEN);
		want = A_OFF + A_LEN;
	}
	CHECK_OK(wtio_fault_release_one(fault, b_first ? 1 : 0,
					(b_first ? b_ok : a_ok) ? 0 :
					(b_first ? EIO : ENOSPC)));
	CHECK_OK(wtio_fault_wait_done(fault, b_first ? 1 : 0, 10000));
	CHECK_OK(wtio_fault_release_one(fault, b_first ? 0 : 1,
					(b_first ? a_ok : b_ok) ? 0 :
					(b_first ? ENOSPC : EIO)));
	CHECK_OK(pthread_join(ta, NULL));
	CHECK_OK(pthread_join(tb, NULL));
	wtio_fault_clear_rules(fault);
	CHECKF(a.res == (a_ok ? A_LEN : -ENOSPC), "append returned %zd",
	       a.res);
	CHECKF(b.res == (b_ok ? B_LEN : -EIO), "overwrite returned %zd",
	       b.res);
	CHECKF(wtio_file_size(f) == want, "noserial overwrite %s, append %s,"
	       " %s first: size %lld, want %lld (the furthest acknowledged "
	       "end)", b_ok ? "ok" : "failed", a_ok ? "ok" : "failed",
	       b_first ? "overwrite" : "append",
	       (long long)wtio_file_size(f), (long long)want);
	t_check_wtio_range(f, shadow, (size_t)want, 0, TOTAL);
	/* The failed writes' errors are on record: close reports one. */
	wtio_close(f);
	CHECKF(t_disk_size(path) == want, "disk size %lld after close, want "
	       "%lld", (long long)t_disk_size(path), (long long)want);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(shadow);
}

/*
 * A queued DSYNC append lands its first block, then its rest fails with
 * EIO, while another writer holds the file lock exclusive (waiting for a
 * held write-through I/O of folio 0), so that the completion thread
 * cannot cut: the failed append's error is reported, and once the
 * holder has left, its landed block is not in the backing file,
 * neither through the kernel (stat) nor after a crash. (EIO: a space
 * error there would cut the write short at the landed block, which then
 * stays, as it is acknowledged: test_fail_run_size.)
 */
struct queued {
	struct wtio_ctx *ctx;
	struct writer w;
};

static void *queued_thread(void *arg)
{
	struct queued *qa = arg;
	struct wtio_queue *q;
	struct wtio_cqe cqe;

	CHECK_OK(wtio_queue_create(qa->ctx, 4, &q));
	CHECK_OK(wtio_queue_pwrite(q, qa->w.f, qa->w.buf, qa->w.len,
				   qa->w.off, qa->w.flags, 1));
	CHECK_EQ(wtio_queue_reap(q, &cqe, 1, 1, -1), 1);
	qa->w.res = cqe.res;
	CHECK_OK(wtio_queue_destroy(q));
	return NULL;
}

/* x_queued: the lock's holder is a queued write. */
static void run_cut_busy(bool x_queued)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule r0 = { .ops = WTIO_FAULT_WRITE, .count = 1,
				      .start = 0, .end = BS, .hold = 1 };
	struct wtio_fault_rule r1 = { .ops = WTIO_FAULT_WRITE, .count = 1,
				      .start = A_OFF, .end = A_OFF + BS,
				      .short_bytes = BS };
	struct wtio_fault_rule r2 = { .ops = WTIO_FAULT_WRITE, .count = 1,
				      .start = A_OFF + BS, .hold = 1 };
	uint8_t *old = t_malloc(S0), *abuf = t_malloc(3 * BS), w0[100];
	const char *path = t_tmpfile("undo-cutbusy");
	const char *dst = t_tmpfile("undo-cutbusy-replay");
	struct writer a;
	struct queued qa, qx;
	pthread_t ta, tq, tx;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	uint64_t ev;

	CHECK(fault);
	t_fill(old, S0, 64, 0);
	t_fault_config(&cfg, BS, 64);
	f = t_fault_durable_file(fault, &cfg, path, old, S0, &ctx);
	CHECK_OK(wtio_fault_add_rule(fault, &r0));
	CHECK_OK(wtio_fault_add_rule(fault, &r1));
	CHECK_OK(wtio_fault_add_rule(fault, &r2));
	/* Folio 0 under a held write-through I/O (hold 0). */
	t_fill(w0, sizeof(w0), 65, 0);
	a = (struct writer){ f, w0, sizeof(w0), 0, WTIO_WRITETHROUGH, 0 };
	CHECK_OK(pthread_create(&ta, NULL, write_thread, &a));
	CHECK_OK(wtio_fault_wait_held(fault, 1, 10000));
	/* The append: its first block lands, its rest is held (hold 1). */
	t_fill(abuf, 3 * BS, 66, A_OFF);
	qa = (struct queued){ ctx, { f, abuf, 3 * BS - 100, A_OFF,
				     WTIO_WRITETHROUGH | WTIO_DSYNC, 0 } };
	CHECK_OK(pthread_create(&tq, NULL, queued_thread, &qa));
	CHECKF(wtio_fault_wait_held(fault, 2, 10000) == 0,
	       "the append's rest never reached its I/O");
	/* An overwrite of folio 0 waits for hold 0 with the lock held
	 * exclusive. */
	qx = (struct queued){ ctx, { f, w0, sizeof(w0), 0, WTIO_WRITETHROUGH,
				     0 } };
	CHECK_OK(pthread_create(&tx, NULL, x_queued ? queued_thread :
				write_thread, x_queued ? (void *)&qx :
				(void *)&qx.w));
	usleep(200 * 1000);
	CHECK_OK(wtio_fault_release_one(fault, 1, EIO));
	CHECK_OK(pthread_join(tq, NULL));
	CHECK_EQ(qa.w.res, -EIO);
	CHECK_EQ(wtio_file_size(f), S0);
	/* The lock's holder makes the cut as it leaves. */
	wtio_fault_release(fault);
	CHECK_OK(pthread_join(ta, NULL));
	CHECK_OK(pthread_join(tx, NULL));
	CHECK_EQ(a.res, sizeof(w0));
	CHECK_EQ(qx.w.res, sizeof(w0));
	ev = wtio_fault_nr_events(fault);
	CHECKF(t_disk_size(path) == S0, "failed append under a busy file "
	       "lock (%s holder): the backing file is %lld bytes once the "
	       "holder left (what landed of it), want %d",
	       x_queued ? "queued" : "synchronous",
	       (long long)t_disk_size(path), S0);
	wtio_ctx_crash(ctx);
	/* Its length (the overwrites of folio 0 were not flushed). */
	t_fault_check_crash_equals(fault, path, dst, ev, 4, NULL, S0,
				   "failed append under a busy file lock");
	wtio_fault_destroy(fault);
	free(old);
	free(abuf);
}

int main(void)
{
	int i;

	t_require_odirect();
	t_watchdog(60, "an undo race hung");
	for (i = 0; i < 8; i++)
		run_noserial(i & 1, i & 2, i & 4);
	run_cut_busy(false);
	run_cut_busy(true);
	printf("a queued DSYNC append landing a block, then failing under a "
	       "busy file lock (a synchronous or queued holder): cut once the holder "
	       "left\n");
	printf("a NOSERIAL overwrite inside a held append's extension, both "
	       "orders, every outcome: size exact\n");
	printf("PASS\n");
	return T_EXIT_PASS;
}
