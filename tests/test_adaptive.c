/* SPDX-License-Identifier: MIT */
/*
 * test_adaptive.c - the adaptive mode (WTIO_ADAPTIVE per file or call,
 * WTIO_CONFIG_ADAPTIVE per context), seen through the fault backend's
 * trace of the I/O it was asked to do, not through timing:
 *
 *  - A working set under the background threshold is written back: no
 *    write I/O until fsync, no adaptive write counted as written through.
 *  - With the flusher's write-back I/O held (a fault hold rule on the
 *    first part of the file), an adaptive writer dirties data until a
 *    write-back writer would be throttled. Its next writes, elsewhere in
 *    the file (synchronous, NOWAIT, queued), go write-through: each
 *    returns (a write-back writer sleeps here: test_throttle), its I/O was
 *    issued before it returned, its data is on disk when it returns, and
 *    adaptive_writethrough counts it; throttle_waits stays 0.
 *  - Ordering: an adaptive write of a block whose older write-back is
 *    still held goes write-through and must wait for that I/O: it may
 *    not return (its data on disk) while the older I/O, which would land
 *    after it, is held; the disk ends with the newer data.
 *  - An I/O error on such a write is that write's (-EIO, the size and
 *    the disk unchanged, a read serves the disk's data), as in
 *    write-through mode; fsync reports it once.
 *  - Once the I/O is released and fsync has cleaned everything, writes
 *    are written back again. Every byte is checked in the cache and on
 *    disk.
 *  - Flags: WTIO_ADAPTIVE with WTIO_NOSERIAL alone is -EINVAL (write, open,
 *    queue), on a read -EINVAL; with WTIO_WRITETHROUGH it is
 *    write-through.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "helpers.h"
#include "t_fault.h"

#define BS	4096u
#define NFOL	256u			/* the cache, in folios */
#define FILE_F	128u			/* the file, in folios */
#define HELD_F	64u			/* write-back held on [0, HELD_F) */

/* Write I/Os of the trace from entry first on that overlap [lo, hi). */
static uint64_t trace_writes(struct wtio_fault *fault, uint64_t first,
			     int64_t lo, int64_t hi)
{
	uint64_t i, n = wtio_fault_nr_ios(fault), got = 0;

	for (i = first; i < n; i++) {
		struct wtio_fault_io io;

		CHECK_OK(wtio_fault_get_io(fault, i, &io));
		if (io.op == WTIO_FAULT_WRITE && io.off < hi &&
		    io.off + (int64_t)io.len > lo)
			got++;
	}
	return got;
}

/* Does the disk hold shadow's bytes [off, off + len) now? */
static void check_disk_range(const char *path, const uint8_t *shadow,
			     off_t off, size_t len, const char *what)
{
	size_t dlen;
	uint8_t *d = t_read_disk(path, &dlen);
	long long at;

	CHECKF(dlen >= (size_t)off + len, "%s: disk %zu bytes", what, dlen);
	at = t_memdiff(d + off, shadow + off, len);
	CHECKF(at < 0, "%s: not on disk at return (byte %lld)", what,
	       (long long)off + at);
	free(d);
}

static struct wtio_file *open_adaptive(struct wtio_ctx *ctx, const char *path,
				       unsigned int flags)
{
	struct wtio_file *f = NULL;
	int ret = wtio_open(ctx, path, O_RDWR | O_CREAT, 0600, flags, &f);

	if (ret == -EOPNOTSUPP)
		t_skip("wtio_open(%s): O_DIRECT refused here", path);
	CHECKF(ret == 0, "wtio_open(%s): %s", path, strerror(-ret));
	return f;
}

/* A working set under the background threshold stays written back. */
static void fits(bool ctx_flag)
{
	const size_t ws = 64 * BS;
	struct wtio_fault *fault = wtio_fault_create();
	const char *path = t_tmpfile("adaptive-fits");
	uint8_t *shadow = t_zalloc(ws);
	struct wtio_config cfg;
	struct wtio_queue *q;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	struct wtio_stats st;
	struct t_rng r = { ctx_flag ? 7 : 8 };
	size_t size = 0;
	int i;

	CHECK(fault);
	t_fault_config(&cfg, BS, 1024);	/* background threshold 102 */
	cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	if (ctx_flag)
		cfg.flags |= WTIO_CONFIG_ADAPTIVE;
	ctx = t_fault_ctx_create_or_skip(&cfg, fault);
	f = open_adaptive(ctx, path, ctx_flag ? 0 : WTIO_ADAPTIVE);
	CHECK_OK(wtio_queue_create(ctx, 4, &q));
	for (i = 0; i < 300; i++) {
		size_t len = 1 + t_rand_below(&r, 16384);
		off_t off = (off_t)t_rand_below(&r, ws - len);

		if (i % 10 == 9) {
			uint8_t *buf = t_malloc(len);
			struct wtio_cqe cqe;

			/* Queued: a written-back write completes at once. */
			t_fill(buf, len, 100 + (uint64_t)i, (uint64_t)off);
			CHECK_OK(wtio_queue_pwrite(q, f, buf, len, off, 0, 1));
			CHECK_EQ(wtio_queue_reap(q, &cqe, 1, 1, -1), 1);
			CHECK_EQ(cqe.res, (long long)len);
			memcpy(shadow + off, buf, len);
			if ((size_t)off + len > size)
				size = (size_t)off + len;
			free(buf);
		} else {
			t_pwrite_shadow(f, shadow, &size, off, len,
					100 + (uint64_t)i, 0);
		}
	}
	st = t_stats(ctx);
	CHECKF(trace_writes(fault, 0, 0, INT64_MAX) == 0, "%s: a working set "
	       "under the background threshold was written at write time",
	       ctx_flag ? "context" : "file");
	CHECKF(st.adaptive_writethrough == 0, "%s: %llu adaptive writes "
	       "written through with dirty data far under the limit",
	       ctx_flag ? "context" : "file",
	       (unsigned long long)st.adaptive_writethrough);
	CHECK_EQ(st.throttle_waits, 0);
	CHECK(st.dirty_folios > 0);
	t_check_wtio_range(f, shadow, size, 0, size);
	CHECK_OK(wtio_fsync(f));
	CHECK(trace_writes(fault, 0, 0, INT64_MAX) > 0);
	t_check_disk_equals(path, shadow, size);
	printf("fits (%s flag): 300 writes, %llu folios dirty, no write I/O "
	       "before fsync\n", ctx_flag ? "context" : "file",
	       (unsigned long long)st.dirty_folios);
	CHECK_OK(wtio_queue_destroy(q));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(shadow);
}

/* One adaptive write at off that must go write-through: issued before it
 * returns, on disk when it returns. */
static void write_through_probe(struct wtio_fault *fault, struct wtio_file *f,
				struct wtio_queue *q, const char *path,
				uint8_t *shadow, off_t off, size_t len,
				unsigned int flags, uint64_t seed,
				const char *what)
{
	uint64_t before = wtio_fault_nr_ios(fault);
	uint8_t *buf = t_malloc(len);

	t_fill(buf, len, seed, (uint64_t)off);
	if (q) {
		struct wtio_cqe cqe;

		CHECK_OK(wtio_queue_pwrite(q, f, buf, len, off, flags, 9));
		CHECK_EQ(wtio_queue_reap(q, &cqe, 1, 1, -1), 1);
		CHECK_EQ(cqe.res, (long long)len);
	} else {
		CHECK_EQ(wtio_pwrite(f, buf, len, off, flags), (long long)len);
	}
	memcpy(shadow + off, buf, len);
	CHECKF(trace_writes(fault, before, off, off + (off_t)len) > 0,
	       "%s: no write I/O issued for it before it returned", what);
	check_disk_range(path, shadow, off, len, what);
	free(buf);
}

/* The ordering writer: one adaptive write, in a thread of its own. */
static struct {
	struct wtio_file *f;
	const uint8_t *buf;
	off_t off;
	atomic_int tid, done;
} ow;

static void *ordering_writer(void *arg)
{
	(void)arg;
	atomic_store(&ow.tid, (int)syscall(SYS_gettid));
	CHECK_EQ(wtio_pwrite(ow.f, ow.buf, BS, ow.off, 0), BS);
	atomic_store(&ow.done, 1);
	return NULL;
}

/*
 * Folio 0's write-back (the flusher's first I/O) is held. An adaptive
 * write of it now goes write-through: it must wait for that older I/O.
 * New I/O is no longer held (the rules are cleared; the held one stays
 * held until released), so a write that did not wait would return with
 * its data on disk, and the older write-back would land on top of it.
 */
static void ordering(struct wtio_fault *fault, struct wtio_file *f,
		     uint8_t *shadow)
{
	uint8_t *buf = t_malloc(BS);
	int stable = 0, tries, tid;
	pthread_t th;

	t_fill(buf, BS, 80, 0);
	ow.f = f;
	ow.buf = buf;
	ow.off = 0;
	atomic_store(&ow.tid, 0);
	atomic_store(&ow.done, 0);
	wtio_fault_clear_rules(fault);
	CHECK_OK(pthread_create(&th, NULL, ordering_writer, NULL));
	/* Blocked ('S'), not returned, five looks in a row. */
	for (tries = 0; tries < 20000 && stable < 5; tries++) {
		usleep(200);
		CHECKF(!atomic_load(&ow.done), "an adaptive write of a block "
		       "returned while an older write-back of it was held: "
		       "that one would land after it");
		tid = atomic_load(&ow.tid);
		stable = tid && t_task_state(tid) == 'S' ? stable + 1 : 0;
	}
	CHECKF(stable == 5, "the ordering writer neither blocked nor returned");
	wtio_fault_release(fault);
	CHECK_OK(pthread_join(th, NULL));
	memcpy(shadow, buf, BS);
	free(buf);
	printf("over: an adaptive write of a block under held write-back "
	       "waited for it\n");
}

static void over_the_limit(void)
{
	const size_t fsz = (size_t)FILE_F * BS;
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule hold = { .ops = WTIO_FAULT_WRITE, .hold = 1,
					.start = 0, .end = HELD_F * BS };
	struct wtio_fault_rule eio = { .ops = WTIO_FAULT_WRITE, .count = 1,
				       .error = EIO };
	const char *path = t_tmpfile("adaptive-over");
	uint8_t *shadow = t_malloc(fsz), *buf = t_malloc(BS), *rb = t_malloc(BS);
	uint64_t limit = NFOL * 5 / 100, bg = NFOL * 2 / 100, wt, ios;
	struct wtio_config cfg;
	struct wtio_queue *q;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	struct wtio_stats st;
	size_t size = fsz;
	off_t eoff;
	uint32_t i;

	CHECK(fault);
	/* Overwrites only: inside the file's size, in the cache and on
	 * disk, so no write waits on a size change held behind the I/O. */
	t_fill(shadow, fsz, 1, 0);
	t_write_disk(path, shadow, fsz);
	t_fault_config(&cfg, BS, NFOL);
	cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	cfg.dirty_background_ratio = 2;
	cfg.dirty_ratio = 5;
	ctx = t_fault_ctx_create_or_skip(&cfg, fault);
	f = open_adaptive(ctx, path, WTIO_ADAPTIVE);
	CHECK_OK(wtio_queue_create(ctx, 4, &q));
	CHECK_OK(wtio_fault_add_rule(fault, &hold));

	/* Past the background threshold: the flusher starts, and its first
	 * I/O stops it (held). */
	for (i = 0; i <= bg; i++)
		t_pwrite_shadow(f, shadow, &size, (off_t)i * BS, BS,
				10 + i, 0);
	CHECKF(wtio_fault_wait_held(fault, 1, 30000) == 0,
	       "no write-back I/O was issued over the background threshold");
	/* Nothing cleans now: write back until a writer would be
	 * throttled. Each of these is written back (dirty data was at or
	 * under the limit when it began). */
	for (; i < HELD_F && t_stats(ctx).dirty_folios <= limit; i++)
		t_pwrite_shadow(f, shadow, &size, (off_t)i * BS, BS,
				10 + i, 0);
	st = t_stats(ctx);
	CHECKF(st.dirty_folios > limit, "dirty data never passed the limit "
	       "(%llu folios, limit %llu) with write-back held",
	       (unsigned long long)st.dirty_folios,
	       (unsigned long long)limit);
	CHECKF(st.adaptive_writethrough == 0, "%llu writes went write-through "
	       "under the limit", (unsigned long long)st.adaptive_writethrough);
	printf("over: %u folios written back, %llu dirty (limit %llu), "
	       "write-back held\n", i, (unsigned long long)st.dirty_folios,
	       (unsigned long long)limit);

	/* A write-back writer would sleep now; adaptive ones write
	 * through, each from its own call. */
	write_through_probe(fault, f, NULL, path, shadow,
			    (off_t)(HELD_F + 8) * BS + 100, 3 * BS, 0, 50,
			    "adaptive write over the limit");
	write_through_probe(fault, f, NULL, path, shadow,
			    (off_t)(HELD_F + 16) * BS, BS, WTIO_NOWAIT, 51,
			    "adaptive NOWAIT write over the limit");
	write_through_probe(fault, f, q, path, shadow,
			    (off_t)(HELD_F + 20) * BS, 2 * BS, 0, 52,
			    "queued adaptive write over the limit");
	write_through_probe(fault, f, NULL, path, shadow,
			    (off_t)(HELD_F + 24) * BS, BS, WTIO_DSYNC, 53,
			    "adaptive DSYNC write over the limit");
	st = t_stats(ctx);
	CHECKF(st.adaptive_writethrough >= 4, "adaptive_writethrough %llu "
	       "after 4 writes over the limit",
	       (unsigned long long)st.adaptive_writethrough);
	CHECK_EQ(st.throttle_waits, 0);
	wt = st.adaptive_writethrough;
	printf("over: 4 adaptive writes (plain, NOWAIT, queued, DSYNC) went "
	       "write-through: issued and on disk at return\n");

	/* Its error is its own: -EIO, nothing changed. */
	eoff = (off_t)(HELD_F + 30) * BS;
	eio.start = eoff;
	eio.end = eoff + BS;
	CHECK_OK(wtio_fault_add_rule(fault, &eio));
	t_fill(buf, BS, 60, (uint64_t)eoff);
	CHECK_EQ(wtio_pwrite(f, buf, BS, eoff, 0), -EIO);
	CHECK_EQ(wtio_file_size(f), (off_t)fsz);
	CHECK_EQ(wtio_pread(f, rb, BS, eoff, 0), BS);
	CHECKF(t_memdiff(rb, shadow + eoff, BS) < 0, "after a failed "
	       "adaptive write-through the cache serves the rejected data");
	check_disk_range(path, shadow, eoff, BS, "the range of a failed write");
	printf("over: an I/O error on an adaptive write-through is that "
	       "write's (-EIO), cache and disk unchanged\n");

	ordering(fault, f, shadow);
	st = t_stats(ctx);
	CHECK(st.adaptive_writethrough > wt);

	/* Released: the flusher cleans; the first fsync reports the error. */
	wtio_fault_release(fault);
	CHECK_EQ(wtio_fsync(f), -EIO);
	CHECK_OK(wtio_fsync(f));
	t_check_wtio_range(f, shadow, size, 0, size);
	t_check_disk_equals(path, shadow, size);

	/* Under the background threshold again: write-back. */
	ios = wtio_fault_nr_ios(fault);
	wt = t_stats(ctx).adaptive_writethrough;
	for (i = 0; i < bg; i++)
		t_pwrite_shadow(f, shadow, &size, (off_t)(HELD_F + 40 + i) * BS,
				BS, 70 + i, 0);
	st = t_stats(ctx);
	CHECKF(trace_writes(fault, ios, 0, INT64_MAX) == 0, "writes under "
	       "the background threshold after the drain were written at "
	       "write time");
	CHECK_EQ(st.adaptive_writethrough, wt);
	CHECK_EQ(st.throttle_waits, 0);
	CHECK_OK(wtio_fsync(f));
	t_check_disk_equals(path, shadow, size);
	printf("over: drained, then %llu writes written back again\n",
	       (unsigned long long)bg);

	CHECK_OK(wtio_queue_destroy(q));
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, size);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(shadow);
	free(buf);
	free(rb);
}

static void flags(void)
{
	const char *path = t_tmpfile("adaptive-flags");
	struct wtio_ctx *ctx = t_ctx(BS, 64, WTIO_BACKEND_AUTO), *bad = NULL;
	struct wtio_file *f, *g = NULL;
	struct wtio_config cfg;
	struct wtio_queue *q;
	uint8_t buf[BS], shadow[BS];

	memset(buf, 'a', sizeof(buf));
	f = open_adaptive(ctx, path, WTIO_ADAPTIVE);
	CHECK_EQ(wtio_pwrite(f, buf, 10, 0, WTIO_NOSERIAL), -EINVAL);
	CHECK_EQ(wtio_pwrite(f, buf, 10, 0, WTIO_ADAPTIVE | WTIO_NOSERIAL),
		 -EINVAL);
	CHECK_EQ(wtio_pread(f, buf, 10, 0, WTIO_ADAPTIVE), -EINVAL);
	CHECK_EQ(wtio_open(ctx, path, O_RDWR, 0,
			   WTIO_ADAPTIVE | WTIO_NOSERIAL, &g), -EINVAL);
	CHECK(g == NULL);
	CHECK_OK(wtio_queue_create(ctx, 4, &q));
	CHECK_EQ(wtio_queue_pwrite(q, f, buf, 10, 0, WTIO_NOSERIAL, 1),
		 -EINVAL);
	CHECK_EQ(wtio_queue_inflight(q), 0);
	CHECK_OK(wtio_queue_destroy(q));
	CHECK_EQ(wtio_file_size(f), 0);
	CHECK_EQ(t_disk_size(path), 0);
	/* With write-through asked for: write-through, on disk at once. */
	memset(shadow, 'b', sizeof(shadow));
	CHECK_EQ(wtio_pwrite(f, shadow, BS, 0,
			     WTIO_WRITETHROUGH | WTIO_NOSERIAL), BS);
	CHECK_EQ(t_stats(ctx).dirty_folios, 0);
	check_disk_range(path, shadow, 0, BS, "adaptive + write-through");
	/* A read-only handle may carry it as a default: reads ignore it. */
	CHECK_OK(wtio_open(ctx, path, O_RDONLY, 0, WTIO_ADAPTIVE, &g));
	CHECK_EQ(wtio_pread(g, buf, BS, 0, 0), BS);
	CHECK(memcmp(buf, shadow, BS) == 0);
	CHECK_OK(wtio_close(g));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_config_init(&cfg);
	cfg.flags = 1u << 30;	/* no such flag */
	CHECK_EQ(wtio_ctx_create(&cfg, &bad), -EINVAL);
	CHECK(bad == NULL);
	printf("flags: ADAPTIVE|NOSERIAL and ADAPTIVE on a read -> -EINVAL, "
	       "nothing written; ADAPTIVE|WRITETHROUGH writes through\n");
}

int main(void)
{
	t_require_odirect();
	t_watchdog(120, "FAIL: adaptive hung (watchdog): an adaptive writer "
		   "slept behind the held write-back?\n");
	fits(false);
	fits(true);
	over_the_limit();
	flags();
	printf("adaptive: PASS\n");
	return T_EXIT_PASS;
}
