/* SPDX-License-Identifier: MIT */
/*
 * test_fail_size - a write that fails leaves the size where it was, in
 * every mode whose write sees its own I/O: write-through (plain, DSYNC,
 * DONTCACHE, NOSERIAL), DSYNC write-back (plain and DONTCACHE), and
 * queued write-through (plain and DSYNC).
 *
 * For each mode, on a file whose size S is not block aligned:
 *  1. a one-folio append whose I/O fails: the write returns -EIO,
 *     wtio_file_size stays S, a read at S finds EOF;
 *  2. a four-folio append with one I/O per folio (max_io_size = folio)
 *     where only the third folio's I/O fails, so the other three land on
 *     disk: again -EIO and size S; fsync reports the error and leaves the
 *     backing file S long (not S + the write, not zero-filled);
 *  3. then a write far past S: the gap, where the failed write's landed
 *     folios were, reads as zeros through wtio and on disk after fsync;
 *     the old data below S is intact; close leaves the disk equal to the
 *     shadow copy.
 * And for write-through (sync and queued): a write that lands inside the
 * range a failing append added, while that append's I/O is in flight
 * (held by the fault backend), was acknowledged and is not cut when the
 * append fails.
 */
#include <pthread.h>

#include "helpers.h"
#include "t_fault.h"

#define BS	4096
#define S0	(3 * BS + 100)		/* starting size, unaligned */
#define NF	4			/* folios in the multi-folio append */
#define GAP	(6 * BS)		/* the later write lands at S0 + GAP */
#define TOTAL	(S0 + GAP + 1)

struct mode {
	const char *name;
	unsigned int flags;
	bool queued;
};

static const struct mode modes[] = {
	{ "write-through", WTIO_WRITETHROUGH, false },
	{ "write-through+dsync", WTIO_WRITETHROUGH | WTIO_DSYNC, false },
	{ "write-through+dontcache", WTIO_WRITETHROUGH | WTIO_DONTCACHE, false },
	{ "write-through+noserial", WTIO_WRITETHROUGH | WTIO_NOSERIAL, false },
	{ "dsync write-back", WTIO_DSYNC, false },
	{ "dsync write-back+dontcache", WTIO_DSYNC | WTIO_DONTCACHE, false },
	{ "queued write-through", WTIO_WRITETHROUGH, true },
	{ "queued write-through+dsync", WTIO_WRITETHROUGH | WTIO_DSYNC, true },
};

/* One write in the mode; returns its result (the cqe's, if queued). */
static ssize_t mode_write(const struct mode *m, struct wtio_queue *q,
			  struct wtio_file *f, const void *buf, size_t len,
			  off_t off)
{
	struct wtio_cqe cqe;
	int ret;

	if (!m->queued)
		return wtio_pwrite(f, buf, len, off, m->flags);
	ret = wtio_queue_pwrite(q, f, buf, len, off, m->flags, 7);
	if (ret)
		return ret;
	CHECK_EQ(wtio_queue_reap(q, &cqe, 1, 1, -1), 1);
	CHECK_EQ(cqe.user_data, 7);
	return (ssize_t)cqe.res;
}

static void run_mode(const struct mode *m)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule r = { .ops = WTIO_FAULT_WRITE, .count = 1,
				     .error = EIO };
	struct wtio_queue *q = NULL;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	uint8_t *shadow = t_zalloc(TOTAL), *buf = t_malloc(NF * BS),
		*rb = t_malloc(TOTAL);
	const char *path = t_tmpfile("failsize");
	uint64_t inj;
	size_t dlen;
	uint8_t *d;
	ssize_t n;

	CHECK(fault);
	t_fill(shadow, S0, 11, 0);
	t_write_disk(path, shadow, S0);
	t_fault_config(&cfg, BS, 256);
	cfg.max_io_size = BS;		/* one I/O per folio */
	ctx = t_fault_ctx_create_or_skip(&cfg, fault);
	if (m->queued)
		CHECK_OK(wtio_queue_create(ctx, 4, &q));
	f = t_open(ctx, path, O_RDWR);
	/* The partial last block is cached, as after earlier use. */
	CHECK_EQ(wtio_pread(f, rb, S0, 0, 0), S0);

	/* 1. One folio, its I/O fails. */
	t_fill(buf, BS, 12, S0);
	CHECK_OK(wtio_fault_add_rule(fault, &r));
	n = mode_write(m, q, f, buf, BS, S0);
	CHECKF(n == -EIO, "%s: failed append returned %zd", m->name, n);
	wtio_fault_clear_rules(fault);
	CHECKF(wtio_file_size(f) == S0, "%s: failed one-folio append moved "
	       "the size to %lld (was %d)", m->name,
	       (long long)wtio_file_size(f), S0);
	CHECK_EQ(wtio_pread(f, rb, BS, S0, 0), 0);
	CHECK_EQ(wtio_fsync(f), -EIO);
	CHECKF(t_disk_size(path) == S0, "%s: disk size %lld after fsync, "
	       "want %d", m->name, (long long)t_disk_size(path), S0);

	/* 2. Four folios, one I/O each; only the third fails. */
	t_fill(buf, NF * BS, 13, S0);
	r.start = (S0 & ~(off_t)(BS - 1)) + 2 * BS;
	r.end = r.start + BS;
	inj = wtio_fault_injected(fault);
	CHECK_OK(wtio_fault_add_rule(fault, &r));
	n = mode_write(m, q, f, buf, NF * BS, S0);
	CHECKF(n == -EIO, "%s: partly failed append returned %zd", m->name,
	       n);
	CHECKF(wtio_fault_injected(fault) == inj + 1, "%s: %llu faults "
	       "injected, want 1", m->name,
	       (unsigned long long)(wtio_fault_injected(fault) - inj));
	wtio_fault_clear_rules(fault);
	CHECKF(wtio_file_size(f) == S0, "%s: partly failed append moved the "
	       "size to %lld (was %d)", m->name,
	       (long long)wtio_file_size(f), S0);
	CHECK_EQ(wtio_pread(f, rb, NF * BS, S0, 0), 0);
	CHECK_EQ(wtio_fsync(f), -EIO);
	CHECK_EQ(wtio_fsync(f), 0);
	CHECKF(t_disk_size(path) == S0, "%s: disk size %lld after fsync, "
	       "want %d (the failed write's landed folios stay)", m->name,
	       (long long)t_disk_size(path), S0);

	/* 3. A write past the old end: the gap reads as zeros. */
	buf[0] = 0x5a;
	shadow[S0 + GAP] = 0x5a;
	CHECK_EQ(wtio_pwrite(f, buf, 1, S0 + GAP, 0), 1);
	CHECK_EQ(wtio_file_size(f), TOTAL);
	t_check_wtio_range(f, shadow, TOTAL, 0, TOTAL);
	CHECK_EQ(wtio_fsync(f), 0);
	t_check_disk_equals(path, shadow, TOTAL);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, TOTAL);
	if (q)
		CHECK_OK(wtio_queue_destroy(q));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	d = t_read_disk(path, &dlen);
	CHECK_EQ(dlen, TOTAL);
	free(d);
	free(shadow);
	free(buf);
	free(rb);
	printf("%-28s failed appends (1 folio; 4 folios, 3 landed) -> -EIO, "
	       "size stays %d in cache and on disk; gap reads zeros\n",
	       m->name, S0);
}

struct appender {
	const struct mode *m;
	struct wtio_queue *q;
	struct wtio_file *f;
	const uint8_t *buf;
	ssize_t res;
};

static void *append_thread(void *arg)
{
	struct appender *a = arg;

	/* Past a one-folio gap at the old end: [S0 + gap, +BS). */
	a->res = mode_write(a->m, a->q, a->f, a->buf, BS,
			    (S0 | (BS - 1)) + 1 + BS);
	return NULL;
}

static void run_landed(const struct mode *m)
{
	struct wtio_fault *fault = wtio_fault_create();
	off_t at = (S0 | (BS - 1)) + 1;	/* the gap folio */
	struct wtio_fault_rule r = { .ops = WTIO_FAULT_WRITE, .count = 1,
				     .error = EIO, .hold = 1,
				     .start = at + BS, .end = at + 2 * BS };
	uint8_t *shadow = t_zalloc(at + 2 * BS), *buf = t_malloc(BS),
		*mine = t_malloc(100);
	const char *path = t_tmpfile("failsize-landed");
	struct appender a = { .m = m, .buf = buf };
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	pthread_t th;

	CHECK(fault);
	t_fill(shadow, S0, 21, 0);
	t_write_disk(path, shadow, S0);
	t_fault_config(&cfg, BS, 256);
	ctx = t_fault_ctx_create_or_skip(&cfg, fault);
	if (m->queued)
		CHECK_OK(wtio_queue_create(ctx, 4, &a.q));
	a.f = t_open(ctx, path, O_RDWR);
	t_fill(buf, BS, 22, at + BS);
	CHECK_OK(wtio_fault_add_rule(fault, &r));
	CHECK_OK(pthread_create(&th, NULL, append_thread, &a));
	CHECK_OK(wtio_fault_wait_held(fault, 1, 10000));
	/* The append's size is visible; write inside what it added. */
	CHECK_EQ(wtio_file_size(a.f), at + 2 * BS);
	t_fill(mine, 100, 23, at + 10);
	CHECK_EQ(wtio_pwrite(a.f, mine, 100, at + 10, 0), 100);
	memcpy(shadow + at + 10, mine, 100);
	wtio_fault_release(fault);
	CHECK_OK(pthread_join(th, NULL));
	CHECKF(a.res == -EIO, "%s: held failing append returned %zd",
	       m->name, a.res);
	wtio_fault_clear_rules(fault);
	/* The acknowledged write is there: the size was not put back. */
	CHECKF(wtio_file_size(a.f) >= at + 110, "%s: failed append's undo "
	       "cut an acknowledged write (size %lld, want >= %lld)",
	       m->name, (long long)wtio_file_size(a.f),
	       (long long)(at + 110));
	t_check_wtio_range(a.f, shadow, at + 110, 0, at + 110);
	CHECK_EQ(wtio_fsync(a.f), -EIO);
	CHECK_OK(wtio_close(a.f));
	{
		size_t dlen;
		uint8_t *d = t_read_disk(path, &dlen);

		CHECK(dlen >= (size_t)at + 110);
		CHECK(memcmp(d, shadow, at + 110) == 0);
		free(d);
	}
	if (a.q)
		CHECK_OK(wtio_queue_destroy(a.q));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(shadow);
	free(buf);
	free(mine);
	printf("%-28s write landed in a failing append's range meanwhile: "
	       "kept, in cache and on disk\n", m->name);
}

int main(void)
{
	size_t i;

	t_require_odirect();
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		run_mode(&modes[i]);
	run_landed(&modes[0]);
	run_landed(&modes[6]);
	printf("PASS\n");
	return T_EXIT_PASS;
}
